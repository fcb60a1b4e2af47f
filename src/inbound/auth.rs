//! SPF, DKIM and DMARC of a received message (mail-auth), kept in two forms: the
//! Authentication-Results header stored with the message for people and clients, and a `Verdict`
//! for the code that acts on the message. Decisions are never taken by reading the header back:
//! its text contains what the sender chose (the MAIL FROM local part, the HELO), so a crafted
//! envelope could make `dkim=pass` appear in it.

use std::net::IpAddr;
use std::time::Duration;

use mail_auth::common::headers::HeaderWriter;
use mail_auth::dmarc::{Alignment, Policy};
use mail_auth::spf::verify::SpfParameters;
use mail_auth::{
    AuthenticatedMessage, AuthenticationResults, DkimOutput, DkimResult, MessageAuthenticator,
    SpfOutput, SpfResult,
};

use super::dmarc::{self, Identifiers, Proof};
use crate::store::{DmarcPolicy, DmarcSeen, SeenDkim, SeenRow};

/// What authentication proved about a message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Verdict {
    /// Signing domains (`d=`) of the DKIM signatures that verified, lower-cased.
    pub dkim_pass: Vec<String>,
    /// The domain SPF authorized the client for (MAIL FROM, or HELO for a null sender).
    pub spf_pass: Option<String>,
    /// The domain of the From header, lower-cased.
    pub from_domain: String,
    /// Each check's result keyword, as Authentication-Results spells it.
    pub results: Results,
    /// What the From domain's DMARC record asks for mail that fails it, and for what share of
    /// it (`pct`); `Asks::Nothing` unless DMARC failed.
    pub dmarc_asks: Asks,
    pub dmarc_pct: u8,
    /// When DMARC failed and the message carries a valid ARC chain (RFC 8617): the domain that
    /// sealed it last, whose own checks may be trusted instead (`inbound.arc_trusted`).
    pub arc_sealer: Option<String>,
    /// What a DMARC aggregate report to the From domain's `rua` would count of this message,
    /// when the domain asks for reports and we send them (`reports.dmarc_send`); the
    /// disposition is filled in when it is decided.
    pub dmarc_seen: Option<Box<DmarcSeen>>,
}

/// The disposition a DMARC record asks for failing mail (RFC 7489 6.3 `p`/`sp`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Asks {
    #[default]
    Nothing,
    Quarantine,
    Reject,
}

/// The SPF, DKIM and DMARC results of a message: `pass`, `fail`, `softfail`, `neutral`, `none`,
/// `temperror` or `permerror` (empty when the message was not checked).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Results {
    pub spf: &'static str,
    pub dkim: &'static str,
    pub dmarc: &'static str,
}

impl Results {
    fn all(word: &'static str) -> Results {
        Results { spf: word, dkim: word, dmarc: word }
    }
}

fn spf_word(r: SpfResult) -> &'static str {
    match r {
        SpfResult::Pass => "pass",
        SpfResult::Fail => "fail",
        SpfResult::SoftFail => "softfail",
        SpfResult::Neutral => "neutral",
        SpfResult::TempError => "temperror",
        SpfResult::PermError => "permerror",
        SpfResult::None => "none",
    }
}

/// The best DKIM result of the message's signatures.
fn dkim_word<'a>(mut results: impl Iterator<Item = &'a DkimResult>) -> &'static str {
    let words: Vec<&'static str> = results.by_ref().map(dkim_result_word).collect();
    if words.contains(&"pass") { "pass" } else { words.first().copied().unwrap_or("none") }
}

/// One signature's result, as Authentication-Results and DMARC reports spell it.
fn dkim_result_word(result: &DkimResult) -> &'static str {
    match result {
        DkimResult::Pass => "pass",
        DkimResult::Fail(_) => "fail",
        DkimResult::Neutral(_) => "neutral",
        DkimResult::TempError(_) => "temperror",
        DkimResult::PermError(_) => "permerror",
        DkimResult::None => "none",
    }
}

