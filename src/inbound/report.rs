//! Machine reports about mail we sent: delivery status notifications (RFC 3464) and abuse
//! feedback (ARF, RFC 5965). Only the fields we act on are read.

use mail_parser::{Message, MimeHeaders};

/// A recipient a DSN reports as permanently failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub recipient: String,
    /// `5.1.1 ...`: the status and diagnostic, for the delivery record.
    pub reason: String,
}

/// The text of every part of content type `message/<subtype>`.
fn report_parts<'a>(message: &'a Message<'a>, subtype: &str) -> Vec<String> {
    message
        .parts
        .iter()
        .filter(|p| {
            p.content_type().is_some_and(|ct| {
                ct.ctype().eq_ignore_ascii_case("message")
                    && ct.subtype().is_some_and(|s| s.eq_ignore_ascii_case(subtype))
            })
        })
        .map(|p| match p.message() {
            Some(inner) => String::from_utf8_lossy(inner.raw_message()).into_owned(),
            None => String::from_utf8_lossy(p.contents()).into_owned(),
        })
        .collect()
}

/// `Name: value` fields of a report body (continuation lines folded), names lower-cased.
fn fields(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.starts_with([' ', '\t']) {
            if let Some(last) = out.last_mut() {
                last.1.push(' ');
                last.1.push_str(line.trim());
            }
        } else if let Some((name, value)) = line.split_once(':') {
            out.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    out
}

/// The address of a typed address field such as `rfc822; user@example.org`.
fn typed_address(value: &str) -> String {
    value.split_once(';').map_or(value, |(_, a)| a).trim().trim_matches(['<', '>']).to_owned()
}

/// Permanent failures reported by a DSN: `Action: failed` with a 5.x.x status.
pub fn dsn_failures(message: &Message<'_>) -> Vec<Failure> {
    let mut out = Vec::new();
    for body in report_parts(message, "delivery-status") {
        // Per-recipient groups are separated by blank lines; the first group is per-message.
        let groups: Vec<&str> = body.split("\n\n").flat_map(|g| g.split("\r\n\r\n")).collect();
        for group in groups {
            let f = fields(group);
            let get = |n: &str| f.iter().find(|(k, _)| k == n).map(|(_, v)| v.as_str());
            let Some(recipient) = get("final-recipient").or(get("original-recipient")) else {
                continue;
            };
            let action = get("action").unwrap_or("").to_ascii_lowercase();
            let status = get("status").unwrap_or("");
            if action == "failed" && status.starts_with('5') {
                let diagnostic = get("diagnostic-code").map(typed_address).unwrap_or_default();
                out.push(Failure {
                    recipient: typed_address(recipient),
                    reason: format!("{status} {diagnostic}").trim().to_owned(),
                });
            }
        }
    }
    out
}

/// The recipient an ARF complaint is about, if the message is one.
pub fn complaint(message: &Message<'_>) -> Option<String> {
    let report = report_parts(message, "feedback-report").into_iter().next()?;
    let f = fields(&report);
    let get = |n: &str| f.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    if let Some(rcpt) = get("original-rcpt-to") {
        return Some(typed_address(&rcpt));
    }
    // Otherwise the To of the attached original.
    message
        .parts
        .iter()
        .filter_map(|p| p.message())
        .find_map(|m| m.to().and_then(|a| a.first()).and_then(|a| a.address()).map(str::to_owned))
}

/// Whether `part` is a `text/rfc822-headers` part (RFC 6522): the original's header alone.
fn is_returned_headers(part: &mail_parser::MessagePart<'_>) -> bool {
    part.content_type().is_some_and(|ct| {
        ct.ctype().eq_ignore_ascii_case("text")
            && ct.subtype().is_some_and(|s| s.eq_ignore_ascii_case("rfc822-headers"))
    })
}

/// The Message-IDs a DSN or complaint refers to (the attached original's, whole or only its
/// header, or the report's).
pub fn referenced_message_ids(message: &Message<'_>) -> Vec<String> {
    let mut ids = Vec::new();
    for part in &message.parts {
        if let Some(inner) = part.message()
            && let Some(id) = inner.message_id()
        {
            ids.push(format!("<{id}>"));
        } else if is_returned_headers(part)
            // A header block parses as a message with an empty body.
            && let Some(returned) = crate::mime::parse_owned(part.contents())
            && let Some(id) = returned.message_id()
        {
            ids.push(format!("<{id}>"));
        }
    }
    for body in report_parts(message, "delivery-status") {
        for (k, v) in fields(&body) {
            if k == "original-envelope-id" || k == "x-original-message-id" {
                ids.push(v);
            }
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use mail_parser::MessageParser;

    use super::*;

    const DSN: &str = "From: MAILER-DAEMON@mx.example.org\r\nTo: bounces+em_1@alpha.test\r\n\
        Subject: Undelivered\r\nMIME-Version: 1.0\r\nContent-Type: multipart/report; \
        report-type=delivery-status; boundary=\"b\"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n\
        Could not deliver.\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; \
        mx.example.org\r\n\r\nFinal-Recipient: rfc822; gone@example.org\r\nAction: failed\r\n\
        Status: 5.1.1\r\nDiagnostic-Code: smtp; 550 5.1.1 no such user\r\n\r\n\
        Final-Recipient: rfc822; later@example.org\r\nAction: delayed\r\nStatus: 4.4.1\r\n\r\n\
        --b\r\nContent-Type: message/rfc822\r\n\r\nMessage-ID: <orig@alpha.test>\r\nTo: \
        gone@example.org\r\nSubject: hi\r\n\r\nbody\r\n--b--\r\n";

    #[test]
    fn reads_permanent_failures_of_a_dsn() {
        let message = MessageParser::default().parse(DSN.as_bytes()).expect("parse"); // ok: test
        let failures = dsn_failures(&message);
        assert_eq!(
            failures,
            [Failure {
                recipient: "gone@example.org".into(),
                reason: "5.1.1 550 5.1.1 no such user".into()
            }]
        );
        assert_eq!(referenced_message_ids(&message), ["<orig@alpha.test>"]);
        let headers_only = DSN.replace(
            "Content-Type: message/rfc822\r\n\r\nMessage-ID: <orig@alpha.test>\r\nTo: \
             gone@example.org\r\nSubject: hi\r\n\r\nbody",
            "Content-Type: text/rfc822-headers\r\n\r\nTo: gone@example.org\r\n\
             Message-ID: <orig@alpha.test>\r\nSubject: hi\r\n",
        );
        assert_ne!(headers_only, DSN);
        let message = MessageParser::default().parse(headers_only.as_bytes()).expect("parse"); // ok: test
        assert_eq!(referenced_message_ids(&message), ["<orig@alpha.test>"]);
        assert_eq!(dsn_failures(&message).len(), 1);
    }

    #[test]
    fn reads_the_recipient_of_a_complaint() {
        let arf = "From: fbl@isp.example\r\nTo: abuse@alpha.test\r\nMIME-Version: 1.0\r\n\
            Content-Type: multipart/report; report-type=feedback-report; boundary=\"b\"\r\n\r\n--b\r\n\
            Content-Type: text/plain\r\n\r\nA complaint.\r\n--b\r\nContent-Type: \
            message/feedback-report\r\n\r\nFeedback-Type: abuse\r\nVersion: 1\r\n\
            Original-Rcpt-To: <angry@example.org>\r\n\r\n--b--\r\n";
        let message = MessageParser::default().parse(arf.as_bytes()).expect("parse"); // ok: test
        assert_eq!(complaint(&message).as_deref(), Some("angry@example.org"));
        let plain =
            MessageParser::default().parse(b"Subject: hi\r\n\r\nhello".as_slice()).expect("parse"); // ok: test
        assert_eq!(complaint(&plain), None);
        assert!(dsn_failures(&plain).is_empty());
    }
}
