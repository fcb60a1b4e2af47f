//! The stored form of an email document in `EMAILS`, apart from the `Email` the API answers.
//!
//! Layout 5 writes a tag byte, then the email's JSON without its id (the key already holds it)
//! and without the members that are null, `[]` or `{}` (they read back as the defaults they
//! are): most of a document is otherwise field names of empty fields, which redb keeps once per
//! message. A message received as one copy also carries its raw bytes after the JSON (`INLINE`):
//! one entry instead of a blob, its `RAW_OF` and `RAW_REFS` entries and their keys, and a
//! document small enough to share the blob's page rather than take one of its own. Documents of
//! older layouts are plain JSON with every member; they start with `{`, which no tag is, and read
//! as before.
//!
//! Layout 6 deflates an inline raw message when that saves a tenth or more (`DEFLATED`): mail is
//! mostly text, which deflate's fastest level shrinks two to four times, so more documents share
//! a page of the file and the data file stays within twice the raw mail. The document's JSON is
//! left as it is: a listing or a status change reads it without inflating anything.

use std::cell::RefCell;
use std::io::Read;

use flate2::read::DeflateDecoder;
use flate2::{Compress, Compression, FlushCompress, Status};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use super::error::{Error, Result};

/// JSON follows; the raw message, if any, is wherever `raw` says.
const LINKED: u8 = 1;
/// The JSON's length (4 bytes, little-endian), the JSON, then the raw message to the end.
const INLINE: u8 = 2;
/// As `INLINE`, but after the JSON the raw message's length (4 bytes, little-endian) and then
/// the raw message deflated (RFC 1951) to the end.
const DEFLATED: u8 = 3;

/// Below this a message is kept as it is: deflate's block headers eat most of what it saves.
const DEFLATE_FROM: usize = 256;

/// A raw message stored inside a document, inflated only when asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum InlineRaw<'a> {
    Plain(&'a [u8]),
    Deflated { len: usize, bytes: &'a [u8] },
}

impl InlineRaw<'_> {
    /// The raw message's bytes.
    pub(super) fn to_vec(self) -> Result<Vec<u8>> {
        match self {
            InlineRaw::Plain(raw) => Ok(raw.to_vec()),
            InlineRaw::Deflated { len, bytes } => {
                let mut raw = Vec::with_capacity(len);
                // One byte past the recorded length is enough to tell a damaged stream.
                DeflateDecoder::new(bytes)
                    .take(len as u64 + 1)
                    .read_to_end(&mut raw)
                    .map_err(|e| Error::internal(format!("a stored raw message: {e}")))?;
                if raw.len() != len {
                    return Err(corrupt());
                }
                Ok(raw)
            }
        }
    }
}

/// An inline raw message copied out of its document as it is stored (still deflated if it was),
/// to be written back with the document without inflating and deflating it again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct KeptRaw {
    deflated_len: Option<usize>,
    bytes: Vec<u8>,
}

impl InlineRaw<'_> {
    pub(super) fn keep(self) -> KeptRaw {
        match self {
            InlineRaw::Plain(raw) => KeptRaw { deflated_len: None, bytes: raw.to_vec() },
            InlineRaw::Deflated { len, bytes } => {
                KeptRaw { deflated_len: Some(len), bytes: bytes.to_vec() }
            }
        }
    }
}

impl KeptRaw {
    pub(super) fn as_inline(&self) -> InlineRaw<'_> {
        match self.deflated_len {
            None => InlineRaw::Plain(&self.bytes),
            Some(len) => InlineRaw::Deflated { len, bytes: &self.bytes },
        }
    }
}

/// `raw` deflated, when that saves a tenth or more. Callers run it before their write where
/// they can. Each thread keeps one compressor and resets it: deflate's state is about 100 KiB of
/// tables, and setting up a new one per message cost more than compressing a 1 KB message.
pub(super) fn deflate(raw: &[u8]) -> Option<KeptRaw> {
    thread_local! {
        static COMPRESSOR: RefCell<Option<Compress>> = const { RefCell::new(None) };
    }
    if raw.len() < DEFLATE_FROM {
        return None;
    }
    // Output that reaches this size is not worth keeping, so no more room is ever made.
    let worth = raw.len() - raw.len() / 10;
    COMPRESSOR.with_borrow_mut(|slot| {
        let compress = slot.get_or_insert_with(|| Compress::new(Compression::fast(), false));
        compress.reset();
        let mut bytes = Vec::with_capacity(worth);
        loop {
            let (read, written) = (compress.total_in(), bytes.len());
            let rest = raw.get(usize::try_from(read).ok()?..)?;
            let status = compress.compress_vec(rest, &mut bytes, FlushCompress::Finish).ok()?;
            if status == Status::StreamEnd {
                break;
            }
            let stuck = compress.total_in() == read && bytes.len() == written;
            if bytes.len() >= worth || stuck {
                return None;
            }
        }
        (bytes.len() < worth).then_some(KeptRaw { deflated_len: Some(raw.len()), bytes })
    })
}

