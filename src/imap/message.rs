//! The bytes of a message as IMAP shows them: the raw message as stored (received mail, mail a
//! client submitted or appended), or, for mail sent through the API, its MIME rendered once and
//! kept, so its size and its bytes never change between two fetches. And the reverse: the
//! stored email an APPEND makes of the bytes it is given.

use std::sync::Arc;

use crate::mail::build::{Outgoing, Part, build};
use crate::store::{Email, Folder, ImapEntry, Store};

/// Messages per store read or write: a large folder is worked through this many at a time.
pub const CHUNK: usize = 256;

/// A message of a chunk: its place and flags, and its bytes when they were asked for.
pub struct Loaded {
    pub entry: ImapEntry,
    pub raw: Option<Arc<Vec<u8>>>,
}

/// The messages at these UIDs (those still there), with their bytes when `bytes`.
pub async fn load(
    store: &Store,
    mailbox: &str,
    folder: Folder,
    uids: Vec<u32>,
    bytes: bool,
) -> crate::store::Result<Vec<Loaded>> {
    let m = mailbox.to_owned();
    let found = store
        .read_long(move |r| -> crate::store::Result<_> {
            let entries = r.imap_entries(&m, folder, &uids)?;
            let mut out = Vec::with_capacity(entries.len());
            for entry in entries {
                let raw = if bytes { r.raw_message(&entry.id)? } else { None };
                let missing = bytes && raw.is_none();
                let source = if missing { r.email_by_id(&entry.id)? } else { None };
                let parts = match &source {
                    Some(e) if e.summary.has_attachments => r.sent_parts(&entry.id)?,
                    _ => Vec::new(),
                };
                out.push((entry, raw, source, parts));
            }
            Ok(out)
        })
        .await?;
    let mut out = Vec::with_capacity(found.len());
    for (entry, raw, source, parts) in found {
        let raw = match (raw, source) {
            (Some(raw), _) => Some(raw),
            (None, Some(email)) => Some(keep_rendered(store, &entry.id, &email, &parts).await?),
            (None, None) => bytes.then(Vec::new),
        };
        out.push(Loaded { entry, raw: raw.map(Arc::new) });
    }
    Ok(out)
}

async fn keep_rendered(
    store: &Store,
    id: &str,
    email: &Email,
    parts: &[Vec<u8>],
) -> crate::store::Result<Vec<u8>> {
    let raw = render(email, parts);
    let (id, kept) = (id.to_owned(), raw.clone());
    store.write(move |w| w.imap_keep_rendered(&id, &kept)).await?;
    // Another session may have kept its rendering first: read back what is stored.
    let id = email.summary.id.clone();
    Ok(store.read_long(move |r| r.raw_message(&id)).await?.unwrap_or(raw))
}

/// The MIME of a message sent through the API, as its recipients got it (without the tracking
/// a campaign adds per recipient).
fn render(email: &Email, parts: &[Vec<u8>]) -> Vec<u8> {
    let (from_name, from) = crate::queue::compose::split_display(&email.summary.from);
    let attachments: Vec<Part<'_>> = email
        .attachments
        .iter()
        .zip(parts)
        .map(|(a, bytes)| Part {
            filename: a.filename.as_deref().unwrap_or("attachment"),
            content_type: &a.content_type,
            bytes,
        })
        .collect();
    let extra: Vec<_> = email
        .headers
        .iter()
        .filter(|h| !crate::mail::headers::is_owned(&h.name))
        .cloned()
        .collect();
    let message_id = email.message_id.as_deref().unwrap_or("").trim_matches(['<', '>']);
    let built = build(&Outgoing {
        from_name: from_name.as_deref(),
        from: &from,
        to: &email.summary.to,
        subject: &email.summary.subject,
        text: email.text.as_deref().unwrap_or(""),
        html: email.html.as_deref(),
        message_id,
        date_ms: email.scheduled_at.unwrap_or(email.summary.created_at),
        in_reply_to: email.in_reply_to.as_deref(),
        unsubscribe: None,
        cc: &email.cc,
        reply_to: email.reply_to.as_deref(),
        extra_headers: &extra,
        attachments: &attachments,
    });
    built.unwrap_or_default()
}

/// The stored email an APPEND of `raw` to `folder` of `mailbox` makes; `None` when the bytes
/// are not a message.
pub fn appended(raw: &[u8], mailbox: &str, folder: Folder, at: u64) -> Option<Email> {
    let mut email = crate::inbound::inspect(raw, at)?.email;
    email.summary.id = crate::ids::new_id("em");
    email.summary.mailbox = mailbox.to_owned();
    email.summary.folder = folder;
    Some(email)
}
