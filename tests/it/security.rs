//! Attacks on the HTTP API and on outbound delivery, each reproduced against the real binary and
//! shown refused: slow request bodies, one address holding every connection, mail exchangers
//! aimed into our own network, an unverified relay, a stale DKIM key, and link tokens in the log.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{Resp, parse_response};
use crate::dns::Dns;
use crate::harness::{Seed, Server, TempDir, cli};
use crate::mail_world::{MailWorld, basic, header, html_part, verify_dkim};

/// A connection from `local` (any 127/8 address is ours on Linux) to `to`. std cannot choose the
/// source address of a connection; tokio's socket can, without unsafe code.
fn connect_from(local: Ipv4Addr, to: SocketAddr) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().expect("runtime");
    let stream = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::new(IpAddr::V4(local), 0))?;
            socket.connect(to).await?.into_std()
        })
        .expect("connect from a chosen address");
    stream.set_nonblocking(false).expect("blocking");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    stream
}

/// Reads one response: its head, then as much body as Content-Length says (or up to EOF).
pub(crate) fn read_response(stream: &mut TcpStream) -> Resp {
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
            let length = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse::<usize>().ok());
            if length.is_some_and(|n| raw.len() >= end + 4 + n) {
                break;
            }
        }
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => raw.extend_from_slice(&buf[..n]),
            Err(e) => panic!("no complete response ({e}): {:?}", String::from_utf8_lossy(&raw)),
        }
    }
    parse_response(&raw)
}

fn get_healthz(mut stream: TcpStream) -> (Resp, bool) {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .expect("write");
    let resp = read_response(&mut stream);
    let mut rest = Vec::new();
    let closed = stream.read_to_end(&mut rest).is_ok();
    (resp, closed)
}

fn error_object(resp: &Resp, status: u16, code: &str) {
    assert_eq!(resp.status, status, "{}", resp.text());
    let body = resp.json();
    assert_eq!(body["code"], code, "{body}");
    for field in ["error", "message", "hint", "documentation_url"] {
        assert!(body[field].as_str().is_some_and(|s| !s.is_empty()), "{field} missing: {body}");
    }
}

