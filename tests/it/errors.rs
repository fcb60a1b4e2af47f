//! Bad input of every kind gets a clear error object and never a 500 or a dead server.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{A, Seed, Server, TempDir, World};

#[test]
fn unknown_routes_answer_404_with_the_error_object() {
    let w = World::start();
    w.alpha().get("/v1/nothing-here").expect_error(404, "not_found");
    // `/` itself is the dashboard (a redirect to its login page); other unknown paths are 404.
    w.anonymous().get("/nothing-here").expect_error(404, "not_found");
    w.alpha().get("/v1/mailboxes/").expect_error(404, "not_found");
}

#[test]
fn wrong_methods_answer_405_with_allow() {
    let w = World::start();
    let resp = w.alpha().request("PUT", "/v1/mailboxes", Some(b"{}".to_vec()));
    assert_eq!(resp.header("allow"), Some("GET, HEAD, POST"));
    resp.expect_error(405, "method_not_allowed");
    let resp = w.alpha().request("GET", "/v1/sender-groups/x", None);
    assert_eq!(resp.header("allow"), Some("PATCH, DELETE"));
    resp.expect_error(405, "method_not_allowed");
}

#[test]
fn malformed_json_names_the_problem() {
    let w = World::start();
    let c = w.alpha();
    let e = c
        .raw("POST", "/v1/contacts", &[("Content-Type", "application/json")], Some(b"{\"email\": "))
        .expect_error(400, "invalid_request");
    assert!(e["message"].as_str().unwrap_or("").contains("not valid JSON"), "{e}");
    let e = c
        .post("/v1/contacts", json!({"email": ["x"], "name": "n"}))
        .expect_error(400, "invalid_request");
    assert!(e["message"].as_str().unwrap_or("").contains("`email`"), "{e}");
    assert!(e["hint"].as_str().unwrap_or("").contains("email"), "{e}");
    let e = c.post("/v1/contacts", json!([1, 2])).expect_error(400, "invalid_request");
    assert!(e["message"].as_str().unwrap_or("").contains("object"), "{e}");
    c.raw("POST", "/v1/contacts", &[("Content-Type", "application/json")], Some(b""))
        .expect_error(400, "invalid_request");
}

#[test]
fn non_json_bodies_answer_415() {
    let w = World::start();
    let body = b"email=a@b.com&name=x";
    w.alpha()
        .raw(
            "POST",
            "/v1/contacts",
            &[("Content-Type", "application/x-www-form-urlencoded")],
            Some(body),
        )
        .expect_error(415, "invalid_request");
    // JSON with parameters and +json types are JSON.
    let ok = br#"{"email":"a@example.com","name":"A"}"#;
    w.alpha()
        .raw(
            "POST",
            "/v1/contacts",
            &[("Content-Type", "application/json; charset=utf-8")],
            Some(ok),
        )
        .expect(201);
}

#[test]
fn oversize_bodies_answer_413_declared_or_chunked() {
    let w = World::start();
    let big = vec![b' '; 1024 * 1024 + 1];
    w.alpha()
        .raw("POST", "/v1/contacts", &[("Content-Type", "application/json")], Some(&big))
        .expect_error(413, "invalid_request");
    // Chunked, so the limit is only found while reading.
    let mut req = format!(
        "POST /v1/contacts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {}\r\nContent-Type: \
         application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
        w.a
    )
    .into_bytes();
    for _ in 0..20 {
        req.extend_from_slice(format!("{:x}\r\n", 64 * 1024).as_bytes());
        req.extend_from_slice(&vec![b' '; 64 * 1024]);
        req.extend_from_slice(b"\r\n");
    }
    req.extend_from_slice(b"0\r\n\r\n");
    let resp = w.alpha().exchange(&req);
    assert_eq!(resp.status, 413, "{}", resp.text());
    w.alpha().get("/v1/contacts").expect(200);
}

