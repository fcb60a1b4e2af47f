//! What a message shows a search, decoded and lower-cased once for every criterion to match in.
//!
//! Header fields: each field's raw bytes, its value with RFC 2047 encoded words decoded (in any
//! charset mail-parser knows), and for address fields each address as `name <address>` (so a
//! display name and an address both match).
//!
//! The body: every text part (text/plain and any other text/*, decoded from its transfer
//! encoding and its charset by the parser), HTML parts as their text (tags stripped by
//! `mail::text::html_to_text`), the names of attached files, and attached messages (also when
//! base64-encoded): their header fields decoded, and their parts the same way. Binary parts are
//! not searched, nor are transfer-encoded bytes (a short word would match inside base64).
//!
//! The message was bounded before parsing (`mime::bound`: at most 100 containers deep and
//! 10,000 parts), and the walk keeps a stack rather than recursing; the decoding is paid for
//! from the search's budget and stops when it runs out.

use mail_parser::parsers::MessageStream;
use mail_parser::{Address, HeaderValue, Message, MimeHeaders, PartType};

use super::budget::Budget;
use super::needle::{Needle, lower};

/// One header field of a message.
pub struct Field<'a> {
    name: &'a str,
    /// The value as stored.
    raw: &'a [u8],
    /// The value decoded, lower-cased: the unstructured reading, and the addresses.
    decoded: Vec<String>,
}

impl Field<'_> {
    pub fn named(&self, name: &str) -> bool {
        self.name.eq_ignore_ascii_case(name)
    }

    /// The bytes a match reads.
    pub fn size(&self) -> usize {
        self.raw.len() + self.decoded.iter().map(String::len).sum::<usize>()
    }

    pub fn holds(&self, needle: &Needle) -> bool {
        needle.in_raw(self.raw) || self.decoded.iter().any(|d| needle.in_text(d))
    }
}

/// The header fields of `message` (its own, not those of attached messages), in order.
pub fn fields<'a>(message: &'a Message<'_>) -> Vec<Field<'a>> {
    let buffer: &[u8] = &message.raw_message;
    message
        .headers()
        .iter()
        .map(|h| {
            let raw =
                buffer.get(h.offset_start as usize..h.offset_end as usize).unwrap_or_default();
            let mut decoded = Vec::with_capacity(2);
            // Every field read as unstructured text: RFC 2047 words decoded in any field,
            // including those the parser keeps raw (HEADER X-Anything).
            if let HeaderValue::Text(t) = MessageStream::new(raw).parse_unstructured() {
                decoded.push(lower(&t));
            }
            if let HeaderValue::Address(a) = &h.value {
                decoded.push(lower(&addresses(a)));
            }
            Field { name: h.name.as_str(), raw, decoded }
        })
        .collect()
}

/// An address field as `name <address>, ...` (groups as `group: ...;`): display names decoded
/// even where they were quoted, as the parser reads them.
fn addresses(a: &Address<'_>) -> String {
    let one = |out: &mut String, name: Option<&str>, address: Option<&str>| {
        if !out.is_empty() && !out.ends_with(": ") {
            out.push_str(", ");
        }
        match (name, address) {
            (Some(n), Some(a)) => out.push_str(&format!("{n} <{a}>")),
            (Some(x), None) | (None, Some(x)) => out.push_str(x),
            (None, None) => {}
        }
    };
    let mut out = String::new();
    match a {
        Address::List(list) => {
            for addr in list {
                one(&mut out, addr.name.as_deref(), addr.address.as_deref());
            }
        }
        Address::Group(groups) => {
            for g in groups {
                if let Some(name) = &g.name {
                    out.push_str(&format!("{}{name}: ", if out.is_empty() { "" } else { " " }));
                }
                for addr in &g.addresses {
                    one(&mut out, addr.name.as_deref(), addr.address.as_deref());
                }
                if g.name.is_some() {
                    out.push(';');
                }
            }
        }
    }
    out
}

