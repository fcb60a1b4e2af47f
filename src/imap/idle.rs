//! IDLE (RFC 2177): the client waits and the server tells it as soon as its folder changes.
//! The session waits on its folder's watch (`watch.rs`: one task looks at the folders sessions
//! idle in, and wakes the sessions of those that changed); its own timer only backs that up.

use std::time::Duration;

use imap_next::server::Event;
use imap_types::core::Tag;
use imap_types::response::CommandContinuationRequest;

use super::conn::{Conn, ConnError};
use super::reply::{bad, ok};
use super::session::Session;

/// A session's own look, should its folder's watch miss a change.
const FALLBACK: Duration = Duration::from_secs(30);

impl Session {
    /// Serves one IDLE command until DONE, a timeout or a lost connection. A method of the
    /// session (as the other commands are), so that the session names no module of its
    /// commands and nothing here names the session's loop.
    pub(super) async fn idle(
        &mut self,
        conn: &mut Conn,
        tag: Tag<'static>,
    ) -> Result<(), ConnError> {
        let session = self;
        let Some(view) = session.view.as_ref().filter(|_| session.user.is_some()) else {
            let _ = conn.flow().idle_reject(bad(&tag, "select a folder first"));
            return Ok(());
        };
        let go_on =
            CommandContinuationRequest::basic(None, "idling").unwrap_or_else(|_| unreachable!()); // ok: constant text
        let _ = conn.flow().idle_accept(go_on);
        conn.idling(true);
        let deps = session.deps.clone();
        let watching =
            deps.watch.watch(&deps.store, &view.mailbox, view.folder, view.state.changes);
        // Taken before each look at the folder, so a change during the look wakes the next wait.
        let mut changed = std::pin::pin!(watching.changed());
        Box::pin(session.announce(conn)).await;
        conn.flush().await?;
        let limit = deps.config.idle_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Err(ConnError::TimedOut);
            }
            tokio::select! {
                event = conn.next(left) => {
                    if let Event::IdleDoneReceived = event? {
                        conn.idling(false);
                        conn.enqueue(ok(&tag, "IDLE terminated"));
                        return Ok(());
                    }
                }
                _ = changed.as_mut() => {}
                _ = tokio::time::sleep(FALLBACK) => {}
            }
            changed.set(watching.changed());
            // Boxed, as the session's commands are: a sync's state is needed only during it.
            Box::pin(session.announce(conn)).await;
            conn.flush().await?;
        }
    }
}
