//! Sequences edited while they run (extensions.md, "Outreach"): `GET /v1/sequences/{id}`,
//! `PATCH` of the steps with enrollments on the way, delays in hours and days, text steps,
//! tracking switches, and per-step and per-lead statistics, all over the real server and sink.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{B, Seed, TempDir};
use crate::mail_world::{MailWorld, header};

fn create(w: &MailWorld, body: Value) -> String {
    let created = w.api().post("/v1/sequences", body).expect(201).json();
    created["id"].as_str().expect("id").to_owned() // ok: test
}

fn sequence(name: &str, steps: Value) -> Value {
    json!({"name": name, "from": "sales@alpha.test", "steps": steps})
}

fn enroll(w: &MailWorld, id: &str, emails: &[&str]) {
    let contacts: Vec<Value> = emails.iter().map(|e| json!({"email": e})).collect();
    let path = format!("/v1/sequences/{id}/enroll");
    let r = w.api().post(&path, json!({"contacts": contacts})).expect(200).json();
    assert_eq!(r["enrolled"], emails.len(), "{r}");
}

fn get(w: &MailWorld, id: &str) -> Value {
    w.api().get(&format!("/v1/sequences/{id}")).expect(200).json()
}

fn wait_stats(w: &MailWorld, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let item = get(w, id);
        if done(&item["stats"]) {
            return item;
        }
        assert!(Instant::now() < deadline, "stats never settled: {item}\n{}", w.server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The messages the sink received for `address`, in arrival order.
fn to(w: &MailWorld, address: &str) -> Vec<Vec<u8>> {
    let all = w.sink.messages();
    all.into_iter().filter(|m| m.rcpt_to.iter().any(|r| r == address)).map(|m| m.data).collect()
}

fn wait_to(w: &MailWorld, address: &str, count: usize) -> Vec<Vec<u8>> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = to(w, address);
        if got.len() >= count {
            return got;
        }
        assert!(Instant::now() < deadline, "{address} got {} of {count}", got.len());
        std::thread::sleep(Duration::from_millis(30));
    }
}

fn subject(raw: &[u8]) -> String {
    header(raw, "Subject").unwrap_or_default()
}

#[test]
fn get_answers_the_sequence_as_listed_and_404_elsewhere() {
    let dir = TempDir::new("seqget");
    let seed = Seed::open(&dir.0);
    seed.domain(B);
    let beta = seed.key(Some(B));
    seed.close();
    let w = MailWorld::start_in(dir, &[], &[]);
    let steps = json!([
        {"type": "send_email", "subject": "Hello", "html": "<p>Hi</p>"},
        {"type": "delay", "delayMs": 60000},
        {"type": "send_email", "subject": "", "html": "<p>Again</p>"}
    ]);
    let id = create(&w, sequence("Get me", steps.clone()));
    let one = get(&w, &id);
    let all = w.api().get("/v1/sequences").expect(200).json();
    let listed = all.as_array().and_then(|a| a.iter().find(|s| s["id"] == id.as_str())).cloned();
    assert_eq!(Some(one.clone()), listed, "GET answers the list's item");
    assert_eq!(one["steps"], steps);
    assert_eq!((one["stepCount"].clone(), one["stats"]["total"].clone()), (json!(3), json!(0)));
    w.api().get("/v1/sequences/seq_nothere").expect(404);
    // Another domain's key does not see it, nor tell it apart from a missing one.
    w.server.client(Some(&beta)).get(&format!("/v1/sequences/{id}")).expect(404);
}
