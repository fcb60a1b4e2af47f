//! `POST /v1/send` end to end: screening, the durable queue, SMTP delivery to a sink on
//! 127.0.0.1 found through a test DNS server, DKIM, retries, bounces, tracking, scheduling.

use std::time::Duration;

use serde_json::json;

use crate::mail_world::{MailWorld, basic, body_text, header, html_part, verify_dkim};

#[test]
fn a_transactional_message_arrives_once_to_all_recipients_signed() {
    let w = MailWorld::start();
    let sent = w
        .send(basic(json!("ada@example.org, grace@example.org\nlinus@example.net")))
        .expect(200)
        .json();
    assert_eq!(sent["status"], "queued");
    let id = sent["messageId"].as_str().expect("id").to_owned();
    let email = w.wait_status(&id, "delivered");
    assert_eq!(email["folder"], "sent");
    for d in email["deliveries"].as_array().expect("deliveries") {
        assert_eq!(d["status"], "delivered", "{email}");
        assert_eq!(d["attempts"], 1);
        assert!(d["lastResponse"].as_str().is_some_and(|r| r.starts_with("250")), "{d}");
    }
    // One transaction per recipient, each with its own bounce address (a DSN can then speak
    // only for the recipient it was issued for).
    let got = w.sink.wait_for(3, Duration::from_secs(10));
    let bounce_addresses: std::collections::HashSet<&str> =
        got.iter().map(|m| m.mail_from.as_str()).collect();
    assert_eq!(bounce_addresses.len(), 3, "{bounce_addresses:?}");
    let mut rcpts: Vec<String> = got.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    rcpts.sort();
    assert_eq!(rcpts, ["ada@example.org", "grace@example.org", "linus@example.net"]);
    let raw = &got[0].data;
    assert_eq!(header(raw, "From").as_deref(), Some("<sales@alpha.test>"));
    assert_eq!(
        header(raw, "To").as_deref(),
        Some("<ada@example.org>, <grace@example.org>, <linus@example.net>")
    );
    assert_eq!(header(raw, "MIME-Version").as_deref(), Some("1.0"));
    assert!(header(raw, "Date").is_some());
    let message_id = header(raw, "Message-ID").expect("Message-ID");
    assert!(message_id.ends_with("@alpha.test>"), "{message_id}");
    assert_eq!(email["messageId"], message_id);
    assert!(header(raw, "Content-Type").is_some_and(|c| c.starts_with("multipart/alternative")));
    // The text part is derived from the HTML.
    let text = body_text(raw);
    assert!(text.contains("Hi there"), "{text}");
    assert!(got[0].mail_from.starts_with("bounces+") && got[0].mail_from.ends_with("@alpha.test"));
    let results = verify_dkim(&w.dns, raw);
    assert_eq!(results.len(), 2, "{results:?}");
    assert!(results.iter().all(|(_, r)| r == "Pass"), "{results:?}");
    assert!(results.iter().any(|(a, _)| a.contains("Ed25519")), "{results:?}");
    // Nothing is sent twice.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(w.sink.messages().len(), 3);
}

#[test]
fn the_display_name_of_the_mailbox_is_in_from() {
    let w = MailWorld::start();
    w.api()
        .post("/v1/mailboxes", json!({"address": "ceo", "displayName": "Ada Lovelace"}))
        .expect(201);
    let body = json!({"from": "ceo@alpha.test", "to": "ada@example.org", "subject": "Hi", "text": "Plain"});
    w.send(body).expect(200);
    let got = w.sink.wait_for(1, Duration::from_secs(10));
    assert_eq!(header(&got[0].data, "From").as_deref(), Some("\"Ada Lovelace\" <ceo@alpha.test>"));
    assert!(header(&got[0].data, "Content-Type").is_some_and(|c| c.starts_with("text/plain")));
    assert!(header(&got[0].data, "List-Unsubscribe").is_none(), "transactional mail is not a list");
}

