//! The public tools that exist so far: subject lines, and the per-IP limit in front of them.

use serde_json::json;

use crate::harness::{Seed, Server, TempDir, World};

#[test]
fn ten_subject_lines_in_the_requested_tone() {
    let w = World::start();
    let c = w.anonymous();
    let body = json!({"offer": "our spring sale", "industry": "outdoor gear", "tone": "urgent"});
    let lines =
        c.post("/api/tools/generate-subject-lines", body).expect(200).json()["subjectLines"]
            .clone();
    let lines: Vec<String> = lines
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|l| l.as_str().map(str::to_owned))
        .collect();
    assert_eq!(lines.len(), 10);
    assert!(lines.iter().all(|l| l.chars().count() <= 78));
    assert!(lines.iter().filter(|l| l.contains("spring sale")).count() >= 8, "{lines:?}");
    let default_tone =
        c.post("/api/tools/generate-subject-lines", json!({"offer": "x"})).expect(200).json();
    assert_eq!(default_tone["subjectLines"].as_array().map(Vec::len), Some(10));
    for bad in [
        json!({}),
        json!({"offer": ""}),
        json!({"offer": "x", "tone": "angry"}),
        json!({"offer": "x", "extra": 1}),
    ] {
        c.post("/api/tools/generate-subject-lines", bad).expect_error(400, "invalid_request");
    }
}

#[test]
fn past_the_quota_a_client_gets_429_with_retry_after_and_others_do_not() {
    let dir = TempDir::new("tools");
    Seed::open(&dir.0).close();
    let env = [("EDGEMAIL_TOOLS_BURST", "3"), ("EDGEMAIL_HTTP_TRUSTED_PROXIES", "127.0.0.1")];
    let server = Server::start_with(&dir.0, &[], &env);
    let c = server.client(None);
    let call = |ip: &str| {
        let body = br#"{"offer":"a demo"}"#;
        c.raw(
            "POST",
            "/api/tools/generate-subject-lines",
            &[("Content-Type", "application/json"), ("X-Forwarded-For", ip)],
            Some(body),
        )
    };
    for _ in 0..3 {
        call("203.0.113.1").expect(200);
    }
    let refused = call("203.0.113.1");
    let retry = refused.header("retry-after").and_then(|v| v.parse::<u64>().ok());
    assert!(retry.is_some_and(|s| (1..=60).contains(&s)), "Retry-After: {retry:?}");
    refused.expect_error(429, "rate_limited");
    call("203.0.113.2").expect(200);
    // Other routes are not limited.
    c.get("/healthz").expect(200);
}

#[test]
fn validate_emails_classifies_each_address_within_the_deadline_even_with_slow_dns() {
    use crate::mail_world::MailWorld;
    let w = MailWorld::start();
    w.dns.add_mx("gmail.com", 10, "mx.example.org");
    w.dns.add_mx("mailinator.com", 10, "mx.example.org");
    w.dns.set_timeout("slow.example");
    let emails = json!([
        "ada@example.org",
        "not an address",
        "x@nowhere.example",
        "x@mailinator.com",
        "info@example.org",
        "jane@gmail.com",
        "y@slow.example",
        "z@nullmx.example.com"
    ]);
    let started = std::time::Instant::now();
    let answer = w
        .server
        .client(None)
        .post("/api/tools/validate-emails", json!({"emails": emails}))
        .expect(200)
        .json();
    assert!(started.elapsed() < std::time::Duration::from_secs(3), "took {:?}", started.elapsed());
    let status: Vec<(String, String)> = answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                r["email"].as_str().unwrap_or("").to_owned(),
                r["status"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let expect = [
        ("ada@example.org", "valid"),
        ("not an address", "invalid"),
        ("x@nowhere.example", "invalid"),
        ("x@mailinator.com", "risky"),
        ("info@example.org", "risky"),
        ("jane@gmail.com", "valid"),
        ("y@slow.example", "risky"),
        ("z@nullmx.example.com", "invalid"),
    ];
    let expect: Vec<(String, String)> =
        expect.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
    assert_eq!(status, expect);
    let results = &answer["results"];
    assert_eq!(results[4]["checks"]["roleAccount"], true);
    assert_eq!(results[5]["checks"]["freeProvider"], true);
    assert_eq!(results[6]["checks"]["mx"], serde_json::Value::Null);
    assert_eq!(answer["summary"], json!({"total": 8, "valid": 2, "risky": 3, "invalid": 3}));
    let many: Vec<String> = (0..101).map(|i| format!("u{i}@example.org")).collect();
    w.server
        .client(None)
        .post("/api/tools/validate-emails", json!({"emails": many}))
        .expect_error(400, "invalid_request");
    w.server
        .client(None)
        .post("/api/tools/validate-emails", json!({"emails": []}))
        .expect_error(400, "invalid_request");
}
