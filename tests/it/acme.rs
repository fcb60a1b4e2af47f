//! Certificates over ACME against a real ACME server (Pebble, `pebble.rs`), validated for real
//! on our listeners: HTTP-01 on `--http-challenge`, TLS-ALPN-01 on `--https`. What the server
//! then serves is checked by a client trusting only Pebble's root (HTTPS over HTTP/1.1 and
//! HTTP/2, SMTP STARTTLS on the MX and submission, IMAP STARTTLS and IMAPS), and renewal is
//! seen swapping the certificate on the running listeners. `GET /v1/certificates` says what is
//! served (its answers are checked against the schema by the client).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::client::Client;
use crate::harness::{Seed, Server, TempDir, World};
use crate::pebble::Pebble;
use crate::tls_check::{Starttls, handshake, https_get, leaf, roots_from_pem, starttls};

/// A server on a fresh directory hosting `domain`, with an org-wide key and one for `domain`.
fn start(domain: &str, args: &[&str], env: &[(&str, &str)]) -> (Server, String, String, TempDir) {
    let dir = TempDir::new("acme");
    let seed = Seed::open(&dir.0);
    seed.domain(domain);
    let org = seed.key(None);
    let own = seed.key(Some(domain));
    seed.close();
    let pebble = Pebble::shared();
    let ca = pebble.ca_file.display().to_string();
    let mut all = vec![
        ("EDGEMAIL_ACME_DIRECTORY", pebble.directory.as_str()),
        ("EDGEMAIL_ACME_CA_FILE", ca.as_str()),
        ("EDGEMAIL_ACME_EMAIL", "postmaster@example.test"),
        ("EDGEMAIL_ACME_RETRY_INITIAL", "1s"),
    ];
    all.extend_from_slice(env);
    let server = Server::start_with(&dir.0, args, &all);
    (server, org, own, dir)
}

/// The ACME certificates listed, once every name of `names` is covered by one (30 s at most).
pub fn wait_acme(api: &Client, server: &Server, names: &[&str], newer_than: i64) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let list = api.get("/v1/certificates").expect(200).json();
        let acme: Vec<Value> = list
            .as_array()
            .expect("an array") // ok: test
            .iter()
            .filter(|c| c["source"] == "acme" && c["notAfter"].as_i64() > Some(newer_than))
            .cloned()
            .collect();
        let covered = |n: &&str| {
            acme.iter().any(|c| c["names"].as_array().is_some_and(|a| a.iter().any(|x| x == *n)))
        };
        if names.iter().all(covered) {
            return acme;
        }
        assert!(
            Instant::now() < deadline,
            "no ACME certificate for {names:?}: {list}\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn not_after_of(list: &[Value], name: &str) -> i64 {
    let cert =
        list.iter().find(|c| c["names"].as_array().is_some_and(|a| a.iter().any(|x| x == name)));
    cert.and_then(|c| c["notAfter"].as_i64()).expect("a certificate for the name") // ok: test
}

/// An HTTP/2 GET over TLS with hyper's client: the status and the HSTS header.
fn h2_get(
    addr: SocketAddr,
    name: &str,
    roots: &rustls::RootCertStore,
    path: &str,
) -> (u16, Option<String>) {
    use http_body_util::Empty;
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt"); // ok: test
    let _ = rustls::crypto::ring::default_provider().install_default();
    rt.block_on(async {
        let mut config = rustls::ClientConfig::builder()
            .with_root_certificates(roots.clone())
            .with_no_client_auth();
        config.alpn_protocols = vec![b"h2".to_vec()];
        let tcp = tokio::net::TcpStream::connect(addr).await.expect("connect"); // ok: test
        let server = rustls::pki_types::ServerName::try_from(name.to_owned()).expect("name"); // ok: test
        let connector = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config));
        let tls = connector.connect(server, tcp).await.expect("a verified handshake"); // ok: test
        assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]), "HTTP/2 by ALPN");
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                .await
                .expect("HTTP/2 handshake"); // ok: test
        tokio::spawn(conn);
        let request = hyper::Request::get(format!("https://{name}{path}"))
            .body(Empty::<bytes::Bytes>::new())
            .expect("request"); // ok: test
        let response = sender.send_request(request).await.expect("an HTTP/2 answer"); // ok: test
        let hsts = response.headers().get("strict-transport-security");
        (response.status().as_u16(), hsts.and_then(|v| v.to_str().ok()).map(str::to_owned))
    })
}

