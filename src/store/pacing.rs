//! Pacing a mailbox's campaign, sequence and warmup sends: a daily cap and a minimum gap. Each
//! such message is given a slot once, when the queue first takes it: now, if the mailbox may
//! send now, else the first later time its cap and gap allow. A message given a later slot
//! waits in the queue under that time (never dropped) and goes when it comes due, already
//! counted; so a backlog costs one extra write per message, not one per message and wake-up.

use super::kv::ReadableTable;

use super::error::Result;
use super::mailboxes::Mailbox;
use super::stats::day_of;
use super::tables::*;
use super::{Rtx, Wtx};

const DAY_MS: u64 = 86_400_000;

/// Where a paced message stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Slot {
    /// Send it now.
    Now,
    /// It waits in the queue until this time.
    Later(u64),
    /// Its queue entry is gone (cancelled or deleted meanwhile): nothing to send.
    Gone,
}

/// The first time at or after `from` whose day still has room under `limit`.
fn first_open(
    sends: &impl ReadableTable<(&'static str, u32), u32>,
    mailbox: &str,
    from: u64,
    limit: Option<u32>,
) -> Result<u64> {
    let Some(limit) = limit else { return Ok(from) };
    let mut at = from;
    // Bounded by the days already booked full (each booked day holds `limit` messages).
    loop {
        let day = day_of(at);
        let used = sends.get((mailbox, day))?.map_or(0, |v| v.value());
        if used < limit {
            return Ok(at);
        }
        at = (u64::from(day) + 1) * DAY_MS;
    }
}

impl Wtx<'_> {
    /// The slot of the message `id` (queued under `due`) of the paced `mailbox`, at `now`. A
    /// later slot moves the message's queue entry there in this same write.
    pub fn pace_send(&mut self, mailbox: &Mailbox, id: &str, due: u64, now: u64) -> Result<Slot> {
        if self.tx.open_table(QUEUE)?.get((due, id))?.is_none() {
            return Ok(Slot::Gone);
        }
        if self.tx.open_table(PACED)?.remove(id)?.is_some() {
            return Ok(Slot::Now); // its slot has come; it was counted when given
        }
        let address = mailbox.address.as_str();
        let gap = mailbox.min_gap_ms.unwrap_or(0);
        let next = self.tx.open_table(MAILBOX_NEXT_SLOT)?.get(address)?.map_or(0, |v| v.value());
        let mut sends = self.tx.open_table(MAILBOX_DAY_SENDS)?;
        let at = first_open(&sends, address, now.max(next), mailbox.daily_limit)?;
        let day = day_of(at);
        let used = sends.get((address, day))?.map_or(0, |v| v.value());
        sends.insert((address, day), used.saturating_add(1))?;
        // Days long gone are dropped as we go, so the table holds the recent days only.
        let stale: Vec<u32> = sends
            .range((address, 0)..(address, day_of(now).saturating_sub(2)))?
            .map(|e| e.map(|(k, _)| k.value().1))
            .collect::<std::result::Result<_, _>>()?;
        for old in stale {
            sends.remove((address, old))?;
        }
        drop(sends);
        self.tx.open_table(MAILBOX_NEXT_SLOT)?.insert(address, at.saturating_add(gap))?;
        if at <= now {
            return Ok(Slot::Now);
        }
        self.tx.open_table(PACED)?.insert(id, at)?;
        let mut queue = self.tx.open_table(QUEUE)?;
        let destination = queue.remove((due, id))?.map(|v| v.value().to_owned());
        queue.insert((at, id), destination.as_deref().unwrap_or(""))?;
        drop(queue);
        self.respool(id, due, at)?;
        if let Some(mut email) = self.load_email(id)? {
            let before = email.summary.clone();
            email.next_attempt_at = Some(at);
            self.replace_email(&before, &email)?;
        }
        Ok(Slot::Later(at))
    }
}

impl Rtx {
    /// How many paced sends the mailbox has on the UTC day `day`.
    pub fn mailbox_day_sends(&self, address: &str, day: u32) -> Result<u32> {
        let table = self.tx.open_table(MAILBOX_DAY_SENDS)?;
        Ok(table.get((address, day))?.map_or(0, |v| v.value()))
    }
}
