//! Sequences and their enrollments, by concept: `definitions` (a sequence's life and counters),
//! `enrollments` (enrolling, and every status change, which keeps the sequence's counters in step
//! with its enrollments) and `due` (the index of what is due when, so enrollments waiting on long
//! delays cost nothing until then). The records they share are defined here.

mod definitions;
mod due;
mod enrollments;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::status::EnrollmentStatus;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    SendEmail {
        subject: String,
        html: String,
    },
    Delay {
        #[serde(rename = "delayMs")]
        delay_ms: u64,
    },
}

/// Enrollment counts by status.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EnrollmentStats {
    pub total: u64,
    pub active: u64,
    pub completed: u64,
    pub replied: u64,
    pub bounced: u64,
    pub cancelled: u64,
}

impl EnrollmentStats {
    fn slot(&mut self, status: EnrollmentStatus) -> &mut u64 {
        match status {
            EnrollmentStatus::Active => &mut self.active,
            EnrollmentStatus::Completed => &mut self.completed,
            EnrollmentStatus::Replied => &mut self.replied,
            EnrollmentStatus::Bounced => &mut self.bounced,
            EnrollmentStatus::Cancelled => &mut self.cancelled,
        }
    }
}

/// Message counters of a campaign (a sequence or a batch): what campaign stats report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct MessageCounters {
    pub sent: u64,
    pub delivered: u64,
    pub opened: u64,
    pub clicked: u64,
    pub replied: u64,
    pub bounced: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sequence {
    pub id: String,
    pub domain: String,
    pub name: String,
    /// The sending mailbox's address.
    pub from: String,
    /// The From header: the address with the mailbox's display name at creation time.
    pub from_header: String,
    pub status: String,
    pub steps: Vec<Step>,
    pub created_at: u64,
    pub stats: EnrollmentStats,
    #[serde(default)]
    pub counters: MessageCounters,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Enrollment {
    pub id: String,
    pub sequence_id: String,
    pub domain: String,
    pub email: String,
    pub merge_fields: BTreeMap<String, String>,
    pub status: EnrollmentStatus,
    /// Index of the next step to run.
    pub step: u32,
    /// When the next step is due (also while parked by a paused sequence).
    pub due: Option<u64>,
    /// Taken off the due index because its sequence was paused when the step came due.
    #[serde(default)]
    pub parked: bool,
    /// Message-ID of the first message: follow-ups answer it.
    pub thread: Option<String>,
    pub thread_subject: Option<String>,
    /// The message of the latest step, cancelled if the enrollment ends before it leaves.
    pub last_email: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
}
