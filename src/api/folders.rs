//! `/v1/mailboxes/{address}/folders`: a mailbox's folders, the system ones (named by their role,
//! `inbox`) and those its user makes (`Projects/2026`), the same list IMAP shows. `{name}` in a
//! path is percent-encoded, so a `/` inside a name is `%2F`.

use serde::{Deserialize, Serialize};

use super::mailboxes::mailbox_address;
use crate::error::{Error, Result};
use crate::http::request::parse_json;
use crate::http::{Ctx, Reply};
use crate::store::{Discard, Folder, FolderEntry, system_named};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Named {
    name: String,
}

/// A validated create or rename request: the folder's new name.
pub fn parse_name(body: &[u8]) -> Result<String> {
    let input: Named = parse_json(body)?;
    Ok(crate::store::check_name(&input.name)?)
}

/// A folder as the API shows it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shown {
    pub name: String,
    /// The system folder's name; `None` for a folder the user made.
    pub role: Option<&'static str>,
    pub total: u64,
    pub unread: u64,
}

/// The API's name of a folder: a system folder's role, or the user's name.
pub fn api_name(entry: &FolderEntry) -> String {
    entry.folder.system_name().map_or_else(|| entry.name.clone(), str::to_owned)
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let address = mailbox_address(&ctx).await?;
    let shown = ctx
        .app
        .store
        .read(move |r| -> Result<Vec<Shown>> {
            let mut out = Vec::new();
            for entry in r.folders(&address)? {
                let (total, unread) = r.folder_counts(&address, entry.folder)?;
                let role = entry.folder.system_name();
                out.push(Shown { name: api_name(&entry), role, total, unread });
            }
            Ok(out)
        })
        .await?;
    Reply::ok(&shown)
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let name = parse_name(&ctx.body)?;
    let address = mailbox_address(&ctx).await?;
    let now = crate::ids::now_ms();
    // Subscribed, so that IMAP clients that show only subscribed folders show it too.
    let made = ctx.app.store.write(move |w| w.create_folder(&address, &name, true, now)).await?;
    Reply::created(&Shown { name: made.name, role: None, total: 0, unread: 0 })
}

/// The user folder `{name}` names; 400 for a system folder, 404 for none.
fn user_folder(ctx: &Ctx) -> Result<String> {
    let name = ctx.param("name");
    if system_named(name).is_some() || name == Folder::Warmup.imap_name() {
        return Err(Error::invalid(
            format!("{name} is a system folder"),
            "system folders keep their names and cannot be deleted",
        ));
    }
    crate::store::check_name(name).map_err(|_| Error::not_found("folder"))
}

pub async fn rename(ctx: Ctx) -> Result<Reply> {
    let from = user_folder(&ctx)?;
    let to = parse_name(&ctx.body)?;
    let address = mailbox_address(&ctx).await?;
    let now = crate::ids::now_ms();
    let shown = ctx
        .app
        .store
        .write(move |w| -> crate::store::Result<Shown> {
            w.rename_folder(&address, &from, &to, now)?;
            Ok(Shown { name: to, role: None, total: 0, unread: 0 })
        })
        .await?;
    let address = mailbox_address(&ctx).await?;
    let name = shown.name.clone();
    let counts = ctx
        .app
        .store
        .read(move |r| -> crate::store::Result<_> {
            match r.folder_named(&address, &name)? {
                Some(folder) => r.folder_counts(&address, folder),
                None => Ok((0, 0)),
            }
        })
        .await?;
    Reply::ok(&Shown { total: counts.0, unread: counts.1, ..shown })
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let name = user_folder(&ctx)?;
    let address = mailbox_address(&ctx).await?;
    let now = crate::ids::now_ms();
    let moved = ctx
        .app
        .store
        .write(move |w| w.delete_folder(&address, &name, Discard::ToTrash, true, now))
        .await?;
    Reply::ok(&serde_json::json!({ "deleted": true, "moved": moved }))
}
