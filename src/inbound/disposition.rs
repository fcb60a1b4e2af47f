//! What DMARC asks for a message that failed it (RFC 7489 6.6), and what we do: refuse it at
//! the end of DATA, file it in Junk, or nothing. A record's `pct` samples the failures the
//! policy applies to (6.6.4: the rest get the next milder treatment); a temperror never acts.
//! Mail claiming one of our own hosted domains without authenticating for it is treated as if
//! that domain published `p=reject`, whatever it publishes: nobody else may write in its name.
//! A failure forwarded by a sealer named in `inbound.arc_trusted` with a valid ARC chain
//! (RFC 8617) is let through: forwarding and mailing lists break SPF and often DKIM, and the
//! sealer checked the message when it arrived there.

use crate::config::{DmarcReject, Inbound};

use super::auth::{Asks, Verdict};

/// The reply to mail refused under a DMARC reject policy.
pub const DMARC_REFUSED: &str =
    "550 5.7.1 message refused: it fails the DMARC policy of its From domain\r\n";

/// What happens to a message before any mailbox's filter looks at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Disposition {
    /// Nothing asked: each mailbox's own filter decides.
    Deliver,
    /// Filed in Junk, for this reason.
    Junk(String),
    /// Refused with this reply.
    Refuse(&'static str),
}

/// The disposition of a message with `verdict`. `ours`: its From domain is one we host.
/// `roll`: a number from 0 to 99 drawn for the `pct` sample.
pub fn disposition(verdict: &Verdict, ours: bool, config: &Inbound, roll: u8) -> Disposition {
    let result = verdict.results.dmarc;
    if result == "temperror" || result == "pass" {
        return Disposition::Deliver;
    }
    let spoofed_own = ours && !verdict.aligned();
    let asks = if spoofed_own {
        Asks::Reject
    } else {
        // Sampled out: the next milder policy (RFC 7489 6.6.4).
        match (verdict.dmarc_asks, roll < verdict.dmarc_pct) {
            (asks, true) => asks,
            (Asks::Reject, false) => Asks::Quarantine,
            (_, false) => Asks::Nothing,
        }
    };
    if asks == Asks::Nothing {
        return Disposition::Deliver;
    }
    if let Some(sealer) = &verdict.arc_sealer
        && config.arc_trusted.iter().any(|t| t.eq_ignore_ascii_case(sealer))
    {
        tracing::info!(sealer = %sealer, from_domain = %verdict.from_domain,
            "DMARC failure let through: forwarded with a valid ARC chain by a trusted sealer");
        return Disposition::Deliver;
    }
    let domain = &verdict.from_domain;
    match (asks, config.dmarc_reject) {
        (Asks::Reject, DmarcReject::Refuse) => Disposition::Refuse(DMARC_REFUSED),
        (Asks::Reject, DmarcReject::Junk) if spoofed_own => {
            Disposition::Junk(format!("DMARC: not authenticated for our own domain {domain}"))
        }
        (Asks::Reject, DmarcReject::Junk) => {
            Disposition::Junk(format!("DMARC: fails p=reject of {domain}"))
        }
        _ => Disposition::Junk(format!("DMARC: fails p=quarantine of {domain}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbound::auth::Results;

    fn failing(asks: Asks, pct: u8) -> Verdict {
        Verdict {
            from_domain: "bank.example".into(),
            results: Results { spf: "fail", dkim: "none", dmarc: "fail" },
            dmarc_asks: asks,
            dmarc_pct: pct,
            ..Verdict::default()
        }
    }

    #[test]
    fn reject_refuses_quarantine_junks_and_pct_samples() {
        let c = Inbound::default();
        assert_eq!(
            disposition(&failing(Asks::Reject, 100), false, &c, 99),
            Disposition::Refuse(DMARC_REFUSED)
        );
        assert!(matches!(
            disposition(&failing(Asks::Quarantine, 100), false, &c, 0),
            Disposition::Junk(_)
        ));
        assert_eq!(disposition(&failing(Asks::Nothing, 100), false, &c, 0), Disposition::Deliver);
        // pct=30: rolls 0-29 get the policy, the rest the next milder one.
        assert_eq!(
            disposition(&failing(Asks::Reject, 30), false, &c, 29),
            Disposition::Refuse(DMARC_REFUSED)
        );
        assert!(matches!(
            disposition(&failing(Asks::Reject, 30), false, &c, 30),
            Disposition::Junk(_)
        ));
        assert_eq!(disposition(&failing(Asks::Quarantine, 0), false, &c, 0), Disposition::Deliver);
        let junk = Inbound { dmarc_reject: DmarcReject::Junk, ..Inbound::default() };
        assert!(matches!(
            disposition(&failing(Asks::Reject, 100), false, &junk, 0),
            Disposition::Junk(_)
        ));
    }

    #[test]
    fn temperror_never_acts_and_our_own_domain_is_always_reject() {
        let c = Inbound::default();
        let mut v = failing(Asks::Reject, 100);
        v.results.dmarc = "temperror";
        assert_eq!(disposition(&v, true, &c, 0), Disposition::Deliver);
        // No record at all for our domain, nothing authenticated: refused all the same.
        let mut own = failing(Asks::Nothing, 100);
        own.results.dmarc = "none";
        assert_eq!(disposition(&own, true, &c, 99), Disposition::Refuse(DMARC_REFUSED));
        // Authenticated (aligned DKIM) mail of our domain passes.
        own.dkim_pass = vec!["bank.example".into()];
        assert_eq!(disposition(&own, true, &c, 0), Disposition::Deliver);
    }

    #[test]
    fn a_trusted_sealer_overrides_a_failure() {
        let c = Inbound { arc_trusted: vec!["lists.example".into()], ..Inbound::default() };
        let mut v = failing(Asks::Reject, 100);
        v.arc_sealer = Some("lists.example".into());
        assert_eq!(disposition(&v, false, &c, 0), Disposition::Deliver);
        v.arc_sealer = Some("other.example".into());
        assert_eq!(disposition(&v, false, &c, 0), Disposition::Refuse(DMARC_REFUSED));
    }
}
