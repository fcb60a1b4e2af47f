//! `POST /v1/suppressions` and `DELETE /v1/suppressions/{email}`: the domain's own additions to
//! and removals from its suppression list (the list itself is read in `analytics`).

use serde::Deserialize;

use crate::address;
use crate::error::{Error, Result};
use crate::http::request::{parse_json, percent_decode};
use crate::http::{Ctx, Reply};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct AddSuppression {
    email: String,
    #[serde(default)]
    reason: Option<String>,
}

/// The validated `(address, why)` of a manual suppression; `why` is kept as its source.
pub fn parse_create(body: &[u8]) -> Result<(String, String)> {
    let input: AddSuppression = parse_json(body)?;
    let email = canonical(&input.email)?;
    let why = match input.reason.as_deref().map(str::trim) {
        None | Some("") => "added through the API".to_owned(),
        Some(text) => super::input::name("reason", text, 500)?,
    };
    Ok((email, why))
}

fn canonical(raw: &str) -> Result<String> {
    let parsed = address::parse(raw.trim()).map_err(|why| {
        Error::invalid(
            format!("invalid `email`: {why}"),
            "give an address such as jane@example.com",
        )
    })?;
    Ok(format!("{}@{}", parsed.local, parsed.domain))
}

/// 201 with the new entry; an address already suppressed keeps its first reason and answers 200
/// with it, so a retried request changes nothing.
pub async fn create(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let (email, why) = parse_create(&ctx.body)?;
    let now = crate::ids::now_ms();
    let (new, entry) = ctx
        .app
        .store
        .write(move |w| -> Result<_> {
            let new = w.suppress(&domain, &email, "manual", &why, now)?;
            Ok((new, w.suppression_for(&domain, &email)?))
        })
        .await?;
    let entry = entry.ok_or_else(|| Error::internal("a suppression just written is missing"))?;
    if new { Reply::created(&entry) } else { Reply::ok(&entry) }
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let email = canonical(&percent_decode(ctx.param("email")))?;
    let removed = ctx.app.store.write(move |w| w.unsuppress(&domain, &email)).await?;
    if !removed {
        return Err(Error::not_found("suppression"));
    }
    Reply::ok(&serde_json::json!({ "deleted": true }))
}