#[test]
fn the_body_limit_is_configurable() {
    let dir = TempDir::new("limit");
    let seed = Seed::open(&dir.0);
    seed.domain(A);
    let key = seed.key(Some(A));
    seed.close();
    let server = Server::start_with(&dir.0, &[], &[("EDGEMAIL_HTTP_BODY_LIMIT", "1KiB")]);
    let name = "n".repeat(2000);
    server
        .client(Some(&key))
        .post("/v1/contacts", json!({"email": "a@example.com", "name": name}))
        .expect_error(413, "invalid_request");
}

/// A deterministic generator, so a failure reproduces.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn hostile_bodies_never_cause_a_server_error() {
    let w = World::start_seeded(|s| s.mailbox(A, "hello"));
    let c = w.alpha();
    let fragments: [&[u8]; 16] = [
        b"{",
        b"}",
        b"[",
        b"]",
        b"\"",
        b":",
        b",",
        b"null",
        b"true",
        b"-1e999",
        b"\"address\"",
        b"\"emails\"",
        b"\"mailboxes\"",
        b"\\u0000",
        b"\xff\xfe",
        b"\"a@b.com\"",
    ];
    let mut rng = Lcg(42);
    for round in 0..300 {
        let mut body = Vec::new();
        for _ in 0..(rng.next() % 12) {
            body.extend_from_slice(fragments[(rng.next() % 16) as usize]);
        }
        let path = ["/v1/mailboxes", "/v1/sender-groups", "/v1/contacts"][round % 3];
        let resp = c.raw("POST", path, &[("Content-Type", "application/json")], Some(&body));
        assert!(
            resp.status == 400 || resp.status == 201,
            "{path} with {:?} answered {}: {}",
            String::from_utf8_lossy(&body),
            resp.status,
            resp.text()
        );
    }
    // Deeply nested input must not overflow the parser's stack.
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let body = format!("{{\"name\":\"x\",\"emails\":{deep}}}");
    let resp = c.raw(
        "POST",
        "/v1/sender-groups",
        &[("Content-Type", "application/json")],
        Some(body.as_bytes()),
    );
    assert_eq!(resp.status, 400, "{}", resp.text());
    c.get("/healthz").expect(200);
}

#[test]
fn garbage_on_the_socket_is_answered_and_the_server_keeps_serving() {
    let w = World::start();
    for garbage in [
        &b"\x00\x01\x02 nonsense\r\n\r\n"[..],
        b"GET /\x7f HTTP/1.1\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
    ] {
        let mut s = TcpStream::connect(w.server.addr).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        s.write_all(garbage).expect("write");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out);
        let text = String::from_utf8_lossy(&out);
        assert!(out.is_empty() || text.starts_with("HTTP/1.1 4"), "{text}");
    }
    w.alpha().get("/v1/mailboxes").expect(200);
}

#[test]
fn a_client_that_never_finishes_its_headers_is_disconnected() {
    let dir = TempDir::new("slow");
    Seed::open(&dir.0).close();
    let server = Server::start_with(&dir.0, &[], &[("EDGEMAIL_HTTP_HEADER_TIMEOUT", "300ms")]);
    let mut s = TcpStream::connect(server.addr).expect("connect");
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n").expect("write");
    let started = Instant::now();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    assert!(started.elapsed() < Duration::from_secs(9), "the connection was kept open");
    server.client(None).get("/healthz").expect(200);
}

#[test]
fn an_invalid_configuration_is_reported_whole() {
    let dir = TempDir::new("badcfg");
    let cfg = dir.0.join("edgemail.toml");
    std::fs::write(&cfg, "[http]\nlisten = \"nowhere\"\nbody_limt = 5\n").expect("write");
    let (ok, _, err) = crate::harness::cli(&[
        "serve",
        "--config",
        cfg.to_str().unwrap_or(""),
        "--data",
        dir.0.to_str().unwrap_or(""),
    ]);
    assert!(!ok);
    assert!(err.contains("http.listen") && err.contains("http.body_limt"), "{err}");
}
