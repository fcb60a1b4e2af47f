//! Delivery status notifications (RFC 3464) as this server writes them to a sender: a
//! `multipart/report; report-type=delivery-status` with a part for people, a
//! `message/delivery-status` part for programs (Reporting-MTA, then per recipient
//! Final-Recipient, Action: failed, Status, Diagnostic-Code) and the original's header as
//! `text/rfc822-headers`. When an address or the original header holds UTF-8 (SMTPUTF8 mail),
//! the parts become their RFC 6533 forms (`message/global-delivery-status`, `utf-8;` addresses,
//! `message/global-headers`), which carry UTF-8 as it is.

use mail_builder::MessageBuilder;
use mail_builder::headers::address::Address;
use mail_builder::headers::content_type::ContentType;
use mail_builder::headers::raw::Raw;
use mail_builder::mime::MimePart;
use mail_parser::MimeHeaders;

use crate::error::{Error, Result};

/// One recipient the message could not reach.
pub struct Failed<'a> {
    pub recipient: &'a str,
    /// The receiver's reply, or our reason.
    pub reply: &'a str,
    /// Given up after retrying (a temporary failure that lasted), rather than refused outright.
    pub gave_up: bool,
}

/// What a notification says.
pub struct Report<'a> {
    /// This server's host name (Reporting-MTA, and the From address's domain).
    pub reporting_mta: &'a str,
    /// The sender the notification goes to.
    pub to: &'a str,
    /// Without angle brackets.
    pub message_id: &'a str,
    /// The original message (its header is returned; the body is not).
    pub original: &'a [u8],
    pub subject: &'a str,
    /// When the original was accepted, and now (Unix ms).
    pub arrival_ms: u64,
    pub now_ms: u64,
    pub failed: &'a [Failed<'a>],
}

/// The most of the original's header returned: a DSN is no way to mail a large header back.
const MAX_HEADER: usize = 32 * 1024;
/// The longest diagnostic kept (a field line stays within RFC 5322's 998 characters).
const MAX_DIAGNOSTIC: usize = 800;

/// The notification as a message ready to store.
pub fn build(r: &Report<'_>) -> Result<Vec<u8>> {
    let header = header_of(r.original);
    let global = !header.is_ascii() || r.failed.iter().any(|f| !f.recipient.is_ascii());
    let (status_type, headers_type) = if global {
        ("message/global-delivery-status", "message/global-headers")
    } else {
        ("message/delivery-status", "text/rfc822-headers")
    };
    // Already 7-bit text with CRLF line ends (or UTF-8 in the global forms): written as it is,
    // since RFC 3464 readers parse these parts as header fields, not as encoded text.
    let encoding = if global { "8bit" } else { "7bit" };
    let status =
        MimePart::new(ContentType::new(status_type), status_fields(r, global).into_bytes())
            .transfer_encoding(encoding);
    let original =
        MimePart::new(ContentType::new(headers_type), header).transfer_encoding(encoding);
    let report = MimePart::new(
        ContentType::new("multipart/report").attribute("report-type", "delivery-status"),
        vec![MimePart::new("text/plain", human(r)), status, original],
    );
    let from = format!("MAILER-DAEMON@{}", r.reporting_mta);
    MessageBuilder::new()
        .from(Address::new_address(Some("Mail Delivery System"), from))
        .to(r.to)
        .subject("Undelivered Mail Returned to Sender")
        .date((r.now_ms / 1000) as i64)
        .message_id(r.message_id)
        // RFC 3834 section 5: a notification is an automatic message; nothing answers it.
        .header("Auto-Submitted", Raw::new("auto-replied"))
        .body(report)
        .write_to_vec()
        .map_err(Error::internal)
}

