//! Sequences and their enrollments. An enrollment waiting for its next step sits in
//! `ENROLLMENTS_DUE` under its due time, so the engine's work is one range read of what is due and
//! enrollments waiting on long delays cost nothing until then. Every status change goes through
//! `transition`, which keeps the sequence's counters in step with its enrollments.

use std::collections::BTreeMap;

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::emails::Email;
use super::error::{Error, Result};
use super::events::{EventType, enrollment_data};
use super::status::EnrollmentStatus;
use super::tables::*;
use super::{Rtx, Tables, Wtx, decode, encode, get_json, scan_index};

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

/// Whether an enrollment may move from `from` to `to`. Replies and bounces that arrive after the
/// last step still count: a completed enrollment can become `replied` or `bounced`.
fn allowed(from: EnrollmentStatus, to: EnrollmentStatus) -> bool {
    use EnrollmentStatus::*;
    match from {
        Active => to != Active,
        Completed => matches!(to, Replied | Bounced),
        Replied | Bounced | Cancelled => false,
    }
}

/// The event an enrollment's move to `status` reports.
fn ended(status: EnrollmentStatus) -> Option<EventType> {
    match status {
        EnrollmentStatus::Active => None,
        EnrollmentStatus::Completed => Some(EventType::EnrollmentCompleted),
        EnrollmentStatus::Replied => Some(EventType::EnrollmentReplied),
        EnrollmentStatus::Bounced => Some(EventType::EnrollmentBounced),
        EnrollmentStatus::Cancelled => Some(EventType::EnrollmentCancelled),
    }
}

fn sequence(tx: &impl Tables, id: &str) -> Result<Option<Sequence>> {
    get_json(tx, SEQUENCES, id)
}