/// The bytes stored for a document, with the raw message `inline` when given, in the form given.
pub(super) fn encode_doc<T: Serialize>(doc: &T, inline: Option<InlineRaw<'_>>) -> Result<Vec<u8>> {
    let mut json = serde_json::to_value(doc)?;
    if let Json::Object(members) = &mut json {
        members.remove("id");
        members.retain(|_, v| !is_empty(v));
    }
    let raw_size = match inline {
        Some(InlineRaw::Plain(raw) | InlineRaw::Deflated { bytes: raw, .. }) => raw.len(),
        None => 0,
    };
    let mut out = Vec::with_capacity(512 + raw_size);
    match inline {
        None => {
            out.push(LINKED);
            serde_json::to_writer(&mut out, &json)?;
        }
        Some(raw) => {
            out.push(INLINE);
            out.extend_from_slice(&[0; 4]);
            serde_json::to_writer(&mut out, &json)?;
            let too_big = || Error::internal("an email document over 4 GiB");
            let len = u32::try_from(out.len() - 5).map_err(|_| too_big())?;
            out[1..5].copy_from_slice(&len.to_le_bytes());
            match raw {
                InlineRaw::Plain(raw) => out.extend_from_slice(raw),
                InlineRaw::Deflated { len, bytes } => {
                    out[0] = DEFLATED;
                    let len = u32::try_from(len).map_err(|_| too_big())?;
                    out.extend_from_slice(&len.to_le_bytes());
                    out.extend_from_slice(bytes);
                }
            }
        }
    }
    Ok(out)
}

fn is_empty(v: &Json) -> bool {
    match v {
        Json::Null => true,
        Json::Array(a) => a.is_empty(),
        Json::Object(o) => o.is_empty(),
        _ => false,
    }
}

/// The JSON and the inline raw message of stored bytes, in this layout or an older one.
fn split(bytes: &[u8]) -> Result<(&[u8], Option<InlineRaw<'_>>)> {
    fn len_first(bytes: &[u8]) -> Result<(usize, &[u8])> {
        let (len, rest) = bytes.split_first_chunk::<4>().ok_or_else(corrupt)?;
        Ok((usize::try_from(u32::from_le_bytes(*len)).map_err(|_| corrupt())?, rest))
    }
    match bytes.split_first() {
        Some((&LINKED, json)) => Ok((json, None)),
        Some((&tag @ (INLINE | DEFLATED), rest)) => {
            let (len, rest) = len_first(rest)?;
            let json = rest.get(..len).ok_or_else(corrupt)?;
            let raw = rest.get(len..).ok_or_else(corrupt)?;
            if tag == INLINE {
                return Ok((json, Some(InlineRaw::Plain(raw))));
            }
            let (len, bytes) = len_first(raw)?;
            Ok((json, Some(InlineRaw::Deflated { len, bytes })))
        }
        Some((b'{', _)) => Ok((bytes, None)),
        _ => Err(corrupt()),
    }
}

fn corrupt() -> Error {
    Error::internal("a stored email document does not decode")
}

/// The document stored as `bytes`, and its inline raw message. The id is left empty by this
/// layout: the caller has it (the key).
pub(super) fn decode_doc<T: DeserializeOwned>(bytes: &[u8]) -> Result<(T, Option<InlineRaw<'_>>)> {
    let (json, raw) = split(bytes)?;
    Ok((serde_json::from_slice(json)?, raw))
}

