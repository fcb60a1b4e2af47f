//! The bytes of mail each mailbox holds: one counter per mailbox (`MAILBOX_USAGE`) that every
//! insert and removal of an email adjusts by the email's size, in the write that makes the
//! change, so a quota check reads one key instead of walking the mailbox. Every folder counts,
//! the trash included, until a message is removed for good. A file written before the counters
//! existed is counted once, on the first open that finds no stamp (`count_once`).

use std::collections::BTreeMap;
use std::ops::ControlFlow as Flow;

use serde::{Deserialize, Serialize};

use super::error::Result;
use super::kv::{Ahead, ReadableTable, WriteTxn};
use super::tables::*;
use super::{Tables, Wtx};

/// Above every node name, closing a range of one mailbox's or day's shards.
pub(super) const LAST_NODE: &str = "\u{10FFFF}";

/// The `META` entry saying that every mailbox's usage is counted.
const COUNTED: &str = "mailbox_usage_counted";

/// A mailbox's quota as the API shows it: bytes held, and the most it may hold (`None`: no
/// limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quota {
    pub used_bytes: u64,
    pub limit_bytes: Option<u64>,
}

impl Quota {
    /// The quota of a mailbox holding `used` bytes under its own setting `own` (`Some(0)`: no
    /// limit; `None`: the server's `default`, where 0 is no limit too).
    pub fn of(used: u64, own: Option<u64>, default: u64) -> Quota {
        let limit = own.unwrap_or(default);
        Quota { used_bytes: used, limit_bytes: (limit > 0).then_some(limit) }
    }

    /// Whether `more` bytes still fit.
    pub fn fits(&self, more: u64) -> bool {
        self.limit_bytes.is_none_or(|limit| self.used_bytes.saturating_add(more) <= limit)
    }

    /// Whether nothing more fits at all.
    pub fn is_full(&self) -> bool {
        self.limit_bytes.is_some_and(|limit| self.used_bytes >= limit)
    }
}

/// The bytes `mailbox` holds: its counter, and what each node counted into its shard (none on
/// a store with one node).
pub(super) fn usage(tx: &impl Tables, mailbox: &str) -> Result<u64> {
    let mut used = tx.table(MAILBOX_USAGE)?.get(mailbox)?.map_or(0, |v| v.value());
    let shards = tx.table(MAILBOX_USAGE_SHARDS)?;
    shards.scan((mailbox, "")..=(mailbox, LAST_NODE), false, |_, delta| {
        used = used.wrapping_add(delta);
        Ok(Flow::Continue(()))
    })?;
    // Shards only ever sum to what the mailbox holds; a count below zero is no count.
    Ok(if used > i64::MAX as u64 { 0 } else { used })
}

impl Wtx<'_> {
    /// The counter `adjust_usage` of `mailbox` reads, to be read ahead.
    pub(super) fn usage_ahead(&self, ahead: &mut Ahead, mailbox: &str) {
        match self.shard {
            Some(node) => ahead.key(MAILBOX_USAGE_SHARDS, (mailbox, node)),
            None => ahead.key(MAILBOX_USAGE, mailbox),
        };
    }

    /// Counts `added` bytes into `mailbox` and `removed` out of it.
    pub(super) fn adjust_usage(&mut self, mailbox: &str, added: u64, removed: u64) -> Result<()> {
        if added == removed {
            return Ok(());
        }
        if let Some(node) = self.shard {
            // The shard is this node's alone: concurrent writers elsewhere never touch it.
            let mut shards = self.tx.open_table(MAILBOX_USAGE_SHARDS)?;
            let delta = shards.get((mailbox, node))?.map_or(0, |v| v.value());
            let delta = delta.wrapping_add(added).wrapping_sub(removed);
            if delta == 0 {
                shards.remove((mailbox, node))?;
            } else {
                shards.insert((mailbox, node), delta)?;
            }
            return Ok(());
        }
        let used = usage(self, mailbox)?.saturating_add(added).saturating_sub(removed);
        let mut table = self.tx.open_table(MAILBOX_USAGE)?;
        if used == 0 {
            table.remove(mailbox)?;
        } else {
            table.insert(mailbox, used)?;
        }
        Ok(())
    }

    /// Forgets the count of a mailbox whose mail is all gone.
    pub(super) fn forget_usage(&mut self, mailbox: &str) -> Result<()> {
        self.tx.open_table(MAILBOX_USAGE)?.remove(mailbox)?;
        let mut shards = self.tx.open_table(MAILBOX_USAGE_SHARDS)?;
        shards.retain_in((mailbox, "")..=(mailbox, LAST_NODE), |_, _| false)?;
        Ok(())
    }
}

