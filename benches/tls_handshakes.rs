//! The load of `benches/tls.sh`: new TLS sessions per second against one listener, from
//! CONCURRENCY clients at once, each connecting again as soon as its last session ended.
//!   cargo run --release --example tls-handshakes -- ADDR full|resumed greeting|silent SECONDS CONCURRENCY [tls12]
//! A session: TCP connect, the handshake, the server's greeting line (`greeting`: IMAP, SMTP)
//! or nothing (`silent`: HTTPS, ALPN http/1.1), then close_notify and a wait for the server to
//! close, so a session is counted only once the server is done with it; the client then resets
//! the connection, which leaves no TIME_WAIT behind on either side.
//! `full`: no resumption, every handshake signs and exchanges keys. `resumed`: each client keeps
//! its own session store (as a mail client does), so after its first handshake it resumes with
//! the tickets (or TLS 1.2 session IDs) the server gave it.
//! The certificate is not checked (only the server's cost is measured); the client uses
//! rustls' ring provider, like the servers. Prints one line:
//!   sessions=N seconds=S rate=R/s resumed=P% errors=E

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rustls::client::Resumption;
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, HandshakeKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
#[path = "../tests/support/any_certificate.rs"]
mod any_certificate;
use any_certificate::AnyCertificate;

type Failure = Box<dyn std::error::Error + Send + Sync>;

#[derive(Clone, Copy)]
struct Load {
    addr: SocketAddr,
    resumed: bool,
    greeting: bool,
    tls12: bool,
    until: Instant,
}

#[derive(Default)]
struct Counts {
    sessions: AtomicU64,
    resumed: AtomicU64,
    errors: AtomicU64,
}

/// One client's configuration: its own session store when resuming, none otherwise.
fn client_config(load: &Load) -> Result<Arc<ClientConfig>, Failure> {
    let versions: &[&rustls::SupportedProtocolVersion] =
        if load.tls12 { &[&rustls::version::TLS12] } else { rustls::DEFAULT_VERSIONS };
    let mut config = ClientConfig::builder_with_protocol_versions(versions)
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate))
        .with_no_client_auth();
    config.resumption =
        if load.resumed { Resumption::in_memory_sessions(16) } else { Resumption::disabled() };
    if !load.greeting {
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
    }
    Ok(Arc::new(config))
}

/// One session; answers whether it was resumed.
async fn session(load: &Load, connector: &TlsConnector) -> Result<bool, Failure> {
    let tcp = TcpStream::connect(load.addr).await?;
    tcp.set_nodelay(true)?;
    let mut tls = connector.connect(ServerName::try_from("localhost")?, tcp).await?;
    let resumed = tls.get_ref().1.handshake_kind() == Some(HandshakeKind::Resumed);
    let mut buf = [0u8; 512];
    if load.greeting {
        let mut seen = Vec::new();
        while !seen.contains(&b'\n') {
            let n = tls.read(&mut buf).await?;
            if n == 0 || seen.len() > 4096 {
                return Err("no greeting".into());
            }
            seen.extend_from_slice(&buf[..n]);
        }
    }
    tls.get_mut().1.send_close_notify();
    tls.flush().await?;
    // The server closes after our close_notify, with or without its own: either ends the wait.
    while let Ok(n) = tls.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
    // Then a reset rather than a FIN: the server has closed, and hundreds of thousands of
    // connections in TIME_WAIT on one pair of addresses made new connections wait a second
    // for a port now and then (a round fell to 1,000 sessions/s on both sides).
    tls.get_ref().0.set_zero_linger()?;
    Ok(resumed)
}

async fn client(load: Load, counts: Arc<Counts>) -> Result<(), Failure> {
    let connector = TlsConnector::from(client_config(&load)?);
    while Instant::now() < load.until {
        let limit = load.until.saturating_duration_since(Instant::now()) + Duration::from_secs(5);
        match tokio::time::timeout(limit, session(&load, &connector)).await {
            Ok(Ok(resumed)) => {
                counts.sessions.fetch_add(1, Ordering::Relaxed);
                if resumed {
                    counts.resumed.fetch_add(1, Ordering::Relaxed);
                }
            }
            _ => {
                counts.errors.fetch_add(1, Ordering::Relaxed);
                // A refused connection must not turn into a busy loop.
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "ADDR full|resumed greeting|silent SECONDS CONCURRENCY [tls12]";
    let [addr, mode, greeting, seconds, concurrency, rest @ ..] = args.as_slice() else {
        return Err(usage.into());
    };
    let seconds: f64 = seconds.parse()?;
    let load = Load {
        addr: addr.parse()?,
        resumed: mode == "resumed",
        greeting: greeting == "greeting",
        tls12: rest.iter().any(|a| a == "tls12"),
        until: Instant::now() + Duration::from_secs_f64(seconds),
    };
    let counts = Arc::new(Counts::default());
    let started = Instant::now();
    let clients: Vec<_> = (0..concurrency.parse::<usize>()?)
        .map(|_| tokio::spawn(client(load, counts.clone())))
        .collect();
    for c in clients {
        c.await??;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let sessions = counts.sessions.load(Ordering::Relaxed);
    let resumed = counts.resumed.load(Ordering::Relaxed);
    println!(
        "sessions={sessions} seconds={elapsed:.2} rate={:.0}/s resumed={:.1}% errors={}",
        sessions as f64 / elapsed,
        100.0 * resumed as f64 / sessions.max(1) as f64,
        counts.errors.load(Ordering::Relaxed)
    );
    Ok(())
}
