//! The DMARC aggregate report we write (RFC 7489 section 7.2 and appendix C): one `feedback`
//! document per hosted domain, policy domain and period, gzipped into a message named and
//! titled as section 7.2.1.1 asks, so report processors file it without reading it first.
//! The XML is written by quick-xml's serializer from the types below (element order is field
//! order); only elements of RFC 7489's schema appear, so strict readers accept it too.

use std::io::Write;

use mail_builder::MessageBuilder;
use mail_builder::headers::address::Address;
use mail_builder::headers::raw::Raw;
use serde::Serialize;

use crate::store::{DmarcGroup, SeenRow};

#[derive(Serialize)]
struct Feedback<'a> {
    version: &'static str,
    report_metadata: Metadata<'a>,
    policy_published: Published<'a>,
    record: Vec<Record<'a>>,
}

#[derive(Serialize)]
struct Metadata<'a> {
    org_name: &'a str,
    email: String,
    report_id: &'a str,
    date_range: DateRange,
}

#[derive(Serialize)]
struct DateRange {
    begin: u64,
    end: u64,
}

#[derive(Serialize)]
struct Published<'a> {
    domain: &'a str,
    adkim: &'a str,
    aspf: &'a str,
    p: &'a str,
    sp: &'a str,
    pct: u8,
    fo: &'a str,
}

#[derive(Serialize)]
struct Record<'a> {
    row: Row<'a>,
    identifiers: Identifiers<'a>,
    auth_results: AuthResults<'a>,
}

#[derive(Serialize)]
struct Row<'a> {
    source_ip: &'a str,
    count: u64,
    policy_evaluated: Evaluated<'a>,
}

#[derive(Serialize)]
struct Evaluated<'a> {
    disposition: &'a str,
    dkim: &'static str,
    spf: &'static str,
    reason: Vec<Reason<'a>>,
}

#[derive(Serialize)]
struct Reason<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
}

#[derive(Serialize)]
struct Identifiers<'a> {
    envelope_to: &'a str,
    header_from: &'a str,
}

#[derive(Serialize)]
struct AuthResults<'a> {
    dkim: Vec<Dkim<'a>>,
    spf: Spf<'a>,
}

#[derive(Serialize)]
struct Dkim<'a> {
    domain: &'a str,
    selector: &'a str,
    result: &'a str,
}

#[derive(Serialize)]
struct Spf<'a> {
    domain: &'a str,
    scope: &'a str,
    result: &'a str,
}

fn word(pass: bool) -> &'static str {
    if pass { "pass" } else { "fail" }
}

fn record<'a>(reporter: &'a str, row: &'a SeenRow, count: u64) -> Record<'a> {
    let (spf_domain, scope, spf_result) = &row.spf;
    Record {
        row: Row {
            source_ip: &row.source_ip,
            count,
            policy_evaluated: Evaluated {
                disposition: &row.disposition,
                dkim: word(row.dkim_aligned),
                spf: word(row.spf_aligned),
                reason: row.reason.iter().map(|kind| Reason { kind }).collect(),
            },
        },
        identifiers: Identifiers { envelope_to: reporter, header_from: &row.header_from },
        auth_results: AuthResults {
            dkim: row
                .dkim
                .iter()
                .map(|d| Dkim { domain: &d.domain, selector: &d.selector, result: &d.result })
                .collect(),
            spf: Spf { domain: spf_domain, scope, result: spf_result },
        },
    }
}

/// The report's id: the same for the same group, so a receiver can tell a repeat.
pub fn report_id(group: &DmarcGroup) -> String {
    format!("{}.{}.{}", group.period, group.policy.domain, group.reporter)
}

/// The `feedback` document of `group`, covering `[period, period + secs)`.
pub fn document(group: &DmarcGroup, secs: u64) -> Result<String, quick_xml::SeError> {
    let id = report_id(group);
    let p = &group.policy;
    let feedback = Feedback {
        version: "1.0",
        report_metadata: Metadata {
            org_name: &group.reporter,
            email: format!("{}@{}", super::DMARC_LOCAL, group.reporter),
            report_id: &id,
            date_range: DateRange { begin: group.period, end: group.period + secs - 1 },
        },
        policy_published: Published {
            domain: &p.domain,
            adkim: &p.adkim,
            aspf: &p.aspf,
            p: &p.p,
            sp: &p.sp,
            pct: p.pct,
            fo: &p.fo,
        },
        record: group
            .rows
            .iter()
            .map(|(row, count)| record(&group.reporter, row, *count))
            .collect(),
    };
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let mut serializer = quick_xml::se::Serializer::with_root(&mut xml, Some("feedback"))?;
    serializer.indent(' ', 1);
    feedback.serialize(serializer)?;
    xml.push('\n');
    Ok(xml)
}

