//! `/v1/mailboxes`

use serde::Deserialize;

use crate::address;
use crate::error::{Error, Result};
use crate::http::request::parse_json_nullable;
use crate::http::{Ctx, Reply};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CreateMailbox {
    address: String,
    #[serde(default)]
    display_name: Option<String>,
}

/// A validated creation request: the lower-cased local part and the display name.
pub fn parse_create(body: &[u8], domain: &str) -> Result<(String, Option<String>)> {
    let input: CreateMailbox = parse_json_nullable(body, &["displayName"])?;
    let raw = input.address.trim();
    let local = match raw.rsplit_once('@') {
        Some((local, d)) if d.eq_ignore_ascii_case(domain) => local,
        Some(_) => {
            return Err(Error::invalid(
                format!("`address` {raw:?} is not on your domain {domain}"),
                "give the local part only (e.g. \"support\"); the domain is appended",
            ));
        }
        None => raw,
    };
    address::check_local_part(local).map_err(|why| {
        Error::invalid(
            format!("invalid `address`: {why}"),
            "give the local part only, such as \"support\" or \"jane.doe\"",
        )
    })?;
    let display_name = match input.display_name.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(name) => Some(super::input::name("displayName", name, 200)?),
    };
    Ok((local.to_ascii_lowercase(), display_name))
}

/// The local part named by a path or query value (local part or full address). A full address
/// on another domain names nothing this key can see.
pub fn local_part_of(value: &str, domain: &str) -> Result<String> {
    let value = value.trim();
    let local = match value.rsplit_once('@') {
        Some((local, d)) if d.eq_ignore_ascii_case(domain) => local,
        Some(_) => return Err(Error::not_found("mailbox")),
        None => value,
    };
    if local.is_empty() {
        return Err(Error::not_found("mailbox"));
    }
    Ok(local.to_ascii_lowercase())
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let json = ctx.app.store.read(move |r| r.mailboxes_json(&domain)).await?;
    Ok(Reply::json_bytes(hyper::StatusCode::OK, json.into()))
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let (local, display_name) = parse_create(&ctx.body, &domain)?;
    let mailbox =
        ctx.app.store.write(move |w| w.create_mailbox(&domain, &local, display_name)).await?;
    Reply::created(&mailbox)
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let local = local_part_of(ctx.param("address"), &domain)?;
    ctx.app.store.write(move |w| w.delete_mailbox(&domain, &local)).await?;
    Reply::ok(&serde_json::json!({ "deleted": true }))
}
