//! IMAP for mail clients (IMAP4rev2, RFC 9051, and IMAP4rev1 clients alike), over the same
//! store the API reads: INBOX is received mail, Sent what was sent through the API or
//! submission, plus Drafts and Trash. The protocol's grammar is imap-codec's, driven by
//! imap-next's server flow (literals, AUTHENTICATE, IDLE); this module holds the state and the
//! commands.
//!
//! - `conn`       the bytes around the flow: plain or TLS, timeouts, BAD for garbage
//! - `gate`       what the flow may take in: command sizes before and after login, the budget
//! - `session`    the session's state, the command loop, any-state commands, logging in
//! - `commands`   the commands of a logged-in session, to their handlers
//! - `folders`    LIST and LSUB, CREATE, DELETE, RENAME, SUBSCRIBE: the folder list
//! - `mailboxes`  SELECT, EXAMINE, STATUS (with SIZE, DELETED, DELETED-STORAGE), NAMESPACE
//! - `quota`      GETQUOTA, GETQUOTAROOT, SETQUOTA (refused)
//! - `view`       the selected folder: UIDs and sequence numbers, what changed
//! - `fetch`      FETCH, chunk by chunk
//! - `section`    BODY[section] bytes
//! - `binary`     BINARY[section] bytes, a part's encoding undone; literal8 APPENDs made storable
//! - `structure`  BODYSTRUCTURE
//! - `envelope`   ENVELOPE: the fields as written, address lists with their groups
//! - `search`     SEARCH
//! - `sort`       SORT and SORT=DISPLAY, over what a search finds
//! - `thread`     THREAD=ORDEREDSUBJECT and THREAD=REFERENCES
//! - `sortable`   the header fields SORT and THREAD order and link by
//! - `subject`    the base subject (RFC 5256 2.1)
//! - `update`     STORE, EXPUNGE, COPY, MOVE, APPEND
//! - `resync`     ENABLE; CONDSTORE and QRESYNC: SELECT catching up, CHANGEDSINCE, UNCHANGEDSINCE
//! - `idle`       IDLE
//! - `watch`      IDLE's wake-ups: one look per changed folder, not one per idling session
//! - `message`    the bytes of a stored message, and the email an APPEND makes
//! - `names`      folder names across IMAP: modified UTF-7 or UTF-8, the folder a name means
//! - `utf7`       modified UTF-7 (RFC 3501 5.1.3), from `mailmove`
//! - `condstore`  mod-sequences and UID sets as CONDSTORE and QRESYNC responses carry them
//! - `reply`      tagged completions, flags
//! - `reader`     the command reader alone, for the fuzz target

mod binary;
mod commands;
mod condstore;
pub mod conn;
mod envelope;
mod fetch;
mod folders;
mod gate;
mod idle;
mod mailboxes;
mod message;
mod names;
mod quota;
pub mod reader;
mod reply;
mod resync;
mod search;
mod section;
mod session;
mod sort;
mod sortable;
mod structure;
mod subject;
mod thread;
mod update;
// The codec lives with the moving of mail (Maildir++ names use it too), below IMAP.
use crate::mailmove::utf7;
mod view;
mod watch;

use std::sync::Arc;

use imap_types::response::Greeting;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::credentials::Logins;
use crate::listener::{Presence, Waited};
use crate::shutdown::Shutdown;
use crate::store::Store;
use conn::{Conn, Stream};
pub use gate::{Budget, budget};
use session::{Next, Session};

/// What sessions use.
pub struct Deps {
    pub store: Arc<Store>,
    pub logins: Arc<Logins>,
    pub config: crate::config::Imap,
    /// Literals being received, over all sessions (`imap.max_inflight_bytes`).
    pub inflight: Budget,
    /// `mailbox.quota_bytes`: APPEND into a mailbox past its quota is refused.
    pub quota_bytes: u64,
    /// The junk classifier, trained by moves into and out of Junk.
    pub junk: crate::junk::Models,
    /// The folders sessions idle in, looked at once for all of them.
    pub watch: watch::Watch,
}

