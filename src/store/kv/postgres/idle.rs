//! Connections whose read snapshot is over but not yet rolled back. Ending a snapshot costs an
//! exchange of its own (a ROLLBACK) for nothing the reader needs, and most reads are one
//! statement: so the connection is kept here inside its open snapshot, and the next transaction
//! to take it sends the ROLLBACK ahead of its BEGIN, in the exchange of its first statement.
//! One left here longer than `LINGER` is rolled back and returned to the pool, so an idle node
//! holds no snapshot (which would keep PostgreSQL's vacuum from reclaiming old rows).
//!
//! Connections whose transaction must end before anyone else may use them (an abandoned write)
//! are rolled back here too, by the same thread, so that the caller goes on at once.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::pool::Pooled;

/// How long a connection may wait here inside its finished snapshot.
const LINGER: Duration = Duration::from_millis(50);

/// At most this many are kept; a reader finding it full rolls back on its own.
const MOST: usize = 64;

#[derive(Default)]
pub(super) struct Idle {
    held: Mutex<Held>,
    kept: Condvar,
}

#[derive(Default)]
struct Held {
    /// Inside a finished read snapshot, oldest first.
    reads: Vec<(Pooled, Instant)>,
    /// To be rolled back now.
    ending: Vec<Pooled>,
}

impl Idle {
    fn held(&self) -> MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The most recently kept connection still open, if any: its snapshot is to be rolled back
    /// before its next BEGIN.
    pub fn take(&self) -> Option<Pooled> {
        loop {
            // Checked outside the lock: `alive` reads the connection's socket.
            let client = self.held().reads.pop()?.0;
            if client.alive() {
                return Some(client);
            }
            client.discard();
        }
    }

    /// Keeps `client` (inside a finished read snapshot) for the next transaction; when there is
    /// no room, it is rolled back by the sweeping thread.
    pub fn keep(&self, client: Pooled) {
        let mut held = self.held();
        let first = held.reads.is_empty();
        if held.reads.len() >= MOST {
            held.ending.push(client);
        } else {
            held.reads.push((client, Instant::now()));
        }
        drop(held);
        // The sweeper sleeps until the oldest is due, so only the first one kept wakes it: a
        // wake-up per read would cost a thread switch each.
        if first {
            self.kept.notify_one();
        }
    }

    /// Rolls `client` back on the sweeping thread, then returns it to the pool.
    pub fn retire(&self, client: Pooled) {
        self.held().ending.push(client);
        self.kept.notify_one();
    }

    /// Starts the thread that rolls back what waited too long or was retired; it ends once the
    /// backend is gone.
    pub fn start(self: &Arc<Self>) -> std::io::Result<()> {
        let idle = Arc::downgrade(self);
        std::thread::Builder::new().name("store-pg-idle".into()).spawn(move || sweep(idle))?;
        Ok(())
    }
}

/// The sweeping thread: every `LINGER` at most, what is due is rolled back.
fn sweep(idle: Weak<Idle>) {
    while let Some(idle) = idle.upgrade() {
        let due: Vec<Pooled> = {
            let mut held = idle.held();
            if held.reads.is_empty() && held.ending.is_empty() {
                // Wakes now and then to notice the backend is gone.
                held =
                    idle.kept.wait_timeout(held, LINGER * 20).unwrap_or_else(|p| p.into_inner()).0;
            }
            let oldest = held.reads.first().map(|(_, at)| at.elapsed());
            if held.ending.is_empty() && oldest.is_some_and(|age| age < LINGER) {
                let rest = LINGER - oldest.unwrap_or_default();
                held = idle.kept.wait_timeout(held, rest).unwrap_or_else(|p| p.into_inner()).0;
            }
            let cut = held.reads.iter().take_while(|(_, at)| at.elapsed() >= LINGER).count();
            let mut due: Vec<Pooled> = held.reads.drain(..cut).map(|(client, _)| client).collect();
            due.append(&mut held.ending);
            due
        };
        drop(idle);
        due.into_iter().for_each(end);
    }
}

/// Rolls back what `client` has open; a connection whose state is then unknown is closed
/// rather than returned to the pool.
pub(super) fn end(client: Pooled) {
    crate::metrics::store_round_trip();
    if client.wait(client.batch_execute("ROLLBACK")).is_err() {
        client.discard();
    }
}
