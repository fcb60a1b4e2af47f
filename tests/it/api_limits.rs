//! The per-API-key request limit: a key past its burst gets 429 with `Retry-After` while other
//! keys are served, and authentication comes first (bad keys are 401 and spend no tokens).

use crate::harness::{A, B, Seed, Server, TempDir, cli};

const BURST: usize = 3;

fn start() -> (Server, TempDir, String, String, String) {
    let dir = TempDir::new("api-limits");
    let seed = Seed::open(&dir.0);
    seed.domain(A);
    seed.domain(B);
    let (a, b, org) = (seed.key(Some(A)), seed.key(Some(B)), seed.key(None));
    seed.close();
    let burst = BURST.to_string();
    let env = [("EDGEMAIL_API_RATE_PER_SECOND", "1"), ("EDGEMAIL_API_BURST", burst.as_str())];
    let server = Server::start_with(&dir.0, &[], &env);
    (server, dir, a, b, org)
}

#[test]
fn a_key_past_its_burst_waits_while_other_keys_are_served() {
    let (server, _dir, a, b, org) = start();
    let alpha = server.client(Some(&a));
    for _ in 0..BURST {
        alpha.get("/v1/mailboxes").expect(200);
    }
    // One token a second comes back: ten quick calls cannot all find one.
    let refused = (0..10)
        .map(|_| alpha.get("/v1/mailboxes"))
        .find(|r| r.status == 429)
        .expect("a 429 once the burst is spent"); // ok: test
    let retry: u64 = refused
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("Retry-After in whole seconds"); // ok: test
    assert!(retry >= 1, "{retry}");
    let body = refused.expect_error(429, "rate_limited");
    assert!(body["hint"].as_str().is_some_and(|h| h.contains("Retry-After")), "{body}");
    // Other keys have buckets of their own, on domain and analytics routes alike.
    server.client(Some(&b)).get("/v1/mailboxes").expect(200);
    server.client(Some(&org)).get("/v1/suppressions").expect(200);
    // Writes are limited like reads.
    let contact = serde_json::json!({"email": "x@example.org"});
    assert!((0..10).any(|_| alpha.post("/v1/contacts", contact.clone()).status == 429));
}

#[test]
fn missing_wrong_and_revoked_keys_are_401_and_spend_no_tokens() {
    let (server, dir, _a, _b, _org) = start();
    let data = dir.0.to_str().expect("utf-8 path"); // ok: test
    let (ok, out, err) = cli(&["key", "create", "--name", "n", "--domain", A, "--data", data]);
    assert!(ok, "{err}");
    let secret = out.lines().last().unwrap_or("").trim().to_owned();
    let id = out.split_whitespace().nth(2).unwrap_or("").to_owned();
    for _ in 0..BURST * 4 {
        server.client(None).get("/v1/mailboxes").expect_error(401, "unauthorized");
        server.client(Some("em_wrong")).get("/v1/mailboxes").expect_error(401, "unauthorized");
    }
    let live = server.client(Some(&secret));
    for _ in 0..BURST {
        live.get("/v1/mailboxes").expect(200);
    }
    let (ok, _, err) = cli(&["key", "revoke", &id, "--data", data]);
    assert!(ok, "{err}");
    // Its bucket is empty, but a revoked key is refused for what it is.
    for _ in 0..BURST * 2 {
        live.get("/v1/mailboxes").expect_error(401, "unauthorized");
    }
}
