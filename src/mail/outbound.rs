//! The one way an outbound message comes into being, whoever sends it (the send API, a sequence
//! step, warmup, SMTP submission): the same id, Message-ID, folder, per-recipient deliveries,
//! snippet and size rules for all.

use crate::ids::new_id;
use crate::store::{
    Delivery, DeliveryStatus, Email, Folder, Header, MessageStatus, SendType, Summary,
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

impl Outbound {
    pub fn into_email(self) -> Email {
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
                size: (self.text.len() + self.html.as_ref().map_or(0, String::len)) as u64,
                has_attachments: false,
            },
            headers: vec![Header { name: "Subject".into(), value: self.subject }],
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
}
