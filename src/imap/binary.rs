//! BINARY (RFC 3516). BINARY[section]: a part's bytes with its content-transfer-encoding undone,
//! base64 and quoted-printable by mail-parser's decoders; the whole message and the parts no
//! encoding applies to (multiparts, attached messages) are their BODY[section] bytes. And the
//! other way, for APPEND of a literal8: a part holding NUL bytes, which no IMAP literal can
//! carry, is stored base64-encoded, so BODY[section] can show it and BINARY[section] gives its
//! bytes back.

use std::num::NonZeroU32;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use mail_parser::decoders::base64::base64_decode;
use mail_parser::decoders::quoted_printable::quoted_printable_decode;
use mail_parser::{HeaderName, Message, MessagePart, MimeHeaders, PartType};

use super::section::{buffer, encoded_part};

/// Why a part's bytes cannot be given decoded (RFC 3516 4.3 answers both NO [UNKNOWN-CTE]).
#[derive(Debug, PartialEq, Eq)]
pub enum Undecodable {
    /// An encoding this server does not know.
    Unknown(String),
    /// A base64 or quoted-printable body that does not decode.
    Corrupt,
}

/// The decoded bytes of the part at `path` (the whole message when empty); empty when there is
/// no such part, as BODY[section] answers.
pub fn binary(message: &Message<'_>, path: &[NonZeroU32]) -> Result<Vec<u8>, Undecodable> {
    if path.is_empty() {
        return Ok(message.raw_message().to_vec());
    }
    let Some((bytes, encoding)) = encoded_part(message, path) else { return Ok(Vec::new()) };
    match encoding {
        Some(encoding) => decode(&encoding, bytes),
        None => Ok(bytes),
    }
}

fn decode(encoding: &str, bytes: Vec<u8>) -> Result<Vec<u8>, Undecodable> {
    let name = encoding.trim().to_ascii_lowercase();
    match name.as_str() {
        "7bit" | "8bit" | "binary" => Ok(bytes),
        "base64" => base64_decode(&bytes).ok_or(Undecodable::Corrupt),
        "quoted-printable" => quoted_printable_decode(&bytes).ok_or(Undecodable::Corrupt),
        _ => Err(Undecodable::Unknown(name)),
    }
}

/// What a part's rewriting replaces: its Content-Transfer-Encoding field (an empty range at the
/// end of its header when it has none) and its body.
struct Rewrite {
    field: (usize, usize),
    body: (usize, usize),
}

/// `raw` with every leaf part that holds a NUL byte (and is not already base64 or
/// quoted-printable) base64-encoded, its Content-Transfer-Encoding saying so; `None` when no
/// part needs it. Attached messages are looked into too.
pub fn storable(raw: &[u8]) -> Option<Vec<u8>> {
    if !raw.contains(&0) {
        return None;
    }
    let message = mail_parser::MessageParser::default().parse(raw)?;
    let mut rewrites = Vec::new();
    collect(&message, &mut rewrites);
    if rewrites.is_empty() {
        return None;
    }
    rewrites.sort_by_key(|r| r.field.0);
    let mut out = Vec::with_capacity(raw.len() * 4 / 3 + 256);
    let mut at = 0;
    for r in rewrites {
        // Parts never overlap; a rewrite that would go back (a malformed offset) is left out.
        if r.field.0 < at || r.body.0 < r.field.1 || r.body.1 < r.body.0 || r.body.1 > raw.len() {
            continue;
        }
        out.extend_from_slice(&raw[at..r.field.0]);
        out.extend_from_slice(b"Content-Transfer-Encoding: base64\r\n");
        out.extend_from_slice(&raw[r.field.1..r.body.0]);
        let encoded = B64.encode(&raw[r.body.0..r.body.1]);
        for line in encoded.as_bytes().chunks(76) {
            out.extend_from_slice(line);
            out.extend_from_slice(b"\r\n");
        }
        at = r.body.1;
    }
    out.extend_from_slice(&raw[at..]);
    Some(out)
}

