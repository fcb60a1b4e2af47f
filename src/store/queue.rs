//! The delivery queue: an outbound message waits in `QUEUE` under its next due time, so "what is
//! due" is one range read from the start. Also the Message-ID index of what we sent, written
//! when a message is queued, which links bounces and replies back to it. Committing what an
//! attempt did is `attempts`'.

use std::ops::ControlFlow as Flow;

use super::kv::ReadableTable;

use super::emails::{Email, Folder};
use super::error::Result;
use super::tables::*;
use super::{Rtx, Tables, Wtx};

fn sent_with_message_id(tx: &impl Tables, message_id: &str) -> Result<Option<String>> {
    let table = tx.table(MESSAGE_IDS)?;
    let found = table.get(message_id)?;
    Ok(found.map(|v| v.value().to_owned()))
}

/// What `Rtx::spool` found: the entries to work on, and those whose queue entry went.
#[derive(Debug, Default)]
pub struct Spooled {
    pub queued: Vec<(u64, String)>,
    pub gone: Vec<(u64, String)>,
}

/// Up to `limit` entries `(due, id)` of `node`'s spool, earliest first.
pub(super) fn spooled(tx: &impl Tables, node: &str, limit: usize) -> Result<Vec<(u64, String)>> {
    let mut listed = Vec::new();
    tx.table(SPOOL)?.scan((node, 0u64, "").., false, |(of, due, id), ()| {
        if of != node || listed.len() == limit {
            return Ok(Flow::Break(()));
        }
        listed.push((due, id.to_owned()));
        Ok(Flow::Continue(()))
    })?;
    Ok(listed)
}

impl Wtx<'_> {
    /// The keys `enqueue` reads, named ahead (`Store::write_snapshot_ahead`).
    pub fn enqueue_ahead(&self, email: &Email) -> Result<()> {
        self.insert_ahead(email)
    }

    /// Stores an outbound message in its outbox and queues it for `due`.
    pub fn enqueue(&mut self, email: &Email, due: u64) -> Result<()> {
        self.insert_email(email)?;
        let destination = email.destination();
        self.tx
            .open_table(QUEUE)?
            .insert((due, email.summary.id.as_str()), destination.as_str())?;
        if let Some(node) = self.shard {
            // Each node delivers what it accepted (its spool); others take over after its lease.
            let id = email.summary.id.as_str();
            self.tx.open_table(CLAIMS)?.insert(id, node)?;
            self.tx.open_table(SPOOL)?.insert((node, due, id), ())?;
        }
        if let Some(message_id) = &email.message_id {
            let mut ids = self.tx.open_table(MESSAGE_IDS)?;
            ids.insert(message_id.as_str(), email.summary.id.as_str())?;
        }
        Ok(())
    }

    /// Stores a message a mail client submitted, with the bytes to send, and queues it now.
    pub fn enqueue_submitted(&mut self, email: &Email, raw: &[u8], due: u64) -> Result<()> {
        self.enqueue(email, due)?;
        self.keep_submitted(&email.summary.id, raw)
    }

    /// Cancels what of a message still waits in the queue; it then counts as sent.
    pub(super) fn cancel_queued(&mut self, id: &str) -> Result<()> {
        let Some(mut email) = self.load_email(id)? else { return Ok(()) };
        let Some(due) = email.next_attempt_at.take() else { return Ok(()) };
        let before = email.summary.clone();
        self.unqueue(due, id)?;
        email.cancel_pending();
        email.summary.folder = Folder::Sent;
        self.replace_email(&before, &email)
    }

    /// The id of the email we sent with this Message-ID.
    pub fn email_for_message_id(&self, message_id: &str) -> Result<Option<String>> {
        sent_with_message_id(self, message_id)
    }

    /// Whether the queue still holds this entry (it goes when its message is deleted).
    pub fn is_queued_in_write(&self, due: u64, id: &str) -> Result<bool> {
        Ok(self.tx.open_table(QUEUE)?.get((due, id))?.is_some())
    }
}

impl Rtx {
    /// Up to `limit` queue entries due at or before `now`, earliest first.
    pub fn due(&self, now: u64, limit: usize) -> Result<Vec<(u64, String)>> {
        let table = self.tx.open_table(QUEUE)?;
        let mut out = Vec::new();
        table.scan((0u64, "").., false, |(due, id), _| {
            if due > now || out.len() == limit {
                return Ok(Flow::Break(()));
            }
            out.push((due, id.to_owned()));
            Ok(Flow::Continue(()))
        })?;
        Ok(out)
    }

    /// Up to `limit` entries of `node`'s spool (what it claimed), earliest first, each still in
    /// the queue; and those of them that are not (the message was deleted or cancelled since),
    /// for `Wtx::unspool`.
    pub fn spool(&self, node: &str, limit: usize) -> Result<Spooled> {
        let listed = spooled(self, node, limit)?;
        self.ahead(|a| {
            for (due, id) in &listed {
                a.key(QUEUE, (*due, id.as_str()));
            }
        })?;
        let queue = self.tx.open_table(QUEUE)?;
        let mut out = Spooled::default();
        for (due, id) in listed {
            match queue.get((due, id.as_str()))?.is_some() {
                true => out.queued.push((due, id)),
                false => out.gone.push((due, id)),
            }
        }
        Ok(out)
    }

    /// Whether the queue still holds this entry (an attempt may start from a stale scan).
    pub fn is_queued(&self, due: u64, id: &str) -> Result<bool> {
        Ok(self.tx.open_table(QUEUE)?.get((due, id))?.is_some())
    }

    /// How many entries are due at `now`, how many wait for a later time, and the due time of the
    /// oldest entry (for metrics: counting the due part walks it, the rest is the table's length).
    pub fn queue_depth(&self, now: u64) -> Result<(u64, u64, Option<u64>)> {
        let table = self.tx.open_table(QUEUE)?;
        let total = table.len()?;
        let mut due = 0;
        table.scan((0u64, "")..(now.saturating_add(1), ""), false, |_, _| {
            due += 1;
            Ok(Flow::Continue(()))
        })?;
        let oldest = table.first()?.map(|(k, _)| k.value().0);
        Ok((due, total.saturating_sub(due), oldest))
    }

    /// The earliest due time in the queue.
    pub fn next_due(&self) -> Result<Option<u64>> {
        let table = self.tx.open_table(QUEUE)?;
        let first = table.first()?;
        Ok(first.map(|(k, _)| k.value().0))
    }

    pub fn queue_len(&self) -> Result<u64> {
        self.tx.open_table(QUEUE)?.len()
    }

    /// The id of the email we sent with this Message-ID.
    pub fn email_for_message_id(&self, message_id: &str) -> Result<Option<String>> {
        sent_with_message_id(self, message_id)
    }
}
