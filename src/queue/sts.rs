//! What a recipient domain's MTA-STS policy (RFC 8461 section 5) makes of delivery to its mail
//! exchangers. `enforce`: only listed hosts, only over STARTTLS with a certificate that
//! verifies for the host, and when none qualifies the mail waits (a temporary failure, never
//! plain text). `testing`: the same checks, reported (log and metric) but not applied.

use super::client::Need;
use crate::mta_sts::{Mode, Policy};

/// How one mail exchanger is to be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tls {
    /// No policy: the pool's usual (opportunistic) TLS.
    Usual,
    /// Verified TLS or nothing.
    Enforce,
    /// Verified TLS tried first; a failure is reported, then the usual TLS is used.
    Testing,
}

impl Tls {
    /// The session the first try needs.
    pub fn need(self) -> Need {
        match self {
            Tls::Usual => Need::Usual,
            Tls::Enforce | Tls::Testing => Need::VerifiedTls,
        }
    }
}

/// Why mail exchangers of an enforcing domain were not used; empty without such a policy.
#[derive(Default)]
pub(super) struct Refusals(Vec<String>);

/// The most reasons put into a delivery's response text.
const SHOWN: usize = 3;

impl Refusals {
    /// `host` failed the policy of `domain` because of `why`: reported, and under `enforce`
    /// remembered for the delivery's response.
    pub fn record(&mut self, domain: &str, mode: Mode, host: &str, why: &str) {
        crate::metrics::mta_sts_failure(mode.label());
        tracing::warn!(%domain, %host, mode = mode.label(), reason = %why, "MTA-STS policy failure");
        if mode == Mode::Enforce && self.0.len() < SHOWN {
            self.0.push(why.to_owned());
        }
    }

    /// The deferral that says why nothing was delivered, when the policy is the reason.
    pub fn deferral(&self, domain: &str) -> Option<String> {
        (!self.0.is_empty()).then(|| {
            format!(
                "4.7.5 MTA-STS policy of {domain} (enforce): no mail exchanger passed: {}",
                self.0.join("; ")
            )
        })
    }
}

/// How `host` is used under `policy`; None when the policy rules it out.
pub(super) fn plan(
    domain: &str,
    host: &str,
    policy: Option<&Policy>,
    refusals: &mut Refusals,
) -> Option<Tls> {
    let Some(policy) = policy else { return Some(Tls::Usual) };
    let listed = policy.lists(host);
    if !listed {
        refusals.record(domain, policy.mode, host, &format!("{host} is not listed in the policy"));
    }
    match policy.mode {
        Mode::Enforce if listed => Some(Tls::Enforce),
        Mode::Enforce => None,
        Mode::Testing => Some(Tls::Testing),
        Mode::None => Some(Tls::Usual),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(mode: &str) -> Policy {
        let text = format!("version: STSv1\nmode: {mode}\nmx: *.ok.test\nmax_age: 60\n");
        Policy::parse(&text).expect("valid") // ok: test
    }

    #[test]
    fn enforce_keeps_listed_hosts_only_and_says_why() {
        let (p, mut refusals) = (policy("enforce"), Refusals::default());
        assert_eq!(plan("d.test", "mx.ok.test", Some(&p), &mut refusals), Some(Tls::Enforce));
        assert_eq!(refusals.deferral("d.test"), None);
        assert_eq!(plan("d.test", "mx.evil.test", Some(&p), &mut refusals), None);
        let text = refusals.deferral("d.test").unwrap_or_default();
        assert!(text.starts_with("4.7.5 MTA-STS") && text.contains("mx.evil.test"), "{text}");
    }

    #[test]
    fn testing_and_no_policy_deliver_to_every_host() {
        let (p, mut refusals) = (policy("testing"), Refusals::default());
        assert_eq!(plan("d.test", "mx.evil.test", Some(&p), &mut refusals), Some(Tls::Testing));
        assert_eq!(plan("d.test", "mx.evil.test", None, &mut refusals), Some(Tls::Usual));
        assert_eq!(refusals.deferral("d.test"), None, "testing never defers");
    }
}
