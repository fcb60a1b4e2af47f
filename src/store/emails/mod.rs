//! Stored messages. The document lives in `EMAILS` in its stored form (`email_doc`), but for the
//! bodies of received mail, decoded from its raw message (see `inbound`); the folder index
//! carries each message's summary, so listing a folder is one range read that never decodes a
//! body.

use std::ops::ControlFlow as Flow;

use super::kv::ReadableTable;

use super::email_doc::{InlineRaw, KeptRaw, decode_doc, encode_doc, inline_raw};
use super::error::{Error, Result};
pub use super::folder::Folder;
pub(super) use types::fill_bodies;
pub use types::received_bodies;
pub use types::{
    Attachment, Deleted, Delivery, Email, Header, Spam, Summary, TrackingOptions, VariantOf,
};

mod types;
use super::imap::Place;
use super::scan::JsonPage;
use super::tables::*;
use super::{Rtx, Tables, Wtx, encode};

/// Where a folder listing stands: the `createdAt` and id of the last summary it gave.
pub type Position = (u64, String);

/// The email stored under `id` as `bytes`, and the raw message stored with it.
pub(super) fn read_doc<'b>(id: &str, bytes: &'b [u8]) -> Result<(Email, Option<InlineRaw<'b>>)> {
    let (mut email, raw): (Email, _) = decode_doc(bytes)?;
    if email.summary.id.is_empty() {
        id.clone_into(&mut email.summary.id);
    }
    Ok((email, raw))
}

/// `read_doc` of a value read from `EMAILS`, the raw message copied out of it as stored.
fn owned_doc(id: &str, found: Option<&[u8]>) -> Result<Option<(Email, Option<KeptRaw>)>> {
    let doc = found.map(|bytes| read_doc(id, bytes)).transpose()?;
    Ok(doc.map(|(email, raw)| (email, raw.map(InlineRaw::keep))))
}

/// The email as stored, and the raw message stored with it: a received copy comes without its
/// bodies and headers (see `store::inbound`).
fn stored(tx: &impl Tables, id: &str) -> Result<Option<(Email, Option<KeptRaw>)>> {
    let table = tx.table(EMAILS)?;
    let found = table.get(id)?;
    owned_doc(id, found.as_ref().map(|v| v.value()))
}

/// Where a message is, for the IMAP bookkeeping.
fn place(s: &Summary) -> Place<'_> {
    Place {
        mailbox: &s.mailbox,
        folder: s.folder.imap().then_some(s.folder.code()),
        id: &s.id,
        at: s.created_at,
        initial: s.folder.initial_flags(),
    }
}

fn index_key(s: &Summary) -> (&str, u8, u64, &str) {
    (s.mailbox.as_str(), s.folder.code(), s.created_at, s.id.as_str())
}

