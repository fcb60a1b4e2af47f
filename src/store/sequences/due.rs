//! The due index: an enrollment waiting for its next step sits in `ENROLLMENTS_DUE` under its due
//! time, so the engine's work is one range read of what is due.

use super::super::Email;
use super::super::error::Result;
use super::super::kv::ReadableTable;
use super::super::tables::*;
use super::super::{Rtx, Wtx};
use super::Enrollment;

/// Due `(time, enrollment id)` entries, and the due time of the next entry after them.
pub type DueSteps = (Vec<(u64, String)>, Option<u64>);

impl Wtx<'_> {
    /// Removes the due entry `(due, id)` and returns its enrollment, or `None` when the entry is
    /// gone (another pass took it, or the enrollment ended meanwhile).
    pub fn take_due_enrollment(&mut self, due: u64, id: &str) -> Result<Option<Enrollment>> {
        if self.tx.open_table(ENROLLMENTS_DUE)?.remove((due, id))?.is_none() {
            return Ok(None);
        }
        self.load_enrollment(id)
    }

    /// The enrollment of `email`, when it waits for that message to be final (it now is): its
    /// next step comes due at `now`. True when it did.
    pub(in crate::store) fn resume_after_delivery(
        &mut self,
        email: &Email,
        now: u64,
    ) -> Result<bool> {
        let Some(id) = &email.enrollment_id else { return Ok(false) };
        let Some(mut e) = self.load_enrollment(id)? else { return Ok(false) };
        let waiting = e.status.is_active()
            && e.awaiting_delivery
            && !e.parked
            && e.last_email.as_deref() == Some(email.summary.id.as_str());
        let Some(due) = e.due.filter(|due| waiting && *due > now) else { return Ok(false) };
        self.tx.open_table(ENROLLMENTS_DUE)?.remove((due, e.id.as_str()))?;
        e.awaiting_delivery = false;
        self.schedule_enrollment(&mut e, now)?;
        self.save_enrollment(&e)?;
        Ok(true)
    }

    /// Moves the next step of an active enrollment to `until` when it was due earlier (an
    /// out-of-office pause). A step parked by a paused sequence keeps waiting for the resume,
    /// which puts it back at `until` or later.
    pub(in crate::store) fn postpone(&mut self, e: &mut Enrollment, until: u64) -> Result<()> {
        let Some(due) = e.due.filter(|due| *due < until) else { return Ok(()) };
        if !e.parked {
            self.tx.open_table(ENROLLMENTS_DUE)?.remove((due, e.id.as_str()))?;
            self.tx.open_table(ENROLLMENTS_DUE)?.insert((until, e.id.as_str()), ())?;
        }
        e.due = Some(until);
        Ok(())
    }

    pub fn schedule_enrollment(&mut self, e: &mut Enrollment, due: u64) -> Result<()> {
        e.due = Some(due);
        self.tx.open_table(ENROLLMENTS_DUE)?.insert((due, e.id.as_str()), ())?;
        Ok(())
    }
}

impl Rtx {
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
