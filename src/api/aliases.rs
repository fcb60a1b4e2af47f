//! `/v1/aliases`: addresses of the key's domain that pass mail on to mailboxes (of any hosted
//! domain) or outside addresses; `*` is the domain's catch-all.

use serde::Deserialize;

use super::paging;
use crate::address;
use crate::error::{Error, Result};
use crate::http::request::{int_param, parse_json};
use crate::http::{Ctx, Reply};
use crate::store::CATCH_ALL;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateAlias {
    address: String,
    targets: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateAlias {
    targets: Vec<String>,
}

/// The lower-cased local part of an alias `address` (a local part, `*`, or a full address on
/// `domain`).
fn alias_local(raw: &str, domain: &str) -> Result<String> {
    let raw = raw.trim();
    let local = match raw.rsplit_once('@') {
        Some((local, d)) if d.eq_ignore_ascii_case(domain) => local,
        Some(_) => {
            return Err(Error::invalid(
                format!("`address` {raw:?} is not on your domain {domain}"),
                "give the local part only (e.g. \"team\"), or \"*\" for the catch-all",
            ));
        }
        None => raw,
    };
    if local != CATCH_ALL {
        address::check_local_part(local).map_err(|why| {
            Error::invalid(
                format!("invalid `address`: {why}"),
                "give the local part only (e.g. \"team\"), or \"*\" for the catch-all",
            )
        })?;
    }
    Ok(local.to_ascii_lowercase())
}

/// A validated creation request: the local part and the targets.
pub fn parse_create(body: &[u8], domain: &str) -> Result<(String, Vec<String>)> {
    let input: CreateAlias = parse_json(body)?;
    let local = alias_local(&input.address, domain)?;
    Ok((local, super::input::targets("targets", &input.targets, 1)?))
}

pub fn parse_update(body: &[u8]) -> Result<Vec<String>> {
    let input: UpdateAlias = parse_json(body)?;
    super::input::targets("targets", &input.targets, 1)
}

/// The local part named by the path (local part, `*` or full address; percent-decoded by the
/// router). Another domain's address names nothing this key can see.
fn path_local(ctx: &Ctx, domain: &str) -> Result<String> {
    let value = ctx.param("address").trim();
    let local = match value.rsplit_once('@') {
        Some((local, d)) if d.eq_ignore_ascii_case(domain) => local,
        Some(_) => return Err(Error::not_found("alias")),
        None => value,
    };
    if local.is_empty() {
        return Err(Error::not_found("alias"));
    }
    Ok(local.to_ascii_lowercase())
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?;
    let limit = int_param(ctx.query_value("limit"), "limit", 1, 500, 100)? as usize;
    let after = ctx.query_value("cursor").map(|c| paging::parse_contact_cursor(&c)).transpose()?;
    let (json, last) =
        ctx.app.store.read(|r| r.aliases_page_json(domain, after.as_deref(), limit)).await?;
    let mut reply = Reply::json_bytes(hyper::StatusCode::OK, json.into());
    if let Some(last) = last {
        // The cursor names the last local part given (local parts sort like ids do).
        let cursor = paging::contact_cursor(&last);
        paging::link_next(&mut reply, "/v1/aliases", ctx.query.as_deref(), &cursor);
    }
    Ok(reply)
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let (local, targets) = parse_create(&ctx.body, &domain)?;
    let alias = ctx.app.store.write(move |w| w.create_alias(&domain, &local, targets)).await?;
    Reply::created(&alias)
}

pub async fn get(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?;
    let local = path_local(&ctx, domain)?;
    let found = ctx.app.store.read(|r| r.alias(domain, &local)).await?;
    Reply::ok(&found.ok_or_else(|| Error::not_found("alias"))?)
}

pub async fn update(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let local = path_local(&ctx, &domain)?;
    let targets = parse_update(&ctx.body)?;
    let alias = ctx.app.store.write(move |w| w.update_alias(&domain, &local, targets)).await?;
    Reply::ok(&alias)
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let local = path_local(&ctx, &domain)?;
    ctx.app.store.write(move |w| w.delete_alias(&domain, &local)).await?;
    Reply::ok(&serde_json::json!({ "deleted": true }))
}
