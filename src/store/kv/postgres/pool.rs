//! The node's connections: up to `most` open, each lent to one transaction at a time and
//! handed back when its `Pooled` is dropped. Synchronous, as the store's transactions are: a
//! caller finding every connection lent waits on a condition variable, for at most `WAIT`.

use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::super::super::error::{Error, Result};
use super::conn::{Conn, Connector};
use super::drive::offload;

/// How long a caller waits for a connection when all are lent.
const WAIT: Duration = Duration::from_secs(30);

pub(super) struct Pool {
    connector: Connector,
    most: usize,
    slots: Mutex<Slots>,
    freed: Condvar,
}

struct Slots {
    free: Vec<Arc<Conn>>,
    /// Connections open or being opened, lent or free.
    open: usize,
}

impl Pool {
    pub fn new(connector: Connector, most: usize) -> Arc<Pool> {
        let slots = Slots { free: Vec::new(), open: 0 }.into();
        Arc::new(Pool { connector, most: most.max(1), slots, freed: Condvar::new() })
    }

    fn slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A connection: the most recently returned one still open, or a new one while fewer than
    /// `most` are open.
    pub fn get(self: &Arc<Self>) -> Result<Pooled> {
        let deadline = Instant::now() + WAIT;
        loop {
            let mut slots = self.slots();
            if let Some(conn) = slots.free.pop() {
                drop(slots);
                // One read of its socket, outside the lock every lender shares.
                if conn.alive() {
                    return Ok(self.lend(conn));
                }
                self.closed();
                continue;
            }
            if slots.open < self.most {
                slots.open += 1;
                drop(slots);
                return match offload(|| self.connector.open()) {
                    Ok(conn) => Ok(self.lend(conn.into())),
                    Err(e) => {
                        self.closed();
                        Err(e)
                    }
                };
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                let why =
                    format!("all {} PostgreSQL connections stayed busy for {WAIT:?}", self.most);
                return Err(Error::Unavailable(why));
            }
            drop(offload(|| {
                self.freed.wait_timeout(slots, left).unwrap_or_else(|p| p.into_inner())
            }));
        }
    }

    fn lend(self: &Arc<Self>, conn: Arc<Conn>) -> Pooled {
        Pooled { conn, pool: self.clone(), discarded: false }
    }

    /// One connection fewer is open.
    fn closed(&self) {
        self.slots().open -= 1;
        self.freed.notify_one();
    }

    fn give_back(&self, conn: Arc<Conn>) {
        let mut slots = self.slots();
        if conn.is_closed() {
            slots.open -= 1;
        } else {
            slots.free.push(conn);
        }
        drop(slots);
        self.freed.notify_one();
    }
}

/// A connection lent by the pool; dropping it gives it back.
pub(super) struct Pooled {
    conn: Arc<Conn>,
    pool: Arc<Pool>,
    /// Closed instead of given back (`discard`).
    discarded: bool,
}

impl std::ops::Deref for Pooled {
    type Target = Conn;

    fn deref(&self) -> &Conn {
        &self.conn
    }
}

impl Pooled {
    /// Closes the connection instead of giving it back: its state is unknown.
    pub fn discard(mut self) {
        self.discarded = true;
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        if self.discarded {
            self.pool.closed();
        } else {
            self.pool.give_back(self.conn.clone());
        }
    }
}
