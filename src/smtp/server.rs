//! The inbound listener: a global connection cap (back-pressure: at the cap we stop accepting),
//! a per-IP cap answered with 421, and the STARTTLS upgrade between two runs of a session.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use super::session::{self, End, Peer};
use crate::app::App;
use crate::shutdown::Shutdown;

/// Open connections per client address; an entry leaves with its last connection.
#[derive(Default)]
struct PerIp(Mutex<HashMap<IpAddr, usize>>);

struct Slot<'a>(&'a PerIp, IpAddr);

impl PerIp {
    fn enter(&self, ip: IpAddr, max: usize) -> bool {
        let Ok(mut map) = self.0.lock() else { return false };
        let count = map.entry(ip).or_default();
        if *count >= max {
            return false;
        }
        *count += 1;
        true
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if let Ok(mut map) = self.0.0.lock()
            && let Some(count) = map.get_mut(&self.1)
        {
            *count -= 1;
            if *count == 0 {
                map.remove(&self.1);
            }
        }
    }
}

pub async fn serve(
    listener: TcpListener,
    app: App,
    tls: Option<TlsAcceptor>,
    mut shutdown: Shutdown,
) {
    let limit = Arc::new(Semaphore::new(app.config.smtp.max_connections));
    let per_ip = Arc::new(PerIp::default());
    while let Some(crate::listener::Accepted { mut stream, peer, permit }) =
        crate::listener::next(&listener, &limit, &mut shutdown).await
    {
        let (app, tls, per_ip) = (app.clone(), tls.clone(), per_ip.clone());
        tokio::spawn(async move {
            let ip = peer.ip();
            if !per_ip.enter(ip, app.config.smtp.max_connections_per_ip) {
                let _ =
                    stream.write_all(b"421 4.7.0 too many connections from your address\r\n").await;
                return;
            }
            let _slot = Slot(&per_ip, ip);
            if let Err(e) = connection(stream, ip, &app, tls).await {
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
) -> std::io::Result<()> {
    let peer = Peer { ip, tls: false, tls_available: tls.is_some() };
    match session::run(&mut stream, app, &peer).await? {
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
            session::run(&mut secure, app, &peer).await?;
            let _ = secure.shutdown().await;
            Ok(())
        }
    }
}
