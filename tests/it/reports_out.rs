//! Reports out (`reports.dmarc_send`), over the real MX and queue: mail from a domain whose
//! DMARC record asks for aggregate reports is received (two passing, one spoofed and filed in
//! Junk); when the reporting period ends, one report leaves from `dmarc-reports@<our domain>`,
//! DKIM-signed, to the `rua` addresses allowed to have it (one inside the policy domain, one
//! outside that published its consent) and to none that did not consent or set a size limit
//! the report exceeds. Its XML is read by Python's own parser, and the message, sent back into
//! our MX, is summed by `GET /v1/dmarc-reports` as any provider's report is.

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::harness::A;
use crate::mail_world::{MailWorld, verify_dkim};
use crate::smtp_client::send_one;
use crate::smtp_sink::Received;

const POLICY: &str = "v=DMARC1; p=quarantine; rua=mailto:dmarc@example.org,\
                      mailto:agg@example.net,mailto:nope@outsider.example.com,\
                      mailto:tiny@example.org!1k";

/// Checks the document with Python's XML parser, independently of ours: prints one line per
/// record, `ip count disposition dkim spf reason`.
const CHECK: &str = r#"
import sys, xml.etree.ElementTree as ET
root = ET.fromstring(sys.stdin.buffer.read())
assert root.tag == "feedback", root.tag
assert root.findtext("version") == "1.0"
m = root.find("report_metadata")
assert m.findtext("org_name") and m.findtext("email") and m.findtext("report_id")
assert int(m.findtext("date_range/begin")) < int(m.findtext("date_range/end"))
p = root.find("policy_published")
assert p.findtext("domain") == "example.org" and p.findtext("p") == "quarantine"
assert p.findtext("pct") == "100"
for r in root.findall("record"):
    e = r.find("row/policy_evaluated")
    assert r.findtext("identifiers/header_from") == "example.org"
    assert r.find("auth_results/spf/domain") is not None
    print(r.findtext("row/source_ip"), r.findtext("row/count"), e.findtext("disposition"),
          e.findtext("dkim"), e.findtext("spf"), e.findtext("reason/type") or "-")
"#;

fn message(from: &str, subject: &str) -> String {
    format!(
        "From: {from}\r\nTo: sales@{A}\r\nSubject: {subject}\r\nMessage-ID: <{subject}@t>\r\n\
         Date: Fri, 27 Nov 2026 10:00:00 +0000\r\n\r\nHello.\r\n"
    )
}

/// The gzipped XML attached to a report message.
fn attached_xml(raw: &[u8]) -> Vec<u8> {
    let parsed = mail_parser::MessageParser::default().parse(raw).expect("parsed"); // ok: test
    let gz = parsed.attachment(0).expect("an attachment").contents(); // ok: test
    let mut xml = Vec::new();
    flate2::read::GzDecoder::new(gz).read_to_end(&mut xml).expect("gzip"); // ok: test
    xml
}

fn python_rows(xml: &[u8]) -> Vec<String> {
    let mut child = Command::new("python3")
        .args(["-c", CHECK])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3"); // ok: test
    child.stdin.take().expect("stdin").write_all(xml).expect("write"); // ok: test
    let out = child.wait_with_output().expect("python3 ran"); // ok: test
    assert!(out.status.success(), "python rejected:\n{}", String::from_utf8_lossy(xml));
    let mut rows: Vec<String> =
        String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect();
    rows.sort();
    rows
}

#[test]
fn received_mail_is_reported_to_the_consenting_rua_once_the_period_ends() {
    let w = MailWorld::start_with(
        &[("EDGEMAIL_REPORTS_DMARC_SEND", "true"), ("EDGEMAIL_REPORTS_DMARC_INTERVAL", "2s")],
        &[],
    );
    w.dns.add_txt("_dmarc.example.org", POLICY);
    w.dns.add_txt("example.org", "v=spf1 ip4:127.0.0.1 -all");
    // example.net agrees to receive example.org's reports; outsider.example.com does not.
    w.dns.add_txt("example.org._report._dmarc.example.net", "v=DMARC1");
    w.dns.add_mx("outsider.example.com", 10, "mx.example.org");

    let to = format!("sales@{A}");
    for n in 0..2 {
        let reply = send_one(
            w.server.smtp,
            "news@example.org",
            &to,
            &message("news@example.org", &n.to_string()),
        );
        assert!(reply.starts_with("250"), "{reply}");
    }
    let spoof = message("ceo@example.org", "spoof");
    let reply = send_one(w.server.smtp, "x@elsewhere.example.com", &to, &spoof);
    assert!(reply.starts_with("250"), "quarantine files it in Junk: {reply}");

    // The period (2 s) ends, the sender looks every second, the queue delivers.
    let mut reports: Vec<Received> = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while reports.iter().map(|r| r.rcpt_to.len()).sum::<usize>() < 2 {
        let seen: Vec<String> = w
            .sink
            .messages()
            .iter()
            .map(|m| String::from_utf8_lossy(&m.data).into_owned())
            .collect();
        assert!(std::time::Instant::now() < deadline, "{seen:?}\n{}", w.server.log());
        std::thread::sleep(Duration::from_millis(200));
        reports = w
            .sink
            .messages()
            .into_iter()
            .filter(|m| m.data.windows(13).any(|x| x == b"Report Domain"))
            .collect();
    }
    let mut rcpts: Vec<String> = reports.iter().flat_map(|r| r.rcpt_to.clone()).collect();
    rcpts.sort();
    assert_eq!(rcpts, ["agg@example.net", "dmarc@example.org"]);
    let raw = &reports[0].data;
    let text = String::from_utf8_lossy(raw);
    assert!(text.contains(&format!("Subject: Report Domain: example.org Submitter: {A}")));
    assert!(text.contains(&format!("From: \"DMARC aggregate reports\" <dmarc-reports@{A}>")));
    let signatures = verify_dkim(&w.dns, raw);
    assert!(
        !signatures.is_empty() && signatures.iter().all(|(_, r)| r == "Pass"),
        "{signatures:?}"
    );

    let rows = python_rows(&attached_xml(raw));
    assert_eq!(
        rows,
        ["127.0.0.1 1 quarantine fail fail -", "127.0.0.1 2 none fail pass -"],
        "two aligned passes by SPF, one spoof quarantined"
    );

    // Nothing more is sent for quiet periods, and each group was sent once.
    std::thread::sleep(Duration::from_secs(3));
    let again = w
        .sink
        .messages()
        .iter()
        .filter(|m| m.data.windows(13).any(|x| x == b"Report Domain"))
        .count();
    assert_eq!(again, reports.len());

    // Our own reports-in reads what our reports-out wrote.
    let dmarc_to = format!("dmarc-reports@{A}");
    let back = String::from_utf8_lossy(raw).into_owned();
    let reply = send_one(w.server.smtp, "dmarc-reports@example.org", &dmarc_to, &back);
    assert!(reply.starts_with("250"), "{reply}");
    let summary = w.api().get("/v1/dmarc-reports").expect(200).json();
    assert_eq!(summary["reports"], 1, "{summary}");
    assert_eq!(summary["messages"], 3, "{summary}");
    let source = &summary["sources"][0];
    assert_eq!(source["sourceIp"], "127.0.0.1", "{summary}");
    assert_eq!(source["dmarc"]["pass"], 2, "{summary}");
    assert_eq!(source["disposition"]["quarantine"], 1, "{summary}");
}
