//! Sequences end to end: the real binary sends steps over SMTP to the test sink, replies come in
//! through its SMTP listener, and the clock is real (delays of a second or two).

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mail_world::{MailWorld, header, html_part};
use crate::smtp_client::Talk;
use crate::smtp_sink::Received;

fn create(w: &MailWorld, steps: Value) -> String {
    let body = json!({"name": "Trial follow-up", "from": "sales@alpha.test", "steps": steps});
    let created = w.api().post("/v1/sequences", body).expect(201).json();
    assert_eq!(created["status"], "active");
    created["id"].as_str().expect("id").to_owned() // ok: test
}

/// send, delay `ms`, send (an empty subject: a reply in the thread).
fn two_touches(w: &MailWorld, ms: u64) -> String {
    create(
        w,
        json!([
            {"type": "send_email", "subject": "Hello {{firstName|}}", "html": "<p>Hi {{firstName|}} of {{company|}}</p>"},
            {"type": "delay", "delayMs": ms},
            {"type": "send_email", "subject": "", "html": "<p>Following up, {{firstName|}}.</p>"}
        ]),
    )
}

fn enroll(w: &MailWorld, id: &str, contacts: Value) -> Value {
    w.api()
        .post(&format!("/v1/sequences/{id}/enroll"), json!({"contacts": contacts}))
        .expect(200)
        .json()
}

fn listed(w: &MailWorld, id: &str) -> Value {
    let all = w.api().get("/v1/sequences").expect(200).json();
    all.as_array().and_then(|a| a.iter().find(|s| s["id"] == id).cloned()).expect("listed") // ok: test
}