/// The searchable text of `message`'s body, lower-cased, piece by piece; short when the budget
/// ran out while decoding (the budget then says so).
pub fn body(message: &Message<'_>, budget: &Budget) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![(message, true)];
    while let Some((m, top)) = stack.pop() {
        if !top {
            // An attached message's header belongs to the text of the message it is in.
            for f in fields(m) {
                if !budget.spend(f.size()) {
                    return out;
                }
                out.push(lower(&String::from_utf8_lossy(f.raw)));
                out.extend(f.decoded);
            }
        }
        for (i, part) in m.parts.iter().enumerate() {
            if i > 0
                && let Some(name) = part.attachment_name()
            {
                out.push(lower(name));
            }
            let text = match &part.body {
                PartType::Text(t) => {
                    if !budget.spend(t.len()) {
                        return out;
                    }
                    lower(t)
                }
                PartType::Html(h) => {
                    if !budget.spend(h.len()) {
                        return out;
                    }
                    lower(&crate::mail::text::html_to_text(h))
                }
                PartType::Message(inner) => {
                    stack.push((inner, false));
                    continue;
                }
                PartType::Binary(_) | PartType::InlineBinary(_) | PartType::Multipart(_) => {
                    continue;
                }
            };
            out.push(text);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::imap::search::needle::Charset;

    fn parse(raw: &str) -> Message<'_> {
        mail_parser::MessageParser::default().parse(raw.as_bytes()).expect("a message") // ok: test
    }

    fn field_holds(raw: &str, name: &str, needle: &str) -> bool {
        let m = parse(raw);
        let n = Needle::new(needle.as_bytes(), Charset::Utf8);
        fields(&m).iter().any(|f| f.named(name) && f.holds(&n))
    }

    fn body_holds(raw: &str, needle: &str) -> bool {
        let m = parse(raw);
        let n = Needle::new(needle.as_bytes(), Charset::Utf8);
        body(&m, &Budget::new(u64::MAX)).iter().any(|t| n.in_text(t))
    }

    const WORDS: &str = "From: =?UTF-8?B?QsOpYSBNw7xsbGVy?= <bea@example.net>\r\n\
        To: \"Smith, John\" <john@example.com>, team: carl@example.net;\r\n\
        Subject: =?ISO-8859-1?Q?Caf=E9_cr=E8me?= and =?UTF-8?B?w6lsw6h2ZQ==?=\r\n\
        X-Note: =?KOI8-R?B?8PLp9+X0?=\r\n\r\nhi\r\n";

    #[test]
    fn header_fields_match_decoded_raw_and_as_addresses_in_any_case() {
        assert!(field_holds(WORDS, "subject", "CAFÉ CRÈME"));
        assert!(field_holds(WORDS, "Subject", "crème and élève"));
        assert!(field_holds(WORDS, "Subject", "=?iso-8859-1?q?caf=e9"), "the raw value too");
        assert!(field_holds(WORDS, "From", "béa müller"));
        assert!(field_holds(WORDS, "From", "Béa Müller <BEA@example.net>"));
        assert!(field_holds(WORDS, "to", "smith, john"));
        assert!(field_holds(WORDS, "To", "carl@example.net"));
        assert!(field_holds(WORDS, "x-note", "привет"), "any field, any charset");
        assert!(field_holds(WORDS, "Subject", ""), "an empty string: the field exists");
        assert!(!field_holds(WORDS, "Cc", ""));
        assert!(!field_holds(WORDS, "Subject", "bea@example.net"));
    }

    #[test]
    fn the_body_is_every_text_part_html_as_text_and_attached_messages() {
        let raw = "From: a@example.org\r\nSubject: outer\r\nMIME-Version: 1.0\r\n\
            Content-Type: multipart/mixed; boundary=o\r\n\r\n\
            --o\r\nContent-Type: multipart/alternative; boundary=a\r\n\r\n\
            --a\r\nContent-Type: text/plain; charset=iso-8859-1\r\n\
            Content-Transfer-Encoding: quoted-printable\r\n\r\nplain caf=E9\r\n\
            --a\r\nContent-Type: text/html; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n\
            PHA+T25seSBpbiA8Yj5IVE1MPC9iPiB0ZXh0PC9wPg==\r\n--a--\r\n\
            --o\r\nContent-Type: application/pdf; name=\"=?UTF-8?Q?r=C3=A9sum=C3=A9.pdf?=\"\r\n\
            Content-Transfer-Encoding: base64\r\n\r\nSlZCRVJpMHhMalFL\r\n\
            --o\r\nContent-Type: message/rfc822\r\n\r\n\
            From: inner@example.net\r\nSubject: =?UTF-8?Q?inn=C3=A9r?=\r\n\r\nforwarded words\r\n\
            --o--\r\n";
        assert!(body_holds(raw, "PLAIN CAFÉ"), "quoted-printable Latin-1");
        assert!(body_holds(raw, "only in html text"), "base64 HTML, tags stripped");
        assert!(!body_holds(raw, "<b>"));
        assert!(body_holds(raw, "résumé.pdf"), "attached file names");
        assert!(!body_holds(raw, "SlZCRV"), "not inside base64");
        assert!(body_holds(raw, "forwarded words"), "an attached message's text");
        assert!(body_holds(raw, "innér"), "an attached message's header, decoded");
        assert!(!body_holds(raw, "outer"), "the message's own header is not its body");
    }

    #[test]
    fn decoding_stops_when_the_budget_runs_out() {
        let raw = format!("Subject: s\r\n\r\n{}\r\n", "word ".repeat(1000));
        let m = parse(&raw);
        let budget = Budget::new(100);
        assert!(body(&m, &budget).is_empty() && budget.exhausted());
    }
}
