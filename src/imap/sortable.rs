//! A message as SORT and THREAD see it: the fields they order and link by, read once from its
//! header. Only the header block is read, and only its first `MAX_HEADER` bytes; a References
//! field keeps its last `MAX_REFERENCES` ids and ids longer than `MAX_ID` are dropped, so what
//! a hostile message can make the threading hold and walk is bounded per message.

use imap_types::core::NString;
use imap_types::envelope::Address;
use mail_parser::HeaderValue;
use mail_parser::parsers::MessageStream;

use super::envelope::addresses;
use super::message::Loaded;
use super::section::split_fields;
use super::subject::base_subject;

/// The header bytes read: past this a message's fields are not seen (real headers are a few
/// kilobytes; a long Received trail still fits).
pub const MAX_HEADER: usize = 256 << 10;
/// The ids of a References field kept: the nearest ancestors, which are the last ones.
pub const MAX_REFERENCES: usize = 128;
/// The longest message id taken (RFC 5322 lines are at most 998 characters).
pub const MAX_ID: usize = 998;
/// The longest address key kept: comparisons rarely need more than the first characters.
const MAX_KEY: usize = 512;

/// The fields of one message.
#[derive(Debug, Default, Clone)]
pub struct Sortable {
    pub seq: u32,
    pub uid: u32,
    /// INTERNALDATE, in milliseconds.
    pub arrival: u64,
    /// The Date field in UTC milliseconds, or INTERNALDATE when it has none the parser reads
    /// (RFC 5256: the sent date falls back to the internal date).
    pub sent: i64,
    pub size: u64,
    /// The base subject, upper-cased, and whether the subject marks a reply or a forward.
    pub subject: String,
    pub reply: bool,
    /// The local part of the first address of From, To and Cc, upper-cased.
    pub from: String,
    pub to: String,
    pub cc: String,
    /// RFC 5957: the display name of the first From and To address (decoded), or the address
    /// when there is none, upper-cased.
    pub display_from: String,
    pub display_to: String,
    pub message_id: Option<String>,
    /// The parents by References (or In-Reply-To when there is no References), oldest first.
    pub references: Vec<String>,
}

/// The header block of `raw`, up to `MAX_HEADER` bytes, ending after its last full line.
fn header_block(raw: &[u8]) -> &[u8] {
    let capped = &raw[..raw.len().min(MAX_HEADER)];
    let end = capped
        .windows(2)
        .position(|w| w == b"\n\n")
        .map(|i| i + 2)
        .into_iter()
        .chain(capped.windows(3).position(|w| w == b"\n\r\n").map(|i| i + 3))
        .min();
    match end {
        Some(end) => &capped[..end],
        None => &capped[..capped.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1)],
    }
}

/// Reads the fields of `loaded`, message number `seq`. The bytes must have been loaded.
pub fn read(seq: u32, loaded: &Loaded) -> Sortable {
    let raw = loaded.raw.as_deref().map_or(&[][..], Vec::as_slice);
    let internal = loaded.entry.meta.internal;
    let mut s = Sortable {
        seq,
        uid: loaded.entry.uid,
        arrival: internal,
        sent: i64::try_from(internal).unwrap_or(i64::MAX),
        size: raw.len() as u64,
        ..Sortable::default()
    };
    let (mut subject, mut from, mut to, mut cc, mut date) = (None, None, None, None, None);
    let (mut message_id, mut references, mut in_reply_to) = (None, None, None);
    for field in split_fields(header_block(raw)) {
        let Some(colon) = field.iter().position(|b| *b == b':') else { continue };
        let name = String::from_utf8_lossy(&field[..colon]);
        let value = &field[colon + 1..];
        let slot = match name.trim().to_ascii_lowercase().as_str() {
            "subject" => &mut subject,
            "from" => &mut from,
            "to" => &mut to,
            "cc" => &mut cc,
            "date" => &mut date,
            "message-id" => &mut message_id,
            "references" => &mut references,
            "in-reply-to" => &mut in_reply_to,
            _ => continue,
        };
        // The first occurrence counts, as ENVELOPE shows it.
        slot.get_or_insert(value);
    }
    if let Some(v) = subject {
        (s.subject, s.reply) = base_subject(&unstructured(v));
    }
    if let Some(ms) = date.and_then(sent_ms) {
        s.sent = ms;
    }
    let first = |v: Option<&[u8]>| v.map(|v| addresses(&unfold(v))).unwrap_or_default();
    let (from, to) = (first(from), first(to));
    s.from = mailbox_key(from.first());
    s.to = mailbox_key(to.first());
    s.cc = mailbox_key(first(cc).first());
    s.display_from = display_key(from.first());
    s.display_to = display_key(to.first());
    s.message_id = message_id.and_then(|v| ids(v).pop());
    s.references = references.map(ids).unwrap_or_default();
    if s.references.is_empty() {
        // RFC 5256: without References, the first id of In-Reply-To is the parent.
        s.references = in_reply_to.map(ids).unwrap_or_default().into_iter().take(1).collect();
    }
    s
}

/// A field value without its line ends.
fn unfold(v: &[u8]) -> Vec<u8> {
    v.iter().copied().filter(|b| *b != b'\r' && *b != b'\n').collect()
}