/// The inline raw message of stored bytes, without decoding the document.
pub(super) fn inline_raw(bytes: &[u8]) -> Result<Option<InlineRaw<'_>>> {
    Ok(split(bytes)?.1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Delivery, DeliveryStatus, Email, Folder};

    fn sample() -> Email {
        let mut e = Email::default();
        e.summary.mailbox = "a@x.test".into();
        e.summary.folder = Folder::Sent;
        e.reply_to = Some(String::new());
        e.text = Some("hi".into());
        e.deliveries.push(Delivery {
            recipient: "b@y.test".into(),
            status: DeliveryStatus::Queued,
            attempts: 0,
            last_response: None,
            updated_at: 5,
            bounce_class: None,
        });
        e.metadata.insert("k".into(), "v".into());
        e
    }

    fn json(e: &Email) -> String {
        serde_json::to_string(e).unwrap_or_default()
    }

    #[test]
    fn a_compact_document_reads_back_as_the_email_it_was() {
        let e = sample();
        for inline in [None, Some(&b"From: a\r\n\r\nhi"[..]), Some(&b""[..])] {
            let bytes = encode_doc(&e, inline.map(InlineRaw::Plain)).expect("encode"); // ok: test
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains("\"cc\"") && !text.contains("\"id\""), "{text}");
            assert!(text.contains("\"replyTo\":\"\""), "an empty string is kept: {text}");
            assert_eq!(inline_raw(&bytes).expect("split"), inline.map(InlineRaw::Plain)); // ok: test
            let (back, raw) = decode_doc::<Email>(&bytes).expect("decode"); // ok: test
            assert_eq!(raw.map(|r| r.to_vec().expect("raw")).as_deref(), inline); // ok: test
            assert_eq!(json(&back), json(&e));
        }
    }

    #[test]
    fn a_message_that_deflates_well_is_stored_deflated_and_reads_back_whole() {
        let e = sample();
        let mut text = b"From: a@x.test\r\nSubject: news\r\n\r\n".to_vec();
        for n in 0..80 {
            text.extend_from_slice(format!("Line {n} of a plain text letter.\r\n").as_bytes());
        }
        let deflated = deflate(&text).expect("text deflates"); // ok: test
        let bytes = encode_doc(&e, Some(deflated.as_inline())).expect("encode"); // ok: test
        assert_eq!(bytes[0], DEFLATED);
        assert!(bytes.len() < text.len() / 2, "{} of {}", bytes.len(), text.len());
        let (back, raw) = decode_doc::<Email>(&bytes).expect("decode"); // ok: test
        let raw = raw.expect("inline"); // ok: test
        assert_eq!(raw.to_vec().expect("inflate"), text); // ok: test
        assert_eq!(json(&back), json(&e));
        let kept = raw.keep();
        let again = encode_doc(&e, Some(kept.as_inline())).expect("encode"); // ok: test
        assert_eq!(again, bytes, "a kept message is written back as it was stored");
        // Bytes that do not shrink (already compressed, like most attachments) stay as they are.
        let mut noise = vec![0u8; 2048];
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        for b in &mut noise {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            *b = x as u8;
        }
        assert_eq!(deflate(&noise), None);
        assert_eq!(deflate(b"From: a\r\n\r\nshort"), None, "too short to gain");
        // The thread's compressor is reset between messages: the same text, the same bytes.
        assert_eq!(deflate(&text).map(|k| k.bytes), Some(deflated.bytes.clone()));
        let big = text.repeat(300);
        let kept = deflate(&big).expect("a large text deflates"); // ok: test
        let bytes = encode_doc(&e, Some(kept.as_inline())).expect("encode"); // ok: test
        let (_, raw) = decode_doc::<Email>(&bytes).expect("decode"); // ok: test
        assert_eq!(raw.expect("inline").to_vec().expect("inflate"), big); // ok: test
    }

    #[test]
    fn a_damaged_deflated_message_is_an_error_not_a_panic() {
        let text = b"All work and no play makes a dull message. ".repeat(40);
        let deflated = deflate(&text).expect("text deflates"); // ok: test
        let good = encode_doc(&sample(), Some(deflated.as_inline())).expect("encode"); // ok: test
        let cut = &good[..good.len() - 8];
        let mut longer = good.clone();
        let json_len = u32::from_le_bytes([good[1], good[2], good[3], good[4]]) as usize;
        longer[5 + json_len] ^= 0x01;
        for bytes in [cut, &longer[..]] {
            let raw = inline_raw(bytes).expect("split").expect("raw"); // ok: test
            assert!(raw.to_vec().is_err(), "{raw:?}");
        }
    }

    #[test]
    fn a_document_of_an_older_layout_reads_as_before() {
        let mut e = sample();
        e.summary.id = "em_1".into();
        let old = serde_json::to_vec(&e).expect("json"); // ok: test
        let (back, raw) = decode_doc::<Email>(&old).expect("decode"); // ok: test
        assert_eq!((json(&back), raw), (json(&e), None));
        assert!(decode_doc::<Email>(b"").is_err());
        assert!(decode_doc::<Email>(&[INLINE, 9, 0, 0, 0, b'{']).is_err());
    }
}
