//! The email document and its parts as the API and the store see them, and the bodies of a
//! received message as they are decoded for it.

use std::collections::BTreeMap;

use mail_parser::PartType;
use serde::{Deserialize, Serialize};

use super::super::folder::Folder;
use super::super::status::{DeliveryStatus, MessageStatus, SendType};
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

/// What campaign tracking a message carries (`tracking` on sequences and campaigns): each part
/// on unless switched off. The List-Unsubscribe headers are not among them: bulk mail always
/// has them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TrackingOptions {
    /// The open pixel.
    pub opens: bool,
    /// Links routed through the click redirect.
    pub clicks: bool,
    /// The unsubscribe line at the end of the html and text parts.
    pub unsubscribe_footer: bool,
}

impl Default for TrackingOptions {
    fn default() -> Self {
        TrackingOptions { opens: true, clicks: true, unsubscribe_footer: true }
    }
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
    /// For a sequence step's message: the step's index (its per-step counters).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<u32>,
    /// Campaign tracking switched off in part; `None`: all of it. Not `tracking`: answers join
    /// the message's engagement counters under that name.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "trackingSwitches")]
    pub tracking: Option<TrackingOptions>,
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

    /// Where the recipients still waiting for delivery are: their domains, lower-cased, sorted and
    /// joined by commas. Claims on a shared store's queue go by it, so that one node delivers a
    /// destination's mail of a batch over the connections its pool keeps to it.
    pub fn destination(&self) -> String {
        let mut domains: Vec<String> = self
            .deliveries
            .iter()
            .filter(|d| !d.status.is_final())
            .map(|d| d.recipient.rsplit_once('@').map_or("", |(_, d)| d).to_ascii_lowercase())
            .collect();
        domains.sort_unstable();
        domains.dedup();
        domains.join(",")
    }

    /// Whether every recipient has a final status.
    pub fn all_final(&self) -> bool {
        self.deliveries.iter().all(|d| d.status.is_final())
    }

    /// Marks every recipient that is not final as cancelled.
    pub(in crate::store) fn cancel_pending(&mut self) {
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
pub(in crate::store) fn fill_bodies(email: &mut Email, raw: &[u8]) {
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
