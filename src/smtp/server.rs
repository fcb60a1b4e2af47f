//! An SMTP listener (the MX, or submission with STARTTLS or implicit TLS): a global connection
//! cap (back-pressure: at the cap we stop accepting), a per-IP cap answered with 421, the I/O
//! around a session (reads with timeouts, writes, the questions passed to the `Intake`), and the
//! TLS upgrade, in the middle of a session (STARTTLS) or before its first byte (implicit TLS).

use std::net::IpAddr;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use super::command::Policy;
use super::data::Budget;
use super::intake::Intake;
use super::session::{Action, Peer, Session};
use crate::config::Smtp;
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
    let limit = Arc::new(Semaphore::new(cfg.max_connections));
    let per_ip = Arc::new(crate::listener::PerIp::default());
    let budget = Budget::new(cfg.max_inflight_bytes);
    while let Some(crate::listener::Accepted { mut stream, peer, permit }) =
        crate::listener::next(&listener, &limit, &mut shutdown).await
    {
        let (cfg, tls, per_ip, budget, intake) =
            (cfg.clone(), tls.clone(), per_ip.clone(), budget.clone(), intake.clone());
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
            let outcome = if endpoint.implicit_tls {
                implicit(stream, ip, session, &cfg, tls, &*intake).await
            } else {
                connection(stream, ip, session, &cfg, tls, &*intake).await
            };
            if let Err(e) = outcome {
                tracing::debug!(error = %e, %ip, "smtp session ended with an error");
            }
            drop(permit);
        });
    }
}

async fn connection<I: Intake>(
    mut stream: TcpStream,
    ip: IpAddr,
    mut session: Session,
    cfg: &Smtp,
    tls: Option<TlsAcceptor>,
    intake: &I,
) -> std::io::Result<()> {
    if drive(&mut stream, &mut session, intake).await? == End::Closed {
        return Ok(());
    }
    let Some(mut secure) = handshake(tls, stream, ip, cfg).await else { return Ok(()) };
    session.secured();
    // STARTTLS is refused once TLS is active, so the session can only close now.
    drive(&mut secure, &mut session, intake).await?;
    let _ = secure.shutdown().await;
    Ok(())
}

/// A connection that is TLS from its first byte: the handshake, then the session.
async fn implicit<I: Intake>(
    stream: TcpStream,
    ip: IpAddr,
    mut session: Session,
    cfg: &Smtp,
    tls: Option<TlsAcceptor>,
    intake: &I,
) -> std::io::Result<()> {
    let Some(mut secure) = handshake(tls, stream, ip, cfg).await else { return Ok(()) };
    drive(&mut secure, &mut session, intake).await?;
    let _ = secure.shutdown().await;
    Ok(())
}

/// The server side of a TLS handshake, within the command timeout; `None` when there is no
/// certificate or the handshake fails.
async fn handshake(
    tls: Option<TlsAcceptor>,
    stream: TcpStream,
    ip: IpAddr,
    cfg: &Smtp,
) -> Option<tokio_rustls::server::TlsStream<TcpStream>> {
    let accept = tls?.accept(stream);
    let secure = match tokio::time::timeout(cfg.command_timeout, accept).await {
        Ok(Ok(secure)) => Some(secure),
        Ok(Err(e)) => {
            tracing::debug!(error = %e, %ip, "TLS handshake failed");
            None
        }
        Err(_) => None,
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
                match tokio::time::timeout(limit, stream.read_buf(&mut input)).await {
                    Ok(Ok(0)) | Ok(Err(_)) => return Ok(End::Closed),
                    Ok(Ok(_)) => session.feed(&input),
                    Err(_) => session.timed_out(),
                }
            }
            Action::Pause(pause) => tokio::time::sleep(pause).await,
            Action::CheckRecipient(address) => {
                let login = session.login().map(str::to_owned);
                let answer = intake.check_recipient(login.as_deref(), &address).await;
                session.recipient_checked(answer);
            }
            Action::LogIn { user, password } => {
                let answer = intake.log_in(session.peer().ip, &user, &password).await;
                session.logged_in(answer);
            }
            Action::Deliver(envelope, message) => {
                let reply = intake.take_message(envelope, message).await;
                session.delivered(&reply);
            }
            Action::StartTls => return Ok(End::StartTls),
            Action::Close => return Ok(End::Closed),
        }
    }
}
