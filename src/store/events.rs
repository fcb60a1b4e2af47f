//! The events webhooks report, and the one place each kind of event's `data` is shaped, so every
//! event about the same thing reads the same wherever it is emitted.

use serde_json::{Map, Value, json};

use super::emails::Email;
use crate::bounce;

/// Every event type a webhook may subscribe to; the names are the API's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    EmailDelivered,
    EmailDeferred,
    EmailBounced,
    EmailFailed,
    EmailComplained,
    EmailOpened,
    EmailClicked,
    EmailUnsubscribed,
    EmailReceived,
    EnrollmentReplied,
    EnrollmentBounced,
    EnrollmentCompleted,
    EnrollmentCancelled,
    WebhookTest,
}

impl EventType {
    pub const ALL: [EventType; 14] = [
        EventType::EmailDelivered,
        EventType::EmailDeferred,
        EventType::EmailBounced,
        EventType::EmailFailed,
        EventType::EmailComplained,
        EventType::EmailOpened,
        EventType::EmailClicked,
        EventType::EmailUnsubscribed,
        EventType::EmailReceived,
        EventType::EnrollmentReplied,
        EventType::EnrollmentBounced,
        EventType::EnrollmentCompleted,
        EventType::EnrollmentCancelled,
        EventType::WebhookTest,
    ];

    pub fn name(self) -> &'static str {
        match self {
            EventType::EmailDelivered => "email.delivered",
            EventType::EmailDeferred => "email.deferred",
            EventType::EmailBounced => "email.bounced",
            EventType::EmailFailed => "email.failed",
            EventType::EmailComplained => "email.complained",
            EventType::EmailOpened => "email.opened",
            EventType::EmailClicked => "email.clicked",
            EventType::EmailUnsubscribed => "email.unsubscribed",
            EventType::EmailReceived => "email.received",
            EventType::EnrollmentReplied => "enrollment.replied",
            EventType::EnrollmentBounced => "enrollment.bounced",
            EventType::EnrollmentCompleted => "enrollment.completed",
            EventType::EnrollmentCancelled => "enrollment.cancelled",
            EventType::WebhookTest => "webhook.test",
        }
    }

    pub fn parse(name: &str) -> Option<EventType> {
        EventType::ALL.into_iter().find(|t| t.name() == name)
    }
}

/// The `data` of an event about a message we sent, for one of its recipients, with the tags and
/// metadata the send gave it.
pub fn email_data(email: &Email, recipient: &str) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("messageId".into(), json!(email.summary.id));
    data.insert("batchId".into(), json!(email.batch_id));
    data.insert("from".into(), json!(email.summary.from));
    data.insert("recipient".into(), json!(recipient));
    data.insert("subject".into(), json!(email.summary.subject));
    data.insert("tags".into(), json!(email.tags));
    data.insert("metadata".into(), json!(email.metadata));
    data
}

/// `email_data` with the fields of a delivery outcome: the SMTP reply and, as each kind asks,
/// the bounce class and the time of the next attempt.
pub fn outcome_data(
    email: &Email,
    recipient: &str,
    kind: EventType,
    response: &str,
    next_attempt_at: Option<u64>,
) -> Value {
    let mut data = email_data(email, recipient);
    data.insert("smtpResponse".into(), json!(response));
    match kind {
        EventType::EmailBounced => {
            data.insert("bounceClass".into(), json!(bounce::classify(response).as_str()));
        }
        EventType::EmailDeferred => {
            data.insert("nextAttemptAt".into(), json!(next_attempt_at));
        }
        _ => {}
    }
    Value::Object(data)
}

/// The `data` of `email.received` for the copy `id` in `mailbox`; `auth` holds the SPF, DKIM
/// and DMARC results.
pub fn received_data(email: &Email, id: &str, mailbox: &str, auth: [&str; 3]) -> Value {
    let attachments: Vec<Value> = email
        .attachments
        .iter()
        .map(|a| json!({ "filename": a.filename, "contentType": a.content_type, "size": a.size }))
        .collect();
    json!({
        "id": id,
        "mailbox": mailbox,
        "from": email.summary.from,
        "to": email.summary.to,
        "cc": email.cc,
        "subject": email.summary.subject,
        "text": email.text,
        "html": email.html,
        "messageId": email.message_id,
        "inReplyToId": email.in_reply_to_id,
        "authResults": { "spf": auth[0], "dkim": auth[1], "dmarc": auth[2] },
        "attachments": attachments,
    })
}

/// The `data` of an enrollment's end.
pub fn enrollment_data(sequence_id: &str, enrollment_id: &str, email: &str) -> Value {
    json!({ "sequenceId": sequence_id, "enrollmentId": enrollment_id, "email": email })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.name()), Some(t));
        }
        assert_eq!(EventType::parse("email.sent"), None);
    }
}
