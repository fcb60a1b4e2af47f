//! DMARC as RFC 7489 finds the policy and aligns identifiers: the From domain's own record, else
//! its organizational domain's (6.6.3), the organizational domain being one label below the
//! public suffix (the `psl` crate's compiled-in list, so `co.uk` is never taken for one).
//! mail-auth 0.13 walks the DNS tree towards the root instead (the DMARCbis draft) and offers no
//! suffix-list hook; there, a record at a public suffix becomes the organizational domain and
//! aligns two unrelated registrants under it. Its record parser and resolver are used here.

use hickory_resolver::proto::rr::RData;
use mail_auth::common::cache::NoCache;
use mail_auth::dmarc::{Alignment, Dmarc, Policy, Report};
use mail_auth::{DnsError, Error, MessageAuthenticator, Txt};

use crate::store::DmarcPolicy;

/// The organizational domain of `domain` (lower-case, no trailing dot): the registrable domain
/// under its public suffix, or the name itself when it is a suffix or not a domain at all.
pub fn organizational(domain: &str) -> &str {
    psl::domain_str(domain).unwrap_or(domain)
}

/// Whether an authenticated identifier aligns with the From domain (RFC 7489 3.1): strictly the
/// same name, or relaxed, the same organizational domain.
pub fn aligned(identifier: &str, from_domain: &str, mode: Alignment) -> bool {
    let (id, from) = (normal(identifier), normal(from_domain));
    !from.is_empty()
        && (id == from
            || (mode == Alignment::Relaxed && organizational(&id) == organizational(&from)))
}

fn normal(domain: &str) -> String {
    domain.trim_end_matches('.').to_ascii_lowercase()
}

/// What a check of one identifier proved: passed, or could not be decided (DNS trouble).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proof {
    Pass,
    TempError,
}

/// The identifiers DKIM and SPF proved (or could not decide) for a message.
pub struct Identifiers<'a> {
    /// Signing domains (`d=`) of the DKIM signatures with their result.
    pub dkim: Vec<(&'a str, Proof)>,
    /// The SPF domain (MAIL FROM, or HELO for a null sender), if SPF passed or errored.
    pub spf: Option<(&'a str, Proof)>,
}

/// The DMARC result of a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `pass`, `fail`, `none`, `temperror` or `permerror`.
    pub result: &'static str,
    /// The From domain judged.
    pub from_domain: String,
    /// The policy the record asks for this domain (`none` when there is no record).
    pub policy: Policy,
    /// The record's `pct` (RFC 7489 6.3): the share of failing mail the policy applies to.
    pub pct: u8,
    /// Whether an aligned DKIM signature passed, and an aligned SPF domain.
    pub dkim_aligned: bool,
    pub spf_aligned: bool,
    /// The record as a report restates it, when it asks for aggregate reports (`rua`) and
    /// `evaluate` was asked to look.
    pub published: Option<DmarcPolicy>,
}

impl Outcome {
    fn none(from_domain: &str, result: &'static str) -> Outcome {
        Outcome {
            result,
            from_domain: from_domain.to_owned(),
            policy: Policy::None,
            pct: 100,
            dkim_aligned: false,
            spf_aligned: false,
            published: None,
        }
    }

    /// The `dmarc=` clause of an Authentication-Results header (RFC 8601, RFC 7489 11.2).
    pub fn clause(&self) -> String {
        let from: String = self.from_domain.chars().filter(|c| c.is_ascii_graphic()).collect();
        format!("dmarc={} header.from={from} policy.dmarc={}", self.result, self.policy)
    }
}

/// Where the policy for a From domain was found.
enum Found {
    /// The record, and whether it is the From domain's own (else the organizational domain's).
    Record(std::sync::Arc<Dmarc>, bool),
    Nothing,
    TempError,
}

/// DMARC for a message whose From header names `from_domains` (all of them, lower-case).
/// `reports`: whether the record's reporting request is wanted (`Outcome::published`).
pub async fn evaluate(
    auth: &MessageAuthenticator,
    from_domains: &[String],
    ids: &Identifiers<'_>,
    reports: bool,
) -> Outcome {
    // RFC 7489 6.6.1: several From domains, or none, leave nothing to judge.
    let Some(from) = from_domains.first().map(|d| normal(d)) else {
        return Outcome::none("", "none");
    };
    if from.is_empty() || from_domains.iter().any(|d| normal(d) != from) {
        return Outcome::none(&from, "none");
    }
    let (record, own) = match discover(auth, &from).await {
        Found::Record(record, own) => (record, own),
        Found::Nothing => return Outcome::none(&from, "none"),
        Found::TempError => return Outcome::none(&from, "temperror"),
    };
    let mut policy = if own { record.p } else { record.sp };
    if policy == Policy::Unspecified {
        // A record without `p` is not a policy (RFC 7489 6.6.3 step 6).
        return Outcome::none(&from, "none");
    }
    if record.t {
        // Testing mode applies the next milder policy.
        policy = match policy {
            Policy::Reject => Policy::Quarantine,
            _ => Policy::None,
        };
    }
    let (mut dkim_aligned, mut spf_aligned, mut undecided) = (false, false, false);
    for (id, proof) in &ids.dkim {
        if aligned(id, &from, record.adkim) {
            dkim_aligned |= *proof == Proof::Pass;
            undecided |= *proof == Proof::TempError;
        }
    }
    if let Some((id, proof)) = ids.spf
        && aligned(id, &from, record.aspf)
    {
        spf_aligned = proof == Proof::Pass;
        undecided |= proof == Proof::TempError;
    }
    let result = match (dkim_aligned || spf_aligned, undecided) {
        (true, _) => "pass",
        (false, true) => "temperror",
        (false, false) => "fail",
    };
    let policy_domain = if own { from.clone() } else { organizational(&from).to_owned() };
    let published = (reports && !record.rua.is_empty()).then(|| DmarcPolicy {
        domain: policy_domain.clone(),
        adkim: mode(record.adkim),
        aspf: mode(record.aspf),
        p: record.p.to_string(),
        sp: if record.sp == Policy::Unspecified { record.p } else { record.sp }.to_string(),
        pct: 100,
        fo: match record.fo {
            Report::All => "0",
            Report::Any => "1",
            Report::Dkim => "d",
            Report::Spf => "s",
            Report::DkimSpf => "d:s",
        }
        .to_owned(),
        rua: record.rua.iter().map(|u| (u.uri.clone(), u.max_size as u64)).collect(),
    });
    // mail-auth follows DMARCbis, which dropped `pct`, so its parser skips the tag; it is read
    // from the record's text, and only when it could matter.
    let pct = match (result, policy, &published) {
        ("fail", Policy::Reject | Policy::Quarantine, _) | (_, _, Some(_)) => {
            percent(auth, &policy_domain).await
        }
        _ => 100,
    };
    let published = published.map(|p| DmarcPolicy { pct, ..p });
    Outcome { result, from_domain: from, policy, pct, dkim_aligned, spf_aligned, published }
}

