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

pub use super::emails::VariantOf;
pub use enrollments::{EnrollInput, Enrolled, EnrollmentPage};

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Step {
    SendEmail {
        /// With `variants`, the first variant's (what clients of the spec alone see).
        #[serde(default)]
        subject: String,
        /// Empty for a text-only step.
        #[serde(default)]
        html: String,
        /// The plain-text body when one was given (else the text part is made from `html`).
        #[serde(default)]
        text: Option<String>,
        /// A/B alternatives: each enrollment gets one, in turn, so they split evenly.
        #[serde(default)]
        variants: Vec<Variant>,
    },
    Delay {
        /// The wait, whatever unit it was given in.
        #[serde(rename = "delayMs")]
        delay_ms: u64,
        /// The unit it was given in when not milliseconds: answers show it as given.
        #[serde(default, rename = "delayHours")]
        delay_hours: Option<u64>,
        #[serde(default, rename = "delayDays")]
        delay_days: Option<u64>,
    },
}

/// A step as the API shows it (and as it is stored): a `send_email` step carries its `subject`
/// and `html`, and with variants those of the first beside its `variants`, never empty
/// stand-ins.
impl Serialize for Step {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(None)?;
        match self {
            Step::SendEmail { subject, html, text, variants } => {
                map.serialize_entry("type", "send_email")?;
                // The spec's fields show the first variant, for clients that know no others.
                let (subject, html, text) = match variants.first() {
                    None => (subject, html, text),
                    Some(first) => (&first.subject, &first.html, &first.text),
                };
                map.serialize_entry("subject", subject)?;
                if !html.is_empty() {
                    map.serialize_entry("html", html)?;
                }
                if let Some(text) = text {
                    map.serialize_entry("text", text)?;
                }
                if !variants.is_empty() {
                    map.serialize_entry("variants", variants)?;
                }
            }
            Step::Delay { delay_ms, delay_hours, delay_days } => {
                map.serialize_entry("type", "delay")?;
                map.serialize_entry("delayMs", delay_ms)?;
                if let Some(hours) = delay_hours {
                    map.serialize_entry("delayHours", hours)?;
                }
                if let Some(days) = delay_days {
                    map.serialize_entry("delayDays", days)?;
                }
            }
        }
        map.end()
    }
}

/// One alternative message of a `send_email` step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Variant {
    pub subject: String,
    /// Empty for a text-only variant.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub html: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
}

/// The local days and hours in which a sequence's messages may go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SendingWindow {
    /// `mon` to `sun`.
    pub days: Vec<String>,
    /// `HH:MM`, `start` before `end`.
    pub start: String,
    pub end: String,
    /// IANA name; an enrollment's own zone wins over it.
    pub timezone: String,
}

/// The message counters of one variant of one step.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct VariantCounters {
    pub step: u32,
    pub variant: u32,
    #[serde(flatten)]
    pub counters: MessageCounters,
}

/// The message counters of one step (by position).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct StepCounters {
    pub step: u32,
    #[serde(flatten)]
    pub counters: MessageCounters,
}

/// Enrollment counts by status, and leads that opened or clicked.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EnrollmentStats {
    pub total: u64,
    pub active: u64,
    pub completed: u64,
    pub replied: u64,
    pub bounced: u64,
    pub cancelled: u64,
    /// Automatic answers (out-of-office notices, auto-responders) received: not replies.
    #[serde(default, rename = "autoReplied")]
    pub auto_replied: u64,
    /// Enrollments with at least one message opened (counted at the first open).
    #[serde(default)]
    pub opened: u64,
    /// Enrollments with at least one link clicked.
    #[serde(default)]
    pub clicked: u64,
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
    /// Automatic answers received (counted per answer; they are not replies).
    #[serde(default, rename = "autoReplied")]
    pub auto_replied: u64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sequence {
    pub id: String,
    pub domain: String,
    pub name: String,
    /// The sending mailbox's address; empty when the sequence sends from a sender group.
    pub from: String,
    /// The From header: the address with the mailbox's display name at creation time.
    pub from_header: String,
    /// The sender group whose mailboxes take turns, one per enrollment (instead of `from`).
    #[serde(default)]
    pub sender_group_id: Option<String>,
    /// How many enrollments the group has given a mailbox: the round-robin's position.
    #[serde(default)]
    pub rotation: u64,
    #[serde(default)]
    pub sending_window: Option<SendingWindow>,
    pub status: String,
    pub steps: Vec<Step>,
    pub created_at: u64,
    pub stats: EnrollmentStats,
    #[serde(default)]
    pub counters: MessageCounters,
    /// Per step variant, once it has sent; also the turn of the next enrollment to reach it.
    #[serde(default)]
    pub variants: Vec<VariantCounters>,
    /// `pause`: an out-of-office answer naming a return date pauses its enrollment until the
    /// day after it; `None` (or `continue`) leaves the steps running.
    #[serde(default)]
    pub out_of_office: Option<String>,
    /// Campaign tracking switched off in part; `None`: all of it.
    #[serde(default)]
    pub tracking: Option<super::emails::TrackingOptions>,
    /// Per step position, once it has sent.
    #[serde(default)]
    pub step_counters: Vec<StepCounters>,
}

impl Sequence {
    /// The counters of `variant` of step `step`, made on first use.
    pub fn variant_counters(&mut self, step: u32, variant: u32) -> &mut MessageCounters {
        let at = match self.variants.iter().position(|v| (v.step, v.variant) == (step, variant)) {
            Some(at) => at,
            None => {
                self.variants.push(VariantCounters { step, variant, ..Default::default() });
                self.variants.len() - 1
            }
        };
        &mut self.variants[at].counters
    }

    /// The counters of step `step`, made on first use.
    pub fn step_counters(&mut self, step: u32) -> &mut MessageCounters {
        let at = match self.step_counters.iter().position(|c| c.step == step) {
            Some(at) => at,
            None => {
                self.step_counters.push(StepCounters { step, ..Default::default() });
                self.step_counters.len() - 1
            }
        };
        &mut self.step_counters[at].counters
    }

    /// The variant the next enrollment to reach step `step` (of `count` variants) gets.
    pub fn next_variant(&self, step: u32, count: usize) -> u32 {
        let given: u64 =
            self.variants.iter().filter(|v| v.step == step).map(|v| v.counters.sent).sum();
        (given % count.max(1) as u64) as u32
    }
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
    /// The next step is due but waits for `last_email` to be final (`sequences::previous`);
    /// the queue moves it up once it is.
    #[serde(default)]
    pub awaiting_delivery: bool,
    /// The contact's IANA time zone: the sending window is read in it.
    #[serde(default)]
    pub timezone: Option<String>,
    /// The mailbox this enrollment sends from, chosen at its first step and kept for the rest.
    #[serde(default)]
    pub mailbox: Option<String>,
    #[serde(default)]
    pub from_header: Option<String>,
    /// Whether any of its messages was opened / had a link clicked (counted once per lead).
    #[serde(default)]
    pub opened: bool,
    #[serde(default)]
    pub clicked: bool,
    /// The lead label a user gave (`interested`, `meeting_booked`, ... or their own words).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    pub created_at: u64,
    pub updated_at: u64,
}
