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

/// The messages the server's queue holds, due or not (its `/metrics`).
fn queued(w: &MailWorld) -> f64 {
    let text = w.server.client(None).get("/metrics").expect(200).text();
    text.lines()
        .filter(|l| l.starts_with("edgemail_queue_depth{"))
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
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

fn patch(w: &MailWorld, id: &str, body: Value) -> crate::client::Resp {
    w.api().patch(&format!("/v1/sequences/{id}"), body)
}

fn enrollments(w: &MailWorld, id: &str) -> Vec<Value> {
    let list = w.api().get(&format!("/v1/sequences/{id}/enrollments")).expect(200).json();
    list.as_array().cloned().unwrap_or_default()
}

#[test]
fn patched_steps_reach_enrollments_that_have_not_sent_them() {
    let w = MailWorld::start();
    let steps = json!([
        {"type": "send_email", "subject": "First", "html": "<p>one</p>"},
        {"type": "delay", "delayMs": 1500},
        {"type": "send_email", "subject": "Old second", "html": "<p>old body</p>"}
    ]);
    let id = create(&w, sequence("Edited", steps));
    enroll(&w, &id, &["ed@example.org", "fay@example.org"]);
    wait_to(&w, "ed@example.org", 1);
    wait_to(&w, "fay@example.org", 1);
    // Both are past step 1 and waiting on the delay: the new step 2 is what they get.
    let new_steps = json!([
        {"type": "send_email", "subject": "First", "html": "<p>one</p>"},
        {"type": "delay", "delayMs": 1500},
        {"type": "send_email", "subject": "New second", "html": "<p>new body</p>"}
    ]);
    let r = patch(&w, &id, json!({"steps": new_steps, "name": "Edited again"})).expect(200).json();
    assert_eq!(r, json!({"id": id, "status": "active"}));
    let got = get(&w, &id);
    assert_eq!((got["steps"].clone(), got["name"].clone()), (new_steps, json!("Edited again")));
    for who in ["ed@example.org", "fay@example.org"] {
        let both = wait_to(&w, who, 2);
        assert_eq!(subject(&both[0]), "First");
        assert_eq!(subject(&both[1]), "New second");
        let body = crate::mail_world::body_text(&both[1]);
        assert!(body.contains("new body") && !body.contains("old body"), "{body}");
    }
    wait_stats(&w, &id, |s| s["completed"] == 2);

    // Refused as on create, naming the field; nothing changes.
    let bad = [
        json!({"steps": [{"type": "delay", "delayMs": 5}]}),
        json!({"steps": []}),
        json!({"steps": [{"type": "send_email", "subject": "x", "html": "<p>x</p>"},
                         {"type": "delay", "delayDays": 1, "delayHours": 2}]}),
        json!({"name": " "}),
    ];
    for body in bad {
        patch(&w, &id, body).expect_error(400, "invalid_request");
    }
    patch(&w, "seq_nothere", json!({"name": "x"})).expect(404);
    w.api().delete(&format!("/v1/sequences/{id}")).expect(200);
    patch(&w, &id, json!({"steps": [{"type": "send_email", "subject": "x", "html": "<p>x</p>"}]}))
        .expect_error(400, "invalid_request");
}

#[test]
fn removing_the_steps_ahead_completes_an_enrollment_without_sending() {
    let w = MailWorld::start();
    let steps = json!([
        {"type": "send_email", "subject": "Only", "html": "<p>one</p>"},
        {"type": "delay", "delayMs": 1200},
        {"type": "send_email", "subject": "Gone", "html": "<p>two</p>"}
    ]);
    let id = create(&w, sequence("Shrunk", steps));
    enroll(&w, &id, &["gil@example.org"]);
    wait_to(&w, "gil@example.org", 1);
    let one = json!([{"type": "send_email", "subject": "Only", "html": "<p>one</p>"}]);
    patch(&w, &id, json!({"steps": one})).expect(200);
    let item = wait_stats(&w, &id, |s| s["completed"] == 1);
    assert_eq!(item["stats"]["active"], 0, "{item}");
    std::thread::sleep(Duration::from_millis(800));
    assert_eq!(to(&w, "gil@example.org").len(), 1, "nothing after the removed steps");
}

#[test]
fn a_step_sent_while_a_patch_lands_is_the_old_or_the_new_one_whole() {
    let w = MailWorld::start();
    let version = |v: &str| {
        json!([{"type": "send_email", "subject": format!("Version {v}"),
                "html": format!("<p>body {v}</p>"), "text": format!("text {v}")}])
    };
    let id = create(&w, sequence("Raced", version("A")));
    let addresses: Vec<String> = (0..40).map(|i| format!("race{i}@example.org")).collect();
    std::thread::scope(|s| {
        let patcher = s.spawn(|| {
            for round in 0..30 {
                let v = if round % 2 == 0 { "B" } else { "A" };
                patch(&w, &id, json!({"steps": version(v)})).expect(200);
            }
        });
        for chunk in addresses.chunks(4) {
            let chunk: Vec<&str> = chunk.iter().map(String::as_str).collect();
            enroll(&w, &id, &chunk);
        }
        patcher.join().expect("patcher"); // ok: test
    });
    let mut seen = std::collections::BTreeSet::new();
    for address in &addresses {
        let got = wait_to(&w, address, 1);
        let v = subject(&got[0]).trim_start_matches("Version ").to_owned();
        let body = crate::mail_world::body_text(&got[0]);
        assert!(
            body.contains(&format!("body {v}")) && body.contains(&format!("text {v}")),
            "subject {v} with another version's body: {body}"
        );
        seen.insert(v);
    }
    assert!(!seen.is_empty());
}

#[test]
fn delays_in_hours_and_days_wait_that_long_on_the_server_clock() {
    let mut w = MailWorld::start();
    let days = create(
        &w,
        sequence(
            "Days",
            json!([
                {"type": "send_email", "subject": "Day one", "html": "<p>1</p>"},
                {"type": "delay", "delayDays": 1},
                {"type": "send_email", "subject": "Day two", "html": "<p>2</p>"}
            ]),
        ),
    );
    let hours = create(
        &w,
        sequence(
            "Hours",
            json!([
                {"type": "send_email", "subject": "Hour one", "html": "<p>1</p>"},
                {"type": "delay", "delayHours": 2},
                {"type": "send_email", "subject": "Hour three", "html": "<p>2</p>"}
            ]),
        ),
    );
    // Answers keep the unit given, with the wait it makes beside it.
    assert_eq!(
        get(&w, &days)["steps"][1],
        json!({"type": "delay", "delayMs": 86_400_000, "delayDays": 1})
    );
    assert_eq!(
        get(&w, &hours)["steps"][1],
        json!({"type": "delay", "delayMs": 7_200_000, "delayHours": 2})
    );
    // What GET answers is taken back as it is.
    let again = get(&w, &days)["steps"].clone();
    patch(&w, &days, json!({"steps": again})).expect(200);
    enroll(&w, &days, &["dora@example.org"]);
    enroll(&w, &hours, &["hal@example.org"]);
    wait_to(&w, "dora@example.org", 1);
    wait_to(&w, "hal@example.org", 1);
    let next = |id: &str| {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let e = enrollments(&w, id);
            if let (Some(at), Some(2)) = (e[0]["nextSendAt"].as_u64(), e[0]["step"].as_u64()) {
                return at - e[0]["createdAt"].as_u64().expect("createdAt"); // ok: test
            }
            assert!(Instant::now() < deadline, "never waiting on the delay: {e:?}");
            std::thread::sleep(Duration::from_millis(30));
        }
    };
    let (day_wait, hour_wait) = (next(&days), next(&hours));
    assert!((86_400_000..86_460_000).contains(&day_wait), "{day_wait}");
    assert!((7_200_000..7_260_000).contains(&hour_wait), "{hour_wait}");
    // The restarts below are crashes: a first message the sink has but whose outcome is not
    // committed yet would go again (at least once), so wait until the queue is empty.
    let deadline = Instant::now() + Duration::from_secs(20);
    while queued(&w) > 0.0 {
        assert!(Instant::now() < deadline, "the first messages never left the queue");
        std::thread::sleep(Duration::from_millis(30));
    }
    // Three hours later the hourly follow-up goes, the daily one waits; a day later it goes.
    w.restart_with_env("EDGEMAIL_TESTING_CLOCK_OFFSET", "3h");
    assert_eq!(subject(&wait_to(&w, "hal@example.org", 2)[1]), "Hour three");
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(to(&w, "dora@example.org").len(), 1, "the day has not passed");
    w.restart_with_env("EDGEMAIL_TESTING_CLOCK_OFFSET", "25h");
    assert_eq!(subject(&wait_to(&w, "dora@example.org", 2)[1]), "Day two");
}

