//! One inbox for replies (extensions.md, "Outreach"): answers to sequence mail arriving over
//! SMTP are listed by `GET /v1/replies` newest first with their classification (only the human
//! one counted as replied), paged by cursor; `PATCH .../enrollments/{enrollmentId} {label}` sets
//! a lead label that the enrollment list and the reply records show.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::mail_world::{MailWorld, header};
use crate::smtp_client::Talk;

fn corpus(name: &str) -> String {
    let path = format!("{}/tests/it/autoreply_corpus/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).expect("corpus file") // ok: test
}

fn answer(w: &MailWorld, template: &str, lead: &str, parent: &str) {
    let raw = template
        .replace("{{FROM}}", lead)
        .replace("{{TO}}", "sales@alpha.test")
        .replace("{{PARENT}}", parent)
        .replace("{{SUBJECT}}", "Hello");
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    assert!(s.mail(lead, &["sales@alpha.test"], &raw).starts_with("250"));
}

fn replies(w: &MailWorld, query: &str) -> (Vec<Value>, Option<String>) {
    let r = w.api().get(&format!("/v1/replies{query}")).expect(200);
    let link = r.header("link").map(str::to_owned);
    (r.json().as_array().cloned().unwrap_or_default(), link)
}

#[test]
fn replies_from_every_mailbox_meet_with_classification_and_labels() {
    let w = MailWorld::start();
    let a = w.api();
    let steps = json!([
        {"type": "send_email", "subject": "Hello", "html": "<p>Hi</p>"},
        {"type": "delay", "delayMs": 600000},
        {"type": "send_email", "subject": "", "html": "<p>Again</p>"}
    ]);
    let body = json!({"name": "Inbox", "from": "sales@alpha.test", "steps": steps});
    let id = a.post("/v1/sequences", body).expect(201).json()["id"].as_str().map(str::to_owned);
    let id = id.expect("id"); // ok: test
    let leads = ["human@example.org", "away@example.org"];
    let contacts: Vec<Value> = leads.iter().map(|l| json!({"email": l})).collect();
    let done = a.post(&format!("/v1/sequences/{id}/enroll"), json!({"contacts": contacts}));
    let enrollment_ids = done.expect(200).json()["enrollmentIds"].clone();
    w.sink.wait_for(2, Duration::from_secs(15));
    assert_eq!(replies(&w, "").0, Vec::<Value>::new(), "nothing answered yet");
    let parent = |lead: &str| {
        let all = w.sink.messages();
        let m = all.into_iter().find(|m| m.rcpt_to.iter().any(|r| r == lead)).expect("sent"); // ok: test
        header(&m.data, "Message-ID").expect("Message-ID") // ok: test
    };
    answer(&w, &corpus("reply--en-quotes-out-of-office.eml"), leads[0], &parent(leads[0]));
    std::thread::sleep(Duration::from_millis(5));
    answer(&w, &corpus("out_of_office--exchange-en.eml"), leads[1], &parent(leads[1]));

    let deadline = Instant::now() + Duration::from_secs(15);
    let items = loop {
        let (items, _) = replies(&w, "");
        if items.len() == 2 {
            break items;
        }
        assert!(Instant::now() < deadline, "replies never listed: {items:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    // Newest first: the out-of-office notice came last.
    assert_eq!(items[0]["classification"], "out_of_office", "{items:?}");
    assert_eq!(items[1]["classification"], "reply", "{items:?}");
    for (item, lead, enrollment) in
        [(&items[0], leads[1], &enrollment_ids[1]), (&items[1], leads[0], &enrollment_ids[0])]
    {
        assert!(item["from"].as_str().is_some_and(|f| f.contains(lead)), "{item}");
        assert_eq!(item["mailbox"], "sales@alpha.test");
        assert_eq!(item["sequenceId"], id.as_str());
        assert_eq!(&item["enrollmentId"], enrollment);
        assert!(item["subject"].as_str().is_some_and(|s| s.contains("Hello")), "{item}");
        let email =
            a.get(&format!("/v1/emails/{}", item["emailId"].as_str().unwrap_or(""))).expect(200);
        assert_eq!(email.json()["id"], item["emailId"]);
    }
    let list = a.get("/v1/sequences").expect(200).json();
    let stats = &list[0]["stats"];
    assert_eq!((stats["replied"].clone(), stats["autoReplied"].clone()), (json!(1), json!(1)));

    // Paging: one at a time, by the Link header's cursor.
    let (first, link) = replies(&w, "?limit=1");
    assert_eq!(first, items[..1]);
    let link = link.expect("a Link to the next page"); // ok: test
    let next = link.split(['<', '>']).nth(1).expect("a URL in the Link"); // ok: test
    let (second, more) = replies(&w, &next[next.find('?').unwrap_or(0)..]);
    assert_eq!((second, more), (items[1..].to_vec(), None));

    // Labels: on the enrollment list and on the enrollment's replies.
    let human = enrollment_ids[0].as_str().expect("id").to_owned(); // ok: test
    let path = format!("/v1/sequences/{id}/enrollments/{human}");
    let done = a.patch(&path, json!({"label": "meeting_booked"})).expect(200).json();
    assert_eq!(done["label"], "meeting_booked");
    assert_eq!(done["status"], "replied");
    let own = a.patch(&path, json!({"label": "Call back in Q3"})).expect(200).json();
    assert_eq!(own["label"], "Call back in Q3");
    let listed = a.get(&format!("/v1/sequences/{id}/enrollments")).expect(200).json();
    let e = listed.as_array().and_then(|l| l.iter().find(|e| e["id"] == human.as_str()).cloned());
    assert_eq!(e.map(|e| e["label"].clone()), Some(json!("Call back in Q3")));
    let (items, _) = replies(&w, "");
    assert_eq!(items[1]["label"], "Call back in Q3");
    assert!(items[0].get("label").is_none(), "{}", items[0]);
    let long = "x".repeat(41);
    a.patch(&path, json!({"label": long})).expect_error(400, "invalid_request");
    a.patch(&path, json!({"label": ""})).expect_error(400, "invalid_request");
    let unknown = format!("/v1/sequences/{id}/enrollments/enr_nope");
    a.patch(&unknown, json!({"label": "interested"})).expect_error(404, "not_found");
    let wrong_sequence = format!("/v1/sequences/seq_nope/enrollments/{human}");
    a.patch(&wrong_sequence, json!({"label": "interested"})).expect_error(404, "not_found");
    let cleared = a.patch(&path, json!({"label": null})).expect(200).json();
    assert_eq!(cleared["label"], Value::Null);
}