/// A field value as text, RFC 2047 words decoded.
fn unstructured(v: &[u8]) -> String {
    match MessageStream::new(v).parse_unstructured() {
        HeaderValue::Text(t) => t.into_owned(),
        _ => String::new(),
    }
}

/// The Date field in UTC milliseconds, when the parser reads a valid one.
fn sent_ms(v: &[u8]) -> Option<i64> {
    match MessageStream::new(v).parse_date() {
        HeaderValue::DateTime(d) if d.is_valid() => d.to_timestamp().checked_mul(1000),
        _ => None,
    }
}

/// The message ids of a field, without angle brackets, the last `MAX_REFERENCES` kept.
fn ids(v: &[u8]) -> Vec<String> {
    let mut out: Vec<String> = match MessageStream::new(v).parse_id() {
        HeaderValue::Text(id) => vec![id.into_owned()],
        HeaderValue::TextList(ids) => ids.into_iter().map(|id| id.into_owned()).collect(),
        _ => Vec::new(),
    };
    out.retain(|id| !id.is_empty() && id.len() <= MAX_ID);
    let extra = out.len().saturating_sub(MAX_REFERENCES);
    out.drain(..extra);
    out
}

fn text<'a>(n: &'a NString<'_>) -> Option<&'a [u8]> {
    n.0.as_ref().map(|s| s.as_ref()).filter(|s| !s.is_empty())
}

/// Upper-cased and capped: the comparison form of an address key.
fn key(s: &str) -> String {
    let mut out: String = s.chars().take(MAX_KEY).collect();
    out = out.to_uppercase();
    out
}

/// RFC 5256 2.1: the local part of the first address (a group's name for a group).
fn mailbox_key(a: Option<&Address<'_>>) -> String {
    a.and_then(|a| text(&a.mailbox)).map(|m| key(&String::from_utf8_lossy(m))).unwrap_or_default()
}

/// RFC 5957: the display name, decoded, or the address itself (a group's name for a group).
fn display_key(a: Option<&Address<'_>>) -> String {
    let Some(a) = a else { return String::new() };
    if let Some(name) = text(&a.name) {
        // The parser reads a value up to its line end.
        let decoded = unstructured(&[name, b"\r\n"].concat());
        if !decoded.trim().is_empty() {
            return key(decoded.trim());
        }
    }
    let mailbox = text(&a.mailbox).map(String::from_utf8_lossy).unwrap_or_default();
    match text(&a.host).filter(|h| *h != b"MISSING_DOMAIN") {
        Some(host) => key(&format!("{mailbox}@{}", String::from_utf8_lossy(host))),
        None => key(&mailbox),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::{ImapEntry, ImapMeta};

    fn loaded(raw: &str) -> Loaded {
        let meta = ImapMeta { uid: 3, flags: Vec::new(), internal: 5_000, modseq: 0 };
        let entry = ImapEntry { uid: 3, id: "em_1".into(), meta };
        Loaded { entry, raw: Some(Arc::new(raw.as_bytes().to_vec())) }
    }

    #[test]
    fn the_fields_are_read_from_the_header_only() {
        let s = read(
            2,
            &loaded(
                "Subject: Re: =?utf-8?q?caf=C3=A9?=\r\nFrom: \"Zed\" <bob@x.test>\r\n\
                 To: g: ann@x.test;\r\nCc: =?iso-8859-1?q?foo_aar?= <e@f.g>\r\n\
                 Date: Fri, 22 Feb 2008 02:00:00 +0200\r\nMessage-ID: <m1@x>\r\n\
                 References: <a@x>\r\n <b@x>\r\n\r\nSubject: not this\r\n",
            ),
        );
        assert_eq!((s.seq, s.uid, s.arrival), (2, 3, 5_000));
        assert_eq!((s.subject.as_str(), s.reply), ("CAFÉ", true));
        assert_eq!((s.from.as_str(), s.display_from.as_str()), ("BOB", "ZED"));
        assert_eq!((s.to.as_str(), s.display_to.as_str()), ("G", "G"));
        assert_eq!(s.cc, "E");
        assert_eq!(s.sent, 1_203_638_400_000);
        assert_eq!(s.message_id.as_deref(), Some("m1@x"));
        assert_eq!(s.references, ["a@x", "b@x"]);
    }

    #[test]
    fn missing_fields_fall_back() {
        let s = read(1, &loaded("From: b@c.d\r\nIn-Reply-To: <p@x> <q@x>\r\n\r\nbody"));
        assert_eq!(s.sent, 5_000, "the internal date");
        assert_eq!(s.display_from, "B@C.D");
        assert_eq!(s.references, ["p@x"]);
        assert_eq!((s.subject.as_str(), s.to.as_str()), ("", ""));
        let many: String = (0..1000).map(|i| format!("<{i}@x> ")).collect();
        let s = read(1, &loaded(&format!("References: {many}\r\n\r\n")));
        assert_eq!(s.references.len(), MAX_REFERENCES);
        assert_eq!(s.references.last().map(String::as_str), Some("999@x"));
    }
}