impl Wtx<'_> {
    /// Takes the queue entry `(due, id)` away for good (its message is deleted, cancelled, or
    /// every recipient is final without an attempt). On a shared store the claim on it goes too,
    /// with the holder's spool entry: nothing is left for a node to find, or to keep until it
    /// restarts.
    pub(super) fn unqueue(&mut self, due: u64, id: &str) -> Result<()> {
        self.tx.open_table(QUEUE)?.remove((due, id))?;
        if self.shard.is_some() {
            let holder = self.tx.open_table(CLAIMS)?.remove(id)?.map(|v| v.value().to_owned());
            if let Some(holder) = holder {
                self.tx.open_table(SPOOL)?.remove((holder.as_str(), due, id))?;
            }
        }
        Ok(())
    }

    /// Stores a message in its mailbox's folder. Used by sending and inbound delivery, and by
    /// tests to seed a data directory.
    pub fn insert_email(&mut self, email: &Email) -> Result<()> {
        self.insert_email_with(email, None)
    }

    /// The keys inserting `email` reads, named ahead.
    pub(super) fn insert_ahead(&self, email: &Email) -> Result<()> {
        let s = &email.summary;
        self.tx.ahead(|ahead| {
            ahead.key(EMAILS, s.id.as_str());
            self.usage_ahead(ahead, &s.mailbox);
            if s.folder == Folder::Outbox {
                Wtx::written_ahead(ahead, &s.mailbox, &s.to);
            }
            Wtx::imap_added_ahead(ahead, &place(s));
        })
    }

    /// `insert_email`, with the message's raw bytes kept in its document when given.
    pub(super) fn insert_email_with(
        &mut self,
        email: &Email,
        raw: Option<InlineRaw<'_>>,
    ) -> Result<()> {
        self.insert_ahead(email)?;
        let mut emails = self.tx.open_table(EMAILS)?;
        if emails.get(email.summary.id.as_str())?.is_some() {
            return Err(Error::Conflict(format!("email {} already exists", email.summary.id)));
        }
        let doc = encode_doc(email, raw)?;
        emails.insert(email.summary.id.as_str(), doc.as_slice())?;
        self.adjust_usage(&email.summary.mailbox, email.summary.size, 0)?;
        let mut index = self.tx.open_table(EMAIL_INDEX)?;
        index.insert(index_key(&email.summary), encode(&email.summary)?.as_slice())?;
        drop(index);
        // Mail the mailbox sends (not warmup's, in its hidden folder): its recipients become
        // people it writes to, whose mail its spam filter trusts more.
        if email.summary.folder == Folder::Outbox {
            self.note_written(&email.summary.mailbox, &email.summary.to)?;
        }
        self.imap_added(&place(&email.summary))
    }

    /// Moves the email to trash, or removes it when it is already there. Emails of mailboxes
    /// outside `domain` are reported as not found.
    pub fn delete_email(&mut self, domain: &str, id: &str) -> Result<Deleted> {
        let mut emails = self.tx.open_table(EMAILS)?;
        let guard = emails.get(id)?;
        let found = owned_doc(id, guard.as_ref().map(|v| v.value()))?;
        drop(guard);
        let Some((mut email, raw)) =
            found.filter(|(e, _)| e.domain() == domain && !e.summary.folder.is_hidden())
        else {
            return Err(Error::not_found("email"));
        };
        if let Some(due) = email.next_attempt_at.take() {
            // Deleting a message that still waits in the queue cancels what is not final yet.
            self.unqueue(due, id)?;
            email.cancel_pending();
        }
        let mut index = self.tx.open_table(EMAIL_INDEX)?;
        index.remove(index_key(&email.summary))?;
        if email.summary.folder == Folder::Trash {
            emails.remove(id)?;
            self.adjust_usage(&email.summary.mailbox, 0, email.summary.size)?;
            self.release_raw(id)?;
            self.release_sent_parts(id)?;
            self.release_sent_body(id)?;
            self.imap_removed(&place(&email.summary), false)?;
            return Ok(Deleted::Removed);
        }
        let before = email.summary.clone();
        email.summary.folder = Folder::Trash;
        emails.insert(id, encode_doc(&email, raw.as_ref().map(KeptRaw::as_inline))?.as_slice())?;
        index.insert(index_key(&email.summary), encode(&email.summary)?.as_slice())?;
        self.imap_moved(&place(&before), &place(&email.summary))?;
        Ok(Deleted::MovedToTrash)
    }

    /// Rewrites a stored email whose summary may have changed (folder, status).
    /// Names the keys `replace_email` reads when a message moves from `before` to folder `to`,
    /// to be read ahead.
    pub(super) fn replace_ahead(&self, before: &Summary, to: Folder) -> Result<()> {
        let mut after = before.clone();
        after.folder = to;
        self.tx.ahead(|ahead| {
            ahead.key(EMAIL_INDEX, index_key(before));
            Wtx::imap_added_ahead(ahead, &place(&after));
        })
    }

    pub(super) fn replace_email(&mut self, before: &Summary, email: &Email) -> Result<()> {
        let mut index = self.tx.open_table(EMAIL_INDEX)?;
        index.remove(index_key(before))?;
        index.insert(index_key(&email.summary), encode(&email.summary)?.as_slice())?;
        let mut emails = self.tx.open_table(EMAILS)?;
        let id = email.summary.id.as_str();
        let old = emails.get(id)?;
        let raw = old.as_ref().map(|v| inline_raw(v.value())).transpose()?.flatten();
        let raw = raw.map(InlineRaw::keep);
        drop(old);
        emails.insert(id, encode_doc(email, raw.as_ref().map(KeptRaw::as_inline))?.as_slice())?;
        let now = &email.summary;
        if now.mailbox == before.mailbox {
            self.adjust_usage(&now.mailbox, now.size, before.size)?;
        } else {
            self.adjust_usage(&before.mailbox, 0, before.size)?;
            self.adjust_usage(&now.mailbox, now.size, 0)?;
        }
        self.imap_moved(&place(before), &place(now))
    }

    /// Gives a message a new UID in the folder it is in, its flags kept (IMAP's MOVE to the
    /// folder it is in, RFC 6851 3.3).
    pub(super) fn renumber_email(&mut self, summary: &Summary) -> Result<()> {
        self.imap_removed(&place(summary), true)?;
        self.imap_added(&place(summary))
    }

    /// The email as stored, without the bodies a large received copy keeps only in its raw
    /// message: that is what writing it back must keep.
    pub(super) fn load_email(&self, id: &str) -> Result<Option<Email>> {
        Ok(stored(self, id)?.map(|(email, _)| email))
    }

    /// Any stored email by id, for warmup bookkeeping inside a write.
    pub fn email_in_write(&self, id: &str) -> Result<Option<Email>> {
        self.load_email(id)
    }

    /// The ids of a folder's messages, oldest first.
    pub(super) fn folder_ids(&self, mailbox: &str, folder: Folder) -> Result<Vec<String>> {
        let index = self.tx.open_table(EMAIL_INDEX)?;
        let code = folder.code();
        let mut ids = Vec::new();
        for entry in index.range((mailbox, code, 0u64, "")..(mailbox, code + 1, 0u64, ""))? {
            ids.push(entry?.0.value().3.to_owned());
        }
        Ok(ids)
    }

    /// Removes every email of a mailbox; returns how many.
    pub(super) fn delete_mailbox_contents(&mut self, mailbox: &str) -> Result<usize> {
        let mut index = self.tx.open_table(EMAIL_INDEX)?;
        let mut ids = Vec::new();
        let start = (mailbox, 0u8, 0u64, "");
        for entry in index.range(start..)? {
            let (key, _) = entry?;
            let (m, folder, at, id) = key.value();
            if m != mailbox {
                break;
            }
            ids.push((folder, at, id.to_owned()));
        }
        let mut emails = self.tx.open_table(EMAILS)?;
        for (folder, at, id) in &ids {
            index.remove((mailbox, *folder, *at, id.as_str()))?;
            self.release_raw(id)?;
            self.release_sent_parts(id)?;
            self.release_sent_body(id)?;
            let removed = emails.remove(id.as_str())?;
            let removed = removed.as_ref().map(|v| read_doc(id, v.value()));
            if let Some(Ok((Email { next_attempt_at: Some(due), .. }, _))) = removed {
                self.unqueue(due, id)?;
            }
            self.imap_forget_message(id)?;
        }
        self.imap_forget(mailbox)?;
        self.forget_usage(mailbox)?;
        Ok(ids.len())
    }
}

