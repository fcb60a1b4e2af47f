//! A TLS client that verifies: rustls trusting only the given roots, over plain TCP, after
//! SMTP's or IMAP's STARTTLS, or for HTTPS requests. It answers the leaf certificate the
//! server served, so tests can tell certificates apart.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

pub type Tls = StreamOwned<ClientConnection, TcpStream>;

pub fn roots_from_pem(pem: &str) -> RootCertStore {
    let mut roots = RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(pem.as_bytes()) {
        roots.add(cert.expect("a PEM certificate")).expect("a usable root"); // ok: test
    }
    roots
}

fn config(roots: &RootCertStore, alpn: &[&[u8]]) -> Arc<ClientConfig> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut config =
        ClientConfig::builder().with_root_certificates(roots.clone()).with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Arc::new(config)
}

/// Completes a verified handshake for `name` on `stream`, or says why it failed.
pub fn handshake(
    stream: TcpStream,
    name: &str,
    roots: &RootCertStore,
    alpn: &[&[u8]],
) -> Result<Tls, String> {
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout"); // ok: test
    let server = ServerName::try_from(name.to_owned()).expect("a server name"); // ok: test
    let conn = ClientConnection::new(config(roots, alpn), server).map_err(|e| e.to_string())?;
    let mut tls = StreamOwned::new(conn, stream);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).map_err(|e| e.to_string())?;
    }
    Ok(tls)
}

/// The leaf the server sent: its DER.
pub fn leaf(tls: &Tls) -> Vec<u8> {
    let certs = tls.conn.peer_certificates().expect("a certificate"); // ok: test
    certs[0].as_ref().to_vec()
}

/// Which protocol reaches TLS by STARTTLS.
#[derive(Clone, Copy)]
pub enum Starttls {
    Smtp,
    Imap,
}

/// Connects to `addr`, asks for STARTTLS, and hands the socket to `handshake`.
pub fn starttls(
    addr: SocketAddr,
    how: Starttls,
    name: &str,
    roots: &RootCertStore,
) -> Result<Tls, String> {
    let stream = TcpStream::connect(addr).expect("connect"); // ok: test
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout"); // ok: test
    let mut writer = stream.try_clone().expect("clone"); // ok: test
    // The server says nothing after its answer to STARTTLS, so reading lines cannot take
    // bytes of the handshake.
    let mut reader = BufReader::new(stream.try_clone().expect("clone")); // ok: test
    let mut until = |done: &dyn Fn(&str) -> bool| loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("read a line"); // ok: test
        assert!(!line.is_empty(), "the server closed the connection");
        if done(&line) {
            return line;
        }
    };
    match how {
        Starttls::Smtp => {
            until(&|l: &str| l.starts_with("220 "));
            writer.write_all(b"EHLO client.test\r\n").expect("write"); // ok: test
            until(&|l: &str| l.starts_with("250 "));
            writer.write_all(b"STARTTLS\r\n").expect("write"); // ok: test
            let reply = until(&|l: &str| l.len() > 3 && l.as_bytes()[3] == b' ');
            assert!(reply.starts_with("220"), "STARTTLS refused: {reply}");
        }
        Starttls::Imap => {
            until(&|l: &str| l.starts_with("* OK"));
            writer.write_all(b"a STARTTLS\r\n").expect("write"); // ok: test
            let reply = until(&|l: &str| l.starts_with("a "));
            assert!(reply.starts_with("a OK"), "STARTTLS refused: {reply}");
        }
    }
    handshake(stream, name, roots, &[])
}

/// A GET over HTTPS (HTTP/1.1): status, head and body.
pub fn https_get(
    addr: SocketAddr,
    name: &str,
    roots: &RootCertStore,
    path: &str,
) -> (u16, String, String) {
    let stream = TcpStream::connect(addr).expect("connect"); // ok: test
    let mut tls =
        handshake(stream, name, roots, &[&b"http/1.1"[..]]).expect("a verified handshake"); // ok: test
    let request = format!("GET {path} HTTP/1.1\r\nHost: {name}\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes()).expect("write"); // ok: test
    let mut raw = Vec::new();
    // A server may end without close_notify; what arrived is the answer.
    let _ = tls.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}
