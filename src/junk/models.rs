//! The models in memory, over the counts in the store. A classification reads the stored
//! generation of the global scope and of the mailbox's (one short read) and reloads a scope
//! only when its generation moved: training here, on another node sharing a PostgreSQL store,
//! or by `edgemail train` on the file. Training writes a message's counts in one write, then
//! applies the same change to the cached model, so the next classification needs no reload.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::model::{Model, Score};
use super::tokens::{Features, features};
use super::verdict::{Thresholds, Verdict, verdict};
use crate::store::{JunkTotals, JunkTraining, Result, Store};

/// Messages up to this size are tokenized and scored where the caller runs: that takes about
/// 0.1 ms for a typical message (`benches/spam.rs`), less than a hop to the blocking pool
/// would cost in latency. Larger ones (up to `tokens::MAX_RAW` parsed) go to the blocking pool.
const INLINE_LIMIT: usize = 128 * 1024;
/// Scopes kept in memory at most; past it the mailbox models are dropped (and reloaded when
/// next needed), the global one kept.
const MAX_SCOPES: usize = 10_000;
/// The global model's scope in the store.
const GLOBAL: &str = "";

/// A scope's model as of a stored generation.
#[derive(Clone)]
struct Cached {
    generation: u64,
    model: Model,
}

/// The features of `raw`: small messages where the caller runs, larger ones on the blocking
/// pool (see [`INLINE_LIMIT`]).
async fn features_of_raw(raw: &[u8]) -> Result<Features> {
    if raw.len() <= INLINE_LIMIT {
        return Ok(features(raw));
    }
    let raw = raw.to_vec();
    tokio::task::spawn_blocking(move || features(&raw)).await.map_err(crate::store::Error::Task)
}

/// The cache of models; clones share it.
#[derive(Clone, Default)]
pub struct Models {
    cache: Arc<RwLock<HashMap<String, Arc<Cached>>>>,
}

impl Models {
    pub fn new() -> Models {
        Models::default()
    }

    /// Scores `raw` for `mailbox` (the lower-cased address) on the mailbox's model over the
    /// global one, adds the caller's `evidence` (reason, points) and applies `t`.
    pub async fn classify(
        &self,
        store: &Store,
        mailbox: &str,
        raw: &[u8],
        evidence: &[(String, f64)],
        t: &Thresholds,
    ) -> Result<Verdict> {
        let found = features_of_raw(raw).await?;
        self.classify_features(store, mailbox, &found, evidence, t).await
    }

    /// `classify` of a message whose features the caller made (`tokens::features_of`).
    pub async fn classify_features(
        &self,
        store: &Store,
        mailbox: &str,
        found: &Features,
        evidence: &[(String, f64)],
        t: &Thresholds,
    ) -> Result<Verdict> {
        let scopes = (GLOBAL.to_owned(), mailbox.to_owned());
        let (global_totals, own_totals) = store
            .read(move |r| {
                Ok::<_, crate::store::Error>((r.junk_totals(&scopes.0)?, r.junk_totals(&scopes.1)?))
            })
            .await?;
        let global = self.current(store, GLOBAL, global_totals).await?;
        let own = match mailbox {
            GLOBAL => None,
            _ => Some(self.current(store, mailbox, own_totals).await?),
        };
        Ok(verdict(&score(&global, own.as_deref(), found), evidence, t))
    }

    /// Trains `raw` as spam or ham in `scope` (a mailbox, or `None` for the global model).
    /// `was`: the class it was trained as before, taken back first; training a message as what
    /// it already was changes nothing.
    pub async fn train(
        &self,
        store: &Store,
        scope: Option<&str>,
        raw: &[u8],
        spam: bool,
        was: Option<bool>,
    ) -> Result<()> {
        if was == Some(spam) {
            return Ok(());
        }
        let scope = scope.unwrap_or(GLOBAL).to_owned();
        let found = features_of_raw(raw).await?;
        let training = JunkTraining { learn: Some(spam), unlearn: was };
        let (at, hashes) = (scope.clone(), found.hashes.clone());
        let totals = store.write(move |w| w.train_junk(&at, &hashes, training)).await?;
        self.apply(&scope, &found, training, totals);
        Ok(())
    }

    /// The model of `scope` as of `totals`: the cached one when current, else loaded.
    async fn current(&self, store: &Store, scope: &str, totals: JunkTotals) -> Result<Arc<Cached>> {
        if let Some(cached) = self.lock_read().get(scope)
            && cached.generation == totals.generation
        {
            return Ok(cached.clone());
        }
        let cached = if totals.generation == 0 {
            Arc::new(Cached { generation: 0, model: Model::default() })
        } else {
            let at = scope.to_owned();
            let (totals, counts) = store.read_long(move |r| r.junk_scope(&at)).await?;
            let mut model = Model {
                spam_messages: totals.spam,
                ham_messages: totals.ham,
                tokens: Default::default(),
            };
            model.tokens.reserve(counts.len());
            for (token, c) in counts {
                model.tokens.insert(token, super::model::Counts { spam: c.spam, ham: c.ham });
            }
            Arc::new(Cached { generation: totals.generation, model })
        };
        let mut cache = self.lock_write();
        if cache.len() >= MAX_SCOPES {
            cache.retain(|scope, _| scope == GLOBAL);
        }
        cache.insert(scope.to_owned(), cached.clone());
        Ok(cached)
    }

    /// Brings the cached model of `scope` to `totals` after a training of ours, when it was
    /// current just before it; otherwise it is dropped, to be loaded again when needed.
    fn apply(&self, scope: &str, found: &Features, training: JunkTraining, totals: JunkTotals) {
        let mut cache = self.lock_write();
        let Some(mut cached) = cache.remove(scope) else { return };
        if cached.generation.wrapping_add(1) != totals.generation {
            return;
        }
        // Cloned only when a classification still holds the old one.
        let inner = Arc::make_mut(&mut cached);
        if let Some(was) = training.unlearn {
            inner.model.unlearn(found, was);
        }
        if let Some(spam) = training.learn {
            inner.model.learn(found, spam);
        }
        inner.generation = totals.generation;
        cache.insert(scope.to_owned(), cached);
    }

    fn lock_read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Arc<Cached>>> {
        // A panic while holding the lock leaves a map that is still whole: go on with it.
        self.cache.read().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn lock_write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Arc<Cached>>> {
        self.cache.write().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

fn score(global: &Cached, own: Option<&Cached>, found: &Features) -> Score {
    match own {
        // A mailbox nobody trained adds nothing: one lookup per token instead of two.
        Some(own) if !own.model.is_empty() => own.model.score(Some(&global.model), found),
        _ => global.model.score(None, found),
    }
}

#[cfg(test)]
mod tests;
