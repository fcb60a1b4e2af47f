//! Outbound state: the delivery queue, suppressions, tracking counters and campaign batches.
//! A message waits in `QUEUE` under its next due time; an attempt's outcome is committed in one
//! transaction that updates every recipient, re-queues what must be retried, moves a finished
//! message from `outbox` to `sent`, and suppresses hard-bounced addresses.

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::emails::{Email, Folder};
use super::status::{DeliveryStatus, EnrollmentStatus};
use super::tables::*;
use super::{Rtx, Wtx, decode, encode};
use crate::error::{Error, Result};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Suppression {
    pub email: String,
    /// `hard_bounce`, `complaint`, `unsubscribed` or `manual`.
    pub reason: String,
    /// What caused it, in words (the SMTP reply of a bounce, the unsubscribe path...).
    pub source: String,
    pub unsubscribed_at: u64,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tracking {
    pub opens: u32,
    pub clicks: u32,
    pub first_opened_at: Option<u64>,
    pub first_clicked_at: Option<u64>,
    pub unsubscribed_at: Option<u64>,
    #[serde(default)]
    pub replies: u32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Batch {
    pub id: String,
    pub domain: String,
    pub created_at: u64,
    pub messages: u32,
    /// Messages opened at least once.
    pub opened: u32,
    /// Messages with at least one click.
    pub clicked: u32,
    pub unsubscribed: u32,
    /// Messages with at least one reply.
    #[serde(default)]
    pub replied: u32,
    /// Messages delivered (a later DSN moves one to `bounced`).
    #[serde(default)]
    pub delivered: u32,
    #[serde(default)]
    pub bounced: u32,
}

/// Something that happened to a sent message, counted for its batch or sequence.
#[derive(Debug, Clone, Copy)]
enum Event {
    Delivered,
    Bounced,
    /// A DSN for a message that had been delivered.
    BouncedAfterDelivery,
    Opened,
    Clicked,
    Replied,
}

/// What one attempt did for one recipient.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Delivered(String),
    /// Temporary failure; retried later.
    Deferred(String),
    /// Permanent failure: the address is suppressed.
    Bounced(String),
    /// Gave up after the maximum age.
    Failed(String),
}

impl Outcome {
    fn status(&self) -> DeliveryStatus {
        match self {
            Outcome::Delivered(_) => DeliveryStatus::Delivered,
            Outcome::Deferred(_) => DeliveryStatus::Deferred,
            Outcome::Bounced(_) => DeliveryStatus::Bounced,
            Outcome::Failed(_) => DeliveryStatus::Failed,
        }
    }

    fn response(&self) -> &str {
        match self {
            Outcome::Delivered(r)
            | Outcome::Deferred(r)
            | Outcome::Bounced(r)
            | Outcome::Failed(r) => r,
        }
    }
}

/// Marks every recipient that is not final as cancelled.
pub(super) fn cancel_pending(email: &mut Email) {
    let now = crate::ids::now_ms();
    for d in email.deliveries.iter_mut().filter(|d| !d.status.is_final()) {
        d.status = DeliveryStatus::Cancelled;
        d.updated_at = now;
    }
    email.summary.status = email.overall_status();
}

impl Wtx<'_> {
    /// Stores an outbound message in its outbox and queues it for `due`.
    pub fn enqueue(&mut self, email: &Email, due: u64) -> Result<()> {
        self.insert_email(email)?;
        self.tx.open_table(QUEUE)?.insert((due, email.summary.id.as_str()), ())?;
        if let Some(message_id) = &email.message_id {
            let mut ids = self.tx.open_table(MESSAGE_IDS)?;
            ids.insert(message_id.as_str(), email.summary.id.as_str())?;
        }
        Ok(())
    }

    pub fn put_secret(&mut self, name: &str, value: &[u8]) -> Result<()> {
        self.tx.open_table(SECRETS)?.insert(name, value)?;
        Ok(())
    }

    pub fn create_batch(&mut self, batch: &Batch) -> Result<()> {
        self.tx.open_table(BATCHES)?.insert(batch.id.as_str(), encode(batch)?.as_slice())?;
        self.tx
            .open_table(BATCHES_BY_DOMAIN)?
            .insert((batch.domain.as_str(), batch.id.as_str()), ())?;
        Ok(())
    }

    /// Counts `event` for the batch or sequence the message belongs to.
    fn count(&mut self, email: &Email, event: Event) -> Result<()> {
        if let Some(batch) = &email.batch_id {
            self.bump_batch(batch, |b| match event {
                Event::Delivered => b.delivered += 1,
                Event::Bounced => b.bounced += 1,
                Event::BouncedAfterDelivery => {
                    b.delivered = b.delivered.saturating_sub(1);
                    b.bounced += 1;
                }
                Event::Opened => b.opened += 1,
                Event::Clicked => b.clicked += 1,
                Event::Replied => b.replied += 1,
            })?;
        }
        if let Some(sequence) = &email.sequence_id {
            self.bump_sequence(sequence, |c| match event {
                Event::Delivered => c.delivered += 1,
                Event::Bounced => c.bounced += 1,
                Event::BouncedAfterDelivery => {
                    c.delivered = c.delivered.saturating_sub(1);
                    c.bounced += 1;
                }
                Event::Opened => c.opened += 1,
                Event::Clicked => c.clicked += 1,
                Event::Replied => c.replied += 1,
            })?;
        }
        Ok(())
    }

    /// Ends the enrollment a sequence message belongs to (a reply, bounce or unsubscribe).
    fn end_enrollment_of(
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

    /// Cancels what of a message still waits in the queue; it then counts as sent.
    pub(super) fn cancel_queued(&mut self, id: &str) -> Result<()> {
        let Some(mut email) = self.load_email(id)? else { return Ok(()) };
        let Some(due) = email.next_attempt_at.take() else { return Ok(()) };
        let before = email.summary.clone();
        self.tx.open_table(QUEUE)?.remove((due, id))?;
        cancel_pending(&mut email);
        email.summary.folder = Folder::Sent;
        self.replace_email(&before, &email)
    }

    /// Commits the outcome of an attempt made under the queue entry `(due, id)`. An entry that is
    /// gone means the message was cancelled or deleted meanwhile: the outcome is dropped.
    pub fn finish_attempt(
        &mut self,
        id: &str,
        due: u64,
        outcomes: &[(String, Outcome)],
        retry_at: u64,
    ) -> Result<()> {
        if self.tx.open_table(QUEUE)?.remove((due, id))?.is_none() {
            return Ok(());
        }
        let Some(mut email) = self.load_email(id)? else {
            return Ok(());
        };
        let before = email.summary.clone();
        let now = crate::ids::now_ms();
        let domain = email.domain().to_owned();
        let mut events = Vec::new();
        let mut today = super::DayCounts::default();
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
            today.outcome(d.status);
            match outcome {
                Outcome::Bounced(reply) => {
                    self.suppress(&domain, recipient, "hard_bounce", reply, now)?;
                    events.push(Event::Bounced);
                }
                Outcome::Delivered(_) => events.push(Event::Delivered),
                _ => {}
            }
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
        } else {
            email.next_attempt_at = Some(retry_at);
            self.tx.open_table(QUEUE)?.insert((retry_at, id), ())?;
        }
        if today.sent > 0 && super::stats::counted(&email) {
            self.bump_day(&domain, now, |c| {
                c.sent += today.sent;
                c.delivered += today.delivered;
                c.bounced += today.bounced;
                c.failed += today.failed;
            })?;
        }
        email.summary.status = email.overall_status();
        self.replace_email(&before, &email)
    }

    /// Adds an address to the domain's suppression list; an existing entry is kept (its first
    /// reason and time stand). Returns whether it was new.
    pub fn suppress(
        &mut self,
        domain: &str,
        email: &str,
        reason: &str,
        source: &str,
        at: u64,
    ) -> Result<bool> {
        let key = email.to_ascii_lowercase();
        let mut table = self.tx.open_table(SUPPRESSIONS)?;
        if table.get((domain, key.as_str()))?.is_some() {
            return Ok(false);
        }
        let entry = Suppression {
            email: email.to_owned(),
            reason: reason.to_owned(),
            source: source.chars().take(500).collect(),
            unsubscribed_at: at,
        };
        table.insert((domain, key.as_str()), encode(&entry)?.as_slice())?;
        self.tx.open_table(SUPPRESSIONS_BY_TIME)?.insert((domain, at, key.as_str()), ())?;
        Ok(true)
    }

    pub fn suppression_for(&self, domain: &str, email: &str) -> Result<Option<Suppression>> {
        let key = email.to_ascii_lowercase();
        let table = self.tx.open_table(SUPPRESSIONS)?;
        let found = table.get((domain, key.as_str()))?;
        found.map(|v| decode(v.value())).transpose()
    }

    /// Counts an open (`click == false`) or a click of a sent message, and its batch's unique
    /// counters the first time.
    pub fn record_engagement(&mut self, id: &str, click: bool, at: u64) -> Result<()> {
        let Some(email) = self.load_email(id)? else {
            return Err(Error::not_found("message"));
        };
        let mut t = self.tracking_of(id)?;
        let first = if click { t.first_clicked_at.is_none() } else { t.first_opened_at.is_none() };
        if click {
            t.clicks = t.clicks.saturating_add(1);
            t.first_clicked_at.get_or_insert(at);
        } else {
            t.opens = t.opens.saturating_add(1);
            t.first_opened_at.get_or_insert(at);
        }
        self.tx.open_table(TRACKING)?.insert(id, encode(&t)?.as_slice())?;
        if first {
            self.count(&email, if click { Event::Clicked } else { Event::Opened })?;
        }
        if first && super::stats::counted(&email) {
            self.bump_day(
                email.domain(),
                at,
                |c| if click { c.clicked += 1 } else { c.opened += 1 },
            )?;
        }
        Ok(())
    }

    /// Unsubscribes `recipient` of message `id` from the message's domain.
    pub fn record_unsubscribe(
        &mut self,
        id: &str,
        recipient: &str,
        source: &str,
        at: u64,
    ) -> Result<()> {
        let Some(email) = self.load_email(id)? else {
            return Err(Error::not_found("message"));
        };
        let domain = email.domain().to_owned();
        self.suppress(&domain, recipient, "unsubscribed", source, at)?;
        self.end_enrollment_of(&email, EnrollmentStatus::Cancelled, at)?;
        let mut t = self.tracking_of(id)?;
        if t.unsubscribed_at.is_none() {
            t.unsubscribed_at = Some(at);
            self.tx.open_table(TRACKING)?.insert(id, encode(&t)?.as_slice())?;
            if let Some(batch) = &email.batch_id {
                self.bump_batch(batch, |b| b.unsubscribed += 1)?;
            }
        }
        Ok(())
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
        self.end_enrollment_of(&email, EnrollmentStatus::Cancelled, at)?;
        Ok(true)
    }

    /// The id of the email we sent with this Message-ID.
    pub fn email_for_message_id(&self, message_id: &str) -> Result<Option<String>> {
        let table = self.tx.open_table(MESSAGE_IDS)?;
        let found = table.get(message_id)?;
        Ok(found.map(|v| v.value().to_owned()))
    }

    /// Counts a reply to message `id` (and, the first time, to its batch).
    pub fn record_reply(&mut self, id: &str) -> Result<()> {
        let Some(email) = self.load_email(id)? else {
            return Ok(());
        };
        let mut t = self.tracking_of(id)?;
        t.replies = t.replies.saturating_add(1);
        self.tx.open_table(TRACKING)?.insert(id, encode(&t)?.as_slice())?;
        if t.replies == 1 {
            self.count(&email, Event::Replied)?;
        }
        if t.replies == 1 && super::stats::counted(&email) {
            self.bump_day(email.domain(), crate::ids::now_ms(), |c| c.replied += 1)?;
        }
        self.end_enrollment_of(&email, EnrollmentStatus::Replied, crate::ids::now_ms())?;
        Ok(())
    }

    /// A late permanent failure (a DSN) for `recipient` of message `id`: the delivery becomes
    /// `bounced` and the address is suppressed. Returns whether the message had that recipient.
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
        d.status = DeliveryStatus::Bounced;
        d.last_response = Some(format!("DSN: {reason}"));
        d.updated_at = at;
        let domain = email.domain().to_owned();
        if super::stats::counted(&email) {
            self.count_late_bounce(&domain, was, counted_at, at)?;
        }
        self.suppress(&domain, recipient, "hard_bounce", &format!("DSN: {reason}"), at)?;
        if email.all_final() {
            if let Some(due) = email.next_attempt_at.take() {
                self.tx.open_table(QUEUE)?.remove((due, id))?;
            }
            email.summary.folder = Folder::once_sent(email.summary.folder);
        }
        email.summary.status = email.overall_status();
        self.replace_email(&before, &email)?;
        if let Some(event) = event {
            self.count(&email, event)?;
        }
        self.end_enrollment_of(&email, EnrollmentStatus::Bounced, at)?;
        Ok(true)
    }

    fn tracking_of(&self, id: &str) -> Result<Tracking> {
        let table = self.tx.open_table(TRACKING)?;
        let found = table.get(id)?;
        Ok(found.map(|v| decode(v.value())).transpose()?.unwrap_or_default())
    }

    fn bump_batch(&mut self, id: &str, change: impl FnOnce(&mut Batch)) -> Result<()> {
        let mut table = self.tx.open_table(BATCHES)?;
        let found = table.get(id)?.map(|v| decode::<Batch>(v.value())).transpose()?;
        if let Some(mut batch) = found {
            change(&mut batch);
            table.insert(id, encode(&batch)?.as_slice())?;
        }
        Ok(())
    }
}

