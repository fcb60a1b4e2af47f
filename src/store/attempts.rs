//! Committing a delivery attempt. Its outcome is one transaction that updates every recipient,
//! re-queues what must be retried, moves a finished message from `outbox` to `sent`, suppresses
//! hard-bounced addresses and counts what happened for the batch, the sequence and the day.

use super::batches::Event;
use super::emails::{Folder, Summary};
use super::error::Result;
use super::events::{EventType, outcome_data};
use super::stats::{self, DayCounts};
use super::status::{DeliveryStatus, EnrollmentStatus};
use super::tables::*;
use super::{Rtx, Tables, Wtx};
use crate::bounce::{self, BounceClass};

/// The keys an attempt on `id` reads first, read ahead together: its queue entry, its document
/// and raw message's link, and on a shared store (`node`) its claim, its place in the node's
/// spool (removed with the claim: a key not read first costs a round trip of its own to remove)
/// and the node's heartbeat.
fn attempt_ahead(tx: &impl Tables, due: u64, id: &str, node: Option<&str>) -> Result<()> {
    tx.ahead(|ahead| {
        ahead.key(QUEUE, (due, id)).key(EMAILS, id).key(RAW_OF, id);
        if let Some(node) = node {
            ahead.key(CLAIMS, id).key(NODES, node).key(SPOOL, (node, due, id));
        }
    })
}

impl Rtx {
    /// What loading an attempt reads first, in one exchange where that saves any.
    pub fn attempt_ahead(&self, due: u64, id: &str, node: Option<&str>) -> Result<()> {
        attempt_ahead(self, due, id, node)
    }
}

/// What one attempt did for one recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Delivered(String),
    /// Temporary failure; retried later.
    Deferred(String),
    /// Permanent failure: the address is suppressed when its class says the address is bad.
    Bounced(String),
    /// Gave up after the maximum age.
    Failed(String),
}

impl Outcome {
    /// The outcome's name, as metrics count it.
    pub fn result(&self) -> &'static str {
        match self {
            Outcome::Delivered(_) => "delivered",
            Outcome::Deferred(_) => "deferred",
            Outcome::Bounced(_) => "bounced",
            Outcome::Failed(_) => "failed",
        }
    }

    fn status(&self) -> DeliveryStatus {
        match self {
            Outcome::Delivered(_) => DeliveryStatus::Delivered,
            Outcome::Deferred(_) => DeliveryStatus::Deferred,
            Outcome::Bounced(_) => DeliveryStatus::Bounced,
            Outcome::Failed(_) => DeliveryStatus::Failed,
        }
    }

    fn event(&self) -> EventType {
        match self {
            Outcome::Delivered(_) => EventType::EmailDelivered,
            Outcome::Deferred(_) => EventType::EmailDeferred,
            Outcome::Bounced(_) => EventType::EmailBounced,
            Outcome::Failed(_) => EventType::EmailFailed,
        }
    }

    /// The receiver's reply (or our reason) for this outcome.
    pub fn response(&self) -> &str {
        match self {
            Outcome::Delivered(r)
            | Outcome::Deferred(r)
            | Outcome::Bounced(r)
            | Outcome::Failed(r) => r,
        }
    }
}