impl Verdict {
    /// Whether a passing DKIM signature or SPF result is aligned with the From domain (DMARC's
    /// relaxed alignment): the same organizational domain (public suffix list), so siblings
    /// under one registrant align and two registrants under `co.uk` never do.
    pub fn aligned(&self) -> bool {
        self.authenticated_domains()
            .any(|d| dmarc::aligned(d, &self.from_domain, Alignment::Relaxed))
    }

    /// Whether `domain` (or a subdomain of it) passed DKIM.
    pub fn dkim_passes_for(&self, domain: &str) -> bool {
        self.dkim_pass.iter().any(|d| d.eq_ignore_ascii_case(domain))
    }

    /// Whether one of `domains` authenticated the message (DKIM or SPF), aligned or not.
    pub fn authenticated_by(&self, domains: &[String]) -> bool {
        self.authenticated_domains().any(|d| domains.iter().any(|want| related(d, want)))
    }

    fn authenticated_domains(&self) -> impl Iterator<Item = &str> {
        self.dkim_pass.iter().map(String::as_str).chain(self.spf_pass.as_deref())
    }
}

/// `a` and `b` are the same domain or one is a subdomain of the other.
fn related(a: &str, b: &str) -> bool {
    let (a, b) = (a.to_ascii_lowercase(), b.to_ascii_lowercase());
    let (a, b) = (a.trim_end_matches('.'), b.trim_end_matches('.'));
    let under = |child: &str, parent: &str| {
        child.len() > parent.len()
            && child.ends_with(parent)
            && child.as_bytes()[child.len() - parent.len() - 1] == b'.'
    };
    a == b || under(a, b) || under(b, a)
}

/// The identifiers DMARC aligns: DKIM signing domains and the SPF domain that passed, or whose
/// check met a DNS error (which makes DMARC a temperror rather than a fail).
fn identifiers<'a>(
    dkim: &'a [DkimOutput<'a>],
    spf: &SpfOutput,
    spf_domain: &'a str,
) -> Identifiers<'a> {
    let proof = |passed: bool| if passed { Proof::Pass } else { Proof::TempError };
    Identifiers {
        dkim: dkim
            .iter()
            .filter(|d| matches!(d.result(), DkimResult::Pass | DkimResult::TempError(_)))
            .filter_map(|d| {
                Some((d.signature()?.d.as_str(), proof(*d.result() == DkimResult::Pass)))
            })
            .collect(),
        spf: matches!(spf.result(), SpfResult::Pass | SpfResult::TempError)
            .then(|| (spf_domain, proof(spf.result() == SpfResult::Pass))),
    }
}

/// The envelope facts authentication needs.
pub struct Envelope<'a> {
    pub ip: IpAddr,
    pub helo: &'a str,
    pub mail_from: &'a str,
    /// Whether to note what DMARC aggregate reports need (`Verdict::dmarc_seen`).
    pub dmarc_reports: bool,
}

