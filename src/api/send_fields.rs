//! The optional fields of `POST /v1/send` beyond the message itself: the sender's headers,
//! attachments, tags and metadata. Each check fails with a 400 naming the field.

use std::collections::BTreeMap;

use base64::Engine;
use base64::alphabet::STANDARD;
use base64::engine::DecodePaddingMode;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use serde::Deserialize;

use crate::error::{Error, Result};
use crate::mail::headers;
use crate::store::{Attachment, Header};

/// Decoded bytes of all attachments of one request together.
pub const MAX_ATTACHMENT_BYTES: usize = 10 * 1024 * 1024;
pub const MAX_TAGS: usize = 10;
pub const MAX_TAG_CHARS: usize = 128;
pub const MAX_METADATA: usize = 20;
pub const MAX_METADATA_KEY_CHARS: usize = 64;
pub const MAX_METADATA_VALUE_CHARS: usize = 1000;
pub const MAX_HEADERS: usize = 50;
const MAX_FILENAME_CHARS: usize = 255;

/// Base64 as mail clients and SDKs write it: padding optional, line breaks dropped before.
const BASE64: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AttachmentInput {
    filename: String,
    /// Base64 of the file's bytes.
    content: String,
    #[serde(default, deserialize_with = "super::input::present")]
    content_type: Option<String>,
}

fn invalid(field: &str, what: impl std::fmt::Display, hint: impl Into<String>) -> Error {
    Error::invalid(format!("invalid field `{field}`: {what}"), hint)
}

fn control_free(s: &str) -> bool {
    !s.chars().any(char::is_control)
}

/// The sender's headers, in name order; refuses names the service owns and any value that could
/// smuggle in a line of its own.
pub fn extra_headers(map: BTreeMap<String, String>) -> Result<Vec<Header>> {
    if map.len() > MAX_HEADERS {
        return Err(invalid("headers", format!("more than {MAX_HEADERS} headers"), "send fewer"));
    }
    let mut out: Vec<Header> = Vec::with_capacity(map.len());
    for (name, value) in map {
        let field = format!("headers.{name}");
        if let Some(why) = headers::name_error(&name) {
            return Err(invalid(
                &field,
                format!("the header name {why}"),
                "use a name like X-Campaign",
            ));
        }
        if headers::is_owned(&name) {
            return Err(invalid(
                &field,
                format!("{name} is written by the service and cannot be set"),
                "use `from`, `to`, `cc`, `bcc`, `replyTo` and `subject` for those; custom headers \
                 are for others such as X-Campaign",
            ));
        }
        if out.iter().any(|h| h.name.eq_ignore_ascii_case(&name)) {
            return Err(invalid(&field, "the header is given twice", "give each header once"));
        }
        if let Some(why) = headers::value_error(&value) {
            return Err(invalid(&field, format!("the value {why}"), "write the value on one line"));
        }
        out.push(Header { name, value });
    }
    Ok(out)
}

/// The decoded attachments: their metadata (as the email lists them) and their bytes.
pub fn attachments(list: Vec<AttachmentInput>) -> Result<(Vec<Attachment>, Vec<Vec<u8>>)> {
    let (mut meta, mut bytes) = (Vec::with_capacity(list.len()), Vec::with_capacity(list.len()));
    let mut total = 0usize;
    let too_big = |field: &str| {
        invalid(
            field,
            format!("the attachments exceed {MAX_ATTACHMENT_BYTES} bytes in all (decoded)"),
            "send large files as links instead",
        )
    };
    for (i, a) in list.into_iter().enumerate() {
        let field = format!("attachments[{i}]");
        let filename = filename(&format!("{field}.filename"), &a.filename)?;
        let content_type = match a.content_type {
            Some(ct) => media_type(&format!("{field}.contentType"), &ct)?,
            None => guess_type(&filename).to_owned(),
        };
        let content: String = a.content.chars().filter(|c| !c.is_ascii_whitespace()).collect();
        // Refused before decoding: the decoded size is known from the length.
        if total + content.len() / 4 * 3 > MAX_ATTACHMENT_BYTES + 3 {
            return Err(too_big(&format!("{field}.content")));
        }
        let decoded = BASE64.decode(content.as_bytes()).map_err(|e| {
            invalid(
                &format!("{field}.content"),
                format!("not base64 ({e})"),
                "encode the file's bytes as base64",
            )
        })?;
        total += decoded.len();
        if total > MAX_ATTACHMENT_BYTES {
            return Err(too_big(&format!("{field}.content")));
        }
        meta.push(Attachment {
            filename: Some(filename),
            content_type,
            size: decoded.len() as u64,
        });
        bytes.push(decoded);
    }
    Ok((meta, bytes))
}

fn filename(field: &str, value: &str) -> Result<String> {
    let value = value.trim();
    let hint = "give the file's name, such as invoice.pdf";
    if value.is_empty() || value.chars().count() > MAX_FILENAME_CHARS {
        return Err(invalid(field, format!("must be 1 to {MAX_FILENAME_CHARS} characters"), hint));
    }
    if !control_free(value) || value.contains(['/', '\\']) {
        return Err(invalid(field, "must be a name without control characters or slashes", hint));
    }
    Ok(value.to_owned())
}