/// The rewrites the leaf parts of `message` (and of the messages attached to it) need.
fn collect(message: &Message<'_>, out: &mut Vec<Rewrite>) {
    let raw = buffer(message);
    for part in &message.parts {
        match &part.body {
            PartType::Multipart(_) => {}
            PartType::Message(inner) => collect(inner, out),
            _ => {
                let body = (part.offset_body as usize, part.offset_end as usize);
                let holds_nul = raw.get(body.0..body.1).is_some_and(|b| b.contains(&0));
                if holds_nul && !encoded(part) {
                    out.push(Rewrite { field: cte_field(part), body });
                }
            }
        }
    }
}

/// Whether a part's bytes are already in an encoding that carries any byte.
fn encoded(part: &MessagePart<'_>) -> bool {
    part.content_transfer_encoding().is_some_and(|cte| {
        let cte = cte.trim();
        cte.eq_ignore_ascii_case("base64") || cte.eq_ignore_ascii_case("quoted-printable")
    })
}

/// Where the part's Content-Transfer-Encoding field lies, or the empty place after its last
/// field when it has none.
fn cte_field(part: &MessagePart<'_>) -> (usize, usize) {
    let found = part.headers.iter().find(|h| h.name == HeaderName::ContentTransferEncoding);
    match found {
        Some(h) => (h.offset_field as usize, h.offset_end as usize),
        None => {
            let end = part.headers.last().map_or(part.offset_header, |h| h.offset_end);
            (end as usize, end as usize)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(raw: &[u8], path: &[u32]) -> Result<Vec<u8>, Undecodable> {
        let message = mail_parser::MessageParser::default().parse(raw).expect("parses"); // ok: test
        let path: Vec<NonZeroU32> = path.iter().filter_map(|n| NonZeroU32::new(*n)).collect();
        binary(&message, &path)
    }

    const MIXED: &[u8] = b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\
        Content-Transfer-Encoding: base64\r\n\r\n aGVs\r\nbG8=\r\n--b\r\n\
        Content-Transfer-Encoding: quoted-printable\r\n\r\na=3Db =\r\nc\r\n--b\r\n\
        Content-Transfer-Encoding: x-uuencode\r\n\r\nbegin\r\n--b\r\n\r\nplain\r\n--b--\r\n";

    #[test]
    fn parts_are_decoded_by_their_encoding() {
        assert_eq!(parts(MIXED, &[1]).expect("base64"), b"hello"); // ok: test
        assert_eq!(parts(MIXED, &[2]).expect("qp"), b"a=b c"); // ok: test
        assert_eq!(parts(MIXED, &[3]), Err(Undecodable::Unknown("x-uuencode".into())));
        assert_eq!(parts(MIXED, &[4]).expect("7bit"), b"plain"); // ok: test
        assert_eq!(parts(MIXED, &[9]).expect("none"), b""); // ok: test
        assert_eq!(parts(MIXED, &[]).expect("all"), MIXED); // ok: test
    }

    #[test]
    fn parts_holding_nul_are_stored_in_base64() {
        assert_eq!(storable(MIXED), None);
        let single = b"From: a@b.c\r\nContent-Transfer-Encoding: binary\r\nSubject: s\r\n\r\n\0-\xe4\n\r\n\n";
        let stored = storable(single).expect("rewritten"); // ok: test
        let text = String::from_utf8(stored.clone()).expect("ascii"); // ok: test
        assert!(text.contains("Content-Transfer-Encoding: base64\r\nSubject: s\r\n\r\n"), "{text}");
        assert!(!text.contains("binary"), "{text}");
        assert_eq!(parts(&stored, &[1]).expect("decoded"), b"\0-\xe4\n\r\n\n"); // ok: test
        let multi = b"Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\n\
            Content-Type: application/octet-stream\r\n\r\na\0b\r\n--b\r\n\r\nplain\r\n--b--\r\n";
        let stored = storable(multi).expect("rewritten"); // ok: test
        assert_eq!(parts(&stored, &[1]).expect("decoded"), b"a\0b"); // ok: test
        assert_eq!(parts(&stored, &[2]).expect("plain"), b"plain"); // ok: test
        assert!(!stored.contains(&0));
    }
}
