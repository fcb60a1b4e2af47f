//! The bytes a BODY[section] names (RFC 9051 6.4.5), cut from the raw message at the offsets
//! mail-parser found: the whole message, a header (all of it or some fields), a text, a part's
//! body or its MIME header, down through multiparts and attached messages.

use std::num::NonZeroU32;

use imap_types::core::AString;
use imap_types::fetch::Section;
use mail_parser::{Message, MessagePart, PartType};

/// Where a walk down part numbers ended.
enum At<'a, 'x> {
    Message(&'a Message<'x>),
    Part(&'a Message<'x>, &'a MessagePart<'x>),
}

/// The bytes of `section` of `message` (the whole message when `None`); empty when the
/// section does not exist, as servers commonly answer.
pub fn extract(message: &Message<'_>, section: Option<&Section<'_>>) -> Vec<u8> {
    let raw = message.raw_message();
    let Some(section) = section else { return raw.to_vec() };
    let found = match section {
        Section::Part(part) => walk(message, part.0.as_ref()).map(|at| body(&at)),
        Section::Header(part) => {
            inner(message, part.as_ref().map(|p| p.0.as_ref())).map(|m| header_block(m).to_vec())
        }
        Section::Text(part) => text_of(message, part.as_ref().map(|p| p.0.as_ref())),
        Section::HeaderFields(part, names) => inner(message, part.as_ref().map(|p| p.0.as_ref()))
            .map(|m| fields(header_block(m), names.as_ref(), true)),
        Section::HeaderFieldsNot(part, names) => {
            inner(message, part.as_ref().map(|p| p.0.as_ref()))
                .map(|m| fields(header_block(m), names.as_ref(), false))
        }
        Section::Mime(part) => walk(message, part.0.as_ref()).and_then(|at| match at {
            At::Part(m, p) => slice(m, p.offset_header, p.offset_body).map(<[u8]>::to_vec),
            At::Message(_) => None,
        }),
    };
    found.unwrap_or_default()
}

/// The body of the part at `path` as stored, and its Content-Transfer-Encoding: `None` for a
/// multipart or an attached message (bytes no encoding was applied to, RFC 2045 6.4). `None`
/// altogether when there is no such part.
pub fn encoded_part(
    message: &Message<'_>,
    path: &[NonZeroU32],
) -> Option<(Vec<u8>, Option<String>)> {
    let at = walk(message, path)?;
    let encoding = match &at {
        At::Part(_, p) if !matches!(p.body, PartType::Multipart(_) | PartType::Message(_)) => {
            use mail_parser::MimeHeaders;
            Some(p.content_transfer_encoding().unwrap_or("7bit").to_owned())
        }
        _ => None,
    };
    Some((body(&at), encoding))
}

/// The bytes a message's part offsets count in. For an attached message this is the whole
/// stored message: mail-parser's `raw_message()` of an attached message is only its own slice,
/// while the offsets of its parts count from the start of the outermost message.
pub fn buffer<'a>(m: &'a Message<'_>) -> &'a [u8] {
    &m.raw_message
}

fn slice<'a>(m: &'a Message<'_>, from: u32, to: u32) -> Option<&'a [u8]> {
    buffer(m).get(from as usize..to as usize)
}

/// Follows part numbers from a message.
fn walk<'a, 'x>(message: &'a Message<'x>, path: &[NonZeroU32]) -> Option<At<'a, 'x>> {
    let mut at = At::Message(message);
    for n in path {
        let n = n.get() as usize;
        at = match at {
            At::Message(m) => child(m, m.part(0)?, n, true)?,
            At::Part(m, p) => match &p.body {
                PartType::Message(inner) => child(inner, inner.part(0)?, n, true)?,
                _ => child(m, p, n, false)?,
            },
        };
    }
    Some(at)
}

/// Part `n` of `part`: a child of a multipart, or a single part's own body as part 1 (for the
/// top of a message only).
fn child<'a, 'x>(
    m: &'a Message<'x>,
    part: &'a MessagePart<'x>,
    n: usize,
    top: bool,
) -> Option<At<'a, 'x>> {
    match &part.body {
        PartType::Multipart(children) => {
            let id = *children.get(n.checked_sub(1)?)?;
            Some(At::Part(m, m.part(id)?))
        }
        _ if top && n == 1 => Some(At::Part(m, part)),
        _ => None,
    }
}