/// Whether `message` is itself automatic: a delivery report (RFC 3464), or a message marked
/// `Auto-Submitted` other than `no` (RFC 3834). No notification is ever written about one, so
/// two servers cannot bounce reports at each other.
pub fn is_automatic(message: &[u8]) -> bool {
    let head = header_of(message);
    let Some(parsed) = mail_parser::MessageParser::default().parse_headers(&head) else {
        return false;
    };
    let report = parsed.content_type().is_some_and(|ct| {
        ct.c_type.eq_ignore_ascii_case("multipart")
            && ct.subtype().is_some_and(|s| s.eq_ignore_ascii_case("report"))
            && ct.attribute("report-type").is_some_and(|t| {
                t.eq_ignore_ascii_case("delivery-status")
                    || t.eq_ignore_ascii_case("global-delivery-status")
            })
    });
    let auto = parsed
        .header_raw("Auto-Submitted")
        .is_some_and(|v| !v.trim().eq_ignore_ascii_case("no") && !v.trim().is_empty());
    report || auto
}

/// The header of `message` (with its last line end), cut at a line end to `MAX_HEADER`.
fn header_of(message: &[u8]) -> Vec<u8> {
    let end = memchr::memmem::find(message, b"\r\n\r\n")
        .map(|at| at + 2)
        .or_else(|| memchr::memmem::find(message, b"\n\n").map(|at| at + 1))
        .unwrap_or(message.len());
    let mut head = &message[..end];
    if head.len() > MAX_HEADER {
        let cut = head[..MAX_HEADER].iter().rposition(|b| *b == b'\n').map_or(0, |at| at + 1);
        head = &head[..cut];
    }
    // Line ends as RFC 5322 has them, whatever the original used.
    let mut out = Vec::with_capacity(head.len() + 64);
    for line in head.split_inclusive(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        out.extend_from_slice(line.strip_suffix(b"\r").unwrap_or(line));
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The part for people.
fn human(r: &Report<'_>) -> String {
    let mut text = format!(
        "This is the mail system at {}.\r\n\r\n\
         Your message could not be delivered to one or more recipients. It is attached below \
         (its header only).\r\n\r\nSubject: {}\r\n\r\n",
        r.reporting_mta,
        one_line(r.subject, 200)
    );
    for f in r.failed {
        let why = if f.gave_up { "delivery was given up after retrying" } else { "refused" };
        text.push_str(&format!(
            "<{}>: {why}:\r\n    {}\r\n\r\n",
            one_line(f.recipient, 320),
            one_line(f.reply, MAX_DIAGNOSTIC)
        ));
    }
    text
}

/// The fields for programs: per message, then one group per recipient (RFC 3464 section 2).
fn status_fields(r: &Report<'_>, global: bool) -> String {
    let date = |ms: u64| mail_builder::headers::date::Date::new((ms / 1000) as i64).to_rfc822();
    let mut out = format!(
        "Reporting-MTA: dns; {}\r\nArrival-Date: {}\r\n",
        r.reporting_mta,
        date(r.arrival_ms)
    );
    for f in r.failed {
        let address_type = if global && !f.recipient.is_ascii() { "utf-8" } else { "rfc822" };
        let diagnostic = one_line(f.reply, MAX_DIAGNOSTIC);
        let diagnostic = if global { diagnostic } else { ascii(&diagnostic) };
        out.push_str(&format!(
            "\r\nFinal-Recipient: {address_type}; {}\r\nAction: failed\r\nStatus: {}\r\n\
             Diagnostic-Code: smtp; {diagnostic}\r\nLast-Attempt-Date: {}\r\n",
            one_line(f.recipient, 320),
            status_code(f.reply, f.gave_up),
            date(r.now_ms)
        ));
    }
    out
}

/// The enhanced status code (RFC 3463) the reply carries, or one that says what happened: 5.0.0
/// for a refusal without one, 4.4.7 (delivery time expired) for giving up.
fn status_code(reply: &str, gave_up: bool) -> String {
    let code = reply.split_whitespace().find(|word| {
        let mut parts = word.split('.');
        let class = parts.next();
        let rest: Vec<&str> = parts.collect();
        matches!(class, Some("4" | "5"))
            && rest.len() == 2
            && rest
                .iter()
                .all(|p| (1..=3).contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit()))
    });
    match code {
        Some(code) => code.to_owned(),
        None if gave_up => "4.4.7".to_owned(),
        None => "5.0.0".to_owned(),
    }
}

/// Text fit for one field line: no line breaks or controls, at most `max` characters.
fn one_line(text: &str, max: usize) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).take(max).collect()
}

