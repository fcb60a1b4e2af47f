//! The states a message, a recipient and an enrollment go through, and the kinds of mail we send.
//! Each has one spelling, on the wire and in the file (`serde`, lower case), and the rules that
//! read them ("is this final", "what does the message show overall") are matches here.

use serde::{Deserialize, Serialize};

/// Where one recipient of an outbound message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DeliveryStatus {
    #[default]
    Queued,
    Scheduled,
    Deferred,
    Delivered,
    Bounced,
    Failed,
    Cancelled,
}

impl DeliveryStatus {
    /// Whether the recipient is never attempted again.
    pub fn is_final(self) -> bool {
        matches!(self, Self::Delivered | Self::Bounced | Self::Failed | Self::Cancelled)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Scheduled => "scheduled",
            Self::Deferred => "deferred",
            Self::Delivered => "delivered",
            Self::Bounced => "bounced",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }
}

/// What a message shows in listings: its recipients' states folded into one, or `received`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageStatus {
    #[default]
    Queued,
    Scheduled,
    Deferred,
    Delivered,
    Bounced,
    Failed,
    Cancelled,
    /// Mail that came in (inbound, or a copy received by a hosted mailbox).
    Received,
    /// A message kept in Drafts, not sent.
    Draft,
}

impl MessageStatus {
    /// Whether every recipient of the message is final (mail that came in never changes).
    pub fn is_final(self) -> bool {
        matches!(self, Self::Delivered | Self::Bounced | Self::Failed | Self::Cancelled)
    }

    /// The overall status of an outbound message from its recipients: once all are final, any
    /// delivery counts as delivered, then bounced, then failed; while some are not, the message
    /// is deferred if any is, scheduled if any is, else queued.
    pub fn of(recipients: impl Iterator<Item = DeliveryStatus> + Clone) -> MessageStatus {
        let any = |s: DeliveryStatus| recipients.clone().any(|r| r == s);
        if recipients.clone().all(DeliveryStatus::is_final) {
            if any(DeliveryStatus::Delivered) {
                MessageStatus::Delivered
            } else if any(DeliveryStatus::Bounced) {
                MessageStatus::Bounced
            } else if any(DeliveryStatus::Failed) {
                MessageStatus::Failed
            } else {
                MessageStatus::Cancelled
            }
        } else if any(DeliveryStatus::Deferred) {
            MessageStatus::Deferred
        } else if any(DeliveryStatus::Scheduled) {
            MessageStatus::Scheduled
        } else {
            MessageStatus::Queued
        }
    }
}

/// Where a contact stands in a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EnrollmentStatus {
    #[default]
    Active,
    Completed,
    Replied,
    Bounced,
    Cancelled,
}

impl EnrollmentStatus {
    pub fn is_active(self) -> bool {
        self == Self::Active
    }
}

/// The kind of mail we send; it decides tracking, statistics and the folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SendType {
    Transactional,
    Campaign,
    Sequence,
    Warmup,
}

impl SendType {
    /// Campaign and sequence mail carries tracking and unsubscribe links.
    pub fn is_tracked(self) -> bool {
        matches!(self, Self::Campaign | Self::Sequence)
    }
}

#[cfg(test)]
mod tests {
    use super::DeliveryStatus::*;
    use super::*;

    fn overall(list: &[DeliveryStatus]) -> MessageStatus {
        MessageStatus::of(list.iter().copied())
    }

    #[test]
    fn the_overall_status_folds_the_recipients() {
        assert_eq!(overall(&[Delivered, Bounced]), MessageStatus::Delivered);
        assert_eq!(overall(&[Bounced, Failed]), MessageStatus::Bounced);
        assert_eq!(overall(&[Failed, Cancelled]), MessageStatus::Failed);
        assert_eq!(overall(&[Cancelled]), MessageStatus::Cancelled);
        assert_eq!(overall(&[Delivered, Deferred]), MessageStatus::Deferred);
        assert_eq!(overall(&[Scheduled, Queued]), MessageStatus::Scheduled);
        assert_eq!(overall(&[Queued, Delivered]), MessageStatus::Queued);
    }

    #[test]
    fn one_spelling_each() {
        let json = serde_json::to_string(&(Cancelled, MessageStatus::Received, SendType::Warmup))
            .expect("serialize"); // ok: test
        assert_eq!(json, r#"["cancelled","received","warmup"]"#);
        assert_eq!(
            serde_json::from_str::<EnrollmentStatus>(r#""replied""#).ok(),
            Some(EnrollmentStatus::Replied)
        );
        assert!(Delivered.is_final() && !Deferred.is_final());
    }
}
