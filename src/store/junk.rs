//! The junk classifier's counts: per scope (`""` for the global model, else a mailbox
//! address), how many trained spam and ham messages held each token (a 64-bit hash; the store
//! knows nothing of how tokens are made), and the scope's message totals with a generation.
//! Training one message is one write: its tokens' counts and the totals move together, so a
//! reader never sees counts without the totals they belong to.

use std::ops::ControlFlow as Flow;

use serde::{Deserialize, Serialize};

use super::error::Result;
use super::kv::ReadableTable;
use super::tables::{JUNK_TOKENS, JUNK_TOTALS};
use super::{Rtx, Tables, Wtx, decode, encode};

/// A scope's trained messages, and the generation that every training of it bumps.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JunkTotals {
    #[serde(default)]
    pub spam: u64,
    #[serde(default)]
    pub ham: u64,
    #[serde(default)]
    pub generation: u64,
}

/// One token's counts in a scope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JunkCounts {
    pub spam: u32,
    pub ham: u32,
}

impl JunkCounts {
    fn pack(self) -> u64 {
        (u64::from(self.spam) << 32) | u64::from(self.ham)
    }

    fn unpack(v: u64) -> JunkCounts {
        // Both halves fit by construction: the shifts only take them apart.
        JunkCounts { spam: (v >> 32) as u32, ham: (v & 0xFFFF_FFFF) as u32 }
    }

    /// The counts after one message of class `spam` is added (`+1`) or taken away (`-1`),
    /// saturating at 0 and at `u32::MAX`.
    fn moved(self, spam: bool, add: bool) -> JunkCounts {
        let step = |n: u32| if add { n.saturating_add(1) } else { n.saturating_sub(1) };
        if spam {
            JunkCounts { spam: step(self.spam), ..self }
        } else {
            JunkCounts { ham: step(self.ham), ..self }
        }
    }
}

/// What one training changes: the class a message is learned as, and the class it was learned
/// as before (taken back first), each when there is one.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JunkTraining {
    pub learn: Option<bool>,
    pub unlearn: Option<bool>,
}

fn totals(tx: &impl Tables, scope: &str) -> Result<JunkTotals> {
    match tx.table(JUNK_TOTALS)?.get(scope)? {
        Some(v) => decode(v.value()),
        None => Ok(JunkTotals::default()),
    }
}

impl Wtx<'_> {
    /// Applies `training` to `tokens` (one trained message, deduplicated by the caller) in
    /// `scope`, and bumps the scope's generation; answers the new totals. Counts saturate at 0,
    /// so taking back a message that was never learned cannot underflow.
    pub fn train_junk(
        &mut self,
        scope: &str,
        tokens: &[u64],
        training: JunkTraining,
    ) -> Result<JunkTotals> {
        let mut sums = totals(self, scope)?;
        let mut table = self.tx.open_table(JUNK_TOKENS)?;
        for &token in tokens {
            let old = table.get((scope, token))?.map(|v| JunkCounts::unpack(v.value()));
            let mut counts = old.unwrap_or_default();
            if let Some(was) = training.unlearn {
                counts = counts.moved(was, false);
            }
            if let Some(spam) = training.learn {
                counts = counts.moved(spam, true);
            }
            if Some(counts) == old {
                continue;
            }
            if counts == JunkCounts::default() {
                table.remove((scope, token))?;
            } else {
                table.insert((scope, token), counts.pack())?;
            }
        }
        let class = |n: &mut u64, spam: bool, t: JunkTraining| {
            if t.unlearn == Some(spam) {
                *n = n.saturating_sub(1);
            }
            if t.learn == Some(spam) {
                *n = n.saturating_add(1);
            }
        };
        class(&mut sums.spam, true, training);
        class(&mut sums.ham, false, training);
        sums.generation = sums.generation.wrapping_add(1);
        self.tx.open_table(JUNK_TOTALS)?.insert(scope, encode(&sums)?.as_slice())?;
        Ok(sums)
    }
}

impl Wtx<'_> {
    /// Forgets what `scope` (a removed mailbox) was trained on. Its totals stay behind, zeroed
    /// with the generation bumped, so a node that cached its model cannot take a new mailbox of
    /// the same address, trained from generation 1 again, for the old one.
    pub(super) fn forget_junk(&mut self, scope: &str) -> Result<()> {
        let sums = totals(self, scope)?;
        if sums == JunkTotals::default() {
            return Ok(());
        }
        self.tx
            .open_table(JUNK_TOKENS)?
            .retain_in((scope, 0u64)..=(scope, u64::MAX), |_, _| false)?;
        let forgotten =
            JunkTotals { generation: sums.generation.wrapping_add(1), ..JunkTotals::default() };
        self.tx.open_table(JUNK_TOTALS)?.insert(scope, encode(&forgotten)?.as_slice())?;
        Ok(())
    }
}

