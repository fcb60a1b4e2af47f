//! Sequences and what delivery tells them: a recipient the queue gives up on ends its enrollment
//! as `bounced`, and a message from the contact to the sending mailbox is a reply even without
//! threading headers.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mail_world::MailWorld;
use crate::smtp_client::Talk;

/// send, delay `ms`, send.
fn two_touches(w: &MailWorld, ms: u64) -> String {
    let steps = json!([
        {"type": "send_email", "subject": "Hello", "html": "<p>Hi</p>"},
        {"type": "delay", "delayMs": ms},
        {"type": "send_email", "subject": "", "html": "<p>Following up.</p>"}
    ]);
    let body = json!({"name": "Follow-up", "from": "sales@alpha.test", "steps": steps});
    let created = w.api().post("/v1/sequences", body).expect(201).json();
    created["id"].as_str().expect("id").to_owned() // ok: test
}

fn enroll(w: &MailWorld, id: &str, email: &str) {
    let body = json!({"contacts": [{"email": email}]});
    let r = w.api().post(&format!("/v1/sequences/{id}/enroll"), body).expect(200).json();
    assert_eq!(r["enrolled"], 1, "{r}");
}

fn wait_stats(w: &MailWorld, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let all = w.api().get("/v1/sequences").expect(200).json();
        let item = all.as_array().and_then(|a| a.iter().find(|s| s["id"] == id).cloned());
        let item = item.expect("listed"); // ok: test
        if done(&item["stats"]) {
            return item;
        }
        assert!(Instant::now() < deadline, "stats never settled: {item}\n{}", w.server.log());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn sent_to(w: &MailWorld, address: &str) -> usize {
    w.sink.messages().iter().filter(|m| m.rcpt_to.iter().any(|r| r == address)).count()
}

#[test]
fn a_delivery_that_fails_ends_the_enrollment_as_bounced() {
    let w = MailWorld::start_with(&[("EDGEMAIL_DELIVERY_MAX_AGE", "1s")], &[]);
    w.dns.add_mx("dead.example.org", 10, "mx.dead.example.org");
    w.dns.add_a("mx.dead.example.org", std::net::Ipv4Addr::LOCALHOST);
    w.sink.set_rcpt_reply("x@dead.example.org", vec!["421 4.4.2 busy"; 50]);
    let id = two_touches(&w, 4000);
    enroll(&w, &id, "x@dead.example.org");
    let item = wait_stats(&w, &id, |s| s["bounced"] == 1);
    assert_eq!(
        (item["stats"]["active"].clone(), item["stats"]["completed"].clone()),
        (json!(0), json!(0))
    );
    // Past the delay (counted from the first step): the follow-up is never queued.
    std::thread::sleep(Duration::from_millis(4000));
    let item = wait_stats(&w, &id, |_| true);
    assert_eq!(item["stats"]["bounced"], 1, "{item}");
    let emails = w.api().get("/v1/emails?mailbox=sales@alpha.test&folder=sent").expect(200).json();
    let steps = emails.as_array().map_or(0, |a| a.len());
    assert_eq!(steps, 1, "no follow-up after the failure: {emails}");
}

#[test]
fn a_message_from_the_contact_without_threading_headers_is_a_reply() {
    let w = MailWorld::start();
    let id = two_touches(&w, 2500);
    enroll(&w, &id, "ada@example.org");
    w.sink.wait_for(1, Duration::from_secs(10));
    // A fresh message, as a person writes one: no In-Reply-To, no References, another subject.
    let fresh = "From: Ada <ada@example.org>\r\nTo: sales@alpha.test\r\nSubject: Question\r\n\
                 Message-ID: <fresh-1@example.org>\r\n\r\nCan we talk tomorrow?";
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    assert!(s.mail("ada@example.org", &["sales@alpha.test"], fresh).starts_with("250"));
    let item = wait_stats(&w, &id, |s| s["replied"] == 1);
    assert_eq!(item["stats"]["active"], 0, "{item}");
    std::thread::sleep(Duration::from_millis(3000));
    assert_eq!(sent_to(&w, "ada@example.org"), 1, "the follow-up is not sent after a reply");
}

#[test]
fn a_follow_up_waits_until_the_message_before_it_is_delivered() {
    let w = MailWorld::start_with(&[("EDGEMAIL_DELIVERY_RETRY_INITIAL", "1s")], &[]);
    // The first two attempts are deferred; the third is taken.
    w.sink.set_rcpt_reply("slow@example.org", vec!["451 4.3.0 try again later"; 2]);
    let id = two_touches(&w, 200);
    enroll(&w, &id, "slow@example.org");
    // Messages still being delivered are in the outbox, then in sent.
    let sent = || {
        let mut all = Vec::new();
        for folder in ["outbox", "sent"] {
            let path = format!("/v1/emails?mailbox=sales@alpha.test&folder={folder}");
            all.extend(
                w.api().get(&path).expect(200).json().as_array().cloned().unwrap_or_default(),
            );
        }
        all
    };
    let deadline = Instant::now() + Duration::from_secs(10);
    let first = loop {
        let list = sent();
        if let Some(first) = list.iter().find(|e| e["status"] == "deferred") {
            break first["id"].as_str().expect("id").to_owned();
        }
        assert!(Instant::now() < deadline, "the first step was never deferred: {list:?}");
        std::thread::sleep(Duration::from_millis(20));
    };
    // The delay has long passed, but the first message is still being retried: no follow-up.
    std::thread::sleep(Duration::from_millis(700));
    let list = sent();
    assert_eq!(list.len(), 1, "the follow-up went while the first was deferred: {list:?}");
    assert_eq!(sent_to(&w, "slow@example.org"), 0);

    // Once the first is delivered, the follow-up goes, after it.
    let got = w.sink.wait_for(2, Duration::from_secs(20));
    let subjects: Vec<String> = got
        .iter()
        .map(|m| crate::mail_world::header(&m.data, "Subject").unwrap_or_default())
        .collect();
    assert_eq!(subjects, ["Hello", "Re: Hello"]);
    let delivered = w.api().get(&format!("/v1/emails/{first}")).expect(200).json();
    assert_eq!(delivered["status"], "delivered", "{delivered}");
    let delivered_at = delivered["deliveries"][0]["updatedAt"].as_u64().expect("updatedAt");
    let list = sent();
    let second = list.iter().find(|e| e["id"] != first.as_str()).expect("the follow-up");
    let queued_at = second["createdAt"].as_u64().expect("createdAt");
    assert!(queued_at >= delivered_at, "queued at {queued_at}, before {delivered_at}");
    wait_stats(&w, &id, |s| s["completed"] == 1);
}