/// Authenticates `raw`: the header to prepend, and the verdict. A DNS failure makes a temperror
/// result, never a refusal: the message is stored and the header says what happened.
pub async fn authenticate(
    authenticator: &MessageAuthenticator,
    envelope: Envelope<'_>,
    raw: &[u8],
    host: &str,
) -> (String, Verdict) {
    let Some(message) = AuthenticatedMessage::parse(raw) else {
        return (
            format!("Authentication-Results: {host}; none (unparseable message)\r\n"),
            Verdict { results: Results::all("none"), ..Verdict::default() },
        );
    };
    let from_domain = message
        .from()
        .rsplit_once('@')
        .map(|(_, d)| d.trim_end_matches('>').to_ascii_lowercase())
        .unwrap_or_default();
    let helo = if envelope.helo.is_empty() { "unknown" } else { envelope.helo };
    let check = async {
        let dkim = authenticator.verify_dkim(&message).await;
        let spf = authenticator
            .verify_spf(SpfParameters::verify_mail_from(
                envelope.ip,
                helo,
                host,
                envelope.mail_from,
            ))
            .await;
        let mail_from_domain =
            envelope.mail_from.rsplit_once('@').map_or(helo, |(_, d)| d).to_owned();
        let from_domains: Vec<String> = message
            .from
            .iter()
            .filter_map(|f| f.rsplit_once('@').map(|(_, d)| d.trim_end_matches('>').to_owned()))
            .collect();
        let ids = identifiers(&dkim, &spf, &mail_from_domain);
        let dmarc =
            dmarc::evaluate(authenticator, &from_domains, &ids, envelope.dmarc_reports).await;
        // Only a failure can be overridden, so only then is the chain verified.
        let arc_sealer = if dmarc.result == "fail" {
            let arc = authenticator.verify_arc(&message).await;
            (*arc.result() == DkimResult::Pass)
                .then(|| arc.sets().last().map(|set| set.seal.header.d.to_ascii_lowercase()))
                .flatten()
        } else {
            None
        };
        let verdict = Verdict {
            dkim_pass: dkim
                .iter()
                .filter(|d| *d.result() == DkimResult::Pass)
                .filter_map(|d| d.signature().map(|s| s.d.to_ascii_lowercase()))
                .collect(),
            spf_pass: (spf.result() == SpfResult::Pass)
                .then(|| mail_from_domain.to_ascii_lowercase()),
            from_domain: from_domain.clone(),
            results: Results {
                spf: spf_word(spf.result()),
                dkim: dkim_word(dkim.iter().map(|d| d.result())),
                dmarc: dmarc.result,
            },
            dmarc_asks: match (dmarc.result, &dmarc.policy) {
                ("fail", Policy::Reject) => Asks::Reject,
                ("fail", Policy::Quarantine) => Asks::Quarantine,
                _ => Asks::Nothing,
            },
            dmarc_pct: dmarc.pct,
            arc_sealer,
            dmarc_seen: dmarc.published.clone().map(|policy| {
                let spf_domain = (mail_from_domain.as_str(), envelope.mail_from.is_empty());
                let facts = (envelope.ip, envelope.mail_from, from_domain.as_str());
                Box::new(seen(policy, &dmarc, &dkim, &spf, spf_domain, facts))
            }),
        };
        let header = AuthenticationResults::new(host)
            .with_dkim_results(&dkim, message.from())
            .with_spf_mailfrom_result(&spf, envelope.ip, envelope.mail_from, helo)
            .to_header();
        // mail-auth writes no DKIM clause for unsigned mail; RFC 8601 readers expect `none`.
        let unsigned = if dkim.is_empty() { ";\r\n\tdkim=none" } else { "" };
        let header = format!("{}{unsigned};\r\n\t{}\r\n", header.trim_end(), dmarc.clause());
        (header, verdict)
    };
    match tokio::time::timeout(Duration::from_secs(15), check).await {
        Ok(done) => done,
        Err(_) => (
            format!(
                "Authentication-Results: {host}; dkim=temperror; spf=temperror; dmarc=temperror\r\n"
            ),
            Verdict { from_domain, results: Results::all("temperror"), ..Verdict::default() },
        ),
    }
}

/// The header and verdict of a message this server signed for `sender_domain` and hands to a
/// mailbox of its own (`inbound::local`): what verifying would prove, known without asking DNS.
/// DMARC passes when the From domain is aligned with the signing domain.
pub fn local(raw: &[u8], sender_domain: &str, mail_from: &str, host: &str) -> (String, Verdict) {
    let from_domain = AuthenticatedMessage::parse(raw)
        .and_then(|m| {
            let from = m.from().rsplit_once('@')?.1.trim_end_matches('>').to_ascii_lowercase();
            Some(from)
        })
        .unwrap_or_default();
    let signer = sender_domain.to_ascii_lowercase();
    let mut verdict = Verdict {
        dkim_pass: vec![signer.clone()],
        spf_pass: Some(signer.clone()),
        from_domain: from_domain.clone(),
        results: Results { spf: "pass", dkim: "pass", dmarc: "none" },
        ..Verdict::default()
    };
    if verdict.aligned() {
        verdict.results.dmarc = "pass";
    }
    let dmarc = verdict.results.dmarc;
    let printable = |s: &str| -> String { s.chars().filter(|c| c.is_ascii_graphic()).collect() };
    let (mail_from, from_domain) = (printable(mail_from), printable(&from_domain));
    let header = format!(
        "Authentication-Results: {host}; dkim=pass (signed by this server) header.d={signer};\r\n\
         \tspf=pass (local delivery) smtp.mailfrom={mail_from};\r\n\
         \tdmarc={dmarc} header.from={from_domain}\r\n"
    );
    (header, verdict)
}

