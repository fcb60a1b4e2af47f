//! `/v1/emails`: stored messages of the key's mailboxes.

use super::paging;
use crate::error::{Error, Result};
use crate::http::request::int_param;
use crate::http::{Ctx, Reply};
use crate::store::{Deleted, Folder};

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let folder = match ctx.query_value("folder") {
        None => Folder::Inbox,
        Some(name) => Folder::parse(name.trim()).ok_or_else(|| {
            Error::invalid(
                format!("`folder` must be one of inbox, sent, outbox, drafts, trash; got {name:?}"),
                "pass folder=inbox (the default), sent, outbox, drafts or trash",
            )
        })?,
    };
    let limit = int_param(ctx.query_value("limit"), "limit", 1, 100, 50)? as usize;
    let wanted = ctx
        .query_value("mailbox")
        .map(|m| super::mailboxes::local_part_of(&m, &domain))
        .transpose()?;
    let after = ctx.query_value("cursor").map(|c| paging::parse_email_cursor(&c)).transpose()?;
    let (json, last) = ctx
        .app
        .store
        .read(move |r| -> Result<_> {
            let local = match wanted {
                Some(local) => {
                    r.mailbox(&domain, &local)?.ok_or_else(|| Error::not_found("mailbox"))?;
                    local
                }
                // The default is the domain's first mailbox, the one created earliest.
                None => match r.mailboxes(&domain)?.into_iter().min_by_key(|m| m.created_at) {
                    Some(first) => first.local_part,
                    None => return Ok((b"[]".to_vec(), None)),
                },
            };
            let after = after.as_ref().map(|(at, id)| (*at, id.as_str()));
            Ok(r.folder_page(&format!("{local}@{domain}"), folder, limit, after)?)
        })
        .await?;
    let mut reply = Reply::json_bytes(hyper::StatusCode::OK, json.into());
    if let Some((at, id)) = last {
        let cursor = paging::email_cursor(at, &id);
        paging::link_next(&mut reply, "/v1/emails", ctx.query.as_deref(), &cursor);
    }
    Ok(reply)
}

pub async fn get(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let found = ctx
        .app
        .store
        .read(move |r| -> Result<_> {
            let Some(email) = r.email(&domain, &id)? else {
                return Ok(None);
            };
            let tracking = r.tracking(&id)?;
            let flags = r.imap_flags(&id)?;
            Ok(Some((email, tracking, flags)))
        })
        .await?;
    let (email, tracking, flags) = found.ok_or_else(|| Error::not_found("email"))?;
    let mut value = serde_json::to_value(&email).map_err(Error::internal)?;
    // Campaign and sequence messages report their engagement; other mail has none to report.
    let tracking = match (email.send_type, tracking) {
        (Some(kind), t) if kind.is_tracked() => {
            serde_json::to_value(t.unwrap_or_default()).map_err(Error::internal)?
        }
        _ => serde_json::Value::Null,
    };
    if let Some(map) = value.as_object_mut() {
        map.insert("tracking".into(), tracking);
        // The IMAP flags (\Seen, \Flagged, ...), as mail clients set them.
        map.insert("flags".into(), flags.into());
    }
    Reply::ok(&value)
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let outcome = ctx.app.store.write(move |w| w.delete_email(&domain, &id)).await?;
    let (deleted, moved) = match outcome {
        Deleted::MovedToTrash => (false, "trash"),
        Deleted::Removed => (true, "none"),
    };
    Reply::ok(&serde_json::json!({ "deleted": deleted, "moved": moved }))
}
