//! The reference `benches/tls.sh` holds edgemail's TLS listeners against: tokio-rustls on the
//! same runtime shape as `edgemail serve` (multi-threaded, one worker per core, mimalloc), with
//! what edgemail's listeners have in common: rustls' ring provider, its default protocol
//! versions (TLS 1.3 and 1.2), a self-signed ECDSA P-256 certificate made by rcgen as
//! `certs/self_signed.rs` makes it, and the same session resumption (`certs::resumption`: the
//! same function, so the two cannot drift apart). Three listeners, like edgemail's:
//!   imaps        handshake, the IMAP greeting, then read until the client closes
//!   submissions  handshake, the SMTP greeting, then read until the client closes
//!   https        handshake (ALPN h2 or http/1.1), then read until the client closes
//! No sessions, no limits, no store: what is left is the cost of TLS itself on this machine.
//!   cargo run --release --example bare-tls
//! Prints `listening imaps=<addr> submissions=<addr> https=<addr>` once it accepts connections.

use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// A configuration as edgemail builds one, over a fixed certificate instead of its table.
fn config(alpn: &[&[u8]]) -> Result<Arc<ServerConfig>, Failure> {
    let key = rcgen::KeyPair::generate()?;
    let params = rcgen::CertificateParams::new(vec!["localhost".to_owned()])?;
    let cert = params.self_signed(&key)?;
    let der = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
    let chain: Vec<CertificateDer<'static>> = vec![cert.der().clone()];
    let mut config = ServerConfig::builder().with_no_client_auth().with_single_cert(chain, der)?;
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    edgemail::certs::resumption(&mut config)?;
    Ok(Arc::new(config))
}

/// Accepts on `listener` forever: handshake, `greeting`, then reads until the client is done.
async fn serve(listener: TcpListener, acceptor: TlsAcceptor, greeting: &'static [u8]) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            // A client that goes away mid-handshake is not the reference's concern.
            let Ok(mut tls) = acceptor.accept(stream).await else { return };
            if !greeting.is_empty() && tls.write_all(greeting).await.is_err() {
                return;
            }
            let mut buf = [0u8; 1024];
            while let Ok(n) = tls.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
            let _ = tls.shutdown().await;
        });
    }
}

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mail = TlsAcceptor::from(config(&[])?);
    let https = TlsAcceptor::from(config(&[b"h2", b"http/1.1"])?);
    let bind = || TcpListener::bind("127.0.0.1:0");
    let (imaps, submissions, web) = (bind().await?, bind().await?, bind().await?);
    println!(
        "listening imaps={} submissions={} https={}",
        imaps.local_addr()?,
        submissions.local_addr()?,
        web.local_addr()?
    );
    tokio::spawn(serve(imaps, mail.clone(), b"* OK edgemail IMAP ready\r\n"));
    tokio::spawn(serve(submissions, mail, b"220 localhost ESMTP edgemail\r\n"));
    serve(web, https, b"").await;
    Ok(())
}