#[test]
fn text_steps_go_as_text_plain_and_both_parts_as_alternatives() {
    let w = MailWorld::start();
    let steps = json!([
        {"type": "send_email", "subject": "Plain {{firstName|there}}",
         "text": "{{spin: Hi | Hello}} {{firstName|there}},\nno HTML here <b>at all</b>."},
        {"type": "delay", "delayMs": 300},
        {"type": "send_email", "subject": "", "html": "<p>Rich {{firstName}}</p>",
         "text": "Plain {{firstName}} & co"}
    ]);
    let id = create(&w, sequence("Text", steps.clone()));
    assert_eq!(get(&w, &id)["steps"], steps, "answers show text as given, no empty html");
    let path = format!("/v1/sequences/{id}/enroll");
    let contact =
        json!({"contacts": [{"email": "tex@example.org", "mergeFields": {"firstName": "Tex"}}]});
    w.api().post(&path, contact).expect(200);
    let got = wait_to(&w, "tex@example.org", 2);
    let first = mail_parser::MessageParser::default().parse(&got[0]).expect("parse"); // ok: test
    let ct = header(&got[0], "Content-Type").unwrap_or_default();
    assert!(ct.starts_with("text/plain"), "{ct}");
    assert!(!String::from_utf8_lossy(&got[0]).contains("text/html"), "no html part");
    let text = first.body_text(0).unwrap_or_default().into_owned();
    assert!(text.contains(" Tex,") && text.contains("no HTML here <b>at all</b>."), "{text}");
    assert!(text.starts_with("Hi Tex") || text.starts_with("Hello Tex"), "{text}");
    assert!(!String::from_utf8_lossy(&got[0]).contains("/t/o/"), "no pixel in a text mail");
    assert_eq!(subject(&got[0]), "Plain Tex");
    let second = mail_parser::MessageParser::default().parse(&got[1]).expect("parse"); // ok: test
    let ct = header(&got[1], "Content-Type").unwrap_or_default();
    assert!(ct.starts_with("multipart/alternative"), "{ct}");
    assert!(second.body_text(0).unwrap_or_default().contains("Plain Tex & co"));
    assert!(second.body_html(0).unwrap_or_default().contains("<p>Rich Tex</p>"));
}

