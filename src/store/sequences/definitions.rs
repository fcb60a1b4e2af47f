//! Sequence definitions: creating, pausing, resuming and ending a sequence, its message
//! counters, and removing a domain's sequences.

use super::super::kv::ReadableTable;

use super::super::emails::Email;
use super::super::error::{Error, Result};
use super::super::status::EnrollmentStatus;
use super::super::tables::*;
use super::super::{Rtx, Tables, Wtx, decode, drain_domain, encode, get_json, scan_index};
use super::{Enrollment, MessageCounters, Sequence};

pub(super) fn sequence(tx: &impl Tables, id: &str) -> Result<Option<Sequence>> {
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
    pub(super) fn owned_sequence(&self, domain: &str, id: &str) -> Result<Sequence> {
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

    /// Updates the message counters of the sequence a sent message belongs to, and those of its
    /// step and of the step variant it was. In the transaction that records the event, so the
    /// counters are exact however many events arrive at once.
    pub fn bump_sequence(
        &mut self,
        id: &str,
        email: &Email,
        change: impl Fn(&mut MessageCounters),
    ) -> Result<()> {
        if let Some(mut sequence) = self.load_sequence(id)? {
            change(&mut sequence.counters);
            if let Some(v) = &email.variant {
                change(sequence.variant_counters(v.step, v.index));
            }
            // Messages sent before steps were recorded know theirs only as a variant's.
            if let Some(step) = email.step.or(email.variant.map(|v| v.step)) {
                change(sequence.step_counters(step));
            }
            self.save_sequence(&sequence)?;
        }
        Ok(())
    }

    /// The first open or click of any message of an enrollment: counted once per lead in its
    /// sequence's `opened` or `clicked`.
    pub(in crate::store) fn lead_engaged(&mut self, email: &Email, click: bool) -> Result<()> {
        let Some(id) = &email.enrollment_id else { return Ok(()) };
        let Some(mut e) = self.load_enrollment(id)? else { return Ok(()) };
        let seen = if click { &mut e.clicked } else { &mut e.opened };
        if *seen {
            return Ok(());
        }
        *seen = true;
        let Some(mut sequence) = self.load_sequence(&e.sequence_id)? else { return Ok(()) };
        match click {
            true => sequence.stats.clicked += 1,
            false => sequence.stats.opened += 1,
        }
        self.save_enrollment(&e)?;
        self.save_sequence(&sequence)
    }

    /// The ids of the domain's sequences.
    pub(super) fn sequence_ids(&self, domain: &str) -> Result<Vec<String>> {
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
        Ok(ids)
    }

    /// Removes every sequence and enrollment of a domain (the domain is being removed).
    pub(in crate::store) fn remove_domain_sequences(&mut self, domain: &str) -> Result<()> {
        let ids = self.sequence_ids(domain)?;
        for id in &ids {
            for enrollment in self.active_enrollments(id)? {
                let now = crate::ids::now_ms();
                self.end_enrollment(&enrollment, EnrollmentStatus::Cancelled, now)?;
            }
            self.tx.open_table(SEQUENCES)?.remove(id.as_str())?;
            self.tx.open_table(SEQUENCES_BY_DOMAIN)?.remove((domain, id.as_str()))?;
            drain_domain(&mut self.tx.open_table(ENROLLMENTS_BY_SEQUENCE)?, id)?;
        }
        drain_domain(&mut self.tx.open_table(CONTACTED)?, domain)?;
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

impl Rtx {
    /// The domain's sequences, oldest first.
    pub fn sequences(&self, domain: &str) -> Result<Vec<Sequence>> {
        scan_index(self, SEQUENCES_BY_DOMAIN, SEQUENCES, domain)
    }

    pub fn sequence(&self, id: &str) -> Result<Option<Sequence>> {
        sequence(self, id)
    }
}
