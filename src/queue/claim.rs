//! Claims on queued messages on a shared store: the node that claims a due message delivers
//! it; one that finds it claimed by a live node leaves it alone for a while.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{Deps, Queue, Result};
use crate::ids::now_ms;
use crate::store::ClaimsOf;

pub(super) const LEASE_LOST: &str = "this node's claim on the message lapsed";

/// How long a message another node claimed is left alone before the scan looks at it again.
const ELSEWHERE: Duration = Duration::from_secs(1);

/// How long a look at the nodes' heartbeats that found this node alone holds. A node that joins
/// is told at once (`Topic::Nodes`, `peers_changed`); this bounds the wait without that.
const ALONE: Duration = Duration::from_secs(5);

/// What the last look at the nodes found: whether this node was the only live one, and until
/// when that answer holds; and when the scan looks at the whole queue's head next (`wide_due`).
#[derive(Default)]
pub(super) struct Peers {
    alone: Mutex<Option<(bool, Instant)>>,
    wide: Mutex<Option<Instant>>,
}

/// Whether this node was the only live one at the last look, while that answer holds.
fn known_alone(app: &Deps) -> Option<bool> {
    let known = *lock(&app.queue.peers.alone);
    known.filter(|(_, until)| *until > Instant::now()).map(|(alone, _)| alone)
}

/// Whether the scan reads this node's spool (`Rtx::spool`, the entries it claimed) rather than
/// the head of the whole queue: on a shared store, unless this node is known to be the only
/// live one (the head then holds its own entries only). The head holds every node's entries in
/// due order, so with three nodes a scan walked two others' entries for each of its own: the
/// resumed page reads of the queue took 6.6 s of PostgreSQL's time in a 40 s bench run, against
/// 0.3 s with one node.
pub(super) fn spooling(app: &Deps) -> bool {
    app.node.is_shared() && known_alone(app) != Some(true)
}

/// Whether a spooling scan also looks at the whole queue's head now, for the entries nobody
/// holds (a retry after a deferral, the mail of a node that stopped): at most once per
/// `ELSEWHERE`, and at once after the nodes changed. Marks the look as made.
pub(super) fn wide_due(app: &Deps) -> bool {
    let mut next = lock(&app.queue.peers.wide);
    let now = Instant::now();
    if next.is_some_and(|at| at > now) {
        return false;
    }
    *next = Some(now + ELSEWHERE);
    true
}

/// Of the due entries the scan is about to start (`startable`), those it leaves to other nodes;
/// each is also left alone for `ELSEWHERE`. Each node delivers what it accepted, and the queue's
/// head holds every node's entries: without this, a node started an attempt on each of the
/// others' entries once a second, which loaded it and lost a claim write, so each node added
/// work to every other (the read snapshots per send doubled from one node to two). The claims
/// are read in one snapshot; the entries nobody holds (a retry after a deferral, the mail of a
/// node that died) are then claimed in one batch (`claim_free`, under `SKIP LOCKED`, whole
/// destinations), and those another node took first are left to it, as are entries gone. None
/// on a store nobody shares, or while this node is the only live one (its attempts then claim
/// what they find free one at a time, unopposed).
pub(super) async fn others(app: &Deps, startable: &[(u64, String)]) -> Result<HashSet<String>> {
    if startable.is_empty() || !app.node.is_shared() {
        return Ok(HashSet::new());
    }
    let known = known_alone(app);
    if known == Some(true) {
        return Ok(HashSet::new());
    }
    let node = app.node.name().to_owned();
    let now = now_ms();
    let entries = startable.to_vec();
    let found = {
        let node = node.clone();
        app.store
            .read(move |r| -> crate::store::Result<Option<ClaimsOf>> {
                if known.is_none() && r.live_nodes(now)?.iter().all(|n| *n == node) {
                    return Ok(None);
                }
                r.claims_of(&entries, &node, now).map(Some)
            })
            .await?
    };
    let until = Instant::now() + ALONE;
    *lock(&app.queue.peers.alone) = Some((found.is_none(), until));
    let found = found.unwrap_or_default();
    let mut held: HashSet<String> = found.others.into_iter().chain(found.gone).collect();
    if !found.free.is_empty() {
        let margin = app.node.claim_margin();
        let free = found.free;
        let batch = free.clone();
        let mine: HashSet<String> = app
            .store
            .write_snapshot(move |w| w.claim_free(&batch, &node, now_ms(), margin))
            .await?
            .into_iter()
            .collect();
        crate::metrics::queue_claimed(mine.len());
        if !mine.is_empty() {
            tracing::info!(claimed = mine.len(), of = free.len(), "queued mail claimed in a batch");
        }
        held.extend(free.into_iter().map(|(_, id, _)| id).filter(|id| !mine.contains(id)));
    }
    let again = Instant::now() + ELSEWHERE;
    let mut elsewhere = lock(&app.queue.elsewhere);
    for id in &held {
        elsewhere.insert(id.clone(), again);
    }
    Ok(held)
}

/// The head a spooling scan works from, earliest first: up to `own` entries of this node's
/// spool and, when `wide_due`, up to `wide` entries of the whole queue's head; with the ids that
/// came from the spool. Spool entries whose message went are dropped from the spool here.
pub(super) async fn spooled_head(
    app: &Deps,
    own: usize,
    wide: usize,
) -> (crate::store::Result<Vec<(u64, String)>>, HashSet<String>) {
    let node = app.node.name().to_owned();
    let spooled = {
        let node = node.clone();
        app.store.read(move |r| r.spool(&node, own)).await
    };
    let spooled = match spooled {
        Ok(spooled) => spooled,
        Err(e) => return (Err(e), HashSet::new()),
    };
    if !spooled.gone.is_empty() {
        let gone = spooled.gone;
        if let Err(e) = app.store.write_snapshot(move |w| w.unspool(&node, &gone)).await {
            tracing::warn!(error = %e, "dropping gone entries of the spool failed");
        }
    }
    let ids: HashSet<String> = spooled.queued.iter().map(|(_, id)| id.clone()).collect();
    let mut head = spooled.queued;
    if wide_due(app) {
        match app.store.read(move |r| r.due(u64::MAX, wide)).await {
            Ok(found) => head.extend(found.into_iter().filter(|(_, id)| !ids.contains(id))),
            Err(e) => return (Err(e), ids),
        }
        head.sort();
    }
    (Ok(head), ids)
}

/// Claims a due message for this node; false when it is gone or another live node has it.
pub(super) async fn claim(app: &Deps, due: u64, id: &str) -> Result<bool> {
    let (node, owned) = (app.node.name().to_owned(), id.to_owned());
    let margin = app.node.claim_margin();
    let mine =
        app.store.write_snapshot(move |w| w.claim(due, &owned, &node, now_ms(), margin)).await?;
    if mine {
        crate::metrics::queue_claimed(1);
    } else {
        let again = std::time::Instant::now() + ELSEWHERE;
        lock(&app.queue.elsewhere).insert(id.to_owned(), again);
    }
    Ok(mine)
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Queue {
    /// Forgets what the last look at the nodes found: one joined, renewed or left.
    pub(super) fn peers_changed(&self) {
        *lock(&self.peers.alone) = None;
        *lock(&self.peers.wide) = None;
    }

    /// The messages other nodes claimed that the scan still leaves alone (forgetting the rest).
    pub(super) fn claimed_elsewhere(&self) -> HashSet<String> {
        let now = std::time::Instant::now();
        let mut elsewhere = lock(&self.elsewhere);
        elsewhere.retain(|_, until| *until > now);
        elsewhere.keys().cloned().collect()
    }
}
