//! Cursor paging (extensions.md, "Paging and downloads"): the body stays the spec's array and the
//! next page is announced in a `Link: <URL>; rel="next"` header (RFC 8288).
//!
//! A cursor names the last item a page returned, so the next page starts strictly after it in
//! the listing's key order: items that arrive meanwhile sort before it (newest-first listings)
//! or after everything seen (oldest-first ones), and no item is returned twice. It is opaque to
//! clients; its only check is that it decodes, since a forged one merely positions a listing the
//! caller may read anyway.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use hyper::header::{HeaderValue, LINK};

use crate::error::{Error, Result};
use crate::http::Reply;
use crate::http::request::query_pairs;

/// The position after an email in a folder listing: its `createdAt` and id.
pub fn email_cursor(created_at: u64, id: &str) -> String {
    B64.encode(format!("e{created_at}.{id}"))
}

pub fn parse_email_cursor(cursor: &str) -> Result<(u64, String)> {
    let text = decode(cursor)?;
    text.strip_prefix('e')
        .and_then(|rest| rest.split_once('.'))
        .and_then(|(at, id)| Some((at.parse().ok()?, id.to_owned())))
        .filter(|(_, id)| !id.is_empty())
        .ok_or_else(bad_cursor)
}

/// The position after a contact: its id (ids sort by creation time).
pub fn contact_cursor(id: &str) -> String {
    B64.encode(format!("c{id}"))
}

pub fn parse_contact_cursor(cursor: &str) -> Result<String> {
    let text = decode(cursor)?;
    text.strip_prefix('c').filter(|id| !id.is_empty()).map(str::to_owned).ok_or_else(bad_cursor)
}

fn decode(cursor: &str) -> Result<String> {
    let bytes = B64.decode(cursor.trim()).map_err(|_| bad_cursor())?;
    String::from_utf8(bytes).map_err(|_| bad_cursor())
}

fn bad_cursor() -> Error {
    Error::invalid(
        "invalid `cursor`: it does not come from a `Link` header of this listing",
        "follow the URL of the previous page's `Link: <...>; rel=\"next\"` header as it is",
    )
}

/// Adds the `Link` to the next page: the request's own path and query with `cursor` replaced.
pub fn link_next(reply: &mut Reply, path: &str, query: Option<&str>, cursor: &str) {
    let mut url = String::with_capacity(path.len() + 64);
    url.push_str(path);
    url.push('?');
    for (name, value) in query_pairs(query.unwrap_or("")).filter(|(n, _)| n != "cursor") {
        push_pair(&mut url, &name, &value);
        url.push('&');
    }
    url.push_str("cursor=");
    url.push_str(cursor);
    if let Ok(value) = HeaderValue::from_str(&format!("<{url}>; rel=\"next\"")) {
        reply.headers.push((LINK, value));
    }
}

/// `name=value` with everything but unreserved characters percent-encoded.
fn push_pair(url: &mut String, name: &str, value: &str) {
    encode_into(url, name);
    url.push('=');
    encode_into(url, value);
}

fn encode_into(url: &mut String, s: &str) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            url.push(b as char);
        } else {
            url.push_str(&format!("%{b:02X}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_refuse_what_they_did_not_make() {
        let c = email_cursor(1_700_000_000_123, "em_01ab");
        assert_eq!(parse_email_cursor(&c).ok(), Some((1_700_000_000_123, "em_01ab".to_owned())));
        assert!(parse_email_cursor(&contact_cursor("ct_1")).is_err());
        assert!(parse_email_cursor("!!").is_err());
        assert!(parse_email_cursor(&B64.encode("e12.")).is_err());
        assert_eq!(parse_contact_cursor(&contact_cursor("ct_1")).ok(), Some("ct_1".to_owned()));
        assert!(parse_contact_cursor(&B64.encode([0xff, 0xfe])).is_err());
    }

    #[test]
    fn the_next_link_repeats_the_query_with_the_new_cursor() {
        let mut reply = Reply::raw("application/json", bytes::Bytes::new());
        let query = Some("folder=inbox&cursor=old&mailbox=a%2Bb%40x.test&limit=2");
        link_next(&mut reply, "/v1/emails", query, "NEXT");
        let value = reply.headers[0].1.to_str().unwrap_or_default().to_owned();
        assert_eq!(
            value,
            "</v1/emails?folder=inbox&mailbox=a%2Bb%40x.test&limit=2&cursor=NEXT>; rel=\"next\""
        );
    }
}