/// Waits until the sequence's enrollment counters satisfy `done`.
fn wait_stats(w: &MailWorld, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let item = listed(w, id);
        if done(&item["stats"]) {
            return item;
        }
        assert!(Instant::now() < deadline, "stats never settled: {item}\n{}", w.server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn to(m: &Received) -> String {
    m.rcpt_to.join(",")
}

fn messages_to(w: &MailWorld, address: &str) -> Vec<Received> {
    w.sink.messages().into_iter().filter(|m| to(m) == address).collect()
}

#[test]
fn a_three_step_sequence_sends_both_steps_in_order_merged_and_threaded() {
    let w = MailWorld::start();
    let id = two_touches(&w, 1200);
    let result = enroll(
        &w,
        &id,
        json!([
            {"email": "ada@example.org", "mergeFields": {"firstName": "Ada", "company": "Engines & <Co>"}},
            {"email": "grace@example.net", "mergeFields": {"firstName": "Grace"}}
        ]),
    );
    assert_eq!(result["enrolled"], 2);
    assert_eq!(result["skipped"], 0);
    assert_eq!(result["enrollmentIds"].as_array().map(Vec::len), Some(2));
    let got = w.sink.wait_for(4, Duration::from_secs(20));
    assert_eq!(got.len(), 4);
    for (address, name) in [("ada@example.org", "Ada"), ("grace@example.net", "Grace")] {
        let mine = messages_to(&w, address);
        assert_eq!(mine.len(), 2, "two messages for {address}");
        let (first, second) = (&mine[0].data, &mine[1].data);
        assert_eq!(header(first, "Subject").as_deref(), Some(format!("Hello {name}").as_str()));
        assert!(html_part(first).contains(&format!("Hi {name} of")), "{}", html_part(first));
        assert!(header(first, "List-Unsubscribe").is_some(), "unsubscribe header");
        let thread = header(first, "Message-ID").expect("message id"); // ok: test
        assert_eq!(header(second, "In-Reply-To").as_deref(), Some(thread.as_str()));
        assert!(header(second, "References").is_some_and(|r| r.contains(&thread)));
        assert_eq!(
            header(second, "Subject").as_deref(),
            Some(format!("Re: Hello {name}").as_str())
        );
        assert!(html_part(second).contains(&format!("Following up, {name}.")));
    }
    // Merge values are escaped in HTML; a field with no value takes its (here empty) fallback.
    let ada = html_part(&messages_to(&w, "ada@example.org")[0].data);
    assert!(ada.contains("Engines &amp; &lt;Co&gt;"), "{ada}");
    let grace = html_part(&messages_to(&w, "grace@example.net")[0].data);
    assert!(grace.contains("Hi Grace of </p>"), "{grace}");
    let item = wait_stats(&w, &id, |s| s["completed"] == 2);
    assert_eq!(item["stepCount"], 3);
    let counts = ["total", "active", "completed", "replied", "bounced", "cancelled", "autoReplied"]
        .map(|k| item["stats"][k].clone());
    assert_eq!(counts, [2, 0, 2, 0, 0, 0, 0].map(|n| json!(n)), "{item}");
    // The step messages are stored as sent mail of the sequence, and counted. The sink has the
    // last message a moment before its delivery is recorded, so the count is waited for.
    let deadline = Instant::now() + Duration::from_secs(20);
    let stats = loop {
        let stats = w
            .api()
            .get(&format!("/v1/campaign-stats?type=sequence&sequenceId={id}"))
            .expect(200)
            .json();
        if stats["sequences"][0]["delivered"] == 4 || Instant::now() > deadline {
            break stats;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let row = &stats["sequences"][0];
    assert_eq!((row["sent"].as_u64(), row["delivered"].as_u64()), (Some(4), Some(4)), "{stats}");
    assert_eq!(row["bounceRate"], 0.0);
    assert!(stats.get("batches").is_none());
}

#[test]
fn a_paused_sequence_sends_nothing_until_it_resumes() {
    let w = MailWorld::start();
    // Long enough that the pause surely lands before the follow-up is due, even on a busy machine.
    let id = two_touches(&w, 2500);
    enroll(&w, &id, json!([{"email": "ada@example.org", "mergeFields": {"firstName": "Ada"}}]));
    w.sink.wait_for(1, Duration::from_secs(10));
    let paused = w
        .api()
        .patch(&format!("/v1/sequences/{id}"), json!({"status": "paused"}))
        .expect(200)
        .json();
    assert_eq!(paused, json!({"id": id, "status": "paused"}));
    assert_eq!(listed(&w, &id)["status"], "paused");
    // The follow-up comes due while paused: it must wait.
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(w.sink.messages().len(), 1, "nothing is sent while paused");
    let path = format!("/v1/sequences/{id}/enroll");
    w.api()
        .post(&path, json!({"contacts": [{"email": "x@example.org"}]}))
        .expect_error(400, "invalid_request");
    w.api().patch(&format!("/v1/sequences/{id}"), json!({"status": "active"})).expect(200);
    let got = w.sink.wait_for(2, Duration::from_secs(10));
    assert_eq!(got.len(), 2);
    assert_eq!(header(&got[1].data, "Subject").as_deref(), Some("Re: Hello Ada"));
    wait_stats(&w, &id, |s| s["completed"] == 1);
}

#[test]
fn a_reply_stops_the_follow_up_and_a_hard_bounce_ends_the_enrollment() {
    let w = MailWorld::start();
    w.sink.set_rcpt_reply("bob@example.net", vec!["550 5.1.1 no such user"]);
    let id = two_touches(&w, 4000);
    enroll(
        &w,
        &id,
        json!([{"email": "ada@example.org", "mergeFields": {"firstName": "Ada"}}, {"email": "bob@example.net"}]),
    );
    let got = w.sink.wait_for(1, Duration::from_secs(10));
    let original = header(&got[0].data, "Message-ID").expect("message id"); // ok: test
    let reply = format!(
        "From: ada@example.org\r\nTo: sales@alpha.test\r\nSubject: Re: Hello Ada\r\n\
         In-Reply-To: {original}\r\nReferences: {original}\r\n\r\nNot interested, thanks."
    );
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    assert!(s.mail("ada@example.org", &["sales@alpha.test"], &reply).starts_with("250"));
    let item = wait_stats(&w, &id, |s| s["replied"] == 1 && s["bounced"] == 1);
    assert_eq!(item["stats"]["active"], 0, "{item}");
    // Well past the delay (counted from the first step): no follow-up for either contact.
    std::thread::sleep(Duration::from_millis(4500));
    assert_eq!(messages_to(&w, "ada@example.org").len(), 1);
    assert!(messages_to(&w, "bob@example.net").is_empty());
    let stats = w.api().get("/v1/campaign-stats").expect(200).json();
    let row =
        stats["sequences"].as_array().and_then(|r| r.iter().find(|r| r["id"] == id)).expect("row"); // ok: test
    assert_eq!(
        (
            row["sent"].as_u64(),
            row["delivered"].as_u64(),
            row["replied"].as_u64(),
            row["bounced"].as_u64()
        ),
        (Some(2), Some(1), Some(1), Some(1)),
        "{row}"
    );
    assert_eq!(row["replyRate"], 1.0);
    assert_eq!(row["bounceRate"], 0.5);
}

#[test]
fn enrollment_rules_and_delete_cancel_what_is_scheduled() {
    let w = MailWorld::start();
    let api = w.api();
    for steps in [
        json!([]),
        json!([{"type": "delay", "delayMs": 10}, {"type": "send_email", "subject": "s", "html": "h"}]),
        json!([{"type": "send_email", "subject": "s"}]),
        json!([{"type": "send_email", "subject": "", "html": "<p>x</p>"}]),
        json!([{"type": "send_email", "subject": "s", "html": "h"}, {"type": "delay", "delayMs": 0}]),
        json!([{"type": "send_email", "subject": "s", "html": "h"}, {"type": "delay", "delayMs": "soon"}]),
        json!([{"type": "send_email", "subject": "s", "html": "h"}, {"type": "wait", "delayMs": 5}]),
        json!([{"type": "send_email", "subject": "s", "html": "h", "cc": "x@y.z"}]),
        json!("send"),
    ] {
        let body = json!({"name": "n", "from": "sales@alpha.test", "steps": steps});
        let error = api.post("/v1/sequences", body).expect_error(400, "invalid_request");
        assert!(error["message"].as_str().is_some_and(|m| m.contains("step")), "{error}");
    }
    let steps = json!([{"type": "send_email", "subject": "s", "html": "h"}]);
    api.post("/v1/sequences", json!({"name": "n", "from": "nobody@alpha.test", "steps": steps}))
        .expect_error(400, "invalid_request");
    api.post("/v1/sequences", json!({"name": "n", "from": "sales@beta.test", "steps": steps}))
        .expect_error(400, "invalid_request");

    let id = two_touches(&w, 2500);
    let path = format!("/v1/sequences/{id}/enroll");
    api.post(&path, json!({"contacts": []})).expect_error(400, "invalid_request");
    let many: Vec<Value> =
        (0..101).map(|i| json!({"email": format!("c{i}@example.org")})).collect();
    api.post(&path, json!({"contacts": many})).expect_error(400, "invalid_request");
    let first = enroll(
        &w,
        &id,
        json!([{"email": "ada@example.org"}, {"email": "grace@example.net"}, {"email": "ADA@example.org"}]),
    );
    assert_eq!((first["enrolled"].as_u64(), first["skipped"].as_u64()), (Some(2), Some(1)));
    let again = enroll(&w, &id, json!([{"email": "ada@example.org"}, {"email": "not an address"}]));
    let details = json!([
        {"email": "not an address", "reason": "invalid_address"},
        {"email": "ada@example.org", "reason": "already_enrolled"}
    ]);
    assert_eq!(
        again,
        json!({"enrolled": 0, "skipped": 2, "skippedDetails": details, "enrollmentIds": []})
    );
    w.sink.wait_for(2, Duration::from_secs(10));

    api.patch(&format!("/v1/sequences/{id}"), json!({"status": "completed"}))
        .expect_error(400, "invalid_request");
    api.patch(&format!("/v1/sequences/{id}"), json!({"status": 1}))
        .expect_error(400, "invalid_request");
    api.patch("/v1/sequences/seq_missing", json!({"status": "paused"}))
        .expect_error(404, "not_found");
    let ended = api.delete(&format!("/v1/sequences/{id}")).expect(200).json();
    assert_eq!(ended, json!({"id": id, "status": "completed", "cancelledEnrollments": 2}));
    api.post(&path, json!({"contacts": [{"email": "new@example.org"}]}))
        .expect_error(400, "invalid_request");
    api.patch(&format!("/v1/sequences/{id}"), json!({"status": "active"}))
        .expect_error(400, "invalid_request");
    let item = listed(&w, &id);
    assert_eq!(item["status"], "completed");
    assert_eq!(item["stats"]["cancelled"], 2);
    std::thread::sleep(Duration::from_millis(3500));
    assert_eq!(w.sink.messages().len(), 2, "no follow-up after the sequence was deleted");
}

#[test]
fn an_unsubscribe_from_a_step_message_cancels_the_enrollment() {
    let w = MailWorld::start();
    let id = two_touches(&w, 1500);
    enroll(&w, &id, json!([{"email": "ada@example.org", "mergeFields": {"firstName": "Ada"}}]));
    let got = w.sink.wait_for(1, Duration::from_secs(10));
    let list = header(&got[0].data, "List-Unsubscribe").expect("List-Unsubscribe"); // ok: test
    let url = list[1..].split('>').next().expect("url"); // ok: test
    let path = &url[url.find("/t/u/").expect("unsubscribe path")..]; // ok: test
    let anonymous = w.server.client(None);
    let one_click = anonymous.raw(
        "POST",
        path,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some(b"List-Unsubscribe=One-Click"),
    );
    assert_eq!(one_click.status, 200, "{}", one_click.text());
    let item = wait_stats(&w, &id, |s| s["cancelled"] == 1);
    assert_eq!(item["stats"]["active"], 0);
    std::thread::sleep(Duration::from_millis(2000));
    assert_eq!(w.sink.messages().len(), 1, "no follow-up after an unsubscribe");
    let suppressions = w.api().get("/v1/suppressions").expect(200).json();
    assert_eq!(suppressions["items"][0]["reason"], "unsubscribed", "{suppressions}");
}

#[test]
fn deleting_the_sending_mailbox_cancels_what_is_left() {
    let w = MailWorld::start();
    let id = two_touches(&w, 1000);
    enroll(&w, &id, json!([{"email": "ada@example.org", "mergeFields": {"firstName": "Ada"}}]));
    w.sink.wait_for(1, Duration::from_secs(10));
    w.api().delete("/v1/mailboxes/sales").expect(200);
    let item = wait_stats(&w, &id, |s| s["cancelled"] == 1);
    assert_eq!(item["stats"]["active"], 0);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(w.sink.messages().len(), 1, "nothing is sent from a deleted mailbox");
}

#[test]
fn a_follow_up_survives_sigkill_between_steps_and_is_sent_once() {
    let mut w = MailWorld::start();
    let id = two_touches(&w, 2000);
    enroll(&w, &id, json!([{"email": "ada@example.org", "mergeFields": {"firstName": "Ada"}}]));
    w.sink.wait_for(1, Duration::from_secs(10));
    // "Between steps": the first step's delivery is on disk. A kill between the sink's 250 and
    // that commit would deliver the first step again, as SMTP's at-least-once rule wants.
    let deadline = Instant::now() + Duration::from_secs(20);
    while w
        .api()
        .get("/v1/emails?mailbox=sales&folder=sent")
        .expect(200)
        .json()
        .as_array()
        .is_none_or(Vec::is_empty)
    {
        assert!(Instant::now() < deadline, "the first step never reached sent");
        std::thread::sleep(Duration::from_millis(20));
    }
    w.crash_and_restart();
    let got = w.sink.wait_for(2, Duration::from_secs(15));
    assert_eq!(got.len(), 2);
    wait_stats(&w, &id, |s| s["completed"] == 1);
    std::thread::sleep(Duration::from_millis(1500));
    let subjects: Vec<_> = w.sink.messages().iter().map(|m| header(&m.data, "Subject")).collect();
    assert_eq!(subjects.len(), 2, "each step is sent exactly once: {subjects:?}");
}

#[test]
fn campaign_stats_report_batches_and_reject_bad_filters() {
    let w = MailWorld::start();
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": ["ada@example.org", "grace@example.net"], "subject": "Offer", "html": "<p>Buy</p>", "type": "campaign"}))
        .expect(200)
        .json();
    let batch = sent["batchId"].as_str().expect("batch").to_owned(); // ok: test
    w.sink.wait_for(2, Duration::from_secs(10));
    let deadline = Instant::now() + Duration::from_secs(10);
    let row = loop {
        let stats = w
            .api()
            .get(&format!("/v1/campaign-stats?type=batch&batchId={batch}"))
            .expect(200)
            .json();
        assert!(stats.get("sequences").is_none());
        let row = stats["batches"][0].clone();
        if row["delivered"] == 2 || Instant::now() > deadline {
            break row;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(row["batchId"], batch.as_str());
    assert_eq!(row["domain"], "alpha.test");
    assert_eq!((row["sent"].as_u64(), row["delivered"].as_u64()), (Some(2), Some(2)), "{row}");
    assert_eq!(row["openRate"], 0.0);
    w.api().get("/v1/campaign-stats?type=everything").expect_error(400, "invalid_request");
    w.api().get("/v1/campaign-stats?batchId=batch_nope").expect_error(404, "not_found");
    w.api().get("/v1/campaign-stats?sequenceId=seq_nope").expect_error(404, "not_found");
    w.api().get("/v1/campaign-stats?domain=beta.test").expect_error(404, "not_found");
    let all = w.api().get("/v1/campaign-stats").expect(200).json();
    assert_eq!(all["sequences"], json!([]));
    assert_eq!(all["batches"].as_array().map(Vec::len), Some(1));
}
