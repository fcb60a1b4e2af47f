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
        Section::Text(part) => {
            inner(message, part.as_ref().map(|p| p.0.as_ref())).map(|m| text(m).to_vec())
        }
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

fn slice<'a>(m: &'a Message<'_>, from: u32, to: u32) -> Option<&'a [u8]> {
    m.raw_message().get(from as usize..to as usize)
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

/// A message's header, with the empty line that ends it.
pub fn header_block<'a>(m: &'a Message<'_>) -> &'a [u8] {
    let raw = m.raw_message();
    let end = m.part(0).map_or(raw.len(), |p| p.offset_body as usize).min(raw.len());
    &raw[..end]
}

fn text<'a>(m: &'a Message<'_>) -> &'a [u8] {
    let raw = m.raw_message();
    let (from, to) = m
        .part(0)
        .map_or((raw.len(), raw.len()), |p| (p.offset_body as usize, p.offset_end as usize));
    raw.get(from..to.min(raw.len())).unwrap_or_default()
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
mod tests {
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
