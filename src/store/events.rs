//! The events webhooks report, and the one place each kind of event's `data` is shaped, so every
//! event about the same thing reads the same wherever it is emitted.

use serde_json::{Map, Value, json};

use super::emails::Email;

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

/// The `data` of an event about a message we sent, for one of its recipients. `tags` and
/// `metadata` are the message's own once sends carry them; until then they are empty.
pub fn email_data(email: &Email, recipient: &str) -> Map<String, Value> {
    let mut data = Map::new();
    data.insert("messageId".into(), json!(email.summary.id));
    data.insert("batchId".into(), json!(email.batch_id));
    data.insert("from".into(), json!(email.summary.from));
    data.insert("recipient".into(), json!(recipient));
    data.insert("subject".into(), json!(email.summary.subject));
    data.insert("tags".into(), json!([]));
    data.insert("metadata".into(), json!({}));
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
            data.insert("bounceClass".into(), json!(bounce_class(response)));
        }
        EventType::EmailDeferred => {
            data.insert("nextAttemptAt".into(), json!(next_attempt_at));
        }
        _ => {}
    }
    Value::Object(data)
}

/// The class of a permanent failure, from its enhanced status code (RFC 3463) and wording.
pub fn bounce_class(response: &str) -> &'static str {
    let text = response.to_ascii_lowercase();
    let code =
        text.split_whitespace().find(|w| w.split('.').count() == 3 && w.starts_with(['4', '5']));
    let detail = code.map(|c| c.split_once('.').map_or("", |(_, rest)| rest));
    match detail {
        Some("1.1" | "1.2" | "1.3" | "1.6" | "1.10") => "invalid_recipient",
        Some("2.2" | "3.1") => "mailbox_full",
        Some(d) if d.starts_with("7.") => "policy",
        Some("4.4") if text.contains("dns") || text.contains("exchanger") => "dns",
        Some(d) if d.starts_with("5.") => "protocol",
        _ if text.contains("tls") || text.contains("certificate") => "tls",
        _ if text.contains("spam") || text.contains("blocked") || text.contains("policy") => {
            "policy"
        }
        _ if text.contains("user unknown") || text.contains("no such user") => "invalid_recipient",
        _ => "other",
    }
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

    #[test]
    fn bounce_classes_follow_the_enhanced_code() {
        assert_eq!(bounce_class("550 5.1.1 no such user"), "invalid_recipient");
        assert_eq!(bounce_class("552 5.2.2 mailbox full"), "mailbox_full");
        assert_eq!(bounce_class("550 5.7.1 spam detected"), "policy");
        assert_eq!(bounce_class("554 5.5.0 bad sequence"), "protocol");
        assert_eq!(bounce_class("550 nope"), "other");
    }
}
