//! `PATCH /v1/mailboxes/{address}`: validation, and the daily cap and minimum gap the queue keeps
//! for a mailbox's campaign, sequence and warmup sends, through real deliveries to the sink.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};

use crate::harness::World;
use crate::mail_world::{MailWorld, basic};

const DAY_MS: u64 = 86_400_000;

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

fn ids(resp: &Value) -> Vec<String> {
    let list = resp["messageIds"].as_array().expect("messageIds"); // ok: test
    list.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
}

fn campaign(w: &MailWorld, to: &[&str]) -> Vec<String> {
    let body = json!({"from": "sales@alpha.test", "to": to, "subject": "News",
                      "html": "<p>News</p>", "type": "campaign"});
    ids(&w.send(body).expect(200).json())
}

#[test]
fn patch_validates_each_field_and_refuses_unknown_ones() {
    let w = World::start();
    let c = w.alpha();
    c.post("/v1/mailboxes", json!({"address": "sales"})).expect(201);
    let bad = [
        (json!({"dailyLimit": 0}), "dailyLimit"),
        (json!({"dailyLimit": -3}), "dailyLimit"),
        (json!({"dailyLimit": "many"}), "dailyLimit"),
        (json!({"dailyLimit": 1_000_000}), "dailyLimit"),
        (json!({"minGapMs": 90_000_000u64}), "minGapMs"),
        (json!({"minGapMs": 1.5}), "minGapMs"),
        (json!({"displayName": "two\nlines"}), "displayName"),
        (json!({"displayName": 5}), "displayName"),
        (json!({"dailyLimitt": 5}), "dailyLimitt"),
    ];
    for (body, field) in bad {
        let err = c.patch("/v1/mailboxes/sales", body.clone()).expect_error(400, "invalid_request");
        let message = err["message"].as_str().unwrap_or("");
        assert!(message.contains(field), "{body}: {message}");
    }
    c.patch("/v1/mailboxes/nobody", json!({"dailyLimit": 5})).expect_error(404, "not_found");
    c.patch("/v1/mailboxes/sales@beta.test", json!({"dailyLimit": 5}))
        .expect_error(404, "not_found");

    let m = c
        .patch("/v1/mailboxes/sales@alpha.test", json!({"displayName": "Sales", "dailyLimit": 20}))
        .expect(200)
        .json();
    assert_eq!((m["displayName"].clone(), m["dailyLimit"].clone()), (json!("Sales"), json!(20)));
    assert_eq!(m["minGapMs"], Value::Null, "{m}");
    // JSON Schema counts 500.0 and 5e2 as integers, and so does the server.
    let m = c.patch("/v1/mailboxes/sales", json!({"minGapMs": 5e2})).expect(200).json();
    assert_eq!(m["minGapMs"], json!(500), "{m}");
    let m = c.patch("/v1/mailboxes/sales", json!({"minGapMs": 500})).expect(200).json();
    assert_eq!((m["displayName"].clone(), m["dailyLimit"].clone()), (json!("Sales"), json!(20)));
    assert_eq!(m["minGapMs"], 500, "{m}");
    let listed = c.get("/v1/mailboxes").expect(200).json();
    assert_eq!(listed[0]["dailyLimit"], 20, "{listed}");
    let m = c.patch("/v1/mailboxes/sales", json!({"dailyLimit": null, "displayName": ""}));
    let m = m.expect(200).json();
    assert_eq!((m["dailyLimit"].clone(), m["displayName"].clone()), (Value::Null, Value::Null));
}

