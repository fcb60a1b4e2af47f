//! The inbound listener: a global connection cap (back-pressure: at the cap we stop accepting),
//! a per-IP cap answered with 421, and the STARTTLS upgrade between two runs of a session.

use std::net::IpAddr;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use super::session::{self, End, Peer};
use crate::shutdown::Shutdown;
use crate::state::App;

pub async fn serve(
    listener: TcpListener,
    app: App,
    tls: Option<TlsAcceptor>,
    mut shutdown: Shutdown,
) {
    let limit = Arc::new(Semaphore::new(app.config.smtp.max_connections));
    let per_ip = Arc::new(crate::listener::PerIp::default());
    let budget = super::data::Budget::new(app.config.smtp.max_inflight_bytes);
    while let Some(crate::listener::Accepted { mut stream, peer, permit }) =
        crate::listener::next(&listener, &limit, &mut shutdown).await
    {
        let (app, tls, per_ip, budget) = (app.clone(), tls.clone(), per_ip.clone(), budget.clone());
        tokio::spawn(async move {
            let ip = peer.ip();
            let Some(_slot) = per_ip.enter(ip, app.config.smtp.max_connections_per_ip) else {
                let _ =
                    stream.write_all(b"421 4.7.0 too many connections from your address\r\n").await;
                return;
            };
            if let Err(e) = connection(stream, ip, &app, tls, &budget).await {
                tracing::debug!(error = %e, %ip, "smtp session ended with an error");
            }
            drop(permit);
        });
    }
}

async fn connection(
    mut stream: TcpStream,
    ip: IpAddr,
    app: &App,
    tls: Option<TlsAcceptor>,
    budget: &super::data::Budget,
) -> std::io::Result<()> {
    let peer = Peer { ip, tls: false, tls_available: tls.is_some() };
    match session::run(&mut stream, app, &peer, budget).await? {
        End::Closed => Ok(()),
        End::StartTls => {
            let Some(acceptor) = tls else { return Ok(()) };
            let handshake =
                tokio::time::timeout(app.config.smtp.command_timeout, acceptor.accept(stream));
            let mut secure = match handshake.await {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => {
                    tracing::debug!(error = %e, %ip, "TLS handshake failed");
                    return Ok(());
                }
                Err(_) => return Ok(()),
            };
            let peer = Peer { ip, tls: true, tls_available: true };
            session::run(&mut secure, app, &peer, budget).await?;
            let _ = secure.shutdown().await;
            Ok(())
        }
    }
}
