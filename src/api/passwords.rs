//! `/v1/mailboxes/{address}/passwords`: app passwords that mail clients log in with (the login
//! name is the full mailbox address). A password is shown once, in the answer that makes it.

use serde::{Deserialize, Serialize};

use super::mailboxes::mailbox_address;
use crate::error::Result;
use crate::http::request::parse_json;
use crate::http::{Ctx, Reply};
use crate::store::AppPassword;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreatePassword {
    name: String,
}

/// A validated creation request: the password's name.
pub fn parse_create(body: &[u8]) -> Result<String> {
    let input: CreatePassword = parse_json(body)?;
    super::input::name("name", &input.name, 100)
}

/// An app password as listed: never the password or its hash.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed<'a> {
    id: &'a str,
    name: &'a str,
    created_at: u64,
}

impl<'a> From<&'a AppPassword> for Listed<'a> {
    fn from(p: &'a AppPassword) -> Self {
        Listed { id: &p.id, name: &p.name, created_at: p.created_at }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Created<'a> {
    id: &'a str,
    name: &'a str,
    password: &'a str,
    created_at: u64,
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let name = parse_create(&ctx.body)?;
    let address = mailbox_address(&ctx).await?;
    let (record, password) = crate::credentials::create(&ctx.app.store, address, name).await?;
    Reply::created(&Created {
        id: &record.id,
        name: &record.name,
        password: &password,
        created_at: record.created_at,
    })
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let address = mailbox_address(&ctx).await?;
    let found = ctx.app.store.read(move |r| r.app_passwords(&address)).await?;
    Reply::ok(&found.iter().map(Listed::from).collect::<Vec<_>>())
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let address = mailbox_address(&ctx).await?;
    let id = ctx.param("id").to_owned();
    ctx.app.store.write(move |w| w.delete_app_password(&address, &id)).await?;
    Reply::ok(&serde_json::json!({ "deleted": true }))
}