#[test]
fn slow_bodies_time_out_and_one_address_cannot_hold_every_connection() {
    let dir = TempDir::new("sec-http");
    Seed::open(&dir.0).close();
    let env = [
        ("EDGEMAIL_HTTP_MAX_CONNECTIONS", "8"),
        ("EDGEMAIL_HTTP_MAX_CONNECTIONS_PER_IP", "4"),
        ("EDGEMAIL_HTTP_BODY_TIMEOUT", "500ms"),
    ];
    let server = Server::start_with(&dir.0, &[], &env);
    // A link route: no key is needed to make the server wait for a body.
    let slow: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(server.addr).expect("connect");
            s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
            s.write_all(
                b"POST /t/u/x HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\n\
                  Content-Length: 20000\r\n\r\n",
            )
            .expect("write");
            s
        })
        .collect();
    // Connections are accepted in order, so the four above hold their slots by now.
    let (fifth, closed) = get_healthz(connect_from(Ipv4Addr::LOCALHOST, server.addr));
    error_object(&fifth, 429, "rate_limited");
    assert!(closed, "the refused connection is closed after its one answer");
    let (other, _) = get_healthz(connect_from(Ipv4Addr::new(127, 0, 0, 2), server.addr));
    assert_eq!(other.status, 200, "another address is served: {}", other.text());
    for mut s in slow {
        error_object(&read_response(&mut s), 408, "invalid_request");
    }
    // Their slots are free again (the count drops just after each connection closes).
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let (resp, _) = get_healthz(connect_from(Ipv4Addr::LOCALHOST, server.addr));
        if resp.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "127.0.0.1 stays refused: {}", resp.text());
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for `needle` in the server's log (written by a background thread).
fn wait_log(w: &MailWorld, needle: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !w.server.log().contains(needle) {
        assert!(Instant::now() < deadline, "{needle:?} never logged:\n{}", w.server.log());
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn send_one(w: &MailWorld, to: Value) -> String {
    let sent = w.send(basic(to)).expect(200).json();
    sent["messageId"].as_str().expect("id").to_owned()
}

#[test]
fn private_mail_exchangers_are_never_connected_to() {
    let w = MailWorld::start_with(&[("EDGEMAIL_DELIVERY_ALLOW_PRIVATE", "false")], &[]);
    // example.org's MX is at 127.0.0.1, where the sink listens; the others reach it too (0.0.0.0
    // and the IPv4-mapped loopback connect to local listeners) or name it as a literal.
    w.dns.add_mx("literal.example", 10, "127.0.0.1");
    w.dns.add_mx("zero.example", 10, "mx.zero.example");
    w.dns.add_a("mx.zero.example", Ipv4Addr::UNSPECIFIED);
    w.dns.add_mx("mapped.example", 10, "mx.mapped.example");
    w.dns.add_aaaa("mx.mapped.example", Ipv4Addr::LOCALHOST.to_ipv6_mapped());
    let to = ["a@example.org", "b@literal.example", "c@zero.example", "d@mapped.example"];
    let id = send_one(&w, json!(to));
    let email = w.wait_email(&id, |e| e["folder"] == "sent");
    assert_eq!(email["status"], "failed", "{email}");
    let port = w.sink.port().to_string();
    for d in email["deliveries"].as_array().expect("deliveries") {
        assert_eq!(d["status"], "failed", "{email}");
        let text = d["lastResponse"].as_str().unwrap_or("");
        assert!(text.starts_with("550"), "{d}");
        for secret in ["127.0.0.1", "0.0.0.0", "ffff", &port] {
            assert!(!text.contains(secret), "{secret} shown to the caller: {text}");
        }
    }
    assert_eq!(w.sink.connections(), 0, "a private address was connected to");
    wait_log(&w, "mail exchanger is an IP address literal");
}

#[test]
fn connection_errors_are_not_shown_to_api_callers() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("a");
    let port = closed.port().to_string();
    let w = MailWorld::start_with(&[("EDGEMAIL_DELIVERY_PORT", &port)], &[]);
    let id = send_one(&w, json!("a@example.org"));
    let email = w.wait_email(&id, |e| e["deliveries"][0]["attempts"].as_u64() >= Some(1));
    let d = &email["deliveries"][0];
    assert_eq!(d["status"], "deferred", "{email}");
    let text = d["lastResponse"].as_str().unwrap_or("");
    assert!(text.starts_with("4.4.1"), "{text}");
    for secret in ["127.0.0.1", &port, "refused", "Connection", "connect"] {
        assert!(!text.contains(secret), "{secret} shown to the caller: {text}");
    }
    // The operator still gets the details.
    wait_log(&w, "delivery connection failed");
}

/// A CA, and a certificate it signed for 127.0.0.1 with its key: (ca pem, cert pem, key pem).
fn certificates() -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose,
    };
    let ca_key = KeyPair::generate().expect("ca key");
    let mut ca = CertificateParams::new(Vec::<String>::new()).expect("ca params");
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca.distinguished_name.push(DnType::CommonName, "edgemail test CA");
    ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let ca_pem = ca.self_signed(&ca_key).expect("ca cert").pem();
    let issuer = Issuer::new(ca, ca_key);
    let leaf_key = KeyPair::generate().expect("leaf key");
    let leaf = CertificateParams::new(vec!["127.0.0.1".to_owned()]).expect("leaf params");
    let leaf_pem = leaf.signed_by(&leaf_key, &issuer).expect("leaf cert").pem();
    (ca_pem, leaf_pem, leaf_key.serialize_pem())
}

/// A sender whose every message goes through `relay`, with `ca` as `delivery.relay_ca`.
fn relayed(relay: SocketAddr, ca: Option<&Path>, subject: &str) -> (MailWorld, String) {
    let ca = ca.map(|p| p.to_str().expect("utf-8 path").to_owned());
    let env: Vec<(&str, &str)> =
        ca.iter().map(|c| ("EDGEMAIL_DELIVERY_RELAY_CA", c.as_str())).collect();
    let w = MailWorld::start_with(&env, &["--relay", &relay.to_string()]);
    w.dns.add_mx("beta.test", 10, "mx.beta.test");
    let body = json!({"from": "sales@alpha.test", "to": "inbox@beta.test", "subject": subject, "text": "t"});
    let id = w.send(body).expect(200).json()["messageId"].as_str().expect("id").to_owned();
    (w, id)
}

