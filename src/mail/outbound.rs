//! The one way an outbound message comes into being, whoever sends it (the send API, a sequence
//! step, warmup, SMTP submission): the same id, Message-ID, folder, per-recipient deliveries,
//! snippet and size rules for all. What only the send API sets (copies, attachments, the
//! sender's headers, tags and metadata) comes in `Extras`, empty for every other sender.

use std::collections::BTreeMap;

use crate::ids::new_id;
use crate::store::{
    Attachment, Delivery, DeliveryStatus, Email, Folder, Header, MessageStatus, SendType, Summary,
};

/// What a sender decides about a message; `into_email` derives the rest.
pub struct Outbound {
    pub kind: SendType,
    /// The sending mailbox's address.
    pub mailbox: String,
    /// The From header: the address, with the mailbox's display name when it has one.
    pub from: String,
    pub to: Vec<String>,
    pub subject: String,
    pub text: String,
    pub html: Option<String>,
    /// The Message-ID this message answers (sequence follow-ups, warmup replies).
    pub in_reply_to: Option<String>,
    pub batch_id: Option<String>,
    /// `(sequence id, enrollment id)` of a sequence step's message.
    pub sequence: Option<(String, String)>,
    /// A time the sender chose for delivery; the message is `scheduled` until then.
    pub scheduled_at: Option<u64>,
    /// When the queue first attempts it.
    pub due: u64,
    pub now: u64,
}

/// The optional parts of a message (`POST /v1/send`); the default is none of them.
#[derive(Debug, Clone, Default)]
pub struct Extras {
    pub cc: Vec<String>,
    /// Delivered to like the others, never written into the message.
    pub bcc: Vec<String>,
    pub reply_to: Option<String>,
    /// The sender's own headers, none of those the service writes.
    pub headers: Vec<Header>,
    /// Name, type and size of each attachment; the bytes are stored beside the email.
    pub attachments: Vec<Attachment>,
    pub tags: Vec<String>,
    pub metadata: BTreeMap<String, String>,
}

impl Outbound {
    pub fn into_email(self) -> Email {
        self.into_email_with(Extras::default())
    }

    /// The email, with a delivery per recipient of `to`, `cc` and `bcc`.
    pub fn into_email_with(self, extras: Extras) -> Email {
        let id = new_id("em");
        let domain = self.mailbox.rsplit_once('@').map_or("", |(_, d)| d);
        let message_id = format!("<{}>", super::build::message_id(&id, domain));
        let (delivery, summary) = match self.scheduled_at {
            Some(_) => (DeliveryStatus::Scheduled, MessageStatus::Scheduled),
            None => (DeliveryStatus::Queued, MessageStatus::Queued),
        };
        let deliveries = self
            .to
            .iter()
            .chain(&extras.cc)
            .chain(&extras.bcc)
            .map(|r| Delivery {
                recipient: r.clone(),
                status: delivery,
                attempts: 0,
                last_response: None,
                updated_at: self.now,
                bounce_class: None,
            })
            .collect();
        // Warmup traffic lives in a folder no API lists; everything else starts in the outbox.
        let folder = if self.kind == SendType::Warmup { Folder::Warmup } else { Folder::Outbox };
        let (sequence_id, enrollment_id) = self.sequence.unzip();
        Email {
            summary: Summary {
                id,
                mailbox: self.mailbox,
                folder,
                from: self.from,
                to: self.to,
                subject: self.subject.clone(),
                snippet: super::text::snippet(&self.text),
                status: summary,
                created_at: self.now,
                size: (self.text.len() + self.html.as_ref().map_or(0, String::len)) as u64
                    + extras.attachments.iter().map(|a| a.size).sum::<u64>(),
                has_attachments: !extras.attachments.is_empty(),
            },
            headers: std::iter::once(Header { name: "Subject".into(), value: self.subject })
                .chain(extras.headers)
                .collect(),
            cc: extras.cc,
            bcc: extras.bcc,
            reply_to: extras.reply_to,
            attachments: extras.attachments,
            tags: extras.tags,
            metadata: extras.metadata,
            message_id: Some(message_id),
            in_reply_to: self.in_reply_to,
            text: Some(self.text),
            html: self.html,
            deliveries,
            send_type: Some(self.kind),
            batch_id: self.batch_id,
            scheduled_at: self.scheduled_at,
            next_attempt_at: Some(self.due),
            sequence_id,
            enrollment_id,
            ..Email::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outbound(kind: SendType, scheduled_at: Option<u64>) -> Outbound {
        Outbound {
            kind,
            mailbox: "sales@alpha.test".into(),
            from: "Sales <sales@alpha.test>".into(),
            to: vec!["a@x.test".into(), "b@x.test".into()],
            subject: "Hi".into(),
            text: "Hello   there".into(),
            html: Some("<p>Hello</p>".into()),
            in_reply_to: None,
            batch_id: None,
            sequence: None,
            scheduled_at,
            due: 5_000,
            now: 1_000,
        }
    }

    #[test]
    fn derives_the_same_fields_for_every_sender() {
        let e = outbound(SendType::Transactional, None).into_email();
        assert!(e.summary.id.starts_with("em_"));
        let mid = e.message_id.as_deref().unwrap_or("");
        assert!(mid.starts_with('<') && mid.ends_with("@alpha.test>"), "{mid}");
        assert_eq!(e.summary.folder, Folder::Outbox);
        assert_eq!(e.summary.status, MessageStatus::Queued);
        assert_eq!(e.summary.snippet, "Hello there");
        assert_eq!(e.summary.size, 13 + 12);
        assert_eq!(e.deliveries.len(), 2);
        assert!(e.deliveries.iter().all(|d| d.status == DeliveryStatus::Queued));
        assert_eq!(e.next_attempt_at, Some(5_000));

        let s = outbound(SendType::Campaign, Some(9_000)).into_email();
        assert_eq!(s.summary.status, MessageStatus::Scheduled);
        assert!(s.deliveries.iter().all(|d| d.status == DeliveryStatus::Scheduled));
        assert_eq!(outbound(SendType::Warmup, None).into_email().summary.folder, Folder::Warmup);
    }

    #[test]
    fn extras_add_recipients_and_attachments_but_keep_bcc_out_of_headers() {
        let extras = Extras {
            cc: vec!["c@x.test".into()],
            bcc: vec!["hidden@x.test".into()],
            headers: vec![Header { name: "X-Campaign".into(), value: "q4".into() }],
            attachments: vec![Attachment {
                filename: Some("a.pdf".into()),
                content_type: "application/pdf".into(),
                size: 100,
            }],
            tags: vec!["t".into()],
            ..Extras::default()
        };
        let e = outbound(SendType::Transactional, None).into_email_with(extras);
        let recipients: Vec<&str> = e.deliveries.iter().map(|d| d.recipient.as_str()).collect();
        assert_eq!(recipients, ["a@x.test", "b@x.test", "c@x.test", "hidden@x.test"]);
        assert!(e.summary.has_attachments);
        assert_eq!(e.summary.size, 13 + 12 + 100);
        assert!(e.headers.iter().all(|h| !h.value.contains("hidden")));
        assert_eq!(e.bcc, ["hidden@x.test"]);
        assert_eq!(e.tags, ["t"]);
    }
}