impl Wtx<'_> {
    /// What committing an attempt reads first, in one exchange where that saves any.
    pub fn attempt_ahead(&self, due: u64, id: &str, node: Option<&str>) -> Result<()> {
        attempt_ahead(self, due, id, node)
    }

    /// Everything committing an attempt reads first, named before its group commit runs
    /// (`Store::write_snapshot_ahead`): the keys of `attempt_ahead`, and, when the attempt loaded
    /// the message (`seen`: its domain and summary then), its day's counter and its index and
    /// folder keys. A message changed since only costs the reads of its new keys.
    pub fn finish_ahead(
        &self,
        (due, id): (u64, &str),
        node: Option<&str>,
        seen: Option<(&str, &Summary)>,
    ) -> Result<()> {
        attempt_ahead(self, due, id, node)?;
        if let Some((domain, before)) = seen {
            self.day_ahead(domain, crate::ids::now_ms())?;
            self.replace_ahead(before, Folder::once_sent(before.folder))?;
        }
        Ok(())
    }

    /// Commits the outcome of an attempt made under the queue entry `(due, id)`. An entry that is
    /// gone means the message was cancelled or deleted meanwhile: the outcome is dropped. True
    /// when a sequence's follow-up that waited for this message is now due.
    pub fn finish_attempt(
        &mut self,
        id: &str,
        due: u64,
        outcomes: &[(String, Outcome)],
        retry_at: u64,
    ) -> Result<bool> {
        if self.tx.open_table(QUEUE)?.remove((due, id))?.is_none() {
            return Ok(false);
        }
        let Some(mut email) = self.load_email(id)? else {
            return Ok(false);
        };
        let mut resumed = false;
        let before = email.summary.clone();
        let now = crate::ids::now_ms();
        let domain = email.domain().to_owned();
        // Named now, read together by the first lookup below.
        self.day_ahead(&domain, now)?;
        self.replace_ahead(&before, Folder::once_sent(before.folder))?;
        let mut events = Vec::new();
        let mut today = DayCounts::default();
        let mut reported = Vec::new();
        let mut gave_up = false;
        for (recipient, outcome) in outcomes {
            let Some(d) = email
                .deliveries
                .iter_mut()
                .find(|d| d.recipient.eq_ignore_ascii_case(recipient) && !d.status.is_final())
            else {
                continue;
            };
            d.status = outcome.status();
            d.attempts += 1;
            d.last_response = Some(outcome.response().to_owned());
            d.updated_at = now;
            let class = match outcome {
                Outcome::Delivered(_) => None,
                _ => Some(bounce::classify(outcome.response())),
            };
            d.bounce_class = class;
            today.outcome(d.status, class);
            reported.push((d.recipient.clone(), outcome));
            match outcome {
                Outcome::Bounced(reply) => {
                    if class.is_some_and(BounceClass::suppresses) {
                        self.suppress(&domain, recipient, "hard_bounce", reply, now)?;
                    }
                    events.push(Event::Bounced);
                }
                Outcome::Delivered(_) => events.push(Event::Delivered),
                Outcome::Failed(_) => gave_up = true,
                Outcome::Deferred(_) => {}
            }
        }
        if gave_up {
            // A contact we could not reach at all gets no more steps either.
            self.end_enrollment_of(&email, EnrollmentStatus::Bounced, now)?;
        }
        for event in events {
            self.count(&email, event)?;
            if let Event::Bounced = event {
                self.end_enrollment_of(&email, EnrollmentStatus::Bounced, now)?;
            }
        }
        if email.all_final() {
            email.next_attempt_at = None;
            email.summary.folder = Folder::once_sent(email.summary.folder);
            // A follow-up held back for this message goes now (an enrollment the outcome
            // ended stays ended).
            resumed = self.resume_after_delivery(&email, now)?;
        } else {
            email.next_attempt_at = Some(retry_at);
            let destination = email.destination();
            self.tx.open_table(QUEUE)?.insert((retry_at, id), destination.as_str())?;
        }
        if today.sent > 0 && stats::counted(&email) {
            self.bump_day(&domain, now, |c| {
                c.sent += today.sent;
                c.delivered += today.delivered;
                c.bounced += today.bounced;
                c.failed += today.failed;
                for (sum, n) in c.bounce_classes.iter_mut().zip(today.bounce_classes) {
                    *sum += n;
                }
            })?;
        }
        email.summary.status = email.overall_status();
        self.replace_email(&before, &email)?;
        for (recipient, outcome) in reported {
            let kind = outcome.event();
            let next = email.next_attempt_at;
            self.emit_about(&email, kind, || {
                outcome_data(&email, &recipient, kind, outcome.response(), next)
            })?;
        }
        Ok(resumed)
    }
}