/// RFC 2045 token characters.
fn token(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_graphic() && !b"()<>@,;:\\\"/[]?=".contains(&b))
}

/// A media type `type/subtype`, with optional `; name=value` parameters.
fn media_type(field: &str, value: &str) -> Result<String> {
    let bad = || {
        invalid(field, format!("{value:?} is not a media type"), "write it like application/pdf")
    };
    let mut pieces = value.split(';');
    let essence = pieces.next().unwrap_or("").trim();
    let Some((kind, sub)) = essence.split_once('/') else {
        return Err(bad());
    };
    if !token(kind) || !token(sub) || value.len() > 255 || !control_free(value) {
        return Err(bad());
    }
    for param in pieces {
        let Some((name, v)) = param.split_once('=') else {
            return Err(bad());
        };
        if !token(name.trim()) || v.trim().trim_matches('"').is_empty() {
            return Err(bad());
        }
    }
    Ok(value.trim().to_owned())
}

/// The media type of a file by its extension, for an attachment given without one.
fn guess_type(filename: &str) -> &'static str {
    let ext = filename.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    match ext.as_str() {
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "ics" => "text/calendar",
        "json" => "application/json",
        "xml" => "application/xml",
        "zip" => "application/zip",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "doc" => "application/msword",
        "docx" => "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "xlsx" => "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        _ => "application/octet-stream",
    }
}

pub fn tags(list: Vec<String>) -> Result<Vec<String>> {
    if list.len() > MAX_TAGS {
        return Err(invalid("tags", format!("more than {MAX_TAGS} tags"), "send at most 10 tags"));
    }
    for (i, tag) in list.iter().enumerate() {
        let n = tag.chars().count();
        if n == 0 || n > MAX_TAG_CHARS || !control_free(tag) {
            return Err(invalid(
                &format!("tags[{i}]"),
                format!("a tag is 1 to {MAX_TAG_CHARS} characters without control characters"),
                "shorten or fix the tag",
            ));
        }
    }
    Ok(list)
}

pub fn metadata(map: BTreeMap<String, String>) -> Result<BTreeMap<String, String>> {
    if map.len() > MAX_METADATA {
        return Err(invalid(
            "metadata",
            format!("more than {MAX_METADATA} entries"),
            "send at most 20 keys",
        ));
    }
    for (key, value) in &map {
        let n = key.chars().count();
        if n == 0 || n > MAX_METADATA_KEY_CHARS || !control_free(key) {
            return Err(invalid(
                &format!("metadata.{key}"),
                format!(
                    "a key is 1 to {MAX_METADATA_KEY_CHARS} characters without control characters"
                ),
                "shorten or fix the key",
            ));
        }
        if value.chars().count() > MAX_METADATA_VALUE_CHARS {
            return Err(invalid(
                &format!("metadata.{key}"),
                format!("the value is longer than {MAX_METADATA_VALUE_CHARS} characters"),
                "shorten the value",
            ));
        }
    }
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message<T: std::fmt::Debug>(r: Result<T>) -> String {
        match r {
            Err(Error::Invalid { message, .. }) => message,
            other => panic!("expected 400, got {other:?}"),
        }
    }

    fn one(content: &str, content_type: Option<&str>) -> Vec<AttachmentInput> {
        vec![AttachmentInput {
            filename: "a.pdf".into(),
            content: content.into(),
            content_type: content_type.map(str::to_owned),
        }]
    }

    #[test]
    fn attachments_decode_and_are_refused_when_bad() {
        let (meta, bytes) = attachments(one("aGVs\r\nbG8", None)).expect("valid"); // ok: test
        assert_eq!(bytes[0], b"hello");
        assert_eq!(meta[0].content_type, "application/pdf");
        assert_eq!(meta[0].size, 5);
        let m = message(attachments(one("not base64!", None)));
        assert!(m.contains("`attachments[0].content`"), "{m}");
        let m = message(attachments(one("aGVsbG8=", Some("pdf"))));
        assert!(m.contains("`attachments[0].contentType`"), "{m}");
        let big = "A".repeat((MAX_ATTACHMENT_BYTES / 3 + 2) * 4);
        let m = message(attachments(one(&big, None)));
        assert!(m.contains("exceed"), "{m}");
        assert!(attachments(one("aGk=", Some("text/plain; charset=utf-8"))).is_ok());
    }

    #[test]
    fn headers_tags_and_metadata_are_bounded() {
        let map = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
        };
        assert!(extra_headers(map(&[("X-Campaign", "autumn")])).is_ok());
        let m = message(extra_headers(map(&[("bcc", "x@y.test")])));
        assert!(m.contains("`headers.bcc`"), "{m}");
        let m = message(extra_headers(map(&[("X-A", "a\r\nBcc: x@y.test")])));
        assert!(m.contains("`headers.X-A`"), "{m}");
        let m = message(tags(vec!["t".into(); 11]));
        assert!(m.contains("`tags`"), "{m}");
        let many: BTreeMap<String, String> =
            (0..21).map(|i| (format!("k{i}"), "v".into())).collect();
        assert!(message(metadata(many)).contains("`metadata`")); // ok: test
    }
}