/// A plain HTTP/1.1 request on the HTTP-01 listener: status and head.
fn plain_get(port: u16, host: &str, path: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect"); // ok: test
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout"); // ok: test
    write!(s, "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").expect("write"); // ok: test
    let mut raw = String::new();
    let _ = s.read_to_string(&mut raw);
    let status = raw.split_whitespace().nth(1).and_then(|v| v.parse().ok()).unwrap_or(0);
    (status, raw)
}

#[test]
fn http01_certificates_are_served_by_every_listener_and_renewed_live() {
    let pebble = Pebble::shared();
    let _port = pebble.take_http_port();
    let names = ["mx.alpha.test", "mail.alpha.test", "autoconfig.alpha.test", "mta-sts.alpha.test"];
    pebble.resolve_here(&names);
    let challenge = format!("127.0.0.1:{}", pebble.http_port);
    let args = [
        "--http-challenge",
        &challenge,
        "--https",
        "127.0.0.1:0",
        "--submission",
        "127.0.0.1:0",
        "--imap",
        "127.0.0.1:0",
    ];
    let (server, org, own, _dir) =
        start("alpha.test", &args, &[("EDGEMAIL_SMTP_HOSTNAME", "mx.alpha.test")]);
    // The start line names both new listeners.
    assert_eq!(server.listener("http-challenge").map(|a| a.port()), Some(pebble.http_port));
    let https = server.listener("https").expect("https= on the start line"); // ok: test
    let api = server.client(Some(&org));
    // Default names: smtp.hostname, and mail./autoconfig./mta-sts. of the hosted domain.
    let first = wait_acme(&api, &server, &names, 0);
    assert_eq!(first.len(), 2, "one certificate for the host, one for the domain: {first:?}");
    assert!(
        first.iter().all(|c| c["issuer"].as_str().is_some_and(|i| i.contains("Pebble"))),
        "{first:?}"
    );
    let roots = roots_from_pem(&pebble.root());

    // Each listener serves a certificate a client trusting only Pebble's root accepts.
    let (status, head, _) = https_get(https, "mail.alpha.test", &roots, "/healthz");
    assert_eq!(status, 200, "{head}");
    assert!(head.to_ascii_lowercase().contains("strict-transport-security: max-age="), "{head}");
    assert_eq!(h2_get(https, "autoconfig.alpha.test", &roots, "/healthz").0, 200);
    let mx = starttls(server.smtp, Starttls::Smtp, "mx.alpha.test", &roots).expect("MX STARTTLS"); // ok: test
    let submission = server.listener("submission").expect("submission"); // ok: test
    starttls(submission, Starttls::Smtp, "mx.alpha.test", &roots).expect("submission STARTTLS"); // ok: test
    let imap = server.listener("imap").expect("imap"); // ok: test
    starttls(imap, Starttls::Imap, "mail.alpha.test", &roots).expect("IMAP STARTTLS"); // ok: test
    // The check is real: a name no certificate holds does not verify.
    let wrong = starttls(server.smtp, Starttls::Smtp, "nothere.alpha.test", &roots);
    let why = wrong.expect_err("a name no certificate holds does not verify"); // ok: test
    eprintln!("nothere.alpha.test: {why}");

    // The HTTP-01 listener: unknown tokens are 404, everything else goes to HTTPS.
    let (status, _) =
        plain_get(pebble.http_port, "mail.alpha.test", "/.well-known/acme-challenge/nope");
    assert_eq!(status, 404);
    let (status, raw) = plain_get(pebble.http_port, "mail.alpha.test", "/v1/x?y=1");
    assert_eq!(status, 301, "{raw}");
    let location = format!("location: https://mail.alpha.test:{}/v1/x?y=1", https.port());
    assert!(raw.to_ascii_lowercase().contains(&location), "{raw}");

    // A domain-scoped key sees the certificates of its domain and of the server's host name.
    let seen = server.client(Some(&own)).get("/v1/certificates").expect(200).json();
    assert_eq!(
        seen.as_array().map(|a| a.iter().filter(|c| c["source"] == "acme").count()),
        Some(2)
    );

    // Renewal two thirds into the lifetime: the running MX and IMAP listeners serve the new one.
    let before = leaf(&mx);
    let renewed =
        wait_acme(&api, &server, &["mx.alpha.test"], not_after_of(&first, "mx.alpha.test"));
    assert!(not_after_of(&renewed, "mx.alpha.test") > not_after_of(&first, "mx.alpha.test"));
    let again =
        starttls(server.smtp, Starttls::Smtp, "mx.alpha.test", &roots).expect("renewed, verified"); // ok: test
    assert_ne!(leaf(&again), before, "the MX serves the renewed certificate without a restart");
    let log = server.log();
    assert!(log.contains("certificate obtained over ACME"), "{log}");
}

