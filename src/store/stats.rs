//! Per-domain, per-day delivery counters behind `GET /v1/bounces`. They are bumped inside the
//! transactions that record the events themselves, so they can never disagree with the stored
//! deliveries, and a window of N days is one range read of N small rows whatever the volume.
//!
//! Counting rules:
//! * Every recipient of an outbound message counts once in `sent` and in exactly one of
//!   `delivered`, `bounced`, `failed`, on the UTC day it first reached that final status (so
//!   `delivered + bounced + failed == sent` over any window, and the bounce rate never exceeds 1).
//! * A later DSN for a recipient already counted as `delivered` (or `failed`) moves it to
//!   `bounced` in the bucket of the day it was counted; one for a recipient not yet final counts
//!   it as sent and bounced on the DSN's day.
//! * `opened`, `clicked` and `replied` count messages, on the day of their first open, first click
//!   and first reply.
//! * Warmup messages are not counted.

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::emails::Email;
use super::error::Result;
use super::quota::LAST_NODE;
use super::status::{DeliveryStatus, SendType};
use super::tables::{DAILY_STATS, DAILY_STATS_SHARDS};
use super::{Rtx, Wtx, decode, encode};
use crate::bounce::BounceClass;

const DAY_MS: u64 = 86_400_000;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct DayCounts {
    pub sent: u64,
    pub delivered: u64,
    pub bounced: u64,
    pub failed: u64,
    pub opened: u64,
    pub clicked: u64,
    pub replied: u64,
    /// Bounces by class, in the order of `BounceClass::ALL`.
    pub bounce_classes: [u64; 7],
}

impl DayCounts {
    /// Adds `other`, wrapping: a node's shard counts a late bounce that moves a recipient
    /// another node counted as delivered as one delivery less, below zero in that shard alone.
    fn add(&mut self, other: &DayCounts) {
        for (sum, n) in self.bounce_classes.iter_mut().zip(other.bounce_classes) {
            *sum = sum.wrapping_add(n);
        }
        for (sum, n) in [
            (&mut self.sent, other.sent),
            (&mut self.delivered, other.delivered),
            (&mut self.bounced, other.bounced),
            (&mut self.failed, other.failed),
            (&mut self.opened, other.opened),
            (&mut self.clicked, other.clicked),
            (&mut self.replied, other.replied),
        ] {
            *sum = sum.wrapping_add(n);
        }
    }

    fn bounced_as(&mut self, class: Option<BounceClass>) {
        let class = class.unwrap_or(BounceClass::Other);
        self.bounce_classes[class.index()] += 1;
    }

    /// One more recipient with this final status; other statuses count nothing.
    pub(super) fn outcome(&mut self, status: DeliveryStatus, class: Option<BounceClass>) {
        let counter = match status {
            DeliveryStatus::Delivered => &mut self.delivered,
            DeliveryStatus::Bounced => {
                self.bounced_as(class);
                &mut self.bounced
            }
            DeliveryStatus::Failed => &mut self.failed,
            _ => return,
        };
        *counter += 1;
        self.sent += 1;
    }
}

/// The UTC day number (days since the Unix epoch) of a time in milliseconds.
pub fn day_of(ms: u64) -> u32 {
    u32::try_from(ms / DAY_MS).unwrap_or(u32::MAX)
}

/// Whether a message takes part in the statistics at all.
pub(super) fn counted(email: &Email) -> bool {
    email.send_type.is_some_and(|t| t != SendType::Warmup)
}

