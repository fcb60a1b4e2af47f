//! `/v1/contacts`: the domain's contact book, upserted by email.

use serde::Deserialize;

use super::paging;
use crate::address;
use crate::error::{Error, Result};
use crate::http::request::{int_param, parse_json};
use crate::http::{Ctx, Reply};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpsertContact {
    email: String,
    name: String,
}

/// The validated `(email, name)` of a contact.
pub fn parse_upsert(body: &[u8]) -> Result<(String, String)> {
    let input: UpsertContact = parse_json(body)?;
    let parsed = address::parse(&input.email).map_err(|why| {
        Error::invalid(
            format!("invalid `email`: {why}"),
            "give an address such as jane@example.com",
        )
    })?;
    let email = format!("{}@{}", parsed.local, parsed.domain);
    Ok((email, super::input::name("name", &input.name, 200)?))
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?;
    let limit = int_param(ctx.query_value("limit"), "limit", 1, 500, 100)? as usize;
    let after = ctx.query_value("cursor").map(|c| paging::parse_contact_cursor(&c)).transpose()?;
    let (json, last) =
        ctx.app.store.read(|r| r.contacts_page_json(domain, after.as_deref(), limit)).await?;
    let mut reply = Reply::json_bytes(hyper::StatusCode::OK, json.into());
    if let Some(last) = last {
        let cursor = paging::contact_cursor(&last);
        paging::link_next(&mut reply, "/v1/contacts", ctx.query.as_deref(), &cursor);
    }
    Ok(reply)
}

pub async fn upsert(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let (email, name) = parse_upsert(&ctx.body)?;
    let contact = ctx.app.store.write(move |w| w.upsert_contact(&domain, &email, name)).await?;
    Reply::created(&contact)
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    ctx.app.store.write(move |w| w.delete_contact(&domain, &id)).await?;
    Reply::ok(&serde_json::json!({ "deleted": true }))
}
