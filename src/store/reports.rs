//! What comes back about a message we sent: a late bounce (a DSN), a complaint (an ARF report)
//! or a reply. Each updates the message, the suppression list and the counters in one go, and
//! ends the sequence enrollment the message belongs to.

use super::batches::Event;
use super::emails::Folder;
use super::error::Result;
use super::events::{EventType, email_data, outcome_data};
use super::status::{DeliveryStatus, EnrollmentStatus};
use super::{Wtx, stats};
use crate::autoreply::Classification;
use crate::bounce;

/// What a received answer to a message of ours is, as the inbound path classified it.
#[derive(Debug, Clone, Copy)]
pub struct ReplySeen {
    pub class: Classification,
    /// For an out-of-office notice that names a return date: the start (UTC) of the day after.
    pub pause_until: Option<u64>,
}

impl Wtx<'_> {
    /// A late permanent failure (a DSN) for `recipient` of message `id`: the delivery becomes
    /// `bounced`, and the address is suppressed when the DSN's status says it does not exist. Returns whether the message had that recipient.
    pub fn record_bounce(
        &mut self,
        id: &str,
        recipient: &str,
        reason: &str,
        at: u64,
    ) -> Result<bool> {
        let Some(mut email) = self.load_email(id)? else {
            return Ok(false);
        };
        let before = email.summary.clone();
        let Some(d) =
            email.deliveries.iter_mut().find(|d| d.recipient.eq_ignore_ascii_case(recipient))
        else {
            return Ok(false);
        };
        let event = match d.status {
            DeliveryStatus::Bounced => None,
            DeliveryStatus::Delivered => Some(Event::BouncedAfterDelivery),
            _ => Some(Event::Bounced),
        };
        let (was, counted_at) = (d.status, d.updated_at);
        let class = bounce::classify(reason);
        d.status = DeliveryStatus::Bounced;
        d.last_response = Some(format!("DSN: {reason}"));
        d.updated_at = at;
        d.bounce_class = Some(class);
        let domain = email.domain().to_owned();
        if stats::counted(&email) {
            self.count_late_bounce(&domain, was, counted_at, at, class)?;
        }
        if class.suppresses() {
            self.suppress(&domain, recipient, "hard_bounce", &format!("DSN: {reason}"), at)?;
        }
        if email.all_final() {
            if let Some(due) = email.next_attempt_at.take() {
                self.unqueue(due, id)?;
            }
            email.summary.folder = Folder::once_sent(email.summary.folder);
        }
        email.summary.status = email.overall_status();
        self.replace_email(&before, &email)?;
        if let Some(event) = event {
            self.count(&email, event)?;
            let response = format!("DSN: {reason}");
            let kind = EventType::EmailBounced;
            self.emit_about(&email, kind, || {
                outcome_data(&email, recipient, kind, &response, None)
            })?;
        }
        self.end_enrollment_of(&email, EnrollmentStatus::Bounced, at)?;
        Ok(true)
    }

    /// An ARF complaint about `recipient` of message `id`: the address is suppressed, if it was
    /// a recipient of that message (a report cannot name an arbitrary address). Returns whether
    /// it was.
    pub fn record_complaint(&mut self, id: &str, recipient: &str, at: u64) -> Result<bool> {
        let Some(email) = self.load_email(id)? else {
            return Ok(false);
        };
        if !email.deliveries.iter().any(|d| d.recipient.eq_ignore_ascii_case(recipient)) {
            return Ok(false);
        }
        let domain = email.domain().to_owned();
        self.suppress(&domain, recipient, "complaint", "ARF feedback report", at)?;
        self.emit_about(&email, EventType::EmailComplained, || {
            email_data(&email, recipient).into()
        })?;
        self.end_enrollment_of(&email, EnrollmentStatus::Cancelled, at)?;
        Ok(true)
    }

    /// Counts an answer to message `id`. A person's reply counts (the first time, for its
    /// batch or sequence) and ends the enrollment as `replied`. An automatic answer counts in
    /// `autoReplied` and leaves the enrollment running (paused for an out-of-office notice with
    /// a return date when its sequence says so); a bounce that came as a reply is neither.
    pub fn record_reply(&mut self, id: &str, answer: &ReplySeen) -> Result<()> {
        let Some(email) = self.load_email(id)? else {
            return Ok(());
        };
        if answer.class == Classification::Bounce {
            return Ok(());
        }
        if answer.class.is_automatic() {
            self.count(&email, Event::AutoReplied)?;
            if let Some(enrollment) = &email.enrollment_id {
                self.auto_answered(enrollment, answer.pause_until)?;
            }
            return Ok(());
        }
        let mut t = self.tracking_of(id)?;
        t.replies = t.replies.saturating_add(1);
        self.put_tracking(id, &t)?;
        if t.replies == 1 {
            self.count(&email, Event::Replied)?;
        }
        if t.replies == 1 && stats::counted(&email) {
            self.bump_day(email.domain(), crate::ids::now_ms(), |c| c.replied += 1)?;
        }
        self.end_enrollment_of(&email, EnrollmentStatus::Replied, crate::ids::now_ms())?;
        Ok(())
    }
}