/// The size recorded in a folder index entry (the summary's `size`).
#[derive(Deserialize)]
struct Size {
    #[serde(default)]
    size: u64,
}

/// Counts every mailbox's usage from the folder index, once per file: the counters are kept
/// up to date from then on. No version bump: a build without counters simply ignores them.
pub(super) fn count_once(tx: &dyn WriteTxn) -> Result<()> {
    let mut meta = tx.open_table(META)?;
    if meta.get(COUNTED)?.is_some() {
        return Ok(());
    }
    let mut totals: BTreeMap<String, u64> = BTreeMap::new();
    let index = tx.open_table(EMAIL_INDEX)?;
    index.scan(("", 0u8, 0u64, "").., false, |(mailbox, _, _, _), value| {
        let size = serde_json::from_slice::<Size>(value).map_or(0, |s| s.size);
        match totals.get_mut(mailbox) {
            Some(total) => *total = total.saturating_add(size),
            None => {
                totals.insert(mailbox.to_owned(), size);
            }
        }
        Ok(Flow::Continue(()))
    })?;
    let mut table = tx.open_table(MAILBOX_USAGE)?;
    for (mailbox, used) in &totals {
        table.insert(mailbox.as_str(), *used)?;
    }
    meta.insert(COUNTED, 1)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Email, Folder, Store};
    use super::*;

    fn email(id: &str, mailbox: &str, size: u64) -> Email {
        let mut e = Email::default();
        e.summary.id = id.into();
        e.summary.mailbox = mailbox.into();
        e.summary.folder = Folder::Inbox;
        e.summary.size = size;
        e
    }

    fn used(store: &Store, mailbox: &str) -> u64 {
        let mailbox = mailbox.to_owned();
        store.read_blocking(move |r| usage(r, &mailbox)).expect("read") // ok: test
    }

    #[test]
    fn usage_follows_inserts_and_removals_and_old_files_are_counted_once() {
        let dir = std::env::temp_dir().join(format!("edgemail-quota-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        store
            .write_blocking(|w| -> Result<_> {
                w.insert_email(&email("em_a", "m@x.test", 1000))?;
                w.insert_email(&email("em_b", "m@x.test", 500))?;
                w.insert_email(&email("em_c", "n@x.test", 70))
            })
            .expect("seed"); // ok: test
        assert_eq!((used(&store, "m@x.test"), used(&store, "n@x.test")), (1500, 70));
        let trash = |id: &'static str| {
            store.write_blocking(move |w| w.delete_email("x.test", id)).expect("delete") // ok: test
        };
        trash("em_a");
        assert_eq!(used(&store, "m@x.test"), 1500, "the trash counts");
        trash("em_a");
        assert_eq!(used(&store, "m@x.test"), 500, "removed for good");

        // A file from before the counters: no stamp, no counts.
        store
            .write_blocking(|w| -> Result<_> {
                w.tx.open_table(META)?.remove(COUNTED)?;
                w.forget_usage("m@x.test")?;
                w.forget_usage("n@x.test")
            })
            .expect("forget"); // ok: test
        store.close();
        drop(store);
        let store = Store::open(&dir).expect("reopen"); // ok: test
        assert_eq!((used(&store, "m@x.test"), used(&store, "n@x.test")), (500, 70));
        let n = store.write_blocking(|w| w.delete_mailbox_contents("m@x.test")).expect("x"); // ok: test
        assert_eq!((n, used(&store, "m@x.test")), (1, 0));
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }
}