impl Wtx<'_> {
    pub fn create_sequence(&mut self, sequence: &Sequence) -> Result<()> {
        let id = sequence.id.as_str();
        self.tx.open_table(SEQUENCES)?.insert(id, encode(sequence)?.as_slice())?;
        self.tx.open_table(SEQUENCES_BY_DOMAIN)?.insert((sequence.domain.as_str(), id), ())?;
        Ok(())
    }

    pub fn load_sequence(&self, id: &str) -> Result<Option<Sequence>> {
        sequence(self, id)
    }

    pub fn save_sequence(&mut self, sequence: &Sequence) -> Result<()> {
        let id = sequence.id.as_str();
        self.tx.open_table(SEQUENCES)?.insert(id, encode(sequence)?.as_slice())?;
        Ok(())
    }

    /// The sequence of `domain`, or 404 (also when it belongs to another domain).
    fn owned_sequence(&self, domain: &str, id: &str) -> Result<Sequence> {
        self.load_sequence(id)?
            .filter(|s| s.domain == domain)
            .ok_or_else(|| Error::not_found("sequence"))
    }

    /// Pauses or resumes. Resuming puts enrollments parked by the pause back on the due index at
    /// their original due time, or now when that has passed.
    pub fn set_sequence_status(
        &mut self,
        domain: &str,
        id: &str,
        status: &str,
        now: u64,
    ) -> Result<Sequence> {
        let mut sequence = self.owned_sequence(domain, id)?;
        if sequence.status == "completed" {
            return Err(Error::invalid(
                "the sequence is completed; it can no longer be paused or resumed",
                "create a new sequence",
            ));
        }
        if sequence.status == status {
            return Ok(sequence);
        }
        sequence.status = status.to_owned();
        self.save_sequence(&sequence)?;
        if status == "active" {
            for enrollment_id in self.active_enrollments(id)? {
                let Some(mut e) = self.load_enrollment(&enrollment_id)? else { continue };
                if !e.parked {
                    continue;
                }
                let due = e.due.unwrap_or(now).max(now);
                e.parked = false;
                e.due = Some(due);
                e.updated_at = now;
                self.tx.open_table(ENROLLMENTS_DUE)?.insert((due, e.id.as_str()), ())?;
                self.save_enrollment(&e)?;
            }
        }
        Ok(sequence)
    }

    /// Ends the sequence: `completed`, every active enrollment cancelled. Returns how many.
    pub fn cancel_sequence(&mut self, domain: &str, id: &str, now: u64) -> Result<u64> {
        let mut sequence = self.owned_sequence(domain, id)?;
        sequence.status = "completed".into();
        self.save_sequence(&sequence)?;
        let mut cancelled = 0;
        for enrollment_id in self.active_enrollments(id)? {
            if self.end_enrollment(&enrollment_id, EnrollmentStatus::Cancelled, now)? {
                cancelled += 1;
            }
        }
        Ok(cancelled)
    }

    /// Enrolls each address that has no active enrollment in the sequence; the first step is due
    /// at `now`. Returns the new enrollments' ids, in input order.
    pub fn enroll(
        &mut self,
        domain: &str,
        id: &str,
        contacts: Vec<(String, BTreeMap<String, String>)>,
        now: u64,
    ) -> Result<Vec<String>> {
        let mut sequence = self.owned_sequence(domain, id)?;
        if sequence.status != "active" {
            return Err(Error::invalid(
                format!(
                    "the sequence is {}; only an active sequence takes enrollments",
                    sequence.status
                ),
                "resume it with PATCH /v1/sequences/{id} {\"status\": \"active\"}",
            ));
        }
        let mut ids = Vec::new();
        for (email, merge_fields) in contacts {
            let key = email.to_ascii_lowercase();
            if self.tx.open_table(ENROLLMENTS_ACTIVE)?.get((id, key.as_str()))?.is_some() {
                continue;
            }
            let enrollment = Enrollment {
                id: crate::ids::new_id("enr"),
                sequence_id: id.to_owned(),
                domain: domain.to_owned(),
                email,
                merge_fields,
                status: EnrollmentStatus::Active,
                step: 0,
                due: Some(now),
                parked: false,
                thread: None,
                thread_subject: None,
                last_email: None,
                created_at: now,
                updated_at: now,
            };
            let eid = enrollment.id.as_str();
            self.tx.open_table(ENROLLMENTS_ACTIVE)?.insert((id, key.as_str()), eid)?;
            self.tx.open_table(ENROLLMENTS_DUE)?.insert((now, eid), ())?;
            self.save_enrollment(&enrollment)?;
            sequence.stats.total += 1;
            sequence.stats.active += 1;
            ids.push(enrollment.id);
        }
        self.save_sequence(&sequence)?;
        Ok(ids)
    }

    pub fn load_enrollment(&self, id: &str) -> Result<Option<Enrollment>> {
        let table = self.tx.open_table(ENROLLMENTS)?;
        let found = table.get(id)?;
        found.map(|v| decode(v.value())).transpose()
    }

    pub fn save_enrollment(&mut self, e: &Enrollment) -> Result<()> {
        self.tx.open_table(ENROLLMENTS)?.insert(e.id.as_str(), encode(e)?.as_slice())?;
        Ok(())
    }

    /// Removes the due entry `(due, id)` and returns its enrollment, or `None` when the entry is
    /// gone (another pass took it, or the enrollment ended meanwhile).
    pub fn take_due_enrollment(&mut self, due: u64, id: &str) -> Result<Option<Enrollment>> {
        if self.tx.open_table(ENROLLMENTS_DUE)?.remove((due, id))?.is_none() {
            return Ok(None);
        }
        self.load_enrollment(id)
    }

    pub fn schedule_enrollment(&mut self, e: &mut Enrollment, due: u64) -> Result<()> {
        e.due = Some(due);
        self.tx.open_table(ENROLLMENTS_DUE)?.insert((due, e.id.as_str()), ())?;
        Ok(())
    }

    /// Moves `e` to `status` in memory and in its sequence's counters (`sequence`, which the
    /// caller saves). Leaving `active` drops it from the active index and the due index.
    pub fn transition(
        &mut self,
        e: &mut Enrollment,
        sequence: &mut Sequence,
        status: EnrollmentStatus,
        now: u64,
    ) -> Result<bool> {
        if !allowed(e.status, status) {
            return Ok(false);
        }
        if e.status.is_active() {
            let key = e.email.to_ascii_lowercase();
            self.tx
                .open_table(ENROLLMENTS_ACTIVE)?
                .remove((e.sequence_id.as_str(), key.as_str()))?;
            if let Some(due) = e.due.take() {
                self.tx.open_table(ENROLLMENTS_DUE)?.remove((due, e.id.as_str()))?;
            }
            e.parked = false;
        }
        let was = sequence.stats.slot(e.status);
        *was = was.saturating_sub(1);
        *sequence.stats.slot(status) += 1;
        e.status = status;
        e.updated_at = now;
        if let Some(kind) = ended(status) {
            self.emit(&e.domain, kind, || enrollment_data(&e.sequence_id, &e.id, &e.email))?;
        }
        Ok(true)
    }

    /// Ends an enrollment because of something outside the engine (a reply, a bounce, an
    /// unsubscribe, the sequence's end). A step message still waiting in the queue is cancelled
    /// when an active enrollment ends, so nothing more reaches the contact.
    pub fn end_enrollment(&mut self, id: &str, status: EnrollmentStatus, now: u64) -> Result<bool> {
        let Some(mut e) = self.load_enrollment(id)? else { return Ok(false) };
        let Some(mut sequence) = self.load_sequence(&e.sequence_id)? else { return Ok(false) };
        let was_active = e.status.is_active();
        if !self.transition(&mut e, &mut sequence, status, now)? {
            return Ok(false);
        }
        if was_active && let Some(email_id) = e.last_email.clone() {
            self.cancel_queued(&email_id)?;
        }
        self.save_enrollment(&e)?;
        self.save_sequence(&sequence)?;
        Ok(true)
    }

    /// Ends the enrollment a sequence message belongs to (a reply, bounce or unsubscribe).
    pub(super) fn end_enrollment_of(
        &mut self,
        email: &Email,
        status: EnrollmentStatus,
        at: u64,
    ) -> Result<()> {
        if let Some(enrollment) = &email.enrollment_id {
            self.end_enrollment(enrollment, status, at)?;
        }
        Ok(())
    }

    /// Updates the message counters of the sequence a sent message belongs to.
    pub fn bump_sequence(
        &mut self,
        id: &str,
        change: impl FnOnce(&mut MessageCounters),
    ) -> Result<()> {
        if let Some(mut sequence) = self.load_sequence(id)? {
            change(&mut sequence.counters);
            self.save_sequence(&sequence)?;
        }
        Ok(())
    }

    /// Ids of the sequence's active enrollments.
    fn active_enrollments(&self, sequence_id: &str) -> Result<Vec<String>> {
        let table = self.tx.open_table(ENROLLMENTS_ACTIVE)?;
        let mut out = Vec::new();
        for entry in table.range((sequence_id, "")..)? {
            let (key, value) = entry?;
            if key.value().0 != sequence_id {
                break;
            }
            out.push(value.value().to_owned());
        }
        Ok(out)
    }

    /// Removes every sequence and enrollment of a domain (the domain is being removed).
    pub(super) fn remove_domain_sequences(&mut self, domain: &str) -> Result<()> {
        let ids: Vec<String> = {
            let table = self.tx.open_table(SEQUENCES_BY_DOMAIN)?;
            let mut ids = Vec::new();
            for entry in table.range((domain, "")..)? {
                let (key, _) = entry?;
                let (d, id) = key.value();
                if d != domain {
                    break;
                }
                ids.push(id.to_owned());
            }
            ids
        };
        for id in &ids {
            for enrollment in self.active_enrollments(id)? {
                let now = crate::ids::now_ms();
                self.end_enrollment(&enrollment, EnrollmentStatus::Cancelled, now)?;
            }
            self.tx.open_table(SEQUENCES)?.remove(id.as_str())?;
            self.tx.open_table(SEQUENCES_BY_DOMAIN)?.remove((domain, id.as_str()))?;
        }
        // Ended enrollments kept their records for the sequence's counters: they go with it.
        let mut enrollments = self.tx.open_table(ENROLLMENTS)?;
        let mut gone = Vec::new();
        for entry in enrollments.iter()? {
            let (key, value) = entry?;
            let e: Enrollment = decode(value.value())?;
            if e.domain == domain {
                gone.push(key.value().to_owned());
            }
        }
        gone.iter().try_for_each(|id| enrollments.remove(id.as_str()).map(drop))?;
        Ok(())
    }
}

/// Due `(time, enrollment id)` entries, and the due time of the next entry after them.
pub type DueSteps = (Vec<(u64, String)>, Option<u64>);

impl Rtx {
    /// The domain's sequences, oldest first.
    pub fn sequences(&self, domain: &str) -> Result<Vec<Sequence>> {
        scan_index(self, SEQUENCES_BY_DOMAIN, SEQUENCES, domain)
    }

    pub fn sequence(&self, id: &str) -> Result<Option<Sequence>> {
        sequence(self, id)
    }

    /// Up to `limit` enrollment steps due at or before `now`, earliest first, and the due time of
    /// the first entry after them (when the scan stopped at a future one).
    pub fn due_enrollments(&self, now: u64, limit: usize) -> Result<DueSteps> {
        let table = self.tx.open_table(ENROLLMENTS_DUE)?;
        let mut out = Vec::new();
        for entry in table.range((0u64, "")..)? {
            let (key, _) = entry?;
            let (due, id) = key.value();
            if due > now {
                return Ok((out, Some(due)));
            }
            if out.len() == limit {
                return Ok((out, Some(due)));
            }
            out.push((due, id.to_owned()));
        }
        Ok((out, None))
    }
}