#[test]
fn many_messages_to_one_destination_reuse_connections() {
    let w = MailWorld::start();
    for i in 0..30 {
        w.send(json!({"from": "sales@alpha.test", "to": format!("u{i}@example.org"), "subject": "x", "text": "y"}))
            .expect(200);
    }
    w.sink.wait_for(30, Duration::from_secs(20));
    assert!(w.sink.connections() <= 8, "{} connections for 30 messages", w.sink.connections());
}

/// The first URL in `text` starting with `prefix`, cut at a quote, bracket or whitespace.
fn find_url(text: &str, prefix: &str) -> String {
    let at = text.find(prefix).unwrap_or_else(|| panic!("no {prefix} in {text}"));
    text[at..]
        .split(['"', '\'', '>', '<', ' ', '\r', '\n'])
        .next()
        .unwrap_or("")
        .replace("&amp;", "&")
}

/// The path and query of an absolute URL on the server.
fn path_of(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.find('/').map_or("/".to_owned(), |at| rest[at..].to_owned())
}

#[test]
fn a_campaign_is_one_tracked_message_per_recipient_and_unsubscribe_blocks_the_next_send() {
    let w = MailWorld::start();
    let html = "<html><body><p>New <a href=\"https://shop.example.com/autumn?x=1&amp;y=2\">collection</a></p></body></html>";
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": ["ada@example.org", "grace@example.net"],
                     "subject": "Autumn", "html": html, "type": "campaign"}))
        .expect(200)
        .json();
    assert_eq!(sent["status"], "queued");
    assert!(sent["batchId"].as_str().is_some_and(|b| !b.is_empty()));
    let ids: Vec<String> = sent["messageIds"]
        .as_array()
        .expect("ids")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    assert_eq!(ids.len(), 2);
    let got = w.sink.wait_for(2, Duration::from_secs(10));
    assert!(got.iter().all(|m| m.rcpt_to.len() == 1), "one message per recipient");
    let message_ids: Vec<_> = got.iter().map(|m| header(&m.data, "Message-ID")).collect();
    assert_ne!(message_ids[0], message_ids[1]);
    let to_ada = got.iter().find(|m| m.rcpt_to[0] == "ada@example.org").expect("ada's copy");
    let raw = &to_ada.data;
    let list = header(raw, "List-Unsubscribe").expect("List-Unsubscribe");
    assert!(list.contains("/t/u/") && list.contains("mailto:unsubscribe@alpha.test"), "{list}");
    assert_eq!(header(raw, "List-Unsubscribe-Post").as_deref(), Some("List-Unsubscribe=One-Click"));
    assert!(
        verify_dkim(&w.dns, raw).iter().all(|(_, r)| r == "Pass"),
        "signed with the unsubscribe headers"
    );
    let body = html_part(raw);
    assert!(!body.contains("shop.example.com"), "links are rewritten: {body}");
    assert!(
        body_text(raw).contains("Unsubscribe: http://127.0.0.1:"),
        "the text part has the link too"
    );

    let ada_id = ids
        .iter()
        .find(|id| w.api().get(&format!("/v1/emails/{id}")).json()["to"][0] == "ada@example.org")
        .expect("ada")
        .clone();
    w.wait_status(&ada_id, "delivered");
    let anonymous = w.server.client(None);
    // Open: the pixel.
    let pixel_at = body.find("<img src=\"").expect("pixel");
    let open_url = find_url(&body[pixel_at..], "http");
    assert!(open_url.contains("/t/o/"), "{open_url}");
    let resp = anonymous.get(&path_of(&open_url)).expect(200);
    assert_eq!(resp.header("content-type"), Some("image/gif"));
    // Click: redirected to the original link, exactly.
    let click = anonymous.get(&path_of(&find_url(&body, "http://127.0.0.1:"))).expect(302);
    assert_eq!(click.header("location"), Some("https://shop.example.com/autumn?x=1&y=2"));
    // A forged or altered token goes nowhere.
    anonymous.get("/t/c/aHR0cHM6Ly9ldmlsLmV4YW1wbGU.AAAA").expect_error(404, "not_found");
    let tracking =
        w.api().get(&format!("/v1/emails/{ada_id}")).expect(200).json()["tracking"].clone();
    assert!(tracking["opens"].as_u64() >= Some(1), "{tracking}");
    assert_eq!(tracking["clicks"], 1, "{tracking}");
    // The unsubscribe page asks first; the one-click POST unsubscribes at once.
    let unsubscribe = path_of(list[1..].split('>').next().expect("url"));
    let page = anonymous.get(&unsubscribe).expect(200);
    assert!(page.text().contains("<form method=\"post\""));
    let ok = anonymous.raw(
        "POST",
        &unsubscribe,
        &[("Content-Type", "application/x-www-form-urlencoded")],
        Some(b"List-Unsubscribe=One-Click"),
    );
    assert_eq!(ok.status, 200, "{}", ok.text());
    let again = w.send(basic(json!("ada@example.org"))).expect_error(422, "unprocessable_entity");
    assert_eq!(again["blocked"][0]["reason"], "unsubscribed", "{again}");
    let tracking = w.api().get(&format!("/v1/emails/{ada_id}")).json()["tracking"].clone();
    assert!(tracking["unsubscribedAt"].is_u64(), "{tracking}");
}

