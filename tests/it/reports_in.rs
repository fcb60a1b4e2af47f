//! Reports in, over the real MX: a Google-style DMARC aggregate report (zipped) and a
//! Microsoft-style one (gzipped), each with several records, and a gzipped TLS-RPT report are
//! sent by SMTP to `dmarc-reports@` and `tls-reports@` and summed by the API; other mail to
//! those addresses is dropped, never filed. Hostile reports (a billion-laughs XML, a gzip that
//! inflates to 10 GiB) are refused while the server's peak resident memory (VmHWM) stays under
//! a stated bound.

use std::io::Write;

use base64::Engine;
use serde_json::Value;

use crate::harness::A;
use crate::mail_world::MailWorld;
use crate::smtp_client::send_one;

/// How much the server's peak resident memory may grow while it refuses both bombs. The
/// attachment itself is about 10 MB (14 MB as base64, held while it is decoded); 10 GiB
/// inflated would be a thousand times this.
const BOMB_GROWTH_MAX: u64 = 160 * 1024 * 1024;

pub(crate) const GOOGLE: &str = include_str!("reports/google.xml");
const MICROSOFT: &str = include_str!("reports/microsoft.xml");
const TLSRPT: &str = include_str!("reports/tlsrpt.json");

/// A message to `to` with `data` attached as `name` (`ctype`), base64 in 76-column lines.
pub(crate) fn with_attachment(
    to: &str,
    subject: &str,
    ctype: &str,
    name: &str,
    data: &[u8],
) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(data);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(76)
        .map(|c| std::str::from_utf8(c).expect("base64 is ASCII")) // ok: test
        .collect();
    format!(
        "From: noreply-dmarc-support@reports.example.org\r\nTo: {to}\r\nSubject: {subject}\r\n\
         Message-ID: <{subject}@reports.example.org>\r\nDate: Thu, 26 Nov 2026 10:00:00 +0000\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=\"b1\"\r\n\r\n\
         --b1\r\nContent-Type: text/plain\r\n\r\nThis is an aggregate report.\r\n\
         --b1\r\nContent-Type: {ctype}; name=\"{name}\"\r\nContent-Transfer-Encoding: base64\r\n\
         Content-Disposition: attachment; filename=\"{name}\"\r\n\r\n{}\r\n--b1--\r\n",
        lines.join("\r\n")
    )
}

pub(crate) fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    e.write_all(data).expect("gzip"); // ok: test
    e.finish().expect("gzip") // ok: test
}

fn zip_of(name: &str, data: &[u8]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    w.start_file(name, options).expect("zip"); // ok: test
    w.write_all(data).expect("zip"); // ok: test
    w.finish().expect("zip").into_inner() // ok: test
}

/// A gzip stream that inflates to `gib` GiB of zeros, built from one fully flushed deflate
/// block of 1 MiB of zeros repeated (each starts on a byte boundary with an empty history, so
/// copies concatenate); its trailer is not checked by anyone who stops at a cap.
fn gzip_bomb(gib: usize) -> Vec<u8> {
    let mut c = flate2::Compress::new(flate2::Compression::best(), false);
    let zeros = vec![0u8; 1 << 20];
    let block = |c: &mut flate2::Compress| {
        let mut out = Vec::with_capacity(1 << 16);
        c.compress_vec(&zeros, &mut out, flate2::FlushCompress::Full).expect("deflate"); // ok: test
        out
    };
    let first = block(&mut c);
    let steady = block(&mut c);
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    out.extend_from_slice(&first);
    for _ in 1..gib * 1024 {
        out.extend_from_slice(&steady);
    }
    let mut end = Vec::with_capacity(64);
    c.compress_vec(&[], &mut end, flate2::FlushCompress::Finish).expect("deflate"); // ok: test
    out.extend_from_slice(&end);
    out.extend_from_slice(&[0; 8]);
    out
}

fn billion_laughs() -> String {
    let mut dtd = String::from("<!ENTITY lol0 \"lol\">");
    for i in 1..10 {
        let refs = format!("&lol{};", i - 1).repeat(10);
        dtd.push_str(&format!("<!ENTITY lol{i} \"{refs}\">"));
    }
    GOOGLE.replacen("<feedback>", &format!("<!DOCTYPE feedback [{dtd}]><feedback>"), 1).replacen(
        "<org_name>google.com</org_name>",
        "<org_name>&lol9;</org_name>",
        1,
    )
}

/// VmHWM (peak resident set) of process `pid`, in bytes.
fn peak_rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status"); // ok: test
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).expect("VmHWM"); // ok: test
    let kb: u64 = line.split_whitespace().nth(1).and_then(|n| n.parse().ok()).expect("kB"); // ok: test
    kb * 1024
}

fn deliver(w: &MailWorld, to: &str, message: &str) {
    let reply = send_one(w.server.smtp, "noreply@reports.example.org", to, message);
    assert!(reply.starts_with("250"), "{to}: {reply}");
}

fn source<'a>(summary: &'a Value, ip: &str) -> &'a Value {
    let sources = summary["sources"].as_array().expect("sources"); // ok: test
    sources.iter().find(|s| s["sourceIp"] == ip).unwrap_or_else(|| panic!("{ip} in {summary}"))
}