fn mode(alignment: Alignment) -> String {
    match alignment {
        Alignment::Relaxed => "r",
        Alignment::Strict => "s",
    }
    .to_owned()
}

/// The `pct` of the DMARC record at `domain` (100 when absent or unreadable).
async fn percent(auth: &MessageAuthenticator, domain: &str) -> u8 {
    let name = format!("_dmarc.{domain}.");
    let Ok(lookup) = auth.0.txt_lookup(name).await else { return 100 };
    lookup
        .answers()
        .iter()
        .filter_map(|record| match &record.data {
            RData::TXT(txt) => Some(txt.txt_data.iter().flat_map(|s| s.iter().copied()).collect()),
            _ => None,
        })
        .find_map(|text: Vec<u8>| pct_of(&String::from_utf8_lossy(&text)))
        .unwrap_or(100)
}

/// `pct` of a record's text (`v=DMARC1; p=reject; pct=20`): `None` when it is not a DMARC
/// record; 100 when the tag is absent or not a number from 0 to 100 (RFC 7489 6.3).
fn pct_of(record: &str) -> Option<u8> {
    let mut tags = record.split(';').map(str::trim);
    if !tags.next()?.eq_ignore_ascii_case("v=DMARC1") {
        return None;
    }
    let value = tags.find_map(|t| {
        let (k, v) = t.split_once('=')?;
        k.trim().eq_ignore_ascii_case("pct").then(|| v.trim().parse::<u8>().ok())
    });
    Some(value.flatten().filter(|p| *p <= 100).unwrap_or(100))
}

/// RFC 7489 6.6.3: the From domain's record, else the organizational domain's.
async fn discover(auth: &MessageAuthenticator, from: &str) -> Found {
    match lookup(auth, from).await {
        Found::Nothing => {}
        found => return found,
    }
    let org = organizational(from);
    if org == from {
        return Found::Nothing;
    }
    match lookup(auth, org).await {
        Found::Record(record, _) => Found::Record(record, false),
        other => other,
    }
}

async fn lookup(auth: &MessageAuthenticator, domain: &str) -> Found {
    let name = format!("_dmarc.{domain}.");
    match auth.txt_lookup::<Dmarc>(name, None::<&NoCache<Box<str>, Txt>>).await {
        Ok(record) => Found::Record(record, true),
        Err(Error::Dns(DnsError::Resolver(_))) => Found::TempError,
        // No name, no TXT, or no valid DMARC record among them.
        Err(_) => Found::Nothing,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn organizational_domains_sit_below_the_public_suffix() {
        assert_eq!(organizational("news.example.co.uk"), "example.co.uk");
        assert_eq!(organizational("example.co.uk"), "example.co.uk");
        assert_eq!(organizational("co.uk"), "co.uk");
        assert_eq!(organizational("a.b.example.com"), "example.com");
        assert_eq!(organizational("someone.github.io"), "someone.github.io");
        assert_eq!(organizational("mail.alpha.test"), "alpha.test");
    }

    #[test]
    fn pct_is_read_from_the_record_text() {
        assert_eq!(pct_of("v=DMARC1; p=reject; pct=20"), Some(20));
        assert_eq!(pct_of("v=DMARC1;p=quarantine"), Some(100));
        assert_eq!(pct_of("v=DMARC1; p=reject; pct=250"), Some(100));
        assert_eq!(pct_of("v=DMARC1; p=reject; pct=x"), Some(100));
        assert_eq!(pct_of("v=spf1 -all"), None);
    }

    #[test]
    fn relaxed_alignment_compares_organizational_domains() {
        use Alignment::{Relaxed, Strict};
        assert!(aligned("mail.example.co.uk", "news.example.co.uk", Relaxed));
        assert!(aligned("Example.CO.uk.", "news.example.co.uk", Relaxed));
        assert!(!aligned("other.co.uk", "news.example.co.uk", Relaxed));
        assert!(!aligned("co.uk", "example.co.uk", Relaxed));
        assert!(!aligned("a.github.io", "b.github.io", Relaxed));
        assert!(!aligned("mail.example.co.uk", "news.example.co.uk", Strict));
        assert!(aligned("news.example.co.uk", "news.example.co.uk", Strict));
        assert!(!aligned("example.com", "", Relaxed));
    }
}
