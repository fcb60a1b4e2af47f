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

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value as Json;

use super::error::{Error, Result};

/// JSON follows; the raw message, if any, is wherever `raw` says.
const LINKED: u8 = 1;
/// The JSON's length (4 bytes, little-endian), the JSON, then the raw message to the end.
const INLINE: u8 = 2;

/// The bytes stored for a document, with the raw message `inline` when given.
pub(super) fn encode_doc<T: Serialize>(doc: &T, inline: Option<&[u8]>) -> Result<Vec<u8>> {
    let mut json = serde_json::to_value(doc)?;
    if let Json::Object(members) = &mut json {
        members.remove("id");
        members.retain(|_, v| !is_empty(v));
    }
    let mut out = Vec::with_capacity(512 + inline.map_or(0, <[u8]>::len));
    match inline {
        None => {
            out.push(LINKED);
            serde_json::to_writer(&mut out, &json)?;
        }
        Some(raw) => {
            out.push(INLINE);
            out.extend_from_slice(&[0; 4]);
            serde_json::to_writer(&mut out, &json)?;
            let len = u32::try_from(out.len() - 5)
                .map_err(|_| Error::internal("an email document over 4 GiB"))?;
            out[1..5].copy_from_slice(&len.to_le_bytes());
            out.extend_from_slice(raw);
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
fn split(bytes: &[u8]) -> Result<(&[u8], Option<&[u8]>)> {
    match bytes.split_first() {
        Some((&LINKED, json)) => Ok((json, None)),
        Some((&INLINE, rest)) => {
            let (len, rest) = rest.split_first_chunk::<4>().ok_or_else(corrupt)?;
            let len = usize::try_from(u32::from_le_bytes(*len)).map_err(|_| corrupt())?;
            let json = rest.get(..len).ok_or_else(corrupt)?;
            Ok((json, rest.get(len..)))
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
pub(super) fn decode_doc<T: DeserializeOwned>(bytes: &[u8]) -> Result<(T, Option<&[u8]>)> {
    let (json, raw) = split(bytes)?;
    Ok((serde_json::from_slice(json)?, raw))
}

/// The inline raw message of stored bytes, without decoding the document.
pub(super) fn inline_raw(bytes: &[u8]) -> Result<Option<&[u8]>> {
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
            let bytes = encode_doc(&e, inline).expect("encode"); // ok: test
            let text = String::from_utf8_lossy(&bytes);
            assert!(!text.contains("\"cc\"") && !text.contains("\"id\""), "{text}");
            assert!(text.contains("\"replyTo\":\"\""), "an empty string is kept: {text}");
            assert_eq!(inline_raw(&bytes).expect("split"), inline); // ok: test
            let (back, raw) = decode_doc::<Email>(&bytes).expect("decode"); // ok: test
            assert_eq!(raw, inline);
            assert_eq!(json(&back), json(&e));
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
