//! A wake-up handle for an engine's loop: the engine sleeps until its next due time or until
//! someone with a clone of its handle says there is new work. Cheap to clone and hand out.

use std::sync::Arc;

use tokio::sync::Notify;

#[derive(Clone, Default)]
pub struct Wake(Arc<Notify>);

impl Wake {
    /// Asks the engine to look now; a wake-up while it is busy is kept for its next wait.
    pub fn wake(&self) {
        self.0.notify_one();
    }

    /// Resolves at the next wake-up.
    pub async fn notified(&self) {
        self.0.notified().await;
    }
}

/// A wake-up for every waiter at once (sessions watching the same store), rather than one engine.
/// A wake-up while nobody waits is lost: waiters look at the state again on a timer as well.
#[derive(Clone, Default)]
pub struct Broadcast(Arc<Notify>);

impl Broadcast {
    pub fn wake_all(&self) {
        self.0.notify_waiters();
    }

    /// Resolves at the next `wake_all` after this call, polled or not yet: a waiter that takes
    /// it before looking at the state misses no wake-up that comes while it looks.
    pub fn notified(&self) -> tokio::sync::futures::Notified<'_> {
        self.0.notified()
    }
}