impl Rtx {
    /// Up to `limit` queue entries due at or before `now`, earliest first.
    pub fn due(&self, now: u64, limit: usize) -> Result<Vec<(u64, String)>> {
        let table = self.tx.open_table(QUEUE)?;
        let mut out = Vec::new();
        for entry in table.range((0u64, "")..)?.take(limit) {
            let (key, _) = entry?;
            let (due, id) = key.value();
            if due > now {
                break;
            }
            out.push((due, id.to_owned()));
        }
        Ok(out)
    }

    /// Whether the queue still holds this entry (an attempt may start from a stale scan).
    pub fn is_queued(&self, due: u64, id: &str) -> Result<bool> {
        Ok(self.tx.open_table(QUEUE)?.get((due, id))?.is_some())
    }

    /// The earliest due time in the queue.
    pub fn next_due(&self) -> Result<Option<u64>> {
        let table = self.tx.open_table(QUEUE)?;
        let first = table.first()?;
        Ok(first.map(|(k, _)| k.value().0))
    }

    pub fn queue_len(&self) -> Result<u64> {
        use redb::ReadableTableMetadata;
        Ok(self.tx.open_table(QUEUE)?.len()?)
    }

    pub fn suppression(&self, domain: &str, email: &str) -> Result<Option<Suppression>> {
        let key = email.to_ascii_lowercase();
        let table = self.tx.open_table(SUPPRESSIONS)?;
        let found = table.get((domain, key.as_str()))?;
        found.map(|v| decode(v.value())).transpose()
    }

