//! Campaign batches and their counters, and the one place that counts what happens to a sent
//! message for the batch or the sequence it belongs to.

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::emails::Email;
use super::error::Result;
use super::tables::*;
use super::{Rtx, Wtx, decode, encode, get_json, scan_index};

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
    /// Automatic answers (out of office, auto-responders): not replies.
    #[serde(default)]
    pub auto_replied: u32,
}

impl Batch {
    /// A new campaign batch of `messages` messages, with every counter at zero.
    pub fn new(id: &str, domain: &str, created_at: u64, messages: usize) -> Batch {
        Batch {
            id: id.to_owned(),
            domain: domain.to_owned(),
            created_at,
            messages: u32::try_from(messages).unwrap_or(u32::MAX),
            opened: 0,
            clicked: 0,
            unsubscribed: 0,
            replied: 0,
            delivered: 0,
            bounced: 0,
            auto_replied: 0,
        }
    }
}

/// Something that happened to a sent message, counted for its batch or sequence.
#[derive(Debug, Clone, Copy)]
pub(super) enum Event {
    Delivered,
    Bounced,
    /// A DSN for a message that had been delivered.
    BouncedAfterDelivery,
    Opened,
    Clicked,
    Replied,
    AutoReplied,
}

impl Wtx<'_> {
    pub fn create_batch(&mut self, batch: &Batch) -> Result<()> {
        self.tx.open_table(BATCHES)?.insert(batch.id.as_str(), encode(batch)?.as_slice())?;
        self.tx
            .open_table(BATCHES_BY_DOMAIN)?
            .insert((batch.domain.as_str(), batch.id.as_str()), ())?;
        Ok(())
    }

    /// Counts `event` for the batch or sequence the message belongs to.
    pub(super) fn count(&mut self, email: &Email, event: Event) -> Result<()> {
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
                Event::AutoReplied => b.auto_replied += 1,
            })?;
        }
        if let Some(sequence) = &email.sequence_id {
            if matches!(event, Event::Opened | Event::Clicked) {
                self.lead_engaged(email, matches!(event, Event::Clicked))?;
            }
            self.bump_sequence(sequence, email, |c| match event {
                Event::Delivered => c.delivered += 1,
                Event::Bounced => c.bounced += 1,
                Event::BouncedAfterDelivery => {
                    c.delivered = c.delivered.saturating_sub(1);
                    c.bounced += 1;
                }
                Event::Opened => c.opened += 1,
                Event::Clicked => c.clicked += 1,
                Event::Replied => c.replied += 1,
                Event::AutoReplied => c.auto_replied += 1,
            })?;
        }
        Ok(())
    }

    pub(super) fn bump_batch(&mut self, id: &str, change: impl FnOnce(&mut Batch)) -> Result<()> {
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
    /// The domain's campaign batches, oldest first.
    pub fn batches(&self, domain: &str) -> Result<Vec<Batch>> {
        scan_index(self, BATCHES_BY_DOMAIN, BATCHES, domain)
    }

    pub fn batch(&self, id: &str) -> Result<Option<Batch>> {
        get_json(self, BATCHES, id)
    }
}
