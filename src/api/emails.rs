//! `/v1/emails`: stored messages of the key's mailboxes.

use serde::Deserialize;

use super::paging;
use crate::error::{Error, Result};
use crate::http::request::{int_param, parse_json};
use crate::http::{Ctx, Reply};
use crate::inbound::learn;
use crate::store::{Deleted, Folder};

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let folder_name = ctx.query_value("folder").map(|f| f.trim().to_owned());
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
            let address = format!("{local}@{domain}");
            let folder = match &folder_name {
                None => Folder::Inbox,
                Some(name) => r
                    .folder_named(&address, name)?
                    .filter(|f| !f.is_hidden())
                    .ok_or_else(|| Error::not_found("folder"))?,
            };
            // A user folder's summaries carry its code; they show its name as it is now.
            let shown = match folder {
                Folder::User(_) => r.folder_name(&address, folder)?,
                _ => None,
            };
            let after = after.as_ref().map(|(at, id)| (*at, id.as_str()));
            Ok(r.folder_page(&address, folder, limit, after, shown.as_deref())?)
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
    full(&ctx, domain, id).await
}

/// The full email as `GET /v1/emails/{id}` answers it.
async fn full(ctx: &Ctx, domain: String, id: String) -> Result<Reply> {
    let found = ctx
        .app
        .store
        .read(move |r| -> Result<_> {
            let Some(email) = r.email(&domain, &id)? else {
                return Ok(None);
            };
            let tracking = r.tracking(&id)?;
            let flags = r.imap_flags(&id)?;
            let folder = match email.summary.folder {
                f @ Folder::User(_) => r.folder_name(&email.summary.mailbox, f)?,
                _ => None,
            };
            Ok(Some((email, tracking, flags, folder)))
        })
        .await?;
    let (email, tracking, flags, folder) = found.ok_or_else(|| Error::not_found("email"))?;
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
        if let Some(name) = folder {
            map.insert("folder".into(), name.into());
        }
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Patch {
    folder: Option<String>,
    flags: Option<Vec<String>>,
}

/// How many flags one message may carry, and how long a keyword may be.
const MAX_FLAGS: usize = 64;
const MAX_KEYWORD: usize = 100;

/// A validated `PATCH /v1/emails/{id}`: the folder to move to, and the flags to set.
pub fn parse_patch(body: &[u8]) -> Result<(Option<String>, Option<Vec<String>>)> {
    let patch: Patch = parse_json(body)?;
    if patch.folder.is_none() && patch.flags.is_none() {
        return Err(Error::invalid("nothing to change", "pass `folder`, `flags` or both"));
    }
    let flags = patch.flags.map(|flags| flags.into_iter().map(check_flag).collect()).transpose()?;
    if flags.as_ref().is_some_and(|f: &Vec<String>| f.len() > MAX_FLAGS) {
        return Err(Error::invalid(
            format!("more than {MAX_FLAGS} flags"),
            "a message carries at most 64 flags",
        ));
    }
    Ok((patch.folder, flags))
}

/// A system flag in its usual case, or a keyword (an IMAP atom without `\\`).
fn check_flag(flag: String) -> Result<String> {
    const SYSTEM: [&str; 5] = ["\\Seen", "\\Flagged", "\\Answered", "\\Draft", "\\Deleted"];
    if let Some(system) = SYSTEM.iter().find(|s| s.eq_ignore_ascii_case(&flag)) {
        return Ok((*system).to_owned());
    }
    let atom = |c: char| c.is_ascii_graphic() && !"(){%*\"]\\".contains(c);
    if flag.is_empty() || flag.len() > MAX_KEYWORD || !flag.chars().all(atom) {
        return Err(Error::invalid(
            format!("flag {flag:?} is neither a system flag nor a keyword"),
            "use \\Seen, \\Flagged, \\Answered, \\Draft, \\Deleted, or a keyword of printable ASCII \
             without spaces, parentheses, braces, quotes, `%`, `*`, `]` or backslashes",
        ));
    }
    Ok(flag)
}

pub async fn update(ctx: Ctx) -> Result<Reply> {
    let (folder, flags) = parse_patch(&ctx.body)?;
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let moved = change(&ctx, &domain, &id, Target::Named(folder), flags).await?;
    if let Some((from, to)) = moved {
        learn::moved(&ctx.app.store, &ctx.app.junk, std::slice::from_ref(&id), from, to).await;
    }
    full(&ctx, domain, id).await
}

/// `POST /v1/emails/{id}/junk`: to Junk, and the mailbox's filter learns it as spam.
pub async fn junk(ctx: Ctx) -> Result<Reply> {
    judged(ctx, true).await
}

/// `POST /v1/emails/{id}/not-junk`: to the inbox, and the filter learns it as ham.
pub async fn not_junk(ctx: Ctx) -> Result<Reply> {
    judged(ctx, false).await
}

async fn judged(ctx: Ctx, spam: bool) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let to = if spam { Folder::Junk } else { Folder::Inbox };
    change(&ctx, &domain, &id, Target::System(to), None).await?;
    // Trained even when it already was there: the caller says what it is.
    learn::train(&ctx.app.store, &ctx.app.junk, &id, spam).await?;
    full(&ctx, domain, id).await
}

/// Where a change moves a message.
enum Target {
    Named(Option<String>),
    System(Folder),
}

/// Moves and flags a message of `domain`; answers the move made (from, to), if any.
async fn change(
    ctx: &Ctx,
    domain: &str,
    id: &str,
    target: Target,
    flags: Option<Vec<String>>,
) -> Result<Option<(Folder, Folder)>> {
    let now = crate::ids::now_ms();
    let (d, i) = (domain.to_owned(), id.to_owned());
    let target = match target {
        Target::Named(name) => (name, None),
        Target::System(f) => (None, Some(f)),
    };
    let moved = ctx
        .app
        .store
        .write(move |w| -> crate::store::Result<Option<(Folder, Folder)>> {
            let email =
                w.email_in_write(&i)?.filter(|e| e.domain() == d && !e.summary.folder.is_hidden());
            let Some(email) = email else { return Err(crate::store::Error::not_found("email")) };
            let mailbox = email.summary.mailbox.clone();
            let mut here = email.summary.folder;
            let to = match &target {
                (Some(name), _) => {
                    let to = w.folder_named(&mailbox, name)?.filter(|f| !f.is_hidden());
                    let Some(to) = to else { return Err(crate::store::Error::not_found("folder")) };
                    Some(to)
                }
                (None, system) => *system,
            };
            let mut moved = None;
            if let Some(to) = to {
                if here == Folder::Outbox || to == Folder::Outbox {
                    // The queue files mail on its way into Sent once it is delivered.
                    return Err(crate::store::Error::invalid(
                        "mail on its way stays in the outbox until it is delivered",
                        "move it once it is in sent; cancel a scheduled send by deleting it",
                    ));
                }
                if to != here {
                    w.imap_move(&mailbox, &i, to, now)?;
                    moved = Some((here, to));
                    here = to;
                }
            }
            if let Some(flags) = flags.clone() {
                w.imap_open(&mailbox, here, now)?;
                w.imap_store_flags(&mailbox, here, &i, flags)?;
            }
            Ok(moved)
        })
        .await?;
    Ok(moved)
}
