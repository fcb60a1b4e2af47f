//! IDLE (RFC 2177): the client waits and the server tells it as soon as its folder changes. A
//! write that changes a folder wakes every idling session (`Store::mail_changes`); a timer
//! looks again every second in case a wake-up fell between two waits.

use std::time::Duration;

use imap_next::server::Event;
use imap_types::core::Tag;
use imap_types::response::CommandContinuationRequest;

use super::conn::{Conn, ConnError};
use super::reply::{bad, ok};
use super::session::Session;

const RECHECK: Duration = Duration::from_secs(1);

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
        if session.user.is_none() || session.view.is_none() {
            let _ = conn.flow().idle_reject(bad(&tag, "select a folder first"));
            return Ok(());
        }
        let go_on =
            CommandContinuationRequest::basic(None, "idling").unwrap_or_else(|_| unreachable!()); // ok: constant text
        let _ = conn.flow().idle_accept(go_on);
        session.announce(conn).await;
        conn.flush().await?;
        let changes = session.deps.store.mail_changes();
        let limit = session.deps.config.idle_timeout;
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            if left.is_zero() {
                return Err(ConnError::TimedOut);
            }
            tokio::select! {
                event = conn.next(left) => {
                    if let Event::IdleDoneReceived = event? {
                        conn.enqueue(ok(&tag, "IDLE terminated"));
                        return Ok(());
                    }
                }
                _ = changes.notified() => {}
                _ = tokio::time::sleep(RECHECK) => {}
            }
            session.announce(conn).await;
            conn.flush().await?;
        }
    }
}