/// Non-ASCII characters as `?` (a 7-bit part stays 7-bit).
fn ascii(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii() { c } else { '?' }).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ORIGINAL: &[u8] = b"From: sales@alpha.test\r\nTo: gone@example.org\r\nSubject: Offer\r\n\
        Message-ID: <orig@alpha.test>\r\n\r\nthe body is not returned\r\n";

    fn report<'a>(original: &'a [u8], failed: &'a [Failed<'a>]) -> Report<'a> {
        Report {
            reporting_mta: "mx.alpha.test",
            to: "sales@alpha.test",
            message_id: "dsn1@mx.alpha.test",
            original,
            subject: "Offer",
            arrival_ms: 1_795_305_600_000,
            now_ms: 1_795_305_660_000,
            failed,
        }
    }

    #[test]
    fn a_report_has_the_three_parts_rfc_3464_asks_for() {
        let failed = [
            Failed {
                recipient: "gone@example.org",
                reply: "550 5.1.1 no such user",
                gave_up: false,
            },
            Failed {
                recipient: "slow@example.net",
                reply: "gave up after 60s; last: 451 4.3.0 try later",
                gave_up: true,
            },
        ];
        let raw = build(&report(ORIGINAL, &failed)).expect("build"); // ok: test
        let text = String::from_utf8(raw.clone()).expect("utf-8"); // ok: test
        for needle in [
            "Content-Type: multipart/report; report-type=\"delivery-status\"",
            "Content-Type: message/delivery-status",
            "Reporting-MTA: dns; mx.alpha.test",
            "Final-Recipient: rfc822; gone@example.org\r\nAction: failed\r\nStatus: 5.1.1\r\n\
             Diagnostic-Code: smtp; 550 5.1.1 no such user",
            "Final-Recipient: rfc822; slow@example.net\r\nAction: failed\r\nStatus: 4.3.0",
            "Content-Type: text/rfc822-headers",
            "Subject: Offer\r\nMessage-ID: <orig@alpha.test>\r\n",
            "Auto-Submitted: auto-replied",
            "From: \"Mail Delivery System\" <MAILER-DAEMON@mx.alpha.test>",
        ] {
            assert!(text.contains(needle), "{needle:?} missing from\n{text}");
        }
        assert!(!text.contains("the body is not returned"));
        // mail-parser reads it as a report, and the report as one about that message.
        let parsed = mail_parser::MessageParser::default().parse(&raw).expect("parse"); // ok: test
        assert_eq!(parsed.parts.len(), 4, "the report and its three parts");
        assert!(is_automatic(&raw), "never a notification about a notification");
        assert!(!is_automatic(ORIGINAL));
    }

    #[test]
    fn utf8_addresses_and_headers_take_the_global_forms() {
        let original = "From: sales@alpha.test\r\nTo: \u{7528}\u{6237}@example.org\r\n\r\nhi\r\n";
        let failed = [Failed {
            recipient: "\u{7528}\u{6237}@example.org",
            reply: "550 5.6.7 the receiving server mx.example.org does not support SMTPUTF8",
            gave_up: false,
        }];
        let raw = build(&report(original.as_bytes(), &failed)).expect("build"); // ok: test
        let text = String::from_utf8(raw).expect("utf-8"); // ok: test
        assert!(text.contains("Content-Type: message/global-delivery-status"), "{text}");
        assert!(text.contains("Final-Recipient: utf-8; \u{7528}\u{6237}@example.org"), "{text}");
        assert!(text.contains("Status: 5.6.7"), "{text}");
        assert!(text.contains("Content-Type: message/global-headers"), "{text}");
    }

    #[test]
    fn status_codes_come_from_the_reply_or_say_what_happened() {
        assert_eq!(status_code("550 5.7.1 blocked", false), "5.7.1");
        assert_eq!(status_code("550 no such user", false), "5.0.0");
        assert_eq!(status_code("gave up after 3s; last: connection refused", true), "4.4.7");
        assert_eq!(status_code("gave up; last: 4.4.1 no mail exchanger", true), "4.4.1");
        let auto = b"Auto-Submitted: auto-replied\r\nSubject: away\r\n\r\n";
        assert!(is_automatic(auto));
        assert!(!is_automatic(b"Auto-Submitted: no\r\n\r\n"));
    }
}