    /// A page of the domain's suppressions in `(unsubscribedAt, address)` order, starting after
    /// the time `after`: `(total, items, has_more)`. A page never ends inside a group of items
    /// that share one time, so the `after` cursor skips nothing (the page may then hold more
    /// than `limit` items).
    pub fn suppressions_page(
        &self,
        domain: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<(u64, Vec<Suppression>, bool)> {
        let index = self.tx.open_table(SUPPRESSIONS_BY_TIME)?;
        let entries = self.tx.open_table(SUPPRESSIONS)?;
        let mut total = 0u64;
        let mut keys: Vec<(u64, String)> = Vec::new();
        let mut has_more = false;
        for entry in index.range((domain, 0u64, "")..)? {
            let (key, _) = entry?;
            let (d, at, email) = key.value();
            if d != domain {
                break;
            }
            total += 1;
            if after.is_some_and(|cursor| at <= cursor) {
                continue;
            }
            let group_open = keys.last().is_some_and(|(last, _)| *last == at);
            if keys.len() < limit || group_open {
                keys.push((at, email.to_owned()));
            } else {
                has_more = true;
            }
        }
        let mut items = Vec::with_capacity(keys.len());
        for (_, email) in keys {
            if let Some(v) = entries.get((domain, email.as_str()))? {
                items.push(decode(v.value())?);
            }
        }
        Ok((total, items, has_more))
    }

    pub fn tracking(&self, id: &str) -> Result<Option<Tracking>> {
        let table = self.tx.open_table(TRACKING)?;
        let found = table.get(id)?;
        found.map(|v| decode(v.value())).transpose()
    }

    /// The domain's campaign batches, oldest first.
    pub fn batches(&self, domain: &str) -> Result<Vec<Batch>> {
        self.listed_for_domain(BATCHES_BY_DOMAIN, BATCHES, domain)
    }

    pub fn batch(&self, id: &str) -> Result<Option<Batch>> {
        let table = self.tx.open_table(BATCHES)?;
        let found = table.get(id)?;
        found.map(|v| decode(v.value())).transpose()
    }

    pub fn secret(&self, name: &str) -> Result<Vec<u8>> {
        let table = self.tx.open_table(SECRETS)?;
        let found = table.get(name)?;
        found
            .map(|v| v.value().to_vec())
            .ok_or_else(|| Error::internal(format!("secret {name} missing")))
    }

    pub fn optional_secret(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let table = self.tx.open_table(SECRETS)?;
        let found = table.get(name)?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    /// The id of the email we sent with this Message-ID.
    pub fn email_for_message_id(&self, message_id: &str) -> Result<Option<String>> {
        let table = self.tx.open_table(MESSAGE_IDS)?;
        let found = table.get(message_id)?;
        Ok(found.map(|v| v.value().to_owned()))
    }
}
