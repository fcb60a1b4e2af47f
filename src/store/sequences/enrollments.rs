//! Enrollments: enrolling contacts, and every status change, which keeps the sequence's counters
//! in step with its enrollments.

use std::collections::BTreeMap;

use super::super::kv::ReadableTable;

use super::super::emails::Email;
use super::super::error::{Error, Result};
use super::super::events::{EventType, enrollment_data};
use super::super::status::EnrollmentStatus;
use super::super::tables::*;
use super::super::{Rtx, Wtx, decode, encode};
use super::{Enrollment, Sequence};

/// A contact to enroll, checked by the caller.
#[derive(Debug, Clone)]
pub struct EnrollInput {
    pub email: String,
    pub merge_fields: BTreeMap<String, String>,
    /// IANA zone the sending window is read in for this contact.
    pub timezone: Option<String>,
}

/// What enroll did: the new enrollments' ids, in input order, and the addresses it skipped with
/// their reasons (`already_enrolled`, `contacted`).
#[derive(Debug, Default)]
pub struct Enrolled {
    pub ids: Vec<String>,
    pub skipped: Vec<(String, &'static str)>,
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

impl Wtx<'_> {
    /// Enrolls each address that has no active enrollment in the sequence (and, with
    /// `skip_contacted`, never replied to or bounced in a sequence of the domain and is not
    /// active in another); the first step is due at `now`.
    pub fn enroll(
        &mut self,
        domain: &str,
        id: &str,
        (contacts, skip_contacted): (Vec<EnrollInput>, bool),
        now: u64,
    ) -> Result<Enrolled> {
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
        let mut done = Enrolled::default();
        let others: Vec<String> = if skip_contacted {
            self.sequence_ids(domain)?.into_iter().filter(|s| s != id).collect()
        } else {
            Vec::new()
        };
        for EnrollInput { email, merge_fields, timezone } in contacts {
            let key = email.to_ascii_lowercase();
            if self.tx.open_table(ENROLLMENTS_ACTIVE)?.get((id, key.as_str()))?.is_some() {
                done.skipped.push((email, "already_enrolled"));
                continue;
            }
            if skip_contacted && self.contacted(domain, &key, &others)? {
                done.skipped.push((email, "contacted"));
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
                awaiting_delivery: false,
                timezone,
                mailbox: None,
                from_header: None,
                opened: false,
                clicked: false,
                label: None,
                created_at: now,
                updated_at: now,
            };
            let eid = enrollment.id.as_str();
            self.tx.open_table(ENROLLMENTS_ACTIVE)?.insert((id, key.as_str()), eid)?;
            self.tx.open_table(ENROLLMENTS_DUE)?.insert((now, eid), ())?;
            self.tx.open_table(ENROLLMENTS_BY_SEQUENCE)?.insert((id, eid), ())?;
            self.save_enrollment(&enrollment)?;
            sequence.stats.total += 1;
            sequence.stats.active += 1;
            done.ids.push(enrollment.id);
        }
        self.save_sequence(&sequence)?;
        Ok(done)
    }

    /// Whether `key` (a lower-cased address) replied to or bounced in a sequence of `domain`, or
    /// is active in one of the sequences `others`.
    fn contacted(&self, domain: &str, key: &str, others: &[String]) -> Result<bool> {
        if self.tx.open_table(CONTACTED)?.get((domain, key))?.is_some() {
            return Ok(true);
        }
        let active = self.tx.open_table(ENROLLMENTS_ACTIVE)?;
        for other in others {
            if active.get((other.as_str(), key))?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
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
        if let Some(mark) = match status {
            EnrollmentStatus::Replied => Some("replied"),
            EnrollmentStatus::Bounced => Some("bounced"),
            _ => None,
        } {
            let key = e.email.to_ascii_lowercase();
            self.tx.open_table(CONTACTED)?.insert((e.domain.as_str(), key.as_str()), mark)?;
        }
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
    pub(in crate::store) fn end_enrollment_of(
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

    /// An automatic answer to a message of enrollment `id`: counted in its sequence's
    /// `autoReplied`. With `pause_until` (an out-of-office notice's day after return) and a
    /// sequence set to `outOfOffice: "pause"`, its next step waits until then.
    pub(in crate::store) fn auto_answered(
        &mut self,
        id: &str,
        pause_until: Option<u64>,
    ) -> Result<()> {
        let Some(mut e) = self.load_enrollment(id)? else { return Ok(()) };
        let Some(mut sequence) = self.load_sequence(&e.sequence_id)? else { return Ok(()) };
        sequence.stats.auto_replied += 1;
        let pausing = sequence.out_of_office.as_deref() == Some("pause");
        if let Some(until) = pause_until.filter(|_| pausing && e.status.is_active()) {
            self.postpone(&mut e, until)?;
            self.save_enrollment(&e)?;
        }
        self.save_sequence(&sequence)
    }

    /// Ids of the sequence's active enrollments.
    pub(super) fn active_enrollments(&self, sequence_id: &str) -> Result<Vec<String>> {
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
}

/// A page of a sequence's enrollments and whether more follow.
pub type EnrollmentPage = (Vec<Enrollment>, bool);

impl Rtx {
    /// Up to `limit` enrollments of the sequence in enrollment order, after the one `after`.
    pub fn enrollments(&self, sequence: &str, after: &str, limit: usize) -> Result<EnrollmentPage> {
        let index = self.tx.open_table(ENROLLMENTS_BY_SEQUENCE)?;
        let records = self.tx.open_table(ENROLLMENTS)?;
        let mut out = Vec::new();
        for entry in index.range((sequence, after)..)? {
            let (key, _) = entry?;
            let (s, id) = key.value();
            if s != sequence {
                break;
            }
            if id == after {
                continue;
            }
            if out.len() == limit {
                return Ok((out, true));
            }
            if let Some(v) = records.get(id)? {
                out.push(decode(v.value())?);
            }
        }
        Ok((out, false))
    }
}
