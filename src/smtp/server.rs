//! The inbound listener: a global connection cap (back-pressure: at the cap we stop accepting),
//! a per-IP cap answered with 421, the I/O around a session (reads with timeouts, writes, the
//! questions passed to the `Intake`), and the STARTTLS upgrade in the middle of a session.

use std::net::IpAddr;
use std::sync::Arc;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use super::data::Budget;
use super::intake::Intake;
use super::session::{Action, Peer, Session};
use crate::config::Smtp;
use crate::shutdown::Shutdown;

/// Serves SMTP on `listener` until `shutdown`; `tls` enables STARTTLS.
pub async fn serve<I: Intake>(
    listener: TcpListener,
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
            let peer = Peer { ip, tls_available: tls.is_some() };
            let session = Session::new(cfg.clone(), peer, budget);
            if let Err(e) = connection(stream, ip, session, &cfg, tls, &*intake).await {
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
    let Some(acceptor) = tls else { return Ok(()) };
    let handshake = tokio::time::timeout(cfg.command_timeout, acceptor.accept(stream));
    let mut secure = match handshake.await {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            crate::metrics::tls_handshake(false);
            tracing::debug!(error = %e, %ip, "TLS handshake failed");
            return Ok(());
        }
        Err(_) => {
            crate::metrics::tls_handshake(false);
            return Ok(());
        }
    };
    crate::metrics::tls_handshake(true);
    session.secured();
    // STARTTLS is refused once TLS is active, so the session can only close now.
    drive(&mut secure, &mut session, intake).await?;
    let _ = secure.shutdown().await;
    Ok(())
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
    let mut input = vec![0u8; 16 * 1024];
    loop {
        match session.next_action() {
            Action::Write(bytes) => {
                stream.write_all(bytes).await?;
                stream.flush().await?;
            }
            Action::Read(limit) => match tokio::time::timeout(limit, stream.read(&mut input)).await
            {
                Ok(Ok(0)) | Ok(Err(_)) => return Ok(End::Closed),
                Ok(Ok(n)) => session.feed(&input[..n]),
                Err(_) => session.timed_out(),
            },
            Action::Pause(pause) => tokio::time::sleep(pause).await,
            Action::CheckRecipient(address) => {
                let answer = intake.check_recipient(&address).await;
                session.recipient_checked(answer);
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
