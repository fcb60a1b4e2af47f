//! Stored messages. The document lives in `EMAILS` in its stored form (`email_doc`), but for the
//! bodies of received mail, decoded from its raw message (see `inbound`); the folder index
//! carries each message's summary, so listing a folder is one range read that never decodes a
//! body.

use std::collections::BTreeMap;
use std::ops::ControlFlow as Flow;

use super::kv::ReadableTable;
use mail_parser::PartType;
use serde::{Deserialize, Serialize};

use super::email_doc::{InlineRaw, KeptRaw, decode_doc, encode_doc, inline_raw};
use super::error::{Error, Result};
pub use super::folder::Folder;
use super::imap::Place;
use super::scan::JsonPage;
use super::status::{DeliveryStatus, MessageStatus, SendType};
use super::tables::*;
use super::{Rtx, Tables, Wtx, encode};
use crate::bounce::BounceClass;

/// The list item of `GET /v1/emails`. Missing members read as their defaults: a stored
/// document leaves empty ones out (`email_doc`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Summary {
    pub id: String,
    pub mailbox: String,
    pub folder: Folder,
    pub from: String,
    pub to: Vec<String>,
    pub subject: String,
    pub snippet: String,
    pub status: MessageStatus,
    pub created_at: u64,
    pub size: u64,
    pub has_attachments: bool,
}

/// The variant of a sequence step a message was sent as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct VariantOf {
    /// Index of the step in the sequence.
    pub step: u32,
    /// Index of the variant in the step's `variants`.
    pub index: u32,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Email {
    #[serde(flatten)]
    pub summary: Summary,
    pub cc: Vec<String>,
    pub reply_to: Option<String>,
    pub message_id: Option<String>,
    pub in_reply_to: Option<String>,
    pub headers: Vec<Header>,
    pub text: Option<String>,
    pub html: Option<String>,
    pub attachments: Vec<Attachment>,
    pub deliveries: Vec<Delivery>,
    /// The kind of mail we send; `None` for mail we received.
    #[serde(default, rename = "type")]
    pub send_type: Option<SendType>,
    #[serde(default)]
    pub batch_id: Option<String>,
    #[serde(default)]
    pub scheduled_at: Option<u64>,
    /// When the queue will next try the recipients that are not final yet.
    #[serde(default)]
    pub next_attempt_at: Option<u64>,
    /// For received mail: the id of the message we sent that this one answers.
    #[serde(default)]
    pub in_reply_to_id: Option<String>,
    /// For a sequence step's message: its sequence and enrollment.
    #[serde(default)]
    pub sequence_id: Option<String>,
    #[serde(default)]
    pub enrollment_id: Option<String>,
    /// For a sequence step sent as one of its variants: which.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<VariantOf>,
    /// For mail we send: the blind copies (delivered to, never written into the message).
    #[serde(default)]
    pub bcc: Vec<String>,
    /// The sender's labels of a message we send (`POST /v1/send`), echoed in its events.
    #[serde(default)]
    pub tags: Vec<String>,
    /// The sender's key-value data of a message we send, echoed in its events.
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// For received mail: what the spam filter found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spam: Option<Spam>,
    /// For received mail: the address it was sent to (an alias, a `+tag` address), which may
    /// differ from its mailbox's. Absent for mail we send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivered_to: Option<String>,
    /// For mail we forward: the envelope sender it goes out with (an SRS0 address, or "" for
    /// the null sender of a bounce passed on) instead of a bounce address of ours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub envelope_from: Option<String>,
}

/// The spam filter's finding on a received message, and what it was last trained as.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spam {
    pub score: f64,
    /// `ham` or `spam`.
    pub verdict: String,
    pub reasons: Vec<String>,
    /// `spam` or `ham` once the mailbox's owner trained the filter with it (moving it into or
    /// out of Junk); kept so that moving it back unlearns the first lesson.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trained: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Header {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    pub filename: Option<String>,
    pub content_type: String,
    pub size: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Delivery {
    pub recipient: String,
    pub status: DeliveryStatus,
    pub attempts: u32,
    pub last_response: Option<String>,
    pub updated_at: u64,
    /// What the last refusal or delay means for the address; absent until one happens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bounce_class: Option<BounceClass>,
}

/// Where a deleted email went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deleted {
    MovedToTrash,
    Removed,
}

impl Email {
    pub fn domain(&self) -> &str {
        self.summary.mailbox.rsplit_once('@').map_or("", |(_, d)| d)
    }

    /// The summary status its recipients add up to.
    pub fn overall_status(&self) -> MessageStatus {
        MessageStatus::of(self.deliveries.iter().map(|d| d.status))
    }

    /// Whether every recipient has a final status.
    pub fn all_final(&self) -> bool {
        self.deliveries.iter().all(|d| d.status.is_final())
    }

    /// Marks every recipient that is not final as cancelled.
    pub(super) fn cancel_pending(&mut self) {
        let now = crate::ids::now_ms();
        for d in self.deliveries.iter_mut().filter(|d| !d.status.is_final()) {
            d.status = DeliveryStatus::Cancelled;
            d.updated_at = now;
        }
        self.summary.status = self.overall_status();
    }
}

/// The text, HTML and headers of a received message, decoded as inbound delivery decodes them
/// (the inbound parser, `inspect`), so a copy stored without them reads back the same.
pub(super) fn fill_bodies(email: &mut Email, raw: &[u8]) {
    let bounded = crate::mime::bound(raw);
    let Some(message) = bounded.parse() else {
        return;
    };
    (email.text, email.html) = received_bodies(&message);
    email.headers = message
        .headers_raw()
        .map(|(name, value)| Header { name: name.to_owned(), value: value.trim().to_owned() })
        .collect();
}

/// The text and HTML of a received message as the API shows them: `html` only when the sender
/// sent HTML (the parser would otherwise dress the text up as HTML), `text` from the text part
/// or else converted from the HTML, both with LF line endings.
pub fn received_bodies(message: &mail_parser::Message<'_>) -> (Option<String>, Option<String>) {
    let html =
        message.html_body.iter().find_map(|&id| match &message.parts.get(id as usize)?.body {
            PartType::Html(html) => Some(lf(html)),
            _ => None,
        });
    (message.body_text(0).map(|t| lf(&t)), html)
}

fn lf(s: &str) -> String {
    if s.contains('\r') { s.replace("\r\n", "\n") } else { s.to_owned() }
}

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
    /// Stores a message in its mailbox's folder. Used by sending and inbound delivery, and by
    /// tests to seed a data directory.
    pub fn insert_email(&mut self, email: &Email) -> Result<()> {
        self.insert_email_with(email, None)
    }

    /// `insert_email`, with the message's raw bytes kept in its document when given.
    pub(super) fn insert_email_with(
        &mut self,
        email: &Email,
        raw: Option<InlineRaw<'_>>,
    ) -> Result<()> {
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
            self.tx.open_table(QUEUE)?.remove((due, id))?;
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
        let mut queue = self.tx.open_table(QUEUE)?;
        for (folder, at, id) in &ids {
            index.remove((mailbox, *folder, *at, id.as_str()))?;
            self.release_raw(id)?;
            self.release_sent_parts(id)?;
            self.release_sent_body(id)?;
            let removed = emails.remove(id.as_str())?;
            let removed = removed.as_ref().map(|v| read_doc(id, v.value()));
            if let Some(Ok((Email { next_attempt_at: Some(due), .. }, _))) = removed {
                queue.remove((due, id.as_str()))?;
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
