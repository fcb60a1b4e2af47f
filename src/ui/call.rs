//! The dashboard acts through the API's own handlers: a form becomes the JSON body the API
//! documents, so every rule (validation, screening, limits of the store) lives in one place.

use bytes::Bytes;
use serde_json::Value;

use super::session::{Notice, User};
use crate::error::{Error, Result};
use crate::http::router::Handler;
use crate::http::{Ctx, Reply};

/// One call of an API handler on behalf of the user.
pub struct Call<'a> {
    ctx: &'a Ctx,
    user: &'a User,
    params: Vec<(&'static str, String)>,
    query: Option<String>,
    body: Bytes,
}

impl<'a> Call<'a> {
    pub fn new(ctx: &'a Ctx, user: &'a User) -> Call<'a> {
        Call { ctx, user, params: Vec::new(), query: None, body: Bytes::new() }
    }

    pub fn param(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.params.push((name, value.into()));
        self
    }

    /// A query string, already encoded.
    pub fn query(mut self, query: String) -> Self {
        self.query = Some(query);
        self
    }

    pub fn body(mut self, value: &Value) -> Self {
        self.body = Bytes::from(value.to_string());
        self
    }

    /// A body that is not JSON (a CSV file), as the handler reads it.
    pub fn raw(mut self, body: Bytes) -> Self {
        self.body = body;
        self
    }

    /// Runs the handler; answers its JSON body.
    pub async fn run(self, handler: Handler) -> Result<Value> {
        Ok(self.run_page(handler).await?.0)
    }

    /// Runs a listing handler; answers its JSON body and the cursor of the next page, taken
    /// from the `Link` header the API announces it in.
    pub async fn run_page(self, handler: Handler) -> Result<(Value, Option<String>)> {
        let ctx = Ctx {
            app: self.ctx.app.clone(),
            principal: Some(self.user.principal.clone()),
            params: self.params,
            query: self.query,
            body: self.body,
            peer: self.ctx.peer,
            headers: hyper::HeaderMap::new(),
        };
        let reply: Reply = handler(ctx).await?;
        let next = reply
            .headers
            .iter()
            .find(|(name, _)| name == hyper::header::LINK)
            .and_then(|(_, value)| value.to_str().ok())
            .and_then(next_cursor);
        Ok((serde_json::from_slice(&reply.body).map_err(Error::internal)?, next))
    }
}

/// The `cursor` of a `Link: <URL>; rel="next"` value.
fn next_cursor(link: &str) -> Option<String> {
    let url = link.strip_prefix('<')?.split_once('>')?.0;
    let query = url.split_once('?')?.1;
    crate::http::request::query_pairs(query).find(|(k, _)| k == "cursor").map(|(_, v)| v.into())
}

/// What a failed call tells the user: the message and hint of the API's error object.
pub fn failure(error: &Error) -> Notice {
    let reply = crate::http::error::error_reply(error, "");
    let body: Value = serde_json::from_slice(&reply.body).unwrap_or(Value::Null);
    let message = body["message"].as_str().unwrap_or("the request failed");
    let text = match body["hint"].as_str().filter(|h| !h.is_empty()) {
        Some(hint) => format!("{message} ({hint})"),
        None => message.to_owned(),
    };
    Notice { ok: false, text, secret: None, echo: None }
}

/// A notice of success.
pub fn done(text: impl Into<String>) -> Notice {
    Notice { ok: true, text: text.into(), secret: None, echo: None }
}

/// Formats a time in milliseconds as a UTC date and time (RFC 5322 style, as mail shows it).
pub fn when(ms: u64) -> String {
    let full = mail_builder::headers::date::Date::new((ms / 1000) as i64).to_rfc822();
    full.trim_end_matches(" +0000").to_owned() + " UTC"
}

/// Percent-encodes a query value.
pub fn enc(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// A field of an API answer as text ("" when absent; numbers and booleans as written).
pub fn field(v: &Value, name: &str) -> String {
    match &v[name] {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A time field (Unix ms) of an API answer, formatted.
pub fn time_field(v: &Value, name: &str) -> String {
    v[name].as_u64().map(when).unwrap_or_default()
}

/// The items of an array answer.
pub fn items(v: &Value) -> &[Value] {
    v.as_array().map_or(&[], Vec::as_slice)
}