#[test]
fn tracking_switched_off_leaves_out_pixel_links_and_footer_but_not_list_unsubscribe() {
    let w = MailWorld::start();
    let html = "<p>See <a href=\"https://example.com/offer\">the offer</a></p>";
    let steps = json!([{"type": "send_email", "subject": "Quiet", "html": html}]);
    let mut quiet = sequence("Quiet", steps.clone());
    quiet["tracking"] = json!({"opens": false, "clicks": false, "unsubscribeFooter": false});
    let quiet = create(&w, quiet);
    let loud = create(&w, sequence("Loud", steps));
    assert_eq!(
        get(&w, &quiet)["tracking"],
        json!({"opens": false, "clicks": false, "unsubscribeFooter": false})
    );
    assert_eq!(
        get(&w, &loud)["tracking"],
        json!({"opens": true, "clicks": true, "unsubscribeFooter": true})
    );
    enroll(&w, &quiet, &["q@example.org"]);
    enroll(&w, &loud, &["l@example.org"]);
    let q = wait_to(&w, "q@example.org", 1).remove(0);
    let l = wait_to(&w, "l@example.org", 1).remove(0);
    for (raw, on) in [(&q, false), (&l, true)] {
        assert!(header(raw, "List-Unsubscribe").is_some_and(|v| v.contains("/t/u/")), "always");
        assert!(header(raw, "List-Unsubscribe-Post").is_some());
        let html = crate::mail_world::html_part(raw);
        assert_eq!(html.contains("/t/o/"), on, "pixel: {html}");
        assert_eq!(html.contains("/t/c/"), on, "rewritten link: {html}");
        assert_eq!(html.contains("https://example.com/offer"), !on, "link as written: {html}");
        // The footer of both parts.
        let bodies = crate::mail_world::body_text(raw);
        assert_eq!(bodies.contains("Unsubscribe"), on, "footer: {bodies}");
    }
    // Switched back on by a PATCH: each part given false stays off, the others come back.
    patch(&w, &quiet, json!({"tracking": {"opens": false}})).expect(200);
    assert_eq!(
        get(&w, &quiet)["tracking"],
        json!({"opens": false, "clicks": true, "unsubscribeFooter": true})
    );
    patch(&w, &quiet, json!({"tracking": {"pixel": false}})).expect_error(400, "invalid_request");

    // Campaigns take the same switches; transactional mail has no tracking to switch.
    let mut campaign = crate::mail_world::basic(json!(["c@example.org"]));
    campaign["html"] = json!(html);
    campaign["type"] = json!("campaign");
    campaign["tracking"] = json!({"clicks": false, "unsubscribeFooter": false});
    w.send(campaign.clone()).expect(200);
    let c = wait_to(&w, "c@example.org", 1).remove(0);
    let ch = crate::mail_world::html_part(&c);
    assert!(ch.contains("/t/o/") && !ch.contains("/t/c/"), "{ch}");
    let ct = crate::mail_world::body_text(&c);
    assert!(!ct.contains("Unsubscribe"), "{ct}");
    assert!(header(&c, "List-Unsubscribe").is_some());
    campaign["type"] = json!("transactional");
    w.send(campaign).expect_error(400, "invalid_request");
}

