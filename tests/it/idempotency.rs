//! `Idempotency-Key` on POST under `/v1`: replay of the first answer (also after a crash and
//! restart), 409 `idempotency_conflict` for another body, keys scoped per API key, concurrent
//! requests with one key run once, and malformed keys are 400 naming the header.

use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{Client, Resp};
use crate::harness::{A, World};
use crate::mail_world::MailWorld;

fn post(client: &Client, path: &str, key: &str, body: &Value) -> Resp {
    let bytes = body.to_string().into_bytes();
    client.raw(
        "POST",
        path,
        &[("Content-Type", "application/json"), ("Idempotency-Key", key)],
        Some(&bytes),
    )
}

fn message() -> Value {
    json!({"from": "sales@alpha.test", "to": "ada@example.org", "subject": "Once", "text": "only once"})
}

#[test]
fn the_same_key_and_body_replays_the_first_answer_even_after_a_crash() {
    let mut w = MailWorld::start();
    let first = post(&w.api(), "/v1/send", "order-1", &message()).expect(200);
    assert_eq!(first.header("idempotent-replayed"), None);
    let again = post(&w.api(), "/v1/send", "order-1", &message()).expect(200);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.body, first.body, "the replay is the first answer");
    w.sink.wait_for(1, Duration::from_secs(10));
    let id = first.json()["messageId"].as_str().expect("id").to_owned();
    w.wait_status(&id, "delivered");
    w.crash_and_restart();
    let after = post(&w.api(), "/v1/send", "order-1", &message()).expect(200);
    assert_eq!(after.body, first.body, "replayed after a restart");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(w.sink.messages().len(), 1, "sent once");
    // A different body under the same key is refused, and nothing is sent.
    let mut other = message();
    other["subject"] = json!("Twice?");
    post(&w.api(), "/v1/send", "order-1", &other).expect_error(409, "idempotency_conflict");
    // Without a key, the same request is sent again.
    w.send(message()).expect(200);
    w.sink.wait_for(2, Duration::from_secs(10));
}

#[test]
fn final_errors_are_replayed_too() {
    let w = World::start();
    let bad = json!({"address": "not valid!"});
    let first = post(&w.alpha(), "/v1/mailboxes", "m-1", &bad).expect_error(400, "invalid_request");
    let again = post(&w.alpha(), "/v1/mailboxes", "m-1", &bad).expect(400);
    assert_eq!(again.header("idempotent-replayed"), Some("true"));
    assert_eq!(again.json(), first);
}

#[test]
fn keys_are_scoped_to_the_api_key_that_sent_them() {
    let mut second = String::new();
    let w = World::start_seeded(|s| second = s.key(Some(A)));
    let alpha2 = w.server.client(Some(&second));
    let ada = json!({"email": "ada@example.org", "name": "Ada"});
    let grace = json!({"email": "grace@example.org", "name": "Grace"});
    let one = post(&w.alpha(), "/v1/contacts", "shared", &ada).expect(201).json();
    let two = post(&alpha2, "/v1/contacts", "shared", &grace).expect(201).json();
    let three = post(&w.beta(), "/v1/contacts", "shared", &grace).expect(201).json();
    assert_eq!(two["email"], "grace@example.org");
    assert_ne!(two["id"], three["id"]);
    let replay = post(&w.alpha(), "/v1/contacts", "shared", &ada).expect(201);
    assert_eq!(replay.json()["id"], one["id"]);
    post(&w.alpha(), "/v1/contacts", "shared", &grace).expect_error(409, "idempotency_conflict");
    // The key applies to POST only: a DELETE with one runs as usual.
    let path = format!("/v1/contacts/{}", one["id"].as_str().unwrap_or(""));
    w.alpha().raw("DELETE", &path, &[("Idempotency-Key", "shared")], None).expect(200);
}

#[test]
fn concurrent_requests_with_one_key_run_once() {
    let w = MailWorld::start();
    let answers: Vec<Resp> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| scope.spawn(|| post(&w.api(), "/v1/send", "burst", &message())))
            .collect();
        handles.into_iter().map(|h| h.join().expect("thread")).collect()
    });
    let bodies: Vec<Value> = answers.into_iter().map(|r| r.expect(200).json()).collect();
    assert!(bodies.iter().all(|b| b["messageId"] == bodies[0]["messageId"]), "{bodies:?}");
    w.sink.wait_for(1, Duration::from_secs(10));
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(w.sink.messages().len(), 1, "the message was queued once");
    let sent = w.api().get("/v1/emails?folder=sent&mailbox=sales").json();
    let outbox = w.api().get("/v1/emails?folder=outbox&mailbox=sales").json();
    let stored = sent.as_array().map_or(0, Vec::len) + outbox.as_array().map_or(0, Vec::len);
    assert_eq!(stored, 1);
}

#[test]
fn malformed_keys_are_400_naming_the_header() {
    let w = World::start();
    let body = json!({"email": "ada@example.org", "name": "Ada"});
    for bad in ["x".repeat(257), String::new(), "caf\u{e9}".to_owned()] {
        let err =
            post(&w.alpha(), "/v1/contacts", &bad, &body).expect_error(400, "invalid_request");
        assert!(err["message"].as_str().is_some_and(|m| m.contains("Idempotency-Key")), "{err}");
    }
    post(&w.alpha(), "/v1/contacts", &"x".repeat(256), &body).expect(201);
}