/// The message a HEADER or TEXT section is about: the whole one, or an attached one.
fn inner<'a, 'x>(message: &'a Message<'x>, path: Option<&[NonZeroU32]>) -> Option<&'a Message<'x>> {
    let Some(path) = path else { return Some(message) };
    match walk(message, path)? {
        At::Part(_, p) => match &p.body {
            PartType::Message(inner) => Some(inner),
            _ => None,
        },
        At::Message(m) => Some(m),
    }
}

fn body(at: &At<'_, '_>) -> Vec<u8> {
    match at {
        At::Message(m) => m.raw_message().to_vec(),
        At::Part(m, p) => slice(m, p.offset_body, p.offset_end).unwrap_or_default().to_vec(),
    }
}

/// A message's header, with the empty line that ends it (an attached message's starts where
/// its part's body does, not at the start of the buffer).
pub fn header_block<'a>(m: &'a Message<'_>) -> &'a [u8] {
    let Some(root) = m.part(0) else { return buffer(m) };
    slice(m, root.offset_header, root.offset_body).unwrap_or_default()
}

/// The TEXT of the message, or of the message attached at `path`. An attached message's text
/// runs to the end of the part holding it, past the closing boundary of its own multipart (its
/// epilogue is its text too).
fn text_of(message: &Message<'_>, path: Option<&[NonZeroU32]>) -> Option<Vec<u8>> {
    let Some(path) = path else { return Some(text(message).to_vec()) };
    match walk(message, path)? {
        At::Part(m, p) => match &p.body {
            PartType::Message(inner) => {
                let start = inner.part(0)?.offset_body;
                slice(m, start, p.offset_end.max(start)).map(<[u8]>::to_vec)
            }
            _ => None,
        },
        At::Message(m) => Some(text(m).to_vec()),
    }
}

/// The text of the whole stored message: everything after its header, the epilogue of a
/// multipart included.
pub fn text<'a>(m: &'a Message<'_>) -> &'a [u8] {
    let Some(root) = m.part(0) else { return &[] };
    buffer(m).get(root.offset_body as usize..).unwrap_or_default()
}

