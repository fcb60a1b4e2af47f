//! Per-provider shaping through real deliveries: two provider groups on two sinks (the gmail
//! group by its MX suffix, and example.org's MX host on its own); a rate answer from the first
//! pauses that group only, its mail waits without attempts and goes after the pause.

use std::net::Ipv4Addr;
use std::time::Duration;

use serde_json::Value;

use crate::mail_world::{MailWorld, basic};
use crate::smtp_sink::Sink;

/// Long enough for the other group's deliveries to happen inside it on a slow machine.
const PAUSE: &str = "4s";

fn send_one(w: &MailWorld, to: &str) -> String {
    let sent = w.send(basic(Value::from(to))).expect(200).json();
    sent["messageId"].as_str().expect("messageId").to_owned() // ok: test
}

fn delivery(email: &Value) -> &Value {
    &email["deliveries"][0]
}

fn scrape(w: &MailWorld, series: &str) -> f64 {
    let text = w.server.client(None).get("/metrics").expect(200).text();
    text.lines().find_map(|l| l.strip_prefix(series)?.trim().parse().ok()).unwrap_or(-1.0)
}

#[test]
fn a_throttling_answer_pauses_its_group_while_another_keeps_delivering() {
    let w = MailWorld::start_with(&[("EDGEMAIL_SHAPING_PAUSE_INITIAL", PAUSE)], &[]);
    // The gmail group: an MX under google.com, served by a second sink on 127.0.0.2.
    let gmail = Sink::start_on(Ipv4Addr::new(127, 0, 0, 2), w.sink.port());
    w.dns.add_mx("gmailish.test", 5, "alt1.gmail-smtp-in.l.google.com");
    w.dns.add_a("alt1.gmail-smtp-in.l.google.com", Ipv4Addr::new(127, 0, 0, 2));
    gmail.set_rcpt_reply(
        "first@gmailish.test",
        vec!["421 4.7.28 Our system has detected an unusual rate of mail, try later"],
    );
    let pauses = r#"edgemail_delivery_pauses_total{group="gmail"}"#;
    assert_eq!(scrape(&w, pauses), 0.0);

    let first = send_one(&w, "first@gmailish.test");
    let e = w.wait_email(&first, |e| delivery(e)["attempts"] == 1);
    assert_eq!(delivery(&e)["status"], "deferred", "{e}");
    assert!(delivery(&e)["lastResponse"].as_str().is_some_and(|r| r.starts_with("421")), "{e}");
    let connections = gmail.connections();
    assert_eq!(scrape(&w, pauses), 1.0);

    // While the group is paused: its new mail is held without an attempt, and the other
    // group's mail goes out.
    let second = send_one(&w, "second@gmailish.test");
    let others: Vec<String> =
        (0..3).map(|i| send_one(&w, &format!("user{i}@example.org"))).collect();
    w.sink.wait_for(3, Duration::from_secs(10));
    for id in &others {
        w.wait_status(id, "delivered");
    }
    let held = w.api().get(&format!("/v1/emails/{second}")).expect(200).json();
    assert_eq!(delivery(&held)["attempts"], 0, "held mail is not attempted: {held}");
    assert_eq!(gmail.connections(), connections, "no new connection to a paused group");
    assert!(gmail.messages().is_empty());

    // After the pause both go, the held one on its first attempt.
    let got = gmail.wait_for(2, Duration::from_secs(20));
    let mut rcpts: Vec<String> = got.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    rcpts.sort();
    assert_eq!(rcpts, ["first@gmailish.test", "second@gmailish.test"]);
    let e = w.wait_status(&second, "delivered");
    assert_eq!(delivery(&e)["attempts"], 1, "{e}");
    let e = w.wait_status(&first, "delivered");
    assert_eq!(delivery(&e)["attempts"], 2, "{e}");
    assert_eq!(scrape(&w, pauses), 1.0);
}

#[test]
fn a_refused_greeting_pauses_the_group_and_its_other_hosts_are_not_tried() {
    let w = MailWorld::start_with(&[("EDGEMAIL_SHAPING_PAUSE_INITIAL", "1h")], &[]);
    let busy = Sink::start_on(Ipv4Addr::new(127, 0, 0, 3), w.sink.port());
    busy.set_greeting("421 4.7.0 Too many concurrent SMTP connections");
    w.dns.add_mx("busy.test", 10, "mx1.busy.test");
    w.dns.add_mx("busy.test", 20, "mx2.busy.test");
    w.dns.add_a("mx1.busy.test", Ipv4Addr::new(127, 0, 0, 3));
    w.dns.add_a("mx2.busy.test", Ipv4Addr::LOCALHOST);
    let id = send_one(&w, "someone@busy.test");
    let e = w.wait_email(&id, |e| delivery(e)["attempts"] == 1);
    assert_eq!(delivery(&e)["status"], "deferred", "{e}");
    let reply = delivery(&e)["lastResponse"].as_str().unwrap_or("");
    assert!(reply.starts_with("421 4.7.0 Too many"), "{e}");
    assert_eq!(busy.connections(), 1);
    assert_eq!(w.sink.connections(), 0, "the second MX of a throttling group is not tried");
    // Paused for an hour: a second message waits without an attempt.
    let second = send_one(&w, "other@busy.test");
    std::thread::sleep(Duration::from_millis(500));
    let held = w.api().get(&format!("/v1/emails/{second}")).expect(200).json();
    assert_eq!(delivery(&held)["attempts"], 0, "{held}");
    assert_eq!(busy.connections(), 1);
}