#[test]
fn the_relay_certificate_is_verified_and_a_failed_handshake_never_falls_back() {
    let files = TempDir::new("sec-relay-tls");
    let (ca, cert, key) = certificates();
    let (other_ca, ..) = certificates();
    let write = |name: &str, text: &str| {
        let path = files.0.join(name);
        std::fs::write(&path, text).expect("write pem");
        path
    };
    let (ca, other_ca) = (write("ca.pem", &ca), write("other-ca.pem", &other_ca));
    let (cert, key) = (write("cert.pem", &cert), write("key.pem", &key));
    // The relay: another edgemail hosting the recipient, with that certificate for STARTTLS.
    let dir = TempDir::new("sec-relay");
    let seed = Seed::open(&dir.0);
    seed.domain("beta.test");
    seed.mailbox("beta.test", "inbox");
    let relay_key = seed.key(Some("beta.test"));
    seed.close();
    let dns = Dns::start();
    let (cert, key) = (cert.to_str().expect("utf-8"), key.to_str().expect("utf-8"));
    let env = [("EDGEMAIL_SMTP_TLS_CERT", cert), ("EDGEMAIL_SMTP_TLS_KEY", key)];
    let relay = Server::start_with(&dir.0, &["--nameserver", &dns.addr().to_string()], &env);

    let missing = files.0.join("missing.pem");
    let refused = [
        relayed(relay.smtp, None, "system roots"),
        relayed(relay.smtp, Some(&other_ca), "another CA"),
        relayed(relay.smtp, Some(&missing), "unreadable CA file"),
    ];
    let (good, good_id) = relayed(relay.smtp, Some(&ca), "our CA");
    good.wait_status(&good_id, "delivered");
    for (w, id) in &refused {
        let email = w.wait_email(id, |e| e["deliveries"][0]["attempts"].as_u64() >= Some(2));
        assert_eq!(email["deliveries"][0]["status"], "deferred", "{email}");
    }
    let inbox = relay
        .client(Some(&relay_key))
        .get("/v1/emails?mailbox=inbox&folder=inbox")
        .expect(200)
        .json();
    let subjects: Vec<&str> =
        inbox.as_array().expect("list").iter().filter_map(|e| e["subject"].as_str()).collect();
    assert_eq!(subjects, ["our CA"], "only the verified session delivered");
}

/// Zone-file lines of the DKIM keys that `domain add` printed: (name, TXT value).
pub fn dkim_records(printed: &str) -> Vec<(String, String)> {
    printed
        .lines()
        .filter(|l| l.contains("._domainkey."))
        .map(|l| {
            let name = l.split('\t').next().expect("name").trim_end_matches('.').to_owned();
            let quoted = l.split('\t').next_back().expect("value");
            let value: String = quoted.split('"').skip(1).step_by(2).collect();
            (name, value)
        })
        .collect()
}

fn run(dir: &Path, args: &[&str]) -> String {
    let mut all = args.to_vec();
    all.extend(["--data", dir.to_str().expect("utf-8 path")]);
    let (ok, out, err) = cli(&all);
    assert!(ok, "edgemail {args:?} failed: {err}");
    out
}

fn publish(dns: &Dns, records: &[(String, String)]) {
    for (name, _) in records {
        dns.remove(name);
    }
    for (name, value) in records {
        dns.add_txt(name, value);
    }
}

/// Adds gamma.test with a key and a mailbox on the running server, sends one message from it,
/// and returns the records printed for it and the message as it arrived.
fn gamma_message(w: &MailWorld, n: usize) -> (Vec<(String, String)>, Vec<u8>) {
    let records = dkim_records(&run(&w.dir.0, &["domain", "add", "gamma.test"]));
    assert_eq!(records.len(), 2, "an RSA and an Ed25519 key");
    let created = run(&w.dir.0, &["key", "create", "--name", "k", "--domain", "gamma.test"]);
    let secret = created.lines().last().expect("secret").trim().to_owned();
    let api = w.server.client(Some(&secret));
    api.post("/v1/mailboxes", json!({"address": "news"})).expect(201);
    let body =
        json!({"from": "news@gamma.test", "to": "a@example.org", "subject": "s", "text": "t"});
    api.post("/v1/send", body).expect(200);
    let got = w.sink.wait_for(n, Duration::from_secs(10));
    (records, got[n - 1].data.clone())
}