#[test]
fn refused_recipients_are_reported_partially_or_with_422() {
    let w = MailWorld::start();
    let mixed = json!([
        "ada@example.org",
        "not-an-address",
        "x@mailinator.com",
        "y@nowhere.example.org",
        "z@nullmx.example.com"
    ]);
    w.dns.add_mx("nowhere.example.org", 10, "mx.example.org"); // exists, so only its sibling below is NXDOMAIN
    w.dns.remove("nowhere.example.org");
    let body = json!({"from": "sales@alpha.test", "to": mixed, "subject": "s", "text": "t", "type": "campaign"});
    let sent = w.send(body).expect(200).json();
    assert_eq!(sent["messageIds"].as_array().map(Vec::len), Some(1), "{sent}");
    let reasons: Vec<(String, String)> = sent["blocked"]
        .as_array()
        .expect("blocked")
        .iter()
        .map(|b| {
            (
                b["email"].as_str().unwrap_or("").to_owned(),
                b["reason"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    assert_eq!(
        reasons,
        [
            ("not-an-address".to_owned(), "invalid_address".to_owned()),
            ("x@mailinator.com".to_owned(), "disposable_address".to_owned()),
            ("y@nowhere.example.org".to_owned(), "no_mx".to_owned()),
            ("z@nullmx.example.com".to_owned(), "no_mx".to_owned()),
        ]
    );
    let all_bad = json!({"from": "sales@alpha.test", "to": "nope, x@mailinator.com", "subject": "s", "text": "t"});
    let e = w.send(all_bad).expect_error(422, "unprocessable_entity");
    assert_eq!(e["blocked"].as_array().map(Vec::len), Some(2));
    // A DNS timeout never blocks: delivery decides later.
    w.dns.set_timeout("slow.example.org");
    let sent = w.send(basic(json!("a@slow.example.org"))).expect(200).json();
    assert!(sent.get("blocked").is_none(), "{sent}");
}

#[test]
fn invalid_send_requests_answer_400() {
    let w = MailWorld::start();
    let cases = [
        json!({"to": "a@example.org", "subject": "s", "text": "t"}),
        json!({"from": "sales@alpha.test", "subject": "s", "text": "t"}),
        json!({"from": "sales@alpha.test", "to": "a@example.org", "text": "t"}),
        json!({"from": "sales@alpha.test", "to": "a@example.org", "subject": "s"}),
        json!({"from": "sales@alpha.test", "to": "", "subject": "s", "text": "t"}),
        json!({"from": "nobody@alpha.test", "to": "a@example.org", "subject": "s", "text": "t"}),
        json!({"from": "sales@beta.test", "to": "a@example.org", "subject": "s", "text": "t"}),
        json!({"from": "sales@alpha.test", "to": "a@example.org", "subject": "s", "text": "t", "type": "bulk"}),
        json!({"from": "sales@alpha.test", "to": "a@example.org", "subject": "s", "text": "t", "scheduledAt": 1000}),
        json!({"from": "sales@alpha.test", "to": "a@example.org", "subject": "s", "text": "t", "scheduledAt": "soon"}),
        json!({"from": "sales@alpha.test", "to": "a@example.org", "subject": "s\r\nBcc: x@y.z", "text": "t"}),
        json!({"from": "sales@alpha.test", "to": 5, "subject": "s", "text": "t"}),
    ];
    for body in cases {
        let resp = w.send(body.clone());
        assert_eq!(resp.status, 400, "{body} -> {}", resp.text());
    }
    let many: Vec<String> = (0..51).map(|i| format!("u{i}@example.org")).collect();
    w.send(json!({"from": "sales@alpha.test", "to": many, "subject": "s", "text": "t"}))
        .expect_error(400, "invalid_request");
    assert!(w.sink.messages().is_empty());
}

#[test]
fn a_temporary_failure_is_retried_and_a_permanent_one_bounces_and_suppresses() {
    let w = MailWorld::start();
    w.sink.set_rcpt_reply("slow@example.org", vec!["451 4.3.0 try again later"]);
    w.sink.set_rcpt_reply("gone@example.org", vec!["550 5.1.1 no such user"]);
    let sent = w.send(basic(json!(["slow@example.org", "gone@example.org"]))).expect(200).json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    let email = w.wait_email(&id, |e| e["folder"] == "sent");
    let by = |r: &str| {
        email["deliveries"]
            .as_array()
            .expect("d")
            .iter()
            .find(|d| d["recipient"] == r)
            .expect("r")
            .clone()
    };
    let slow = by("slow@example.org");
    assert_eq!(slow["status"], "delivered", "{email}");
    assert_eq!(slow["attempts"], 2);
    let gone = by("gone@example.org");
    assert_eq!(gone["status"], "bounced");
    assert!(gone["lastResponse"].as_str().is_some_and(|r| r.starts_with("550")), "{gone}");
    assert_eq!(email["status"], "delivered", "any delivery makes the message delivered");
    let e = w.send(basic(json!("gone@example.org"))).expect_error(422, "unprocessable_entity");
    assert_eq!(e["blocked"][0]["reason"], "suppressed", "{e}");
}

#[test]
fn an_unreachable_destination_fails_after_the_maximum_age() {
    let w = MailWorld::start_with(&[("EDGEMAIL_DELIVERY_MAX_AGE", "1s")], &[]);
    w.dns.add_mx("dead.example.org", 10, "mx.dead.example.org");
    w.dns.add_a("mx.dead.example.org", std::net::Ipv4Addr::new(127, 0, 0, 1));
    w.sink.set_rcpt_reply("x@dead.example.org", vec!["421 4.4.2 busy"; 50]);
    let id = w.send(basic(json!("x@dead.example.org"))).expect(200).json()["messageId"]
        .as_str()
        .expect("id")
        .to_owned();
    let email = w.wait_status(&id, "failed");
    let d = &email["deliveries"][0];
    assert_eq!(d["status"], "failed");
    assert!(d["attempts"].as_u64() >= Some(2), "{email}");
    assert!(d["lastResponse"].as_str().is_some_and(|r| r.contains("421")), "{email}");
}

#[test]
fn a_scheduled_message_waits_for_its_time_also_across_a_restart() {
    let mut w = MailWorld::start();
    let at = edgemail::ids::now_ms() + 2_500;
    let mut body = basic(json!("ada@example.org"));
    body["scheduledAt"] = json!(at);
    let sent = w.send(body).expect(200).json();
    assert_eq!(sent["status"], "scheduled");
    let id = sent["messageId"].as_str().expect("id").to_owned();
    let email = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
    assert_eq!(
        (email["folder"].clone(), email["scheduledAt"].clone()),
        (json!("outbox"), json!(at))
    );
    w.crash_and_restart();
    std::thread::sleep(Duration::from_millis(1_000));
    assert!(w.sink.messages().is_empty(), "sent before its time");
    let got = w.sink.wait_for(1, Duration::from_secs(15));
    assert!(edgemail::ids::now_ms() >= at);
    assert_eq!(got[0].rcpt_to, ["ada@example.org"]);
    w.wait_status(&id, "delivered");
}

#[test]
fn deleting_a_scheduled_message_cancels_it() {
    let w = MailWorld::start();
    let mut body = basic(json!("ada@example.org"));
    body["scheduledAt"] = json!(edgemail::ids::now_ms() + 1_500);
    let id = w.send(body).expect(200).json()["messageId"].as_str().expect("id").to_owned();
    let moved = w.api().delete(&format!("/v1/emails/{id}")).expect(200).json();
    assert_eq!(moved["moved"], "trash");
    let email = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
    assert_eq!(email["status"], "cancelled");
    assert_eq!(email["deliveries"][0]["status"], "cancelled");
    std::thread::sleep(Duration::from_millis(2_500));
    assert!(w.sink.messages().is_empty(), "a cancelled message was sent");
}

#[test]
fn relay_mode_sends_everything_through_the_smarthost() {
    let sink = crate::smtp_sink::Sink::start();
    let relay = format!("127.0.0.1:{}", sink.port());
    let w = MailWorld::start_with(&[], &["--relay", &relay]);
    // The domain exists but has no MX, and its address has no mail server: only the relay works.
    w.dns.add_a("elsewhere.example", std::net::Ipv4Addr::new(127, 0, 0, 2));
    w.send(basic(json!("someone@elsewhere.example"))).expect(200);
    let got = sink.wait_for(1, Duration::from_secs(10));
    assert_eq!(got[0].rcpt_to, ["someone@elsewhere.example"]);
    assert!(w.sink.messages().is_empty(), "the MX path was used");
}

#[test]
fn sigkill_with_hundreds_queued_loses_no_accepted_message() {
    // One delivery at a time keeps hundreds of messages in the queue when the server dies.
    let mut w = MailWorld::start_with(&[("EDGEMAIL_DELIVERY_CONCURRENCY", "1")], &[]);
    let mut accepted = std::collections::BTreeSet::new();
    for batch in 0..6 {
        let to: Vec<String> = (0..50).map(|i| format!("r{batch}-{i}@example.org")).collect();
        let sent = w
            .send(json!({"from": "sales@alpha.test", "to": to, "subject": "s", "text": "t", "type": "campaign"}))
            .expect(200)
            .json();
        for id in sent["messageIds"].as_array().expect("ids") {
            accepted.insert(id.as_str().expect("id").to_owned());
        }
    }
    assert_eq!(accepted.len(), 300);
    let before = w.sink.messages().len();
    assert!(before < 300, "everything was delivered before the kill; the test proves nothing");
    w.crash_and_restart();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let (got, missing) = loop {
        let got = w.sink.messages();
        let delivered: std::collections::BTreeSet<String> = got
            .iter()
            .filter_map(|m| header(&m.data, "Message-ID"))
            .filter_map(|mid| mid.trim_matches(['<', '>']).split('.').next().map(str::to_owned))
            .collect();
        let missing = accepted.difference(&delivered).count();
        if missing == 0 || std::time::Instant::now() > deadline {
            break (got, missing);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        missing,
        0,
        "accepted messages never arrived ({} before the kill, {} since); server log:\n{}",
        before,
        got.len() - before,
        w.server.log()
    );
    // Duplicates only for what was in flight at the kill (one at a time here).
    assert!(got.len() <= 300 + 2, "{} deliveries for 300 messages", got.len());
}