impl Rtx {
    /// The totals of `scope` (zeros when it was never trained): one key, for checking whether a
    /// cached model is current.
    pub fn junk_totals(&self, scope: &str) -> Result<JunkTotals> {
        totals(self, scope)
    }

    /// The totals of `scope` and every token's counts, in token order: one range read.
    pub fn junk_scope(&self, scope: &str) -> Result<(JunkTotals, Vec<(u64, JunkCounts)>)> {
        let sums = totals(self, scope)?;
        let mut tokens = Vec::new();
        self.tx.open_table(JUNK_TOKENS)?.scan(
            (scope, 0u64)..=(scope, u64::MAX),
            false,
            |k, v| {
                tokens.push((k.1, JunkCounts::unpack(v)));
                Ok(Flow::Continue(()))
            },
        )?;
        Ok((sums, tokens))
    }
}

#[cfg(test)]
mod tests {
    use super::super::kv::conformance::pg_cluster;
    use super::super::{Options, Store};
    use super::*;

    fn train(store: &Store, scope: &'static str, tokens: &'static [u64], t: JunkTraining) {
        store.write_blocking(move |w| w.train_junk(scope, tokens, t)).expect("train"); // ok: test
    }

    fn scope(store: &Store, scope: &str) -> (JunkTotals, Vec<(u64, JunkCounts)>) {
        store.read_blocking(|r| r.junk_scope(scope)).expect("read") // ok: test
    }

    const SPAM: JunkTraining = JunkTraining { learn: Some(true), unlearn: None };
    const HAM: JunkTraining = JunkTraining { learn: Some(false), unlearn: None };
    const TO_HAM: JunkTraining = JunkTraining { learn: Some(false), unlearn: Some(true) };
    const FORGET_HAM: JunkTraining = JunkTraining { learn: None, unlearn: Some(false) };

    fn round_trip(store: &Store) {
        train(store, "", &[1, 2, u64::MAX], SPAM);
        train(store, "", &[2, 3], HAM);
        train(store, "m@x.test", &[7], SPAM);
        let (sums, tokens) = scope(store, "");
        assert_eq!((sums.spam, sums.ham, sums.generation), (1, 1, 2));
        let c = |spam, ham| JunkCounts { spam, ham };
        assert_eq!(tokens, vec![(1, c(1, 0)), (2, c(1, 1)), (3, c(0, 1)), (u64::MAX, c(1, 0))]);
        // Moving the spam message to ham takes it back, and the totals follow.
        train(store, "", &[1, 2, u64::MAX], TO_HAM);
        let (sums, tokens) = scope(store, "");
        assert_eq!((sums.spam, sums.ham, sums.generation), (0, 2, 3));
        assert_eq!(tokens, vec![(1, c(0, 1)), (2, c(0, 2)), (3, c(0, 1)), (u64::MAX, c(0, 1))]);
        // Forgetting more than was learned stays at 0 and leaves no empty entries behind.
        for _ in 0..3 {
            train(store, "", &[1, 2, 3, u64::MAX], FORGET_HAM);
        }
        let (sums, tokens) = scope(store, "");
        assert_eq!((sums.spam, sums.ham, sums.generation), (0, 0, 6));
        assert!(tokens.is_empty(), "{tokens:?}");
        let (sums, tokens) = scope(store, "m@x.test");
        assert_eq!((sums.spam, sums.generation, tokens), (1, 1, vec![(7, c(1, 0))]));
        let gen_of = |s: &str| store.read_blocking(|r| r.junk_totals(s)).expect("totals"); // ok: test
        assert_eq!(gen_of("nobody@x.test"), JunkTotals::default());
        store.write_blocking(|w| w.forget_junk("m@x.test")).expect("forget"); // ok: test
        let (sums, tokens) = scope(store, "m@x.test");
        assert_eq!((sums.spam, sums.generation, tokens), (0, 2, vec![]));
    }

    #[test]
    fn counts_round_trip_on_redb() {
        let dir = std::env::temp_dir().join(format!("edgemail-junk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        round_trip(&store);
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn counts_round_trip_on_postgres() {
        let url = pg_cluster::Cluster::shared().database();
        let dir = std::env::temp_dir().join(format!("edgemail-junk-pg-{}", std::process::id()));
        let options = Options { url: Some(url), connections: 4, ..Options::default() };
        let store = Store::open_with(&dir, options).expect("open"); // ok: test
        round_trip(&store);
        store.close();
    }
}
