//! Claims on queued messages on a shared store: the node that claims a due message delivers
//! it; one that finds it claimed by a live node leaves it alone for a while.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use super::{Deps, Queue, Result};
use crate::ids::now_ms;

pub(super) const LEASE_LOST: &str = "this node's claim on the message lapsed";

/// How long a message another node claimed is left alone before the scan looks at it again.
const ELSEWHERE: Duration = Duration::from_secs(1);

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
    /// The messages other nodes claimed that the scan still leaves alone (forgetting the rest).
    pub(super) fn claimed_elsewhere(&self) -> HashSet<String> {
        let now = std::time::Instant::now();
        let mut elsewhere = lock(&self.elsewhere);
        elsewhere.retain(|_, until| *until > now);
        elsewhere.keys().cloned().collect()
    }
}
