//! `log.format = "json"`: one JSON object per line, and the lines operators alert on (delivery
//! attempts, auth failures) carry their documented fields.

use serde_json::{Value, json};

use crate::harness::{A, Seed, Server, TempDir};
use crate::mail_world::{MailWorld, basic};

/// The JSON lines of a log whose `event` field is `event`.
fn events(log: &str, event: &str) -> Vec<Value> {
    log.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v| v["event"] == event)
        .collect()
}

#[test]
fn json_logs_carry_auth_failures_with_stable_fields() {
    let dir = TempDir::new("logs");
    let seed = Seed::open(&dir.0);
    seed.domain(A);
    seed.close();
    let server = Server::start_with(&dir.0, &[], &[("EDGEMAIL_LOG_FORMAT", "json")]);
    server.client(Some("em_not_a_key")).get("/v1/contacts").expect_error(401, "unauthorized");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let line = loop {
        if let Some(line) = events(&server.log(), "auth_failure").pop() {
            break line;
        }
        assert!(std::time::Instant::now() < deadline, "no auth_failure line:\n{}", server.log());
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    assert_eq!(line["protocol"], "http");
    assert_eq!(line["peer_ip"], "127.0.0.1");
    assert_eq!(line["route"], "/v1/contacts");
    assert_eq!(line["level"], "WARN");
    assert!(line["timestamp"].is_string() && line["reason"].is_string(), "{line}");
    assert!(!line.to_string().contains("em_not_a_key"), "the secret reached the log: {line}");
}

#[test]
fn json_logs_have_one_line_per_delivery_attempt() {
    let w = MailWorld::start_with(&[("EDGEMAIL_LOG_FORMAT", "json")], &[]);
    let to = json!(["ann@example.org", "bob@example.net"]);
    let id = w.send(basic(to)).expect(200).json()["messageId"].as_str().expect("id").to_owned();
    w.wait_status(&id, "delivered");
    // The log thread writes its lines in batches a few milliseconds apart: the status can be
    // read before the attempt's lines are out.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let lines = loop {
        let mut lines = events(&w.server.log(), "delivery_attempt");
        lines.retain(|l| l["email_id"] == id.as_str());
        if lines.len() >= 2 || std::time::Instant::now() > deadline {
            break lines;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut recipients: Vec<&str> = lines.iter().filter_map(|l| l["recipient"].as_str()).collect();
    recipients.sort();
    assert_eq!(recipients, ["ann@example.org", "bob@example.net"], "{lines:?}");
    for l in &lines {
        assert_eq!(l["result"], "delivered");
        assert!(l["smtp_response"].as_str().is_some_and(|r| r.starts_with("250")), "{l}");
    }
}