#[test]
fn a_domain_removed_and_added_again_is_signed_with_its_new_keys() {
    let w = MailWorld::start();
    let (old, first) = gamma_message(&w, 1);
    publish(&w.dns, &old);
    let results = verify_dkim(&w.dns, &first);
    assert!(results.len() == 2 && results.iter().all(|(_, r)| r == "Pass"), "{results:?}");

    let removed = run(&w.dir.0, &["domain", "remove", "gamma.test"]);
    assert!(removed.contains("1 keys revoked"), "{removed}");
    let (new, second) = gamma_message(&w, 2);
    assert_ne!(old, new, "the domain got new keys");
    publish(&w.dns, &new);
    let results = verify_dkim(&w.dns, &second);
    assert!(results.len() == 2 && results.iter().all(|(_, r)| r == "Pass"), "{results:?}");
    // The revoked keys verify none of it.
    for (name, _) in &new {
        w.dns.remove(name);
    }
    publish(&w.dns, &old);
    let results = verify_dkim(&w.dns, &second);
    assert!(results.iter().all(|(_, r)| r != "Pass"), "signed with a removed key: {results:?}");
}

/// Every token that follows `/t/<kind>/` in `text`.
fn tokens(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for kind in ["/t/o/", "/t/c/", "/t/u/"] {
        for piece in text.split(kind).skip(1) {
            let end =
                piece.find(['"', '\'', '>', '<', ' ', '\r', '\n', '&']).unwrap_or(piece.len());
            found.push(piece[..end].to_owned());
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn link_tokens_never_reach_the_log() {
    let w = MailWorld::start();
    let html = "<p>New <a href=\"https://shop.example.com/autumn\">collection</a></p>";
    w.send(json!({"from": "sales@alpha.test", "to": "ada@example.org", "subject": "Autumn",
                  "html": html, "type": "campaign"}))
        .expect(200);
    let got = w.sink.wait_for(1, Duration::from_secs(10));
    let raw = &got[0].data;
    let list = header(raw, "List-Unsubscribe").expect("List-Unsubscribe");
    let body = html_part(raw);
    let all = tokens(&format!("{body}\n{list}"));
    let (open, click, unsubscribe) = (
        tokens(&body).into_iter().find(|t| body.contains(&format!("/t/o/{t}"))).expect("pixel"),
        tokens(&body).into_iter().find(|t| body.contains(&format!("/t/c/{t}"))).expect("link"),
        tokens(&list).into_iter().next().expect("unsubscribe link"),
    );
    let anonymous = w.server.client(None);
    anonymous.get(&format!("/t/o/{open}")).expect(200);
    anonymous.get(&format!("/t/c/{click}")).expect(302);
    anonymous.get(&format!("/t/u/{unsubscribe}")).expect(200);
    // Refused before any route matches: a wrong method, a mangled link.
    anonymous.request("DELETE", &format!("/t/c/{click}"), None).expect(405);
    anonymous.get(&format!("/t/o/{open}/")).expect(404);
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    let path = format!("/t/u/{unsubscribe}");
    let ok = anonymous.raw("POST", &path, &form, Some(b"List-Unsubscribe=One-Click"));
    assert_eq!(ok.status, 200, "{}", ok.text());
    // The mailto: form of the same unsubscribe carries the token in its subject.
    let mailto = format!(
        "From: ada@example.org\r\nTo: unsubscribe@alpha.test\r\nSubject: unsubscribe {unsubscribe}\r\n\r\nstop"
    );
    let reply = crate::smtp_client::send_one(
        w.server.smtp,
        "ada@example.org",
        "unsubscribe@alpha.test",
        &mailto,
    );
    assert!(reply.starts_with("250"), "{reply}");
    let deadline = Instant::now() + Duration::from_secs(10);
    let log = loop {
        let log = w.server.log();
        if ["/t/o/{token}", "/t/c/{token}", "/t/u/{token}"].iter().all(|t| log.contains(t))
            && log.contains("status=405")
            && log.contains("status=404")
        {
            break log;
        }
        assert!(Instant::now() < deadline, "requests not logged:\n{log}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(all.len() >= 3, "{all:?}");
    for token in &all {
        assert!(!log.contains(token.as_str()), "token {token} in the log:\n{log}");
    }
}
