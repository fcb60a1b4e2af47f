//! `/v1/contacts`: the domain's contact book, upserted by email.

use serde::Deserialize;

use crate::address;
use crate::error::{Error, Result};
use crate::http::request::parse_json;
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
    let domain = ctx.domain()?.to_owned();
    let contacts = ctx.app.store.read(move |r| r.contacts(&domain)).await?;
    Reply::ok(&contacts)
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