/// Serves IMAP on `listener` until `shutdown`: with STARTTLS, or TLS from the first byte when
/// `implicit_tls` (without a certificate such a listener closes every connection).
pub async fn serve(
    listener: TcpListener,
    implicit_tls: bool,
    deps: Arc<Deps>,
    tls: Option<TlsAcceptor>,
    mut shutdown: Shutdown,
) {
    let sessions = crate::listener::Sessions::new(deps.config.max_connections);
    let per_ip = Arc::new(crate::listener::PerIp::default());
    while let Some((accepted, presence)) =
        crate::listener::next_shedding(&listener, &sessions, &mut shutdown).await
    {
        let crate::listener::Accepted { mut stream, peer, permit } = accepted;
        let (deps, tls, per_ip) = (deps.clone(), tls.clone(), per_ip.clone());
        tokio::spawn(async move {
            let ip = peer.ip();
            let Some(_slot) = per_ip.enter(ip, deps.config.max_connections_per_ip) else {
                let _ = stream.write_all(b"* BYE too many connections from your address\r\n").await;
                return;
            };
            let outcome = connection(stream, ip, implicit_tls, deps, tls, Arc::new(presence)).await;
            if let Err(e) = outcome {
                tracing::debug!(error = ?e, %ip, "imap session ended");
            }
            drop(permit);
        });
    }
}

async fn connection(
    stream: TcpStream,
    ip: std::net::IpAddr,
    implicit_tls: bool,
    deps: Arc<Deps>,
    tls: Option<TlsAcceptor>,
    presence: Arc<Presence>,
) -> Result<(), conn::ConnError> {
    let (timeout, stressed) = (deps.config.login_timeout, deps.config.stress_timeout);
    let greeting = Greeting::ok(None, "edgemail IMAP ready").unwrap_or_else(|_| unreachable!()); // ok: constant text
    let budget = deps.inflight.clone();
    let wait = |accept| presence.wait(accept, timeout, stressed);
    if implicit_tls {
        let Some(secure) = handshake(tls, stream, wait).await else { return Ok(()) };
        let mut session = Session::new(deps, ip, true, false);
        let mut conn = Conn::new(Stream::Tls(Box::new(secure)), greeting, budget);
        conn.watch(presence.clone(), stressed);
        session.run(&mut conn).await?;
        return Ok(());
    }
    let mut session = Session::new(deps, ip, false, tls.is_some());
    let mut conn = Conn::new(Stream::Plain(stream), greeting, budget.clone());
    conn.watch(presence.clone(), stressed);
    if session.run(&mut conn).await? != Next::StartTls {
        return Ok(());
    }
    // Bytes the client sent after STARTTLS and before the handshake are dropped with the flow:
    // nothing sent in the clear may count as said over TLS.
    let Stream::Plain(stream) = conn.io else { return Ok(()) };
    let Some(secure) = handshake(tls, stream, wait).await else { return Ok(()) };
    session.tls = true;
    let mut conn = Conn::resumed(Stream::Tls(Box::new(secure)), budget);
    conn.watch(presence.clone(), stressed);
    session.run(&mut conn).await?;
    Ok(())
}

/// The server side of a TLS handshake, waited for as `wait` waits for a client (within the
/// login timeout, shorter under pressure, and shed to make room).
async fn handshake<W, F>(
    tls: Option<TlsAcceptor>,
    stream: TcpStream,
    wait: W,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>>
where
    W: FnOnce(tokio_rustls::Accept<TcpStream>) -> F,
    F: std::future::Future<
            Output = Waited<std::io::Result<tokio_rustls::server::TlsStream<TcpStream>>>,
        >,
{
    let accept = tls?.accept(stream);
    let secure = match wait(accept).await {
        Waited::Done(Ok(secure)) => Some(secure),
        _ => None,
    };
    crate::metrics::tls_handshake(secure.is_some());
    secure
}
