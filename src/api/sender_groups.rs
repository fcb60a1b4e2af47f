//! `/v1/sender-groups`

use serde::Deserialize;

use super::input::{OneOrMany, name, recipients};
use crate::error::{Error, Result};
use crate::http::request::parse_json;
use crate::http::{Ctx, Reply};
use crate::store::{GroupPatch, MailboxSelection};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateGroup {
    name: String,
    #[serde(default)]
    mailboxes: Option<OneOrMany>,
    #[serde(default)]
    emails: Option<OneOrMany>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UpdateGroup {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    mailboxes: Option<OneOrMany>,
    #[serde(default)]
    emails: Option<OneOrMany>,
    #[serde(default)]
    add_emails: Option<OneOrMany>,
    #[serde(default)]
    remove_emails: Option<OneOrMany>,
}

pub struct NewGroup {
    pub name: String,
    pub mailboxes: MailboxSelection,
    pub emails: Vec<String>,
}

pub fn parse_create(body: &[u8], domain: &str) -> Result<NewGroup> {
    let input: CreateGroup = parse_json(body)?;
    Ok(NewGroup {
        name: name("name", &input.name, 200)?,
        mailboxes: match &input.mailboxes {
            Some(m) => selection(m, domain)?,
            None => MailboxSelection::All,
        },
        emails: match &input.emails {
            Some(list) => recipients("emails", list)?,
            None => Vec::new(),
        },
    })
}

pub fn parse_update(body: &[u8], domain: &str) -> Result<GroupPatch> {
    let input: UpdateGroup = parse_json(body)?;
    let list = |field, value: &Option<OneOrMany>| -> Result<Vec<String>> {
        value.as_ref().map_or(Ok(Vec::new()), |v| recipients(field, v))
    };
    Ok(GroupPatch {
        name: input.name.as_deref().map(|n| name("name", n, 200)).transpose()?,
        mailboxes: input.mailboxes.as_ref().map(|m| selection(m, domain)).transpose()?,
        emails: input.emails.as_ref().map(|e| recipients("emails", e)).transpose()?,
        add_emails: list("addEmails", &input.add_emails)?,
        remove_emails: list("removeEmails", &input.remove_emails)?,
    })
}

/// `"all"`, or mailbox addresses (local part or full) as full addresses on `domain`.
fn selection(value: &OneOrMany, domain: &str) -> Result<MailboxSelection> {
    let entries = value.entries();
    if entries.len() == 1 && entries[0].eq_ignore_ascii_case("all") {
        return Ok(MailboxSelection::All);
    }
    let mut out = Vec::with_capacity(entries.len());
    for entry in entries {
        let local = match entry.rsplit_once('@') {
            Some((local, d)) if d.eq_ignore_ascii_case(domain) => local,
            Some(_) => {
                return Err(Error::invalid(
                    format!("mailbox {entry:?} is not on your domain {domain}"),
                    "`mailboxes` takes mailboxes of your own domain, or \"all\"",
                ));
            }
            None => entry,
        };
        out.push(format!("{}@{domain}", local.to_ascii_lowercase()));
    }
    Ok(MailboxSelection::List(out))
}

fn is_empty(patch: &GroupPatch) -> bool {
    patch.name.is_none()
        && patch.mailboxes.is_none()
        && patch.emails.is_none()
        && patch.add_emails.is_empty()
        && patch.remove_emails.is_empty()
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let groups = ctx.app.store.read(move |r| r.groups(&domain)).await?;
    Reply::ok(&groups)
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let g = parse_create(&ctx.body, &domain)?;
    let group = ctx
        .app
        .store
        .write(move |w| w.create_group(&domain, g.name, g.mailboxes, g.emails))
        .await?;
    Reply::created(&group)
}

pub async fn update(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let patch = parse_update(&ctx.body, &domain)?;
    let id = ctx.param("id").to_owned();
    let group = if is_empty(&patch) {
        // Nothing to change: answer with the group as it is, without a write.
        ctx.app
            .store
            .read(move |r| r.group(&domain, &id))
            .await?
            .ok_or_else(|| Error::not_found("sender group"))?
    } else {
        ctx.app.store.write(move |w| w.update_group(&domain, &id, patch)).await?
    };
    Reply::ok(&group)
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    ctx.app.store.write(move |w| w.delete_group(&domain, &id)).await?;
    Reply::ok(&serde_json::json!({ "deleted": true }))
}