/// The path of the first tracking link of `kind` (`/t/o/` or `/t/c/`) in a message's HTML.
fn tracking_path(raw: &[u8], kind: &str) -> String {
    let html = crate::mail_world::html_part(raw);
    let at = html.find(kind).unwrap_or_else(|| panic!("no {kind} link in {html}"));
    html[at..].split(['"', '\'', '>', '<', ' ', '\r', '\n']).next().unwrap_or("").to_owned()
}

#[test]
fn per_step_and_per_lead_stats_count_deliveries_opens_clicks_replies_and_bounces() {
    let w = MailWorld::start();
    w.sink.set_rcpt_reply("cat@example.net", vec!["550 5.1.1 no such user"]);
    let link = "<p><a href=\"https://example.com/x\">x</a></p>";
    let steps = json!([
        {"type": "send_email", "subject": "Step one", "html": link},
        {"type": "delay", "delayMs": 2500},
        {"type": "send_email", "subject": "", "html": link}
    ]);
    let id = create(&w, sequence("Counted", steps));
    enroll(&w, &id, &["ann@example.org", "ben@example.org", "cat@example.net"]);
    let ann = wait_to(&w, "ann@example.org", 1).remove(0);
    let ben = wait_to(&w, "ben@example.org", 1).remove(0);
    let anonymous = w.server.client(None);
    anonymous.get(&tracking_path(&ann, "/t/o/")).expect(200);
    anonymous.get(&tracking_path(&ann, "/t/o/")).expect(200);
    let click = anonymous.get(&tracking_path(&ben, "/t/c/"));
    assert!(click.status == 302 || click.status == 303, "click redirect: {}", click.status);
    let original = header(&ann, "Message-ID").expect("message id"); // ok: test
    let reply = format!(
        "From: ann@example.org\r\nTo: sales@alpha.test\r\nSubject: Re: Step one\r\n\
         In-Reply-To: {original}\r\nReferences: {original}\r\n\r\nTell me more."
    );
    let (mut s, _) = crate::smtp_client::Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    assert!(s.mail("ann@example.org", &["sales@alpha.test"], &reply).starts_with("250"));
    // Ben gets step two; Ann replied and Cat bounced, so they do not.
    wait_to(&w, "ben@example.org", 2);
    let item = wait_stats(&w, &id, |s| {
        s["completed"] == 1 && s["steps"][1]["delivered"] == 1 && s["steps"][0]["delivered"] == 2
    });
    let stats = &item["stats"];
    assert_eq!(
        stats["steps"],
        json!([
            {"index": 0, "sent": 3, "delivered": 2, "opened": 1, "clicked": 1, "replied": 1,
             "bounced": 1},
            {"index": 2, "sent": 1, "delivered": 1, "opened": 0, "clicked": 0, "replied": 0,
             "bounced": 0}
        ]),
        "{item}"
    );
    let counts = ["total", "replied", "bounced", "completed", "opened", "clicked"]
        .map(|k| stats[k].as_u64().unwrap_or(99));
    assert_eq!(counts, [3, 1, 1, 1, 1, 1], "{stats}");
    let third = 1.0 / 3.0;
    for rate in ["replyRate", "bounceRate", "openRate", "clickRate"] {
        let got = stats[rate].as_f64().unwrap_or(-1.0);
        assert!((got - third).abs() < 1e-9, "{rate} {got}");
    }
}