/// The report message from `dmarc-reports@<reporter>` to `to`, with the gzipped document.
pub fn message(
    group: &DmarcGroup,
    secs: u64,
    to: &[String],
    now_ms: u64,
) -> std::io::Result<Vec<u8>> {
    let xml = document(group, secs).map_err(std::io::Error::other)?;
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(xml.as_bytes())?;
    let zipped = gz.finish()?;
    let (reporter, policy, id) = (&group.reporter, &group.policy.domain, report_id(group));
    let begin = group.period;
    let end = begin + secs - 1;
    let from = format!("{}@{reporter}", super::DMARC_LOCAL);
    let to: Vec<Address<'_>> = to.iter().map(|a| Address::new_address(None::<&str>, a)).collect();
    MessageBuilder::new()
        .from(Address::new_address(Some("DMARC aggregate reports"), from))
        .to(to)
        // Written as it is: report processors match this exact form (RFC 7489 7.2.1.1), which
        // an encoded word would hide.
        .header(
            "Subject",
            Raw::new(format!("Report Domain: {policy} Submitter: {reporter} Report-ID: <{id}>")),
        )
        .date((now_ms / 1000) as i64)
        .message_id(format!("dmarc.{begin}.{}@{reporter}", short_tag(&id)))
        // Reports are automatic mail (RFC 3834): nothing should answer them.
        .header("Auto-Submitted", Raw::new("auto-generated"))
        .text_body(format!(
            "This is a DMARC aggregate report (RFC 7489) about mail received by {reporter} \
             from {policy} between {begin} and {end} (Unix time).\r\n\r\nReport-ID: {id}\r\n"
        ))
        .attachment("application/gzip", format!("{reporter}!{policy}!{begin}!{end}.xml.gz"), zipped)
        .write_to_vec()
}

/// A short stable tag of `text` for the Message-ID (ids may hold characters a Message-ID's
/// left part should not).
fn short_tag(text: &str) -> String {
    text.bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{DmarcPolicy, SeenDkim};

    fn group() -> DmarcGroup {
        let row = SeenRow {
            source_ip: "192.0.2.7".into(),
            header_from: "sender.example".into(),
            envelope_from: "sender.example".into(),
            disposition: "none".into(),
            reason: Some("sampled_out".into()),
            dkim_aligned: false,
            spf_aligned: true,
            dkim: vec![SeenDkim {
                domain: "esp.example".into(),
                selector: "s1".into(),
                result: "pass".into(),
            }],
            spf: ("sender.example".into(), "mfrom".into(), "pass".into()),
        };
        DmarcGroup {
            reporter: "alpha.test".into(),
            period: 86_400,
            policy: DmarcPolicy {
                domain: "sender.example".into(),
                adkim: "r".into(),
                aspf: "s".into(),
                p: "reject".into(),
                sp: "quarantine".into(),
                pct: 50,
                fo: "0".into(),
                rua: vec![("mailto:agg@sender.example".into(), 0)],
            },
            rows: vec![(row, 3)],
        }
    }

    #[test]
    fn the_document_reads_back_as_a_report() {
        let xml = document(&group(), 86_400).expect("serialized"); // ok: test
        assert!(xml.starts_with("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<feedback>"));
        assert!(xml.contains("<reason>\n     <type>sampled_out</type>"), "{xml}");
        assert!(xml.contains("<scope>mfrom</scope>"), "{xml}");
        let report = super::super::dmarc::parse(xml.as_bytes()).expect("parsed"); // ok: test
        assert_eq!(report.org, "alpha.test");
        assert_eq!(report.policy_domain, "sender.example");
        assert_eq!((report.begin, report.end), (86_400, 172_799));
        assert_eq!(report.records.len(), 1);
        let r = &report.records[0];
        assert_eq!((r.source_ip.as_str(), r.count), ("192.0.2.7", 3));
        assert_eq!((r.dkim.as_str(), r.spf.as_str()), ("fail", "pass"));
    }

    #[test]
    fn the_message_is_named_as_rfc_7489_asks() {
        let to = ["agg@sender.example".to_owned()];
        let raw = message(&group(), 86_400, &to, 90_000_000).expect("built"); // ok: test
        let text = String::from_utf8_lossy(&raw);
        let parsed = mail_parser::MessageParser::default().parse(&raw).expect("parsed"); // ok: test
        assert_eq!(
            parsed.subject(),
            Some(
                "Report Domain: sender.example Submitter: alpha.test Report-ID: \
                 <86400.sender.example.alpha.test>"
            )
        );
        assert!(text.contains("alpha.test!sender.example!86400!172799.xml.gz"));
        assert!(text.contains("Auto-Submitted: auto-generated"));
        let found = super::super::extract(&raw);
        assert_eq!(found.dmarc.len(), 1, "{:?}", found.refused);
    }
}
