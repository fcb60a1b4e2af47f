//! An SMTP listener (the MX, or submission with STARTTLS or implicit TLS): a global connection
//! cap (back-pressure: at the cap we stop accepting, once the longest-idle session has been
//! asked to make room), a per-IP cap answered with 421, the I/O
//! around a session (reads with timeouts, writes, the questions passed to the `Intake`), and the
//! TLS upgrade, in the middle of a session (STARTTLS) or before its first byte (implicit TLS).

use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use super::command::Policy;
use super::guard::{Guard, Limits};
use super::intake::Intake;
use super::session::{Action, Peer, Session};
use crate::config::Smtp;
use crate::listener::Waited;
use crate::shutdown::Shutdown;

/// What a listener serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub policy: Policy,
    /// TLS from the first byte (RFC 8314); otherwise STARTTLS when `tls` is given.
    pub implicit_tls: bool,
}

impl Endpoint {
    pub const MX: Endpoint = Endpoint { policy: Policy::Mx, implicit_tls: false };
    pub const SUBMISSION: Endpoint = Endpoint { policy: Policy::Submission, implicit_tls: false };
    pub const SUBMISSIONS: Endpoint = Endpoint { policy: Policy::Submission, implicit_tls: true };
}

/// Serves SMTP on `listener` until `shutdown`; `tls` enables STARTTLS, and is required for
/// implicit TLS (without it such a listener closes every connection).
pub async fn serve<I: Intake>(
    listener: TcpListener,
    endpoint: Endpoint,
    cfg: Smtp,
    tls: Option<TlsAcceptor>,
    mut shutdown: Shutdown,
    intake: Arc<I>,
) {
    let cfg = Arc::new(cfg);
    let sessions = crate::listener::Sessions::new(cfg.max_connections);
    let per_ip = Arc::new(crate::listener::PerIp::default());
    let budget = super::data::budget(cfg.max_inflight_bytes);
    // Per-address limits are the MX's: submission's clients have logged in.
    let limits = (endpoint.policy == Policy::Mx).then(|| Arc::new(Limits::new(&cfg)));
    let tidy = limits.clone().map(|limits| tokio::spawn(tidy_every_minute(limits)));
    while let Some((accepted, presence)) =
        crate::listener::next_shedding(&listener, &sessions, &mut shutdown).await
    {
        let crate::listener::Accepted { mut stream, peer, permit } = accepted;
        let (cfg, tls, per_ip, budget, intake, limits) = (
            cfg.clone(),
            tls.clone(),
            per_ip.clone(),
            budget.clone(),
            intake.clone(),
            limits.clone(),
        );
        tokio::spawn(async move {
            let ip = peer.ip();
            let Some(_slot) = per_ip.enter(ip, cfg.max_connections_per_ip) else {
                let _ =
                    stream.write_all(b"421 4.7.0 too many connections from your address\r\n").await;
                return;
            };
            crate::metrics::smtp_session();
            let peer = Peer { ip, tls_available: tls.is_some() && !endpoint.implicit_tls };
            let session = match endpoint.policy {
                Policy::Mx => Session::new(cfg.clone(), peer, budget),
                Policy::Submission => {
                    Session::submission(cfg.clone(), peer, budget, endpoint.implicit_tls)
                }
            };
            let guard = Guard {
                presence: Some(&presence),
                stress_timeout: cfg.stress_timeout,
                limits: limits.as_deref(),
            };
            let outcome = if endpoint.implicit_tls {
                implicit(stream, session, &cfg, tls, &*intake, &guard).await
            } else {
                connection(stream, session, &cfg, tls, &*intake, &guard).await
            };
            if let Err(e) = outcome {
                tracing::debug!(error = %e, %ip, "smtp session ended with an error");
            }
            drop(permit);
        });
    }
    if let Some(tidy) = tidy {
        tidy.abort();
    }
}

/// Forgets the buckets of clients that went quiet, so memory follows recent clients only.
async fn tidy_every_minute(limits: Arc<Limits>) {
    let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
    loop {
        every.tick().await;
        limits.tidy();
    }
}