impl Wtx<'_> {
    /// Applies `change` to the counters of `domain` for the day holding `at`.
    /// Names the counter `bump_day` reads for `domain` at `at`, to be read ahead.
    pub(super) fn day_ahead(&self, domain: &str, at: u64) -> Result<()> {
        let day = day_of(at);
        self.tx.ahead(|ahead| {
            match self.shard {
                Some(node) => ahead.key(DAILY_STATS_SHARDS, (domain, day, node)),
                None => ahead.key(DAILY_STATS, (domain, day)),
            };
        })
    }

    pub(super) fn bump_day(
        &mut self,
        domain: &str,
        at: u64,
        change: impl FnOnce(&mut DayCounts),
    ) -> Result<()> {
        let day = day_of(at);
        if let Some(node) = self.shard {
            // This node's shard of the day: no other node writes it, so concurrent counting
            // on several nodes never meets on one key.
            let mut shards = self.tx.open_table(DAILY_STATS_SHARDS)?;
            let key = (domain, day, node);
            let mut counts: DayCounts =
                shards.get(key)?.map(|v| decode(v.value())).transpose()?.unwrap_or_default();
            change(&mut counts);
            shards.insert(key, encode(&counts)?.as_slice())?;
            return Ok(());
        }
        let mut table = self.tx.open_table(DAILY_STATS)?;
        let mut counts: DayCounts =
            table.get((domain, day))?.map(|v| decode(v.value())).transpose()?.unwrap_or_default();
        change(&mut counts);
        table.insert((domain, day), encode(&counts)?.as_slice())?;
        Ok(())
    }

    /// Adds `counts` to `domain`'s counters of the day holding `at` directly. Only for history
    /// without stored deliveries to count from: the dashboard's browser test draws a month
    /// with it.
    pub fn add_day_counts(&mut self, domain: &str, at: u64, counts: &DayCounts) -> Result<()> {
        self.bump_day(domain, at, |c| c.add(counts))
    }

    /// Counts a DSN bounce for a recipient whose status was `was` since `counted_at`.
    pub(super) fn count_late_bounce(
        &mut self,
        domain: &str,
        was: DeliveryStatus,
        counted_at: u64,
        at: u64,
        class: BounceClass,
    ) -> Result<()> {
        match was {
            DeliveryStatus::Bounced => Ok(()),
            // Already in `sent` on the day of its outcome: move it there, so the bounce rate of
            // any window stays bounced / sent of the same recipients.
            DeliveryStatus::Delivered | DeliveryStatus::Failed => {
                let sharded = self.shard.is_some();
                self.bump_day(domain, counted_at, |c| {
                    let counter = match was {
                        DeliveryStatus::Delivered => &mut c.delivered,
                        _ => &mut c.failed,
                    };
                    // In a shard the count may go below zero (another node counted it).
                    *counter =
                        if sharded { counter.wrapping_sub(1) } else { counter.saturating_sub(1) };
                    c.bounced += 1;
                    c.bounced_as(Some(class));
                })
            }
            _ => self.bump_day(domain, at, |c| c.outcome(DeliveryStatus::Bounced, Some(class))),
        }
    }
}

impl Rtx {
    /// The sum of `domain`'s counters over the `days` UTC days ending with the one holding `now`.
    pub fn day_counts(&self, domain: &str, days: u32, now: u64) -> Result<DayCounts> {
        let last = day_of(now);
        let first = last.saturating_sub(days.saturating_sub(1));
        let table = self.tx.open_table(DAILY_STATS)?;
        let mut total = DayCounts::default();
        for entry in table.range((domain, first)..=(domain, last))? {
            let (_, value) = entry?;
            total.add(&decode(value.value())?);
        }
        let shards = self.tx.open_table(DAILY_STATS_SHARDS)?;
        for entry in shards.range((domain, first, "")..=(domain, last, LAST_NODE))? {
            let (_, value) = entry?;
            total.add(&decode(value.value())?);
        }
        Ok(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_final_statuses_count_as_sent() {
        let mut c = DayCounts::default();
        use DeliveryStatus::*;
        for s in [Delivered, Bounced, Failed, Deferred, Cancelled, Queued] {
            c.outcome(s, None);
        }
        assert_eq!(c, DayCounts { sent: 3, delivered: 1, bounced: 1, failed: 1, ..c });
        assert_eq!(day_of(DAY_MS - 1), 0);
        assert_eq!(day_of(DAY_MS), 1);
    }

    #[test]
    fn warmup_and_received_mail_are_not_counted() {
        let mut email = Email::default();
        assert!(!counted(&email), "received mail has no send type");
        for (kind, want) in
            [(SendType::Transactional, true), (SendType::Campaign, true), (SendType::Warmup, false)]
        {
            email.send_type = Some(kind);
            assert_eq!(counted(&email), want, "{kind:?}");
        }
    }
}