#[test]
fn tls_alpn01_certificates_are_served_over_https_and_imaps() {
    let pebble = Pebble::shared();
    let _port = pebble.take_tls_port();
    let names = ["secure.beta.test", "imap.beta.test"];
    pebble.resolve_here(&names);
    // No --http-challenge: TLS-ALPN-01 on the HTTPS listener, which takes Pebble's tlsPort.
    let https = format!("127.0.0.1:{}", pebble.tls_port);
    let args = ["--https", &https, "--imaps", "127.0.0.1:0"];
    let env = [("EDGEMAIL_ACME_NAMES", "secure.beta.test, imap.beta.test")];
    let (server, org, _, _dir) = start("beta.test", &args, &env);
    assert_eq!(server.listener("http-challenge"), None);
    let https = server.listener("https").expect("https="); // ok: test
    let api = server.client(Some(&org));
    let list = wait_acme(&api, &server, &names, 0);
    assert_eq!(list.len(), 1, "acme.names: one certificate for them all: {list:?}");
    let roots = roots_from_pem(&pebble.root());
    let (status, head, _) = https_get(https, "secure.beta.test", &roots, "/healthz");
    assert_eq!(status, 200, "{head}");
    let imaps = server.listener("imaps").expect("imaps"); // ok: test
    let stream = TcpStream::connect(imaps).expect("connect"); // ok: test
    handshake(stream, "imap.beta.test", &roots, &[]).expect("IMAPS verified"); // ok: test
    // With no challenge in flight, a handshake asking for acme-tls/1 gets no certificate.
    let stream = TcpStream::connect(https).expect("connect"); // ok: test
    assert!(handshake(stream, "secure.beta.test", &roots, &[&b"acme-tls/1"[..]]).is_err());
}

#[test]
fn without_acme_the_self_signed_certificate_is_listed_and_https_serves_it() {
    let w = World::start();
    let list = w.org().get("/v1/certificates").expect(200).json();
    let list = list.as_array().expect("array"); // ok: test
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["source"], "self-signed");
    assert!(list[0]["names"].as_array().is_some_and(|n| n.iter().any(|x| x == "localhost")));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock"); // ok: test
    assert!(list[0]["notAfter"].as_i64() > Some(now.as_millis() as i64));
    // A domain key sees the server's own certificate too.
    assert_eq!(
        w.alpha().get("/v1/certificates").expect(200).json().as_array().map(Vec::len),
        Some(1)
    );
    w.anonymous().get("/v1/certificates").expect(401);
    // No HSTS on plain HTTP.
    assert_eq!(w.org().get("/healthz").header("strict-transport-security"), None);
}