#[test]
fn over_the_daily_cap_campaign_mail_waits_for_the_next_utc_day() {
    let w = MailWorld::start();
    w.api().patch("/v1/mailboxes/sales", json!({"dailyLimit": 2})).expect(200);
    let to = ["a@example.org", "b@example.org", "c@example.org", "d@example.org", "e@example.net"];
    let sent = campaign(&w, &to);
    // Transactional mail is not counted, nor held.
    let receipt = w.send(basic(json!("t@example.org"))).expect(200).json();
    let transactional = receipt["messageId"].as_str().expect("messageId").to_owned(); // ok: test
    w.wait_status(&transactional, "delivered");

    let tomorrow = (now_ms() / DAY_MS + 1) * DAY_MS;
    let mut delivered = 0;
    for id in &sent {
        let e = w.wait_email(id, |e| {
            e["status"] == "delivered" || e["nextAttemptAt"].as_u64().is_some_and(|t| t >= tomorrow)
        });
        if e["status"] == "delivered" {
            delivered += 1;
        } else {
            assert_eq!(e["status"], "queued", "waiting mail is not dropped: {e}");
            assert_eq!(e["deliveries"][0]["attempts"], 0, "{e}");
        }
    }
    assert_eq!(delivered, 2, "the cap lets two through today");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(w.sink.messages().len(), 3, "two campaign copies and the transactional one");
}

/// The day boundary, on the server's clock (`testing.clock_offset`) rather than by waiting for a
/// midnight: at noon of a UTC day two campaign messages go and the third is booked for the first
/// moment of the next day; half a day later on that clock it goes.
#[test]
fn the_daily_cap_holds_the_third_message_until_the_next_utc_day() {
    const OFFSET: &str = "EDGEMAIL_TESTING_CLOCK_OFFSET";
    let real = now_ms();
    let noon = (real / DAY_MS + 1) * DAY_MS + DAY_MS / 2;
    let offset = noon - real;
    let mut w = MailWorld::start_with(&[(OFFSET, &format!("{offset}ms"))], &[]);
    w.api().patch("/v1/mailboxes/sales", json!({"dailyLimit": 2})).expect(200);
    let sent = campaign(&w, &["a@example.org", "b@example.org", "c@example.org"]);
    let midnight = (noon / DAY_MS + 1) * DAY_MS;
    let mut waiting = Vec::new();
    for id in &sent {
        let e = w.wait_email(id, |e| {
            e["status"] == "delivered" || e["nextAttemptAt"].as_u64().is_some_and(|t| t >= midnight)
        });
        if e["status"] != "delivered" {
            assert_eq!(e["nextAttemptAt"], midnight, "booked for the next UTC day: {e}");
            assert_eq!(e["deliveries"][0]["attempts"], 0, "{e}");
            waiting.push(id.clone());
        }
    }
    assert_eq!(waiting.len(), 1, "two go today, the third waits");
    assert_eq!(w.sink.wait_for(2, Duration::from_secs(5)).len(), 2);

    // Twelve hours later on the server's clock: the next UTC day has begun.
    w.restart_with_env(OFFSET, &format!("{}ms", offset + DAY_MS / 2));
    let e = w.wait_status(&waiting[0], "delivered");
    assert_eq!(e["deliveries"][0]["attempts"], 1, "{e}");
    assert_eq!(w.sink.wait_for(3, Duration::from_secs(5)).len(), 3);
}

#[test]
fn the_minimum_gap_spaces_a_mailboxs_sends() {
    let w = MailWorld::start();
    let gap = 60_000;
    w.api().patch("/v1/mailboxes/sales", json!({"minGapMs": gap})).expect(200);
    let start = now_ms();
    let sent = campaign(&w, &["a@example.org", "b@example.org", "c@example.org"]);
    let mut slots = Vec::new();
    for id in &sent {
        let later = |e: &Value| e["nextAttemptAt"].as_u64().is_some_and(|t| t >= start + gap);
        let e = w.wait_email(id, |e| e["status"] == "delivered" || later(e));
        if e["status"] != "delivered" {
            slots.push(e["nextAttemptAt"].as_u64().unwrap_or(0));
        }
    }
    assert_eq!(slots.len(), 2, "one goes now, the others wait: {slots:?}");
    slots.sort();
    assert!(slots[0] + gap <= slots[1], "slots {gap} ms apart: {slots:?}");
    assert!(slots[1] >= start + 2 * gap, "the last waits two gaps: {slots:?}");
    assert_eq!(w.sink.wait_for(1, Duration::from_secs(5)).len(), 1);
}
