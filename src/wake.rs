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