async fn connection<I: Intake>(
    mut stream: TcpStream,
    mut session: Session,
    cfg: &Smtp,
    tls: Option<TlsAcceptor>,
    intake: &I,
    guard: &Guard<'_>,
) -> std::io::Result<()> {
    if drive(&mut stream, &mut session, intake, guard).await? == End::Closed {
        return Ok(());
    }
    let Some(mut secure) = handshake(tls, stream, &session, cfg, guard).await else {
        return Ok(());
    };
    session.secured();
    // STARTTLS is refused once TLS is active, so the session can only close now.
    drive(&mut secure, &mut session, intake, guard).await?;
    let _ = secure.shutdown().await;
    Ok(())
}

/// A connection that is TLS from its first byte: the handshake, then the session.
async fn implicit<I: Intake>(
    stream: TcpStream,
    mut session: Session,
    cfg: &Smtp,
    tls: Option<TlsAcceptor>,
    intake: &I,
    guard: &Guard<'_>,
) -> std::io::Result<()> {
    let Some(mut secure) = handshake(tls, stream, &session, cfg, guard).await else {
        return Ok(());
    };
    drive(&mut secure, &mut session, intake, guard).await?;
    let _ = secure.shutdown().await;
    Ok(())
}

/// The server side of a TLS handshake, within the command timeout (a wait for the client like
/// any read: shortened under pressure, and shed); `None` when there is no certificate or the
/// handshake fails.
async fn handshake(
    tls: Option<TlsAcceptor>,
    stream: TcpStream,
    session: &Session,
    cfg: &Smtp,
    guard: &Guard<'_>,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let accept = tls?.accept(stream);
    let ip = session.peer().ip;
    let secure = match guard.wait(accept, cfg.command_timeout).await {
        Waited::Done(Ok(secure)) => Some(secure),
        Waited::Done(Err(e)) => {
            tracing::debug!(error = %e, %ip, "TLS handshake failed");
            None
        }
        Waited::TimedOut | Waited::Shed => None,
    };
    crate::metrics::tls_handshake(secure.is_some());
    secure
}

/// How `drive` returned.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum End {
    Closed,
    /// The client asked for TLS and was told to go ahead.
    StartTls,
}

/// Runs `session` over `stream` until it closes or asks for TLS.
pub(super) async fn drive<S, I>(
    stream: &mut S,
    session: &mut Session,
    intake: &I,
    guard: &Guard<'_>,
) -> std::io::Result<End>
where
    S: AsyncRead + AsyncWrite + Unpin,
    I: Intake,
{
    // Read into spare capacity: zeroing 16 KiB for every connection cost more than its
    // commands, with one message per connection.
    let mut input = Vec::with_capacity(16 * 1024);
    loop {
        match session.next_action() {
            Action::Write(bytes) => {
                stream.write_all(bytes).await?;
                stream.flush().await?;
            }
            Action::Read(limit) => {
                input.clear();
                match guard.wait(stream.read_buf(&mut input), limit).await {
                    Waited::Done(Ok(0) | Err(_)) => return Ok(End::Closed),
                    Waited::Done(Ok(_)) => session.feed(&input),
                    Waited::TimedOut => session.timed_out(),
                    Waited::Shed => session.shed(),
                }
            }
            Action::Pause(pause) => tokio::time::sleep(pause).await,
            Action::CheckRecipient(address) => {
                let answer = guard.check_recipient(session, intake, &address).await;
                session.recipient_checked(answer);
            }
            Action::LogIn { user, password } => {
                let answer = intake.log_in(session.peer().ip, &user, &password).await;
                session.logged_in(answer);
            }
            Action::Deliver(envelope, message) => {
                let reply = guard.deliver(intake, envelope, message).await;
                session.delivered(&reply);
            }
            Action::StartTls => return Ok(End::StartTls),
            Action::Close => return Ok(End::Closed),
        }
    }
}