/// Signatures one row lists: a message may carry many, a report needs a few.
const MAX_SIGNATURES: usize = 8;

/// The report row of a message, its disposition still the one the policy asks for.
/// `spf_domain`: the domain SPF checked, and whether it was the HELO name (null sender).
/// `facts`: the client's address, the MAIL FROM and the From domain.
fn seen(
    policy: DmarcPolicy,
    outcome: &dmarc::Outcome,
    dkim: &[DkimOutput<'_>],
    spf: &SpfOutput,
    spf_domain: (&str, bool),
    facts: (IpAddr, &str, &str),
) -> DmarcSeen {
    let (ip, mail_from, header_from) = facts;
    let asks = match (outcome.result, outcome.policy) {
        ("fail", Policy::Reject) => "reject",
        ("fail", Policy::Quarantine) => "quarantine",
        _ => "none",
    };
    let signatures = dkim
        .iter()
        .filter_map(|d| {
            let signature = d.signature()?;
            Some(SeenDkim {
                domain: signature.d.to_ascii_lowercase(),
                selector: signature.s.clone(),
                result: dkim_result_word(d.result()).to_owned(),
            })
        })
        .take(MAX_SIGNATURES)
        .collect();
    let scope = if spf_domain.1 { "helo" } else { "mfrom" };
    DmarcSeen {
        policy,
        row: SeenRow {
            source_ip: ip.to_string(),
            header_from: header_from.to_owned(),
            envelope_from: mail_from.rsplit_once('@').map_or("", |(_, d)| d).to_ascii_lowercase(),
            disposition: asks.to_owned(),
            reason: None,
            dkim_aligned: outcome.dkim_aligned,
            spf_aligned: outcome.spf_aligned,
            dkim: signatures,
            spf: (
                spf_domain.0.to_ascii_lowercase(),
                scope.to_owned(),
                spf_word(spf.result()).to_owned(),
            ),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(dkim: &[&str], spf: Option<&str>, from: &str) -> Verdict {
        Verdict {
            dkim_pass: dkim.iter().map(|d| d.to_string()).collect(),
            spf_pass: spf.map(str::to_owned),
            from_domain: from.into(),
            ..Verdict::default()
        }
    }

    #[test]
    fn alignment_is_relaxed_but_never_across_registrable_domains() {
        assert!(verdict(&["isp.example"], None, "isp.example").aligned());
        assert!(verdict(&["mail.isp.example"], None, "isp.example").aligned());
        assert!(verdict(&[], Some("bounce.isp.example"), "isp.example").aligned());
        assert!(verdict(&["mail.isp.example"], None, "news.isp.example").aligned());
        assert!(verdict(&["mail.example.co.uk"], None, "news.example.co.uk").aligned());
        assert!(!verdict(&["other.co.uk"], None, "example.co.uk").aligned());
        assert!(!verdict(&["evil.example"], Some("evil.example"), "isp.example").aligned());
        assert!(!verdict(&["a.github.io"], None, "b.github.io").aligned());
        assert!(!verdict(&["xisp.example"], None, "isp.example").aligned());
        assert!(!verdict(&[], None, "").aligned());
    }

    #[test]
    fn configured_senders_count_when_they_authenticated() {
        let v = verdict(&["fbl.provider.example"], None, "reports.other.example");
        assert!(!v.aligned());
        assert!(v.authenticated_by(&["provider.example".into()]));
        assert!(!v.authenticated_by(&["other.example".into()]));
        assert!(v.dkim_passes_for("fbl.provider.example"));
    }
}