#[test]
fn aggregate_reports_sent_to_the_mx_are_summed_and_bombs_refused() {
    let w = MailWorld::start();
    let api = w.api();
    let empty = api.get("/v1/dmarc-reports").expect(200).json();
    assert_eq!(empty["reports"], 0, "{empty}");

    let dmarc_to = format!("dmarc-reports@{A}");
    let google = zip_of("google.com!alpha.test!1764028800!1764115199.xml", GOOGLE.as_bytes());
    let name = "google.com!alpha.test!1764028800!1764115199.zip";
    deliver(&w, &dmarc_to, &with_attachment(&dmarc_to, "g1", "application/zip", name, &google));
    let microsoft = gzip(MICROSOFT.as_bytes());
    let name = "enterprise.protection.outlook.com!alpha.test!1764028800!1764115200.xml.gz";
    deliver(&w, &dmarc_to, &with_attachment(&dmarc_to, "m1", "application/gzip", name, &microsoft));
    let tls_to = format!("tls-reports@{A}");
    let tls = gzip(TLSRPT.as_bytes());
    let name = "google.com!alpha.test!1764028800!1764115199!001.json.gz";
    deliver(&w, &tls_to, &with_attachment(&tls_to, "t1", "application/tlsrpt+gzip", name, &tls));
    // Anything else to those addresses is dropped, never filed.
    let chat = format!("From: ann@example.org\r\nTo: {dmarc_to}\r\nSubject: hello\r\n\r\nHi!\r\n");
    deliver(&w, &dmarc_to, &chat);
    // The same reports sent again (a retry, packed another way) are counted once.
    let again = gzip(GOOGLE.as_bytes());
    let gz = "google.com!alpha.test!1764028800!1764115199.xml.gz";
    deliver(&w, &dmarc_to, &with_attachment(&dmarc_to, "g1", "application/gzip", gz, &again));
    deliver(&w, &tls_to, &with_attachment(&tls_to, "t1", "application/tlsrpt+gzip", name, &tls));

    let summary = api.get("/v1/dmarc-reports?days=7").expect(200).json();
    assert_eq!(summary["reports"], 2, "{summary}");
    assert_eq!(summary["messages"], 1014 + 9 + 3 + 260 + 40 + 2, "{summary}");
    assert_eq!(
        summary["reporters"],
        serde_json::json!([{"org": "Enterprise Outlook", "reports": 1}, {"org": "google.com", "reports": 1}])
    );
    // Our own server, seen by both receivers.
    let ours = source(&summary, "192.0.2.25");
    assert_eq!(ours["count"], 1014 + 260, "{ours}");
    assert_eq!(ours["dmarc"], serde_json::json!({"pass": 1274, "fail": 0}));
    assert_eq!(ours["spf"], serde_json::json!({"pass": 1014, "fail": 260}), "{ours}");
    // A spoofer Google quarantined and Microsoft rejected.
    let spoof = source(&summary, "203.0.113.77");
    assert_eq!(spoof["count"], 9 + 40, "{spoof}");
    assert_eq!(spoof["dmarc"], serde_json::json!({"pass": 0, "fail": 49}));
    assert_eq!(spoof["disposition"], serde_json::json!({"none": 0, "quarantine": 9, "reject": 40}));
    let tls = api.get("/v1/tls-reports").expect(200).json();
    assert_eq!(tls["reports"], 1, "{tls}");
    let policy = &tls["policies"][0];
    assert_eq!(policy["policyDomain"], A, "{tls}");
    assert_eq!((policy["success"].as_u64(), policy["failure"].as_u64()), (Some(812), Some(7)));
    assert_eq!(policy["failures"]["certificate-host-mismatch"], 5, "{tls}");
    let inbox = api.get("/v1/emails?mailbox=sales").expect(200).json();
    assert_eq!(inbox.as_array().map(Vec::len), Some(0), "nothing was filed: {inbox}");
    api.get("/v1/dmarc-reports?days=91").expect(400);
    w.server.client(None).get("/v1/tls-reports").expect(401);

    // The health check hints at the failing source.
    let health = api.get("/v1/domain-health").expect(200).json();
    let detail = health["dmarc"]["detail"].as_str().unwrap_or("");
    assert!(detail.contains("203.0.113.77 (49)"), "{}", health["dmarc"]);

    // Bombs: refused (the message is taken, its report is not) within bounded memory.
    let pid = w.server.child.id();
    let before = peak_rss(pid);
    let laughs = billion_laughs();
    deliver(
        &w,
        &dmarc_to,
        &with_attachment(&dmarc_to, "b1", "text/xml", "lol.xml", laughs.as_bytes()),
    );
    let bomb = gzip_bomb(10);
    assert!(bomb.len() < 12 * 1024 * 1024, "{} bytes", bomb.len());
    deliver(
        &w,
        &dmarc_to,
        &with_attachment(&dmarc_to, "b2", "application/gzip", "big.xml.gz", &bomb),
    );
    let after = peak_rss(pid);
    eprintln!("server peak RSS: {} MiB before the bombs, {} MiB after", before >> 20, after >> 20);
    assert!(after < before + BOMB_GROWTH_MAX, "peak RSS grew from {before} to {after}");
    let still = api.get("/v1/dmarc-reports").expect(200).json();
    assert_eq!(still["reports"], 2, "{still}");
    // The log is written by a background thread: give it a moment.
    let mut refused = Vec::new();
    for _ in 0..100 {
        let log = w.server.log();
        refused = log
            .lines()
            .filter(|l| l.contains("report attachment refused"))
            .map(str::to_owned)
            .collect();
        if refused.len() >= 2 {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let all = refused.join("\n");
    assert!(all.contains("document type declaration is not accepted"), "laughs: {all}");
    assert!(all.contains("bytes decompressed"), "bomb not refused as too large: {all}");
}
