//! ManageSieve (RFC 5804): mail clients list, upload, check and activate a mailbox's Sieve
//! scripts. One listener with STARTTLS (the certificate the other TLS listeners serve);
//! AUTHENTICATE PLAIN with the mailbox's app passwords, after TLS only. Connections are capped
//! (in all and per client address), every read has a deadline, and commands are bounded
//! (`wire`). The scripts are the ones the API shows: the active one is what delivery runs.

mod session;
mod wire;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::credentials::Logins;
use crate::shutdown::Shutdown;
use crate::store::Store;

/// Connections one listener serves at once, and from one client address.
const MAX_CONNECTIONS: usize = 200;
const MAX_PER_IP: usize = 10;
/// How long a client may stay silent before logging in, and after.
const LOGIN_WAIT: Duration = Duration::from_secs(60);
const SESSION_WAIT: Duration = Duration::from_secs(10 * 60);

/// What sessions reach.
pub struct Deps {
    pub store: Arc<Store>,
    pub logins: Arc<Logins>,
}

/// Serves ManageSieve on `listener` until shutdown.
pub async fn serve(
    listener: TcpListener,
    deps: Arc<Deps>,
    tls: Option<TlsAcceptor>,
    mut shutdown: Shutdown,
) {
    let limit = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    let per_ip = Arc::new(crate::listener::PerIp::default());
    while let Some(accepted) = crate::listener::next(&listener, &limit, &mut shutdown).await {
        let crate::listener::Accepted { mut stream, peer, permit } = accepted;
        let (deps, tls, per_ip) = (deps.clone(), tls.clone(), per_ip.clone());
        tokio::spawn(async move {
            let ip: IpAddr = peer.ip();
            let Some(_slot) = per_ip.enter(ip, MAX_PER_IP) else {
                let _ =
                    stream.write_all(b"BYE \"too many connections from your address\"\r\n").await;
                return;
            };
            if let Err(e) = session::run(stream, ip, &deps, tls).await {
                tracing::debug!(error = %e, %ip, "managesieve session ended");
            }
            drop(permit);
        });
    }
}
