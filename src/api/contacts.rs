//! `/v1/contacts`: the domain's contact book, upserted by email; each contact carries merge
//! `fields` under the limits below (CSV import: `contacts_import`).

use std::collections::BTreeMap;

use serde::Deserialize;

use super::paging;
use crate::address;
use crate::error::{Error, Result};
use crate::http::request::{int_param, parse_json};
use crate::http::{Ctx, Reply};
use crate::store::{ContactUpsert, MAX_CONTACT_FIELDS};

/// The longest field name (as a merge-field name: letters, digits, `_`, `-`, `.`).
pub const MAX_FIELD_NAME: usize = 64;
/// The longest field value, in characters.
pub const MAX_FIELD_VALUE: usize = 2000;
/// The longest contact name, in characters.
pub const MAX_NAME: usize = 200;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpsertContact {
    email: String,
    name: String,
    #[serde(default)]
    fields: BTreeMap<String, String>,
}

/// Why a field name cannot be used: it must be usable as a `{{placeholder}}`.
pub fn bad_field_name(name: &str) -> Option<&'static str> {
    if name.is_empty() || name.len() > MAX_FIELD_NAME {
        return Some("field names take 1 to 64 bytes");
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')) {
        return Some("field names take letters, digits, `_`, `-` and `.` only");
    }
    if name.eq_ignore_ascii_case("email") || name.eq_ignore_ascii_case("name") {
        return Some("`email` and `name` are the contact's own, not fields");
    }
    None
}

/// An address as contacts store it (`local@domain`, the domain lower-cased), or why not.
pub fn contact_email(given: &str) -> std::result::Result<String, String> {
    let parsed = address::parse(given.trim()).map_err(|why| why.to_string())?;
    Ok(format!("{}@{}", parsed.local, parsed.domain))
}

/// The validated contact of a `POST /v1/contacts` body.
pub fn parse_upsert(body: &[u8]) -> Result<ContactUpsert> {
    let input: UpsertContact = parse_json(body)?;
    let email = contact_email(&input.email).map_err(|why| {
        Error::invalid(
            format!("invalid `email`: {why}"),
            "give an address such as jane@example.com",
        )
    })?;
    if input.fields.len() > MAX_CONTACT_FIELDS {
        return Err(Error::invalid(
            format!("`fields` holds {} entries; at most {MAX_CONTACT_FIELDS}", input.fields.len()),
            "keep only the fields your steps use",
        ));
    }
    for (k, v) in &input.fields {
        if let Some(why) = bad_field_name(k) {
            let shown: String = k.chars().take(MAX_FIELD_NAME).collect();
            return Err(Error::invalid(format!("`fields.{shown}`: {why}"), "rename the field"));
        }
        if v.chars().count() > MAX_FIELD_VALUE {
            return Err(Error::invalid(
                format!("`fields.{k}` is longer than {MAX_FIELD_VALUE} characters"),
                "shorten the value",
            ));
        }
    }
    let name = super::input::name("name", &input.name, MAX_NAME)?;
    Ok(ContactUpsert { email, name: Some(name), fields: input.fields })
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
    let given = parse_upsert(&ctx.body)?;
    let contact = ctx.app.store.write(move |w| w.upsert_contact(&domain, &given)).await?;
    Reply::created(&contact)
}

pub async fn get(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let ids = vec![ctx.param("id").to_owned()];
    let found = ctx.app.store.read(move |r| r.contacts_by_id(&domain, &ids)).await?;
    let contact = found.into_iter().flatten().next().ok_or_else(|| Error::not_found("contact"))?;
    Reply::ok(&contact)
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    ctx.app.store.write(move |w| w.delete_contact(&domain, &id)).await?;
    Reply::ok(&serde_json::json!({ "deleted": true }))
}
