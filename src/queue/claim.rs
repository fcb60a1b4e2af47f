//! Claims on queued messages on a shared store: the node that claims a due message delivers
//! it; one that finds it claimed by a live node leaves it alone for a while.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{Deps, Queue, Result};
use crate::ids::now_ms;

pub(super) const LEASE_LOST: &str = "this node's claim on the message lapsed";

/// How long a message another node claimed is left alone before the scan looks at it again.
const ELSEWHERE: Duration = Duration::from_secs(1);

/// How long a look at the nodes' heartbeats that found this node alone holds. A node that joins
/// is told at once (`Topic::Nodes`, `peers_changed`); this bounds the wait without that.
const ALONE: Duration = Duration::from_secs(5);

/// What the last look at the nodes found: whether this node was the only live one, and until
/// when that answer holds.
#[derive(Default)]
pub(super) struct Peers(Mutex<Option<(bool, Instant)>>);

/// Of the due entries the scan is about to start (`ids`), those another live node claimed,
/// read in one snapshot; each is also left alone for `ELSEWHERE`. Each node delivers what it
/// accepted, and the queue's head holds every node's entries: without this, a node started an
/// attempt on each of the others' entries once a second, which loaded it and lost a claim write,
/// so each node added work to every other (the read snapshots per send doubled from one node to
/// two). None on a store nobody shares, or while this node is the only live one.
pub(super) async fn others(app: &Deps, ids: Vec<String>) -> Result<HashSet<String>> {
    if ids.is_empty() || !app.node.is_shared() {
        return Ok(HashSet::new());
    }
    let known = *lock(&app.queue.peers.0);
    let known = known.filter(|(_, until)| *until > Instant::now()).map(|(alone, _)| alone);
    if known == Some(true) {
        return Ok(HashSet::new());
    }
    let node = app.node.name().to_owned();
    let now = now_ms();
    let held = app
        .store
        .read(move |r| -> crate::store::Result<Option<Vec<String>>> {
            if known.is_none() && r.live_nodes(now)?.iter().all(|n| *n == node) {
                return Ok(None);
            }
            r.claimed_by_others(&ids, &node, now).map(Some)
        })
        .await?;
    let until = Instant::now() + ALONE;
    *lock(&app.queue.peers.0) = Some((held.is_none(), until));
    let held: HashSet<String> = held.unwrap_or_default().into_iter().collect();
    let again = Instant::now() + ELSEWHERE;
    let mut elsewhere = lock(&app.queue.elsewhere);
    for id in &held {
        elsewhere.insert(id.clone(), again);
    }
    Ok(held)
}

/// Claims a due message for this node; false when it is gone or another live node has it.
pub(super) async fn claim(app: &Deps, due: u64, id: &str) -> Result<bool> {
    let (node, owned) = (app.node.name().to_owned(), id.to_owned());
    let margin = app.node.claim_margin();
    let mine =
        app.store.write_snapshot(move |w| w.claim(due, &owned, &node, now_ms(), margin)).await?;
    if !mine {
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
        *lock(&self.peers.0) = None;
    }

    /// The messages other nodes claimed that the scan still leaves alone (forgetting the rest).
    pub(super) fn claimed_elsewhere(&self) -> HashSet<String> {
        let now = std::time::Instant::now();
        let mut elsewhere = lock(&self.elsewhere);
        elsewhere.retain(|_, until| *until > now);
        elsewhere.keys().cloned().collect()
    }
}
