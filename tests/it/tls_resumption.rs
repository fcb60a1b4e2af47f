//! TLS session resumption on the implicit-TLS listeners (issue 40): a client that keeps what the
//! server gave it resumes (no certificate signature, no chain sent) on IMAPS, submissions and
//! HTTPS, in TLS 1.3 by ticket and in TLS 1.2 by ticket or session ID; its ticket stays good
//! after many other clients (rustls' default, a 256-entry memory cache taking two tickets per
//! handshake, forgot it after about a hundred); and a ticket of the HTTPS listener does not
//! resume a mail listener's session (each configuration seals tickets with its own key).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::client::{ClientSessionMemoryCache, ClientSessionStore, Resumption, Tls12Resumption};
use rustls::pki_types::ServerName;
use rustls::{ClientConfig, ClientConnection, HandshakeKind, StreamOwned};

use crate::any_certificate::AnyCertificate;
use crate::harness::{Server, TempDir};

/// How a client offers to resume.
#[derive(Clone, Copy, Debug)]
enum Offer {
    Tls13,
    Tls12Tickets,
    Tls12SessionId,
}

/// A client remembering sessions in `store`.
fn client(store: &Arc<ClientSessionMemoryCache>, offer: Offer) -> Arc<ClientConfig> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let versions: &[&rustls::SupportedProtocolVersion] = match offer {
        Offer::Tls13 => &[&rustls::version::TLS13],
        Offer::Tls12Tickets | Offer::Tls12SessionId => &[&rustls::version::TLS12],
    };
    let mut config = ClientConfig::builder_with_protocol_versions(versions)
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyCertificate))
        .with_no_client_auth();
    let tls12 = match offer {
        Offer::Tls12SessionId => Tls12Resumption::SessionIdOnly,
        _ => Tls12Resumption::SessionIdOrTickets,
    };
    let store: Arc<dyn ClientSessionStore> = store.clone();
    config.resumption = Resumption::store(store).tls12_resumption(tls12);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Arc::new(config)
}

/// One session on an implicit-TLS listener: the handshake, then the greeting (mail) or an
/// answer (HTTPS), which brings the tickets sent after the handshake. Answers how it began.
fn session(addr: SocketAddr, config: &Arc<ClientConfig>, https: bool) -> HandshakeKind {
    let stream = TcpStream::connect(addr).expect("connect"); // ok: test
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout"); // ok: test
    let name = ServerName::try_from("localhost").expect("a name"); // ok: test
    let conn = ClientConnection::new(config.clone(), name).expect("a client"); // ok: test
    let mut tls = StreamOwned::new(conn, stream);
    while tls.conn.is_handshaking() {
        tls.conn.complete_io(&mut tls.sock).expect("a handshake"); // ok: test
    }
    let kind = tls.conn.handshake_kind().expect("a finished handshake"); // ok: test
    if https {
        tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .expect("a request"); // ok: test
    }
    let mut first = [0u8; 64];
    let n = tls.read(&mut first).expect("the server's first words"); // ok: test
    let said = String::from_utf8_lossy(&first[..n]).into_owned();
    assert!(["* OK", "220 ", "HTTP/1.1"].iter().any(|p| said.starts_with(p)), "{said:?}");
    tls.conn.send_close_notify();
    let _ = tls.flush();
    kind
}

fn start(dir: &TempDir) -> Server {
    let args = ["--imaps", "127.0.0.1:0", "--submissions", "127.0.0.1:0", "--https", "127.0.0.1:0"];
    Server::start_with(&dir.0, &args, &[])
}

fn listener(server: &Server, name: &str) -> SocketAddr {
    server.listener(name).expect("the listener") // ok: test
}

#[test]
fn a_returning_client_resumes_on_every_implicit_tls_listener() {
    let dir = TempDir::new("tls-resume");
    let server = start(&dir);
    for (name, https) in [("imaps", false), ("submissions", false), ("https", true)] {
        let addr = listener(&server, name);
        for offer in [Offer::Tls13, Offer::Tls12Tickets, Offer::Tls12SessionId] {
            let config = client(&Arc::new(ClientSessionMemoryCache::new(16)), offer);
            let first = session(addr, &config, https);
            assert_eq!(first, HandshakeKind::Full, "{name} {offer:?}: the first visit");
            for visit in 2..=3 {
                let again = session(addr, &config, https);
                assert_eq!(again, HandshakeKind::Resumed, "{name} {offer:?}: visit {visit}");
            }
        }
    }
}

#[test]
fn a_ticket_outlives_many_other_clients_and_stays_on_its_listener() {
    let dir = TempDir::new("tls-resume-many");
    let server = start(&dir);
    let (imaps, https) = (listener(&server, "imaps"), listener(&server, "https"));
    let offers = [Offer::Tls13, Offer::Tls12Tickets, Offer::Tls12SessionId];
    let returning: Vec<_> = offers
        .iter()
        .map(|offer| {
            let config = client(&Arc::new(ClientSessionMemoryCache::new(16)), *offer);
            assert_eq!(session(imaps, &config, false), HandshakeKind::Full);
            config
        })
        .collect();
    // 300 other clients, each offering session IDs and tickets like the first ones: 600 TLS 1.3
    // tickets and 300 TLS 1.2 sessions, more than the default cache's 256 entries.
    for n in 0..300 {
        let offer = offers[n % offers.len()];
        let config = client(&Arc::new(ClientSessionMemoryCache::new(4)), offer);
        assert_eq!(session(imaps, &config, false), HandshakeKind::Full, "client {n}");
    }
    for (offer, config) in offers.iter().zip(&returning) {
        assert_eq!(session(imaps, config, false), HandshakeKind::Resumed, "{offer:?}");
    }

    // One store holding an HTTPS ticket for `localhost` offers it to IMAPS: a full handshake.
    let store = Arc::new(ClientSessionMemoryCache::new(16));
    let config = client(&store, Offer::Tls13);
    assert_eq!(session(https, &config, true), HandshakeKind::Full);
    assert_eq!(session(imaps, &config, false), HandshakeKind::Full, "an HTTPS ticket on IMAPS");
    assert_eq!(session(imaps, &config, false), HandshakeKind::Resumed, "IMAPS' own ticket");
}
