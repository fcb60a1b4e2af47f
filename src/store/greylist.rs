//! Greylisting's memory (RFC 6647): when each (client network, sender, recipient) triplet was
//! first seen, and whether it has since passed. One key per triplet, checked and updated in the
//! write that answers the attempt, so two sessions of one sender cannot both count as first.

use super::Wtx;
use super::error::Result;
use super::kv::ReadableTable;
use super::tables::GREYLIST;

/// When a triplet may pass.
#[derive(Debug, Clone, Copy)]
pub struct Greylisting {
    /// A retry passes once this long after the first attempt.
    pub delay_ms: u64,
    /// A triplet not retried within this long starts again; one that passed is remembered
    /// this long after its last pass.
    pub keep_ms: u64,
}

impl Wtx<'_> {
    /// Whether an attempt from `net` of `sender` to `recipient` at `now` passes, recording it.
    pub fn greylist_pass(
        &mut self,
        (net, sender, recipient): (&str, &str, &str),
        now: u64,
        g: Greylisting,
    ) -> Result<bool> {
        let mut table = self.tx.open_table(GREYLIST)?;
        let key = (net, sender, recipient);
        let known = table.get(key)?.map(|v| v.value());
        let (first, passed) = match known {
            Some(v) if now.saturating_sub(v >> 1) <= g.keep_ms => (v >> 1, v & 1 == 1),
            _ => (now, false),
        };
        let pass = passed || now.saturating_sub(first) >= g.delay_ms;
        // A triplet that passed keeps passing; its time becomes that of its latest pass, so it
        // is forgotten `keep_ms` after the sender last wrote.
        let value = if pass { (now << 1) | 1 } else { first << 1 };
        if known != Some(value) {
            table.insert(key, value)?;
        }
        Ok(pass)
    }
}
