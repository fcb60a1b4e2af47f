//! Connections whose read snapshot is over but not yet rolled back. Ending a snapshot costs an
//! exchange of its own (a ROLLBACK) for nothing the reader needs, and most reads are one
//! statement: so the connection is kept here inside its open snapshot, and the next transaction
//! to take it sends the ROLLBACK ahead of its BEGIN, in the exchange of its first statement.
//! One left here longer than `LINGER` is rolled back and returned to the pool, so an idle node
//! holds no snapshot (which would keep PostgreSQL's vacuum from reclaiming old rows).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use deadpool_postgres::Object;
use tokio::sync::Notify;

/// How long a connection may wait here inside its finished snapshot.
const LINGER: Duration = Duration::from_millis(50);

/// At most this many are kept; a reader finding it full rolls back on its own.
const MOST: usize = 64;

#[derive(Default)]
pub(super) struct Idle {
    held: Mutex<Vec<(Object, Instant)>>,
    kept: Notify,
}

impl Idle {
    fn held(&self) -> std::sync::MutexGuard<'_, Vec<(Object, Instant)>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The most recently kept connection still open, if any: its snapshot is to be rolled back
    /// before its next BEGIN.
    pub fn take(&self) -> Option<Object> {
        let mut held = self.held();
        while let Some((client, _)) = held.pop() {
            if !client.is_closed() {
                return Some(client);
            }
            drop(Object::take(client));
        }
        None
    }

    /// Keeps `client` (inside a finished read snapshot) for the next transaction; hands it back
    /// when there is no room.
    pub fn keep(&self, client: Object) -> Option<Object> {
        let mut held = self.held();
        if held.len() >= MOST {
            return Some(client);
        }
        held.push((client, Instant::now()));
        drop(held);
        self.kept.notify_one();
        None
    }

    /// Those kept longer than `LINGER`, oldest first.
    fn stale(&self) -> Vec<Object> {
        let mut held = self.held();
        let cut = held.iter().take_while(|(_, at)| at.elapsed() >= LINGER).count();
        held.drain(..cut).map(|(client, _)| client).collect()
    }

    fn is_empty(&self) -> bool {
        self.held().is_empty()
    }

    /// Rolls back and returns to the pool what waited too long, for as long as the backend's
    /// runtime runs.
    pub async fn sweep(self: std::sync::Arc<Self>) {
        loop {
            if self.is_empty() {
                self.kept.notified().await;
            }
            tokio::time::sleep(LINGER).await;
            for client in self.stale() {
                end(client).await;
            }
        }
    }
}

/// Rolls back what `client` has open; a connection whose state is then unknown is closed
/// rather than returned to the pool.
pub(super) async fn end(client: Object) {
    crate::metrics::store_round_trip();
    if client.batch_execute("ROLLBACK").await.is_err() {
        drop(Object::take(client));
    }
}