/// The header fields named in `names` (or all others, when not `keep`), then the empty line.
fn fields(header: &[u8], names: &[AString<'_>], keep: bool) -> Vec<u8> {
    let wanted: Vec<&[u8]> = names.iter().map(AsRef::as_ref).collect();
    let mut out = Vec::new();
    for field in split_fields(header) {
        let name = field.split(|b| *b == b':').next().unwrap_or_default();
        let name = name.trim_ascii();
        if name.is_empty() {
            continue;
        }
        let named = wanted.iter().any(|w| w.eq_ignore_ascii_case(name));
        if named == keep {
            out.extend_from_slice(field);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// A header block's fields, each with its continuation lines and line ends.
pub fn split_fields(header: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < header.len() {
        let Some(nl) = header[i..].iter().position(|b| *b == b'\n') else { break };
        let next = i + nl + 1;
        let continued = header.get(next).is_some_and(|b| *b == b' ' || *b == b'\t');
        if !continued {
            let field = &header[start..next];
            if field.trim_ascii().is_empty() {
                break;
            }
            out.push(field);
            start = next;
        }
        i = next;
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use mail_parser::MessageParser;

    const MIXED: &[u8] =
        b"From: a@x.test\r\nSubject: Hi\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n\
        --b\r\nContent-Type: text/plain\r\n\r\nhello\r\n--b\r\nContent-Type: application/pdf\r\n\
        Content-Transfer-Encoding: base64\r\n\r\nJVBERg==\r\n--b--\r\n";

    fn section(s: &str) -> Section<'static> {
        use imap_types::fetch::Part;
        let nums: Vec<NonZeroU32> =
            s.split('.').filter_map(|n| n.parse().ok()).filter_map(NonZeroU32::new).collect();
        Section::Part(Part(nums.try_into().expect("part"))) // ok: test
    }

    /// A text part, an attached multipart message and an attached single-part message.
    pub(crate) const NESTED: &[u8] = b"From: a@x.test\r\nSubject: outer\r\n\
        Content-Type: multipart/mixed; boundary=o\r\n\r\n\
        --o\r\nContent-Type: text/plain\r\n\r\nouter text\r\n\
        --o\r\nContent-Type: message/rfc822\r\nContent-ID: <abc@x.test>\r\n\r\n\
        From: b@y.test\r\nSubject: inner\r\nContent-Type: multipart/alternative; boundary=i\r\n\r\n\
        --i\r\nContent-Type: text/plain\r\n\r\nline1\r\nline2\r\n\
        --i\r\nContent-Type: text/html\r\n\r\n<p>x</p>\r\n--i--\r\n\r\n\
        --o\r\nContent-Type: message/rfc822\r\n\r\n\
        From: c@z.test\r\nSubject: single\r\n\r\nbody a\r\nbody b\r\n--o--\r\n";

    fn named(s: &str) -> Section<'static> {
        use imap_types::fetch::Part;
        let (nums, kind) = match s.rsplit_once('.') {
            Some((p, k)) if k.parse::<u32>().is_err() => (p, k),
            _ => (s, ""),
        };
        let nums: Vec<NonZeroU32> =
            nums.split('.').filter_map(|n| n.parse().ok()).filter_map(NonZeroU32::new).collect();
        let part = Part(nums.try_into().expect("part")); // ok: test
        match kind {
            "HEADER" => Section::Header(Some(part)),
            "TEXT" => Section::Text(Some(part)),
            "MIME" => Section::Mime(part),
            "SUBJECT" => {
                let names = vec![AString::try_from("Subject").expect("name")]; // ok: test
                Section::HeaderFields(Some(part), names.try_into().expect("one")) // ok: test
            }
            _ => Section::Part(part),
        }
    }

    #[test]
    fn sections_inside_attached_messages_are_the_attached_message_s() {
        let m = MessageParser::default().parse(NESTED).expect("parsed"); // ok: test
        let got = |s: &str| String::from_utf8_lossy(&extract(&m, Some(&named(s)))).into_owned();
        let inner = "From: b@y.test\r\nSubject: inner\r\n\
            Content-Type: multipart/alternative; boundary=i\r\n\r\n";
        let inner_text = "--i\r\nContent-Type: text/plain\r\n\r\nline1\r\nline2\r\n\
            --i\r\nContent-Type: text/html\r\n\r\n<p>x</p>\r\n--i--\r\n";
        assert_eq!(got("1"), "outer text");
        assert_eq!(got("2"), format!("{inner}{inner_text}"));
        assert_eq!(
            got("2.MIME"),
            "Content-Type: message/rfc822\r\nContent-ID: <abc@x.test>\r\n\r\n"
        );
        assert_eq!(got("2.HEADER"), inner);
        assert_eq!(got("2.TEXT"), inner_text);
        assert_eq!(got("2.SUBJECT"), "Subject: inner\r\n\r\n");
        assert_eq!(got("2.1"), "line1\r\nline2");
        assert_eq!(got("2.2"), "<p>x</p>");
        assert_eq!(got("2.1.MIME"), "Content-Type: text/plain\r\n\r\n");
        assert_eq!(got("2.2.MIME"), "Content-Type: text/html\r\n\r\n");
        assert_eq!(got("2.3"), "");
        assert_eq!(got("3.HEADER"), "From: c@z.test\r\nSubject: single\r\n\r\n");
        assert_eq!(got("3.TEXT"), "body a\r\nbody b");
        assert_eq!(got("3.1"), "body a\r\nbody b");
        assert_eq!(got("1.HEADER"), "", "part 1 is no message");
    }

    #[test]
    fn parts_headers_and_fields_are_cut_from_the_raw_message() {
        let m = MessageParser::default().parse(MIXED).expect("parsed"); // ok: test
        assert_eq!(extract(&m, None), MIXED);
        assert_eq!(extract(&m, Some(&section("1"))), b"hello");
        assert_eq!(extract(&m, Some(&section("2"))), b"JVBERg==");
        assert_eq!(extract(&m, Some(&section("3"))), b"");
        let header = extract(&m, Some(&Section::Header(None)));
        assert!(header.starts_with(b"From: a@x.test\r\n") && header.ends_with(b"\r\n\r\n"));
        let names = vec![AString::try_from("SUBJECT").expect("name")].try_into().expect("one"); // ok: test
        assert_eq!(extract(&m, Some(&Section::HeaderFields(None, names))), b"Subject: Hi\r\n\r\n");
    }
}