impl Rtx {
    /// The email, whatever its domain (for the delivery queue).
    pub fn email_by_id(&self, id: &str) -> Result<Option<Email>> {
        stored(self, id)?.map(|(email, raw)| self.complete(email, raw)).transpose()
    }

    /// The email, if it belongs to a mailbox of `domain`.
    pub fn email(&self, domain: &str, id: &str) -> Result<Option<Email>> {
        stored(self, id)?
            .filter(|(e, _)| e.domain() == domain && !e.summary.folder.is_hidden())
            .map(|(email, raw)| self.complete(email, raw))
            .transpose()
    }

    /// Puts back the bodies and headers a received copy was stored without, from the raw
    /// message stored with it (`inline`) or linked to it.
    fn complete(&self, mut email: Email, inline: Option<KeptRaw>) -> Result<Email> {
        // A campaign's copy keeps its text and HTML once for all copies (`bodies`).
        if email.send_type.is_some()
            && email.text.is_none()
            && email.html.is_none()
            && let Some(body) = self.sent_body(&email.summary.id)?
        {
            (email.text, email.html) = (body.text, body.html);
            return Ok(email);
        }
        let raw = match inline {
            Some(raw) => Some(raw.as_inline().to_vec()?),
            None => self.raw_bodies(&email.summary.id)?,
        };
        if let Some(raw) = raw {
            fill_bodies(&mut email, &raw);
        }
        Ok(email)
    }

    /// Up to `limit` summaries of a folder, newest first, as a JSON array, starting after the
    /// position `after` (a `createdAt` and id). Also answers the position of the last summary
    /// returned when more follow it. A user folder's summaries carry its code, which `shown`
    /// (the folder's name now) replaces.
    pub fn folder_page(
        &self,
        mailbox: &str,
        folder: Folder,
        limit: usize,
        after: Option<(u64, &str)>,
        shown: Option<&str>,
    ) -> Result<(Vec<u8>, Option<Position>)> {
        let index = self.tx.open_table(EMAIL_INDEX)?;
        let lo = (mailbox, folder.code(), 0u64, "");
        let hi = match after {
            Some((at, id)) => (mailbox, folder.code(), at, id),
            None => (mailbox, folder.code() + 1, 0u64, ""),
        };
        let mut page = JsonPage::new(limit, 1024);
        // The position of the last entry taken, in one buffer rather than a copy per entry.
        let (mut last_at, mut last_id) = (0, String::new());
        let mut renamed = Vec::new();
        index.scan(lo..hi, true, |(_, _, at, id), value| {
            let value = match shown {
                Some(name) => {
                    let mut summary: serde_json::Value = super::decode(value)?;
                    summary["folder"] = name.into();
                    renamed.clear();
                    serde_json::to_writer(&mut renamed, &summary)?;
                    renamed.as_slice()
                }
                None => value,
            };
            if page.add(value).is_break() {
                return Ok(Flow::Break(()));
            }
            last_at = at;
            last_id.clear();
            last_id.push_str(id);
            Ok(Flow::Continue(()))
        })?;
        let (out, more) = page.finish();
        Ok((out, more.then_some((last_at, last_id))))
    }
}
