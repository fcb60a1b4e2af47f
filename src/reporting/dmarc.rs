//! DMARC aggregate reports (RFC 7489 appendix C, and the DMARCbis form with a namespace): the
//! XML is first walked by quick-xml's reader to refuse what could hurt (a DTD, and with it any
//! entity declaration; nesting past `MAX_DEPTH`; more than `MAX_RECORDS` records), then read
//! into the types below with serde. What we keep per record is what the summary counts.

use quick_xml::events::Event;
use serde::Deserialize;

use crate::store::{DmarcRecord, DmarcReport};

/// Records one report may carry. A large provider's daily report for a busy domain has a few
/// hundred (one per source IP and result).
pub const MAX_RECORDS: usize = 10_000;
/// Element nesting allowed; the schema is five deep.
const MAX_DEPTH: usize = 32;

#[derive(Deserialize)]
struct Feedback {
    report_metadata: Metadata,
    policy_published: Option<Published>,
    #[serde(default)]
    record: Vec<Record>,
}

#[derive(Deserialize)]
struct Metadata {
    org_name: String,
    report_id: String,
    date_range: DateRange,
}

#[derive(Deserialize)]
struct DateRange {
    begin: u64,
    end: u64,
}

#[derive(Deserialize)]
struct Published {
    domain: String,
}

#[derive(Deserialize)]
struct Record {
    row: Row,
    identifiers: Identifiers,
}

#[derive(Deserialize)]
struct Row {
    source_ip: String,
    count: u64,
    policy_evaluated: Evaluated,
}

#[derive(Deserialize)]
struct Evaluated {
    disposition: Option<String>,
    dkim: Option<String>,
    spf: Option<String>,
}

#[derive(Deserialize)]
struct Identifiers {
    #[serde(default)]
    header_from: String,
}

/// Walks the document without building anything: refuses a DTD, deep nesting and too many
/// records, so the typed read below meets only a plain, bounded document.
fn guard(doc: &str) -> Result<(), String> {
    let mut reader = quick_xml::Reader::from_str(doc);
    let (mut depth, mut records) = (0usize, 0usize);
    loop {
        match reader.read_event().map_err(|e| format!("not XML: {e}"))? {
            Event::DocType(_) => return Err("a document type declaration is not accepted".into()),
            Event::Start(e) => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Err("elements nested too deep".into());
                }
                if e.local_name().as_ref() == "record" {
                    records += 1;
                    if records > MAX_RECORDS {
                        return Err(format!("more than {MAX_RECORDS} records"));
                    }
                }
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// Reads an aggregate report.
pub fn parse(doc: &[u8]) -> Result<DmarcReport, String> {
    let text = std::str::from_utf8(doc).map_err(|_| "the report is not UTF-8".to_owned())?;
    guard(text)?;
    let feedback: Feedback =
        quick_xml::de::from_str(text).map_err(|e| format!("not an aggregate report: {e}"))?;
    let lower = |v: Option<String>, default: &str| {
        v.map_or_else(|| default.to_owned(), |s| s.trim().to_ascii_lowercase())
    };
    let records = feedback
        .record
        .into_iter()
        .map(|r| {
            let e = r.row.policy_evaluated;
            let disposition = match lower(e.disposition, "none").as_str() {
                d @ ("quarantine" | "reject") => d.to_owned(),
                _ => "none".to_owned(),
            };
            let pass = |v: Option<String>| if lower(v, "fail") == "pass" { "pass" } else { "fail" };
            DmarcRecord {
                source_ip: r.row.source_ip.trim().to_owned(),
                count: r.row.count,
                disposition,
                dkim: pass(e.dkim).to_owned(),
                spf: pass(e.spf).to_owned(),
                header_from: r.identifiers.header_from.trim().to_ascii_lowercase(),
            }
        })
        .collect();
    let m = feedback.report_metadata;
    Ok(DmarcReport {
        org: m.org_name.trim().to_owned(),
        report_id: m.report_id.trim().to_owned(),
        begin: m.date_range.begin,
        end: m.date_range.end,
        policy_domain: feedback.policy_published.map(|p| p.domain).unwrap_or_default(),
        records,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOGLE: &str = r#"<?xml version="1.0" encoding="UTF-8" ?>
<feedback>
  <report_metadata>
    <org_name>google.com</org_name>
    <email>noreply-dmarc-support@google.com</email>
    <report_id>1234567890123456789</report_id>
    <date_range><begin>1764115200</begin><end>1764201599</end></date_range>
  </report_metadata>
  <policy_published><domain>example.com</domain><adkim>s</adkim><aspf>s</aspf><p>quarantine</p><sp>quarantine</sp><pct>100</pct></policy_published>
  <record>
    <row><source_ip>192.0.2.10</source_ip><count>12</count>
      <policy_evaluated><disposition>none</disposition><dkim>pass</dkim><spf>pass</spf></policy_evaluated></row>
    <identifiers><header_from>example.com</header_from></identifiers>
    <auth_results><dkim><domain>example.com</domain><result>pass</result><selector>s1</selector></dkim><spf><domain>example.com</domain><result>pass</result></spf></auth_results>
  </record>
  <record>
    <row><source_ip>203.0.113.5</source_ip><count>3</count>
      <policy_evaluated><disposition>quarantine</disposition><dkim>fail</dkim><spf>fail</spf></policy_evaluated></row>
    <identifiers><header_from>example.com</header_from></identifiers>
    <auth_results><spf><domain>spoof.example</domain><result>softfail</result></spf></auth_results>
  </record>
</feedback>"#;

    #[test]
    fn a_report_is_read_with_its_records() {
        let r = parse(GOOGLE.as_bytes()).expect("report"); // ok: test
        assert_eq!(r.org, "google.com");
        assert_eq!(r.policy_domain, "example.com");
        assert_eq!(r.records.len(), 2);
        assert_eq!(r.records[1].source_ip, "203.0.113.5");
        assert_eq!(r.records[1].disposition, "quarantine");
        assert!(r.records[0].dmarc_pass() && !r.records[1].dmarc_pass());
    }

    #[test]
    fn dtds_entities_deep_nesting_and_record_floods_are_refused() {
        let laughs = "<?xml version=\"1.0\"?><!DOCTYPE lolz [<!ENTITY lol \"lol\">\
            <!ENTITY lol2 \"&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;\">]>\
            <feedback><report_metadata><org_name>&lol2;</org_name></report_metadata></feedback>";
        assert!(parse(laughs.as_bytes()).expect_err("a DTD").contains("document type")); // ok: test
        let undeclared = GOOGLE.replace("google.com</org_name>", "&lol9;</org_name>");
        assert!(parse(undeclared.as_bytes()).is_err());
        let deep = format!("{}{}", "<a>".repeat(100), "</a>".repeat(100));
        assert!(parse(deep.as_bytes()).expect_err("deep").contains("deep")); // ok: test
        let one = "<record><row><source_ip>192.0.2.1</source_ip><count>1</count><policy_evaluated>\
            <disposition>none</disposition><dkim>pass</dkim><spf>pass</spf></policy_evaluated></row>\
            <identifiers><header_from>example.com</header_from></identifiers></record>";
        let flood =
            GOOGLE.replace("</feedback>", &format!("{}</feedback>", one.repeat(MAX_RECORDS)));
        assert!(parse(flood.as_bytes()).expect_err("flood").contains("records")); // ok: test
        assert!(parse(b"<feedback><nothing/></feedback>").is_err());
    }
}
