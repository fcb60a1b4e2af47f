//! What a handler receives, and the parsing of its inputs: path parameters, query strings and JSON
//! bodies, each failing with a 400 that names the offending field.

use std::borrow::Cow;
use std::net::SocketAddr;

use bytes::Bytes;
use serde::de::DeserializeOwned;

use crate::auth::Principal;
use crate::error::{Error, Result};
use crate::state::App;

pub struct Ctx {
    pub app: App,
    pub principal: Option<Principal>,
    pub params: Vec<(&'static str, String)>,
    pub query: Option<String>,
    pub body: Bytes,
    pub peer: SocketAddr,
    /// The request headers, for dashboard pages and tracking links only (cookies, forwarding);
    /// empty otherwise.
    pub headers: hyper::HeaderMap,
}

impl Ctx {
    pub fn param(&self, name: &str) -> &str {
        self.params.iter().find(|(k, _)| *k == name).map_or("", |(_, v)| v.as_str())
    }

    /// The calling key's domain; 403 for an org-wide key.
    pub fn domain(&self) -> Result<&str> {
        match &self.principal {
            Some(p) => p.domain(),
            None => Err(Error::Unauthorized("missing API key")),
        }
    }

    /// The first value of a query parameter, percent-decoded.
    pub fn query_value(&self, name: &str) -> Option<String> {
        let query = self.query.as_deref()?;
        query_pairs(query).find(|(k, _)| k == name).map(|(_, v)| v.into_owned())
    }

    pub fn json<T: DeserializeOwned>(&self) -> Result<T> {
        parse_json(&self.body)
    }
}

/// Integer query parameter within `min..=max`, `default` when absent.
pub fn int_param(
    value: Option<String>,
    name: &str,
    min: u64,
    max: u64,
    default: u64,
) -> Result<u64> {
    let Some(raw) = value else {
        return Ok(default);
    };
    match raw.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(Error::invalid(
            format!("`{name}` must be an integer from {min} to {max}; got {raw:?}"),
            format!("pass `{name}` between {min} and {max}, or leave it out for {default}"),
        )),
    }
}

pub fn query_pairs(query: &str) -> impl Iterator<Item = (Cow<'_, str>, Cow<'_, str>)> {
    query.split('&').filter(|p| !p.is_empty()).map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (form_decode(k), form_decode(v))
    })
}

fn form_decode(s: &str) -> Cow<'_, str> {
    if s.contains('+') {
        Cow::Owned(percent_decode(&s.replace('+', " ")))
    } else if s.contains('%') {
        Cow::Owned(percent_decode(s))
    } else {
        Cow::Borrowed(s)
    }
}

/// Decodes `%XX` escapes; malformed escapes are kept as written, invalid UTF-8 is replaced.
pub fn percent_decode(s: &str) -> String {
    if !s.contains('%') {
        return s.to_owned();
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(hex) = bytes.get(i + 1..i + 3)
            && let Ok(hex) = std::str::from_utf8(hex)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a JSON body into `T`. Errors name the field (`contacts[3].email`) and say what was
/// expected, so a client can fix its request without reading our source.
pub fn parse_json<T: DeserializeOwned>(body: &[u8]) -> Result<T> {
    parse_json_nullable(body, &[])
}

/// `parse_json`, where the fields named in `nullable` (top-level paths) may be `null`.
pub fn parse_json_nullable<T: DeserializeOwned>(body: &[u8], nullable: &[&str]) -> Result<T> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        None => {
            return Err(Error::invalid(
                "the request body is empty",
                "send a JSON object as documented for this endpoint",
            ));
        }
        // Every body of this API is an object; serde would otherwise read an array positionally.
        Some(b) if *b != b'{' => {
            return Err(Error::invalid(
                "invalid request body: expected a JSON object",
                "send a JSON object with the fields documented for this endpoint",
            ));
        }
        Some(_) => {}
    }
    super::nulls::refuse_nulls(body, nullable)?;
    // simd-json parses in place, so it gets its own copy (with `19.0` read as the integer it is).
    let mut buf = super::numbers::normalized(body);
    let mut de = simd_json::Deserializer::from_slice(&mut buf).map_err(|e| {
        Error::invalid(
            format!("the request body is not valid JSON ({})", describe(&e)),
            "check the JSON syntax: quotes, commas and brackets",
        )
    })?;
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let what = describe(e.inner());
        if path == "." {
            Error::invalid(
                format!("invalid request body: {what}"),
                "send a JSON object with the fields documented for this endpoint",
            )
        } else {
            Error::invalid(
                format!("invalid field `{path}`: {what}"),
                format!("fix `{path}`; see the endpoint's request schema in /openapi.json"),
            )
        }
    })
}

fn describe(e: &simd_json::Error) -> String {
    use simd_json::ErrorType as E;
    let expected = match e.error() {
        E::Serde(message) => return message.clone(),
        E::ExpectedString => "expected a string",
        E::ExpectedInteger | E::ExpectedSigned | E::ExpectedUnsigned => "expected an integer",
        E::ExpectedFloat | E::ExpectedNumber => "expected a number",
        E::ExpectedBoolean => "expected true or false",
        E::ExpectedArray => "expected an array",
        E::ExpectedMap => "expected an object",
        E::ExpectedNull => "expected null",
        E::ExpectedEnum => "expected one of the allowed values",
        E::Eof => "the body ends too early",
        E::TrailingData => "there is data after the JSON value",
        E::InputTooLarge => "the body is too large",
        other => return format!("{other:?} at byte {}", e.index()),
    };
    expected.to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Input {
        name: String,
        count: Option<u32>,
    }

    fn message(body: &str) -> String {
        match parse_json::<Input>(body.as_bytes()) {
            Err(Error::Invalid { message, .. }) => message,
            other => panic!("expected 400, got {other:?}"),
        }
    }

    #[test]
    fn errors_name_the_field() {
        assert!(message(r#"{"name": 5}"#).contains("`name`"));
        assert!(message(r#"{"name": "x", "count": "many"}"#).contains("`count`"));
        assert!(message(r#"{"count": 1}"#).contains("missing field `name`"));
        assert!(message(r#"{"name": "x", "nmae": 1}"#).contains("unknown field `nmae`"));
        assert!(message(r#"{"name": "#).contains("not valid JSON"));
        assert!(message("").contains("empty"));
        let m = message("[1,2]");
        assert!(m.contains("invalid request body"), "{m}");
    }

    #[test]
    fn decodes_queries() {
        let pairs: Vec<_> = query_pairs("mailbox=a%40b.com&folder=inbox&x=a+b").collect();
        assert_eq!(pairs[0].1, "a@b.com");
        assert_eq!(pairs[2].1, "a b");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
    }
}
