//! Webhooks end to end: real sends to the SMTP sink, mail to the server's MX, tracking links and
//! sequences produce events that a receiver in `webhook_receiver` gets, signatures checked with
//! its own HMAC; retries keep the event id; an event survives SIGKILL; the API's checks; and
//! endpoints that hang, redirect or answer 10 MB cost only their attempt.

use std::net::Ipv4Addr;
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{A, World};
use crate::mail_world::{MailWorld, basic, header, html_part};
use crate::smtp_client::Talk;
use crate::webhook_receiver::{Hit, Receiver};

const ALLOW: (&str, &str) = ("EDGEMAIL_WEBHOOKS_ALLOW_PRIVATE", "true");
const FAST: (&str, &str) = ("EDGEMAIL_WEBHOOKS_RETRY_INITIAL", "100ms");

/// Creates an endpoint for every event type; returns (id, secret).
fn subscribe(api: &crate::client::Client, url: &str) -> (String, String) {
    let created = api.post("/v1/webhooks", json!({"url": url})).expect(201).json();
    assert_eq!(created["enabled"], true);
    assert_eq!(created["events"].as_array().map(Vec::len), Some(14), "{created}");
    let field = |k: &str| created[k].as_str().expect("field").to_owned(); // ok: test
    (field("id"), field("secret"))
}

/// Every hit is signed with `secret`, its body is `{type, timestamp, data}`, and the ids of
/// different events differ.
fn check_signed(hits: &[Hit], secret: &str) {
    for hit in hits {
        assert!(hit.verifies(secret), "bad signature on {}", String::from_utf8_lossy(&hit.body));
        assert!(!hit.verifies("whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="));
        let body = hit.json();
        assert!(body["timestamp"].as_u64().is_some_and(|t| t > 1_600_000_000_000), "{body}");
        let seconds: u64 = hit.timestamp.parse().expect("webhook-timestamp"); // ok: test
        assert!(seconds > 1_600_000_000 && seconds < 1_600_000_000_000, "{}", hit.timestamp);
        assert!(body["data"].is_object(), "{body}");
    }
}

fn message_id(resp: &Value) -> String {
    resp["messageId"].as_str().expect("messageId").to_owned() // ok: test
}

/// The path of the first link of `kind` (`/t/o/`, `/t/c/`, `/t/u/`) in an HTML body.
fn link(html: &str, kind: &str) -> String {
    let at = html.find(kind).unwrap_or_else(|| panic!("no {kind} link in {html}"));
    html[at..].split(['"', '\'', '>', '<', ' ', '\r', '\n']).next().unwrap_or("").to_owned()
}

fn assert_email_data(data: &Value, id: &str, recipient: &str) {
    assert_eq!(data["messageId"], id, "{data}");
    assert_eq!(data["recipient"], recipient, "{data}");
    assert_eq!(data["from"], "sales@alpha.test", "{data}");
    assert!(data["subject"].is_string() && data.get("batchId").is_some(), "{data}");
    // The campaign below carries tags and metadata; every other send carries none.
    let (tags, metadata) = if recipient == "reader@example.org" {
        (json!(["autumn", "2026"]), json!({"list": "shop", "cohort": "7"}))
    } else {
        (json!([]), json!({}))
    };
    assert_eq!((&data["tags"], &data["metadata"]), (&tags, &metadata), "{data}");
}

#[test]
fn delivery_outcomes_engagement_and_reports_arrive_signed() {
    let w = MailWorld::start_with(&[ALLOW, FAST, ("EDGEMAIL_DELIVERY_MAX_AGE", "1s")], &[]);
    let receiver = Receiver::start();
    let (_, secret) = subscribe(&w.api(), &receiver.url("/ok"));
    w.sink.set_rcpt_reply("later@example.org", vec!["451 4.2.0 busy"]);
    w.sink.set_rcpt_reply("gone@example.org", vec!["550 5.1.1 no such user"]);
    w.dns.add_mx("dead.example.org", 10, "mx.dead.example.org");
    w.dns.add_a("mx.dead.example.org", Ipv4Addr::LOCALHOST);
    w.sink.set_rcpt_reply("x@dead.example.org", vec!["421 4.4.2 busy"; 50]);

    let ok = message_id(&w.send(basic(json!("ok@example.org"))).expect(200).json());
    let later = message_id(&w.send(basic(json!("later@example.org"))).expect(200).json());
    let gone = message_id(&w.send(basic(json!("gone@example.org"))).expect(200).json());
    let dead = message_id(&w.send(basic(json!("x@dead.example.org"))).expect(200).json());

    let delivered = receiver.event("email.delivered", |d| d["messageId"] == ok);
    assert_email_data(&delivered.json()["data"], &ok, "ok@example.org");
    assert!(
        delivered.json()["data"]["smtpResponse"].as_str().is_some_and(|r| r.starts_with("250"))
    );
    let deferred = receiver.event("email.deferred", |d| d["messageId"] == later).json();
    assert_email_data(&deferred["data"], &later, "later@example.org");
    assert!(deferred["data"]["smtpResponse"].as_str().is_some_and(|r| r.contains("451")));
    assert!(deferred["data"]["nextAttemptAt"].as_u64().is_some(), "{deferred}");
    receiver.event("email.delivered", |d| d["messageId"] == later);
    let bounced = receiver.event("email.bounced", |d| d["messageId"] == gone).json();
    assert_email_data(&bounced["data"], &gone, "gone@example.org");
    assert_eq!(bounced["data"]["bounceClass"], "invalid_recipient", "{bounced}");
    let failed = receiver.event("email.failed", |d| d["messageId"] == dead).json();
    assert_email_data(&failed["data"], &dead, "x@dead.example.org");
    assert!(failed["data"]["smtpResponse"].is_string(), "{failed}");

    // Engagement with a campaign message: an open, a click, the one-click unsubscribe.
    let html = "<p>New <a href=\"https://shop.example.com/autumn\">collection</a></p>";
    let campaign = w
        .send(json!({"from": "sales@alpha.test", "subject": "Autumn", "html": html,
                     "type": "campaign", "to": ["reader@example.org"],
                     "tags": ["autumn", "2026"], "metadata": {"list": "shop", "cohort": "7"}}))
        .expect(200)
        .json();
    let reader = campaign["messageIds"][0].as_str().expect("id").to_owned(); // ok: test
    let copy = w.sink.wait_for(3, Duration::from_secs(10));
    let copy = copy.iter().find(|m| m.rcpt_to[0] == "reader@example.org").expect("copy"); // ok: test
    let page = html_part(&copy.data);
    let anonymous = w.server.client(None);
    anonymous.get(&link(&page, "/t/o/")).expect(200);
    anonymous.get(&link(&page, "/t/c/")).expect(302);
    let opened = receiver.event("email.opened", |d| d["messageId"] == reader).json();
    assert_email_data(&opened["data"], &reader, "reader@example.org");
    assert_eq!(opened["data"]["batchId"], campaign["batchId"]);
    let clicked = receiver.event("email.clicked", |d| d["messageId"] == reader).json();
    assert_eq!(clicked["data"]["url"], "https://shop.example.com/autumn", "{clicked}");
    let unsubscribe = header(&copy.data, "List-Unsubscribe").expect("List-Unsubscribe"); // ok: test
    let url = unsubscribe.split(['<', '>']).find(|p| p.starts_with("http")).expect("url"); // ok: test
    let path = &url[url.find("/t/u/").expect("path")..]; // ok: test
    let form = [("Content-Type", "application/x-www-form-urlencoded")];
    anonymous.raw("POST", path, &form, Some(b"List-Unsubscribe=One-Click")).expect(200);
    let unsubscribed = receiver.event("email.unsubscribed", |d| d["messageId"] == reader).json();
    assert_email_data(&unsubscribed["data"], &reader, "reader@example.org");

    // A complaint (ARF) and a late bounce (DSN) about the first message.
    w.dns.add_txt("isp.example", "v=spf1 ip4:127.0.0.1 -all");
    let sent = w.sink.messages();
    let first = sent.iter().find(|m| m.rcpt_to[0] == "ok@example.org").expect("first"); // ok: test
    let original = header(&first.data, "Message-ID").expect("mid"); // ok: test
    let arf = format!(
        "From: fbl@isp.example\r\nTo: abuse@alpha.test\r\nSubject: complaint\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/report; report-type=feedback-report; boundary=\"b\"\r\n\r\n--b\r\n\
         Content-Type: text/plain\r\n\r\nA complaint.\r\n--b\r\nContent-Type: message/feedback-report\r\n\r\n\
         Feedback-Type: abuse\r\nVersion: 1\r\nOriginal-Rcpt-To: <ok@example.org>\r\n\r\n--b\r\n\
         Content-Type: message/rfc822\r\n\r\nMessage-ID: {original}\r\nTo: ok@example.org\r\n\r\nhi\r\n--b--"
    );
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO isp.example");
    assert!(s.mail("fbl@isp.example", &["abuse@alpha.test"], &arf).starts_with("250"));
    let complained = receiver.event("email.complained", |d| d["messageId"] == ok).json();
    assert_email_data(&complained["data"], &ok, "ok@example.org");
    let dsn = format!(
        "From: MAILER-DAEMON@mx.example.org\r\nTo: {}\r\nSubject: Undelivered Mail\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"b\"\r\n\r\n\
         --b\r\nContent-Type: text/plain\r\n\r\nGone.\r\n--b\r\n\
         Content-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.org\r\n\r\n\
         Final-Recipient: rfc822; ok@example.org\r\nAction: failed\r\nStatus: 5.1.1\r\n\
         Diagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n--b\r\n\
         Content-Type: text/rfc822-headers\r\n\r\nMessage-ID: {original}\r\n--b--",
        first.mail_from
    );
    assert!(s.mail("", &[&first.mail_from], &dsn).starts_with("250"));
    let late = receiver.event("email.bounced", |d| d["messageId"] == ok).json();
    assert!(late["data"]["smtpResponse"].as_str().is_some_and(|r| r.contains("5.1.1")), "{late}");
    check_signed(&receiver.hits(), &secret);
    let ids: std::collections::HashSet<String> =
        receiver.hits().iter().map(|h| h.id.clone()).collect();
    assert_eq!(ids.len(), receiver.hits().len(), "one post per event while all succeed");
}

#[test]
fn received_mail_and_enrollment_ends_arrive_signed() {
    let w = MailWorld::start_with(&[ALLOW, FAST], &[]);
    let receiver = Receiver::start();
    let (_, secret) = subscribe(&w.api(), &receiver.url("/ok"));

    let message = "From: Ada <ada@example.org>\r\nTo: Sales <sales@alpha.test>\r\n\
        Cc: grace@example.net\r\nSubject: Quote\r\nMessage-ID: <q1@example.org>\r\nMIME-Version: 1.0\r\n\
        Content-Type: multipart/mixed; boundary=\"m\"\r\n\r\n--m\r\nContent-Type: text/plain\r\n\r\n\
        Please quote.\r\n--m\r\nContent-Type: application/pdf; name=\"rfq.pdf\"\r\n\
        Content-Disposition: attachment; filename=\"rfq.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\n\
        JVBERi0xLjQK\r\n--m--";
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    assert!(s.mail("ada@example.org", &["sales@alpha.test"], message).starts_with("250"));
    let received = receiver.event("email.received", |_| true).json()["data"].clone();
    assert_eq!(received["mailbox"], "sales@alpha.test", "{received}");
    assert_eq!(received["subject"], "Quote");
    assert_eq!(received["messageId"], "<q1@example.org>");
    assert_eq!(received["text"].as_str().map(str::trim), Some("Please quote."));
    assert_eq!(received["inReplyToId"], Value::Null);
    assert!(received["from"].as_str().is_some_and(|f| f.contains("ada@example.org")), "{received}");
    assert!(received["to"][0].as_str().is_some_and(|t| t.contains("sales@alpha.test")));
    assert!(received["cc"][0].as_str().is_some_and(|t| t.contains("grace@example.net")));
    for check in ["spf", "dkim", "dmarc"] {
        assert!(
            received["authResults"][check].as_str().is_some_and(|r| !r.is_empty()),
            "{received}"
        );
    }
    assert_eq!(received["attachments"][0]["filename"], "rfq.pdf", "{received}");
    assert_eq!(received["attachments"][0]["contentType"], "application/pdf");
    assert_eq!(received["attachments"][0]["size"], 9);
    let id = received["id"].as_str().expect("id"); // ok: test
    let stored = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
    assert_eq!(stored["subject"], "Quote");
    assert_eq!((&stored["html"], &stored["text"]), (&received["html"], &received["text"]));

    // Enrollment ends: completed, replied, bounced, cancelled.
    let api = w.api();
    let sequence = |steps: Value| {
        let body = json!({"name": "n", "from": "sales@alpha.test", "steps": steps});
        api.post("/v1/sequences", body).expect(201).json()["id"].as_str().expect("id").to_owned() // ok: test
    };
    let enroll = |seq: &str, email: &str| {
        let path = format!("/v1/sequences/{seq}/enroll");
        let r = api.post(&path, json!({"contacts": [{"email": email}]})).expect(200).json();
        r["enrollmentIds"][0].as_str().expect("enrollment").to_owned() // ok: test
    };
    let one = sequence(json!([{"type": "send_email", "subject": "Hi", "html": "<p>Hi</p>"}]));
    let long = sequence(json!([
        {"type": "send_email", "subject": "Hello", "html": "<p>Hello</p>"},
        {"type": "delay", "delayMs": 3_600_000},
        {"type": "send_email", "subject": "", "html": "<p>Again</p>"}
    ]));
    w.sink.set_rcpt_reply("nobody@example.net", vec!["550 5.1.1 no such user"]);
    let done = enroll(&one, "done@example.org");
    let replier = enroll(&long, "replier@example.org");
    let bouncer = enroll(&long, "nobody@example.net");
    let waiting = enroll(&long, "waiting@example.org");
    let completed = receiver.event("enrollment.completed", |d| d["enrollmentId"] == done).json();
    assert_eq!(
        completed["data"],
        json!({"sequenceId": one, "enrollmentId": done, "email": "done@example.org"})
    );
    receiver.event("enrollment.bounced", |d| d["enrollmentId"] == bouncer);
    let got = w.sink.wait_for(3, Duration::from_secs(10));
    let step = got.iter().find(|m| m.rcpt_to[0] == "replier@example.org").expect("step"); // ok: test
    let original = header(&step.data, "Message-ID").expect("mid"); // ok: test
    let reply = format!(
        "From: replier@example.org\r\nTo: sales@alpha.test\r\nSubject: Re: Hello\r\n\
         In-Reply-To: {original}\r\nReferences: {original}\r\n\r\nInterested."
    );
    assert!(s.mail("replier@example.org", &["sales@alpha.test"], &reply).starts_with("250"));
    let replied = receiver.event("enrollment.replied", |d| d["enrollmentId"] == replier).json();
    assert_eq!(replied["data"]["sequenceId"], long);
    assert_eq!(replied["data"]["email"], "replier@example.org");
    let reply_event = receiver.event("email.received", |d| d["subject"] == "Re: Hello").json();
    assert!(reply_event["data"]["inReplyToId"].is_string(), "{reply_event}");
    api.delete(&format!("/v1/sequences/{long}")).expect(200);
    receiver.event("enrollment.cancelled", |d| d["enrollmentId"] == waiting);
    check_signed(&receiver.hits(), &secret);
}

#[test]
fn a_failing_endpoint_gets_the_same_event_id_until_it_succeeds() {
    let w = World::start_with_env(&[ALLOW, FAST, ("EDGEMAIL_WEBHOOKS_MAX_AGE", "2s")]);
    let receiver = Receiver::start();
    let api = w.alpha();
    let (flaky, secret) = subscribe(&api, &receiver.url("/fail2"));
    let (broken, _) = subscribe(&api, &receiver.url("/error"));
    let event = api.post(&format!("/v1/webhooks/{flaky}/test"), json!({})).expect(202).json();
    let event = event["eventId"].as_str().expect("eventId").to_owned(); // ok: test
    let hits =
        receiver.wait("three attempts", |h| h.iter().filter(|h| h.path == "/fail2").count() >= 3);
    let tries: Vec<&Hit> = hits.iter().filter(|h| h.path == "/fail2").collect();
    assert!(tries.iter().all(|h| h.id == event), "the id changed between retries");
    check_signed(&hits, &secret);
    assert_eq!(tries[0].json(), tries[2].json(), "the body changed between retries");
    assert_eq!(tries[0].json()["type"], "webhook.test");
    assert_eq!(tries[0].json()["data"], json!({"webhookId": flaky}));
    let log = wait_delivery(&api, &flaky, |d| d["status"] == "succeeded");
    assert_eq!(log["eventId"], event);
    assert_eq!(log["type"], "webhook.test");
    assert_eq!((log["attempts"].as_u64(), log["lastStatusCode"].as_u64()), (Some(3), Some(204)));
    assert_eq!((&log["lastError"], &log["nextAttemptAt"]), (&Value::Null, &Value::Null));
    assert!(receiver.hits().iter().all(|h| h.path != "/error"), "the test went to one endpoint");

    // An endpoint that never succeeds is given up once the event is older than max_age.
    api.post(&format!("/v1/webhooks/{broken}/test"), json!({})).expect(202);
    let gave_up = wait_delivery(&api, &broken, |d| d["status"] == "failed");
    assert!(gave_up["attempts"].as_u64().is_some_and(|n| n >= 2), "{gave_up}");
    assert_eq!(gave_up["lastStatusCode"], 500);
    assert!(gave_up["lastError"].as_str().is_some_and(|e| e.contains("500")), "{gave_up}");
    let limited = api.get(&format!("/v1/webhooks/{flaky}/deliveries?limit=1")).expect(200).json();
    assert_eq!(limited.as_array().map(Vec::len), Some(1));
}

/// The newest delivery of endpoint `id`, once `done` holds for it.
fn wait_delivery(api: &crate::client::Client, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let list = api.get(&format!("/v1/webhooks/{id}/deliveries")).expect(200).json();
        if let Some(first) = list.get(0).filter(|d| done(d)) {
            return first.clone();
        }
        assert!(std::time::Instant::now() < deadline, "delivery never settled: {list}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn an_event_survives_sigkill_right_after_the_send() {
    let mut w = MailWorld::start_with(&[ALLOW, FAST], &[]);
    let receiver = Receiver::start();
    receiver.set_down(true);
    let (_, secret) = subscribe(&w.api(), &receiver.url("/down"));
    let id = message_id(&w.send(basic(json!("ok@example.org"))).expect(200).json());
    w.crash_and_restart();
    receiver.set_down(false);
    let hit = receiver.event("email.delivered", |d| d["messageId"] == id);
    assert!(hit.verifies(&secret));
    // Once accepted, no more posts of that event.
    let accepted = receiver.wait("the accepted post", |h| h.iter().any(|h| h.id == hit.id));
    let _ = accepted;
}

#[test]
fn the_api_checks_its_input_and_scopes_endpoints_to_their_domain() {
    let w = World::start();
    let api = w.alpha();
    w.org().get("/v1/webhooks").expect_error(403, "forbidden");
    w.org()
        .post("/v1/webhooks", json!({"url": "https://93.184.216.34/in"}))
        .expect_error(403, "forbidden");
    let bad = [
        (json!({"url": "not a url"}), "url"),
        (json!({"url": "ftp://93.184.216.34/in"}), "url"),
        (json!({"url": "http://127.0.0.1:9/in"}), "url"),
        (json!({"url": "http://10.1.2.3/in"}), "url"),
        (json!({"url": "http://[::1]/in"}), "url"),
        (json!({"url": "http://169.254.169.254/latest"}), "url"),
        (json!({"url": "http://0.0.0.0/"}), "url"),
        (json!({"url": 5}), "url"),
        (
            json!({"url": "https://93.184.216.34/in", "events": ["email.delivered", "email.sent"]}),
            "events[1]",
        ),
        (json!({"url": "https://93.184.216.34/in", "events": "email.delivered"}), "events"),
        (json!({"url": "https://93.184.216.34/in", "events": []}), "events"),
        (json!({"url": "https://93.184.216.34/in", "secret": "mine"}), "secret"),
        (json!({"events": ["email.delivered"]}), "url"),
    ];
    for (body, field) in bad {
        let e = api.post("/v1/webhooks", body.clone()).expect_error(400, "invalid_request");
        assert!(e["message"].as_str().is_some_and(|m| m.contains(field)), "{body}: {e}");
    }
    let created = api
        .post("/v1/webhooks", json!({"url": "https://93.184.216.34/in", "events": ["email.bounced"], "description": "CRM"}))
        .expect(201)
        .json();
    let id = created["id"].as_str().expect("id").to_owned(); // ok: test
    let secret = created["secret"].as_str().expect("secret").to_owned(); // ok: test
    use base64::Engine;
    let key =
        base64::engine::general_purpose::STANDARD.decode(&secret["whsec_".len()..]).expect("b64"); // ok: test
    assert_eq!(key.len(), 32);
    assert_eq!(created["events"], json!(["email.bounced"]));
    assert_eq!(created["description"], "CRM");
    let path = format!("/v1/webhooks/{id}");
    let shown = api.get(&path).expect(200).json();
    assert!(shown.get("secret").is_none(), "{shown}");
    assert_eq!(api.get("/v1/webhooks").expect(200).json()[0]["id"], id.as_str());
    assert_eq!(w.beta().get("/v1/webhooks").expect(200).json(), json!([]));
    for (method, p) in [
        ("GET", path.clone()),
        ("DELETE", path.clone()),
        ("POST", format!("{path}/test")),
        ("POST", format!("{path}/rotate-secret")),
        ("GET", format!("{path}/deliveries")),
    ] {
        w.beta().request(method, &p, None).expect_error(404, "not_found");
    }
    w.beta().patch(&path, json!({"enabled": false})).expect_error(404, "not_found");
    api.patch(&path, json!({"enabled": "no"})).expect_error(400, "invalid_request");
    api.patch(&path, json!({"url": "http://192.168.1.1/"})).expect_error(400, "invalid_request");
    api.patch(&path, json!({"events": ["nope"]})).expect_error(400, "invalid_request");
    api.get(&format!("{path}/deliveries?limit=0")).expect_error(400, "invalid_request");
    let patched = api.patch(&path, json!({"enabled": false, "description": ""})).expect(200).json();
    assert_eq!((&patched["enabled"], &patched["description"]), (&json!(false), &Value::Null));
    let rotated = api.request("POST", &format!("{path}/rotate-secret"), None).expect(200).json();
    assert!(rotated["secret"].as_str().is_some_and(|s| s.starts_with("whsec_") && s != secret));
    api.delete(&path).expect(200);
    api.get(&path).expect_error(404, "not_found");
    api.get("/v1/webhooks/wh_missing/deliveries").expect_error(404, "not_found");
}

#[test]
fn a_name_that_later_resolves_inward_is_refused_at_connection_time() {
    let w = MailWorld::start_with(&[FAST], &[]);
    let receiver = Receiver::start();
    w.dns.set_ttl(0);
    w.dns.add_a("hooks.example.org", Ipv4Addr::new(93, 184, 216, 34));
    let url = format!("http://hooks.example.org:{}/ok", receiver.port());
    let (id, _) = subscribe(&w.api(), &url);
    w.dns.remove("hooks.example.org");
    w.dns.add_a("hooks.example.org", Ipv4Addr::LOCALHOST);
    w.api().post(&format!("/v1/webhooks/{id}/test"), json!({})).expect(202);
    let log = wait_delivery(&w.api(), &id, |d| d["attempts"].as_u64() >= Some(1));
    assert!(log["lastError"].as_str().is_some_and(|e| e.contains("127.0.0.1")), "{log}");
    assert_eq!(log["status"], "pending");
    assert!(receiver.hits().is_empty(), "a post reached the loopback receiver");
}

/// The attempts an endpoint's deliveries record, and how many deliveries it has.
fn attempts(api: &crate::client::Client, id: &str) -> (u64, usize) {
    let list = api.get(&format!("/v1/webhooks/{id}/deliveries?limit=500")).expect(200).json();
    let list = list.as_array().cloned().unwrap_or_default();
    (list.iter().filter_map(|d| d["attempts"].as_u64()).sum(), list.len())
}

#[test]
fn a_refusing_endpoint_is_probed_not_hammered_and_gets_its_backlog_once_up() {
    let w = World::start_with_env(&[ALLOW, FAST]);
    let api = w.alpha();
    // A port nothing listens on, until the receiver takes it below.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port") // ok: test
        .port();
    let (hook, secret) = subscribe(&api, &format!("http://127.0.0.1:{port}/ok"));
    let test = |api: &crate::client::Client| {
        let event = api.post(&format!("/v1/webhooks/{hook}/test"), json!({})).expect(202).json();
        event["eventId"].as_str().expect("eventId").to_owned() // ok: test
    };
    // Five refusals in a row, one at a time, open the circuit.
    let mut events = Vec::new();
    for n in 1..=5 {
        events.push(test(&api));
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while attempts(&api, &hook).0 < n {
            assert!(std::time::Instant::now() < deadline, "no attempt {n}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    for _ in 0..60 {
        events.push(test(&api));
    }
    // Probes keep going while it is down: wait for three of them, and long enough that the
    // dispatcher, were it not holding the backlog, would have tried every event at least once.
    let since = std::time::Instant::now();
    let deadline = since + Duration::from_secs(30);
    while attempts(&api, &hook).0 < 5 + 3 || since.elapsed() < Duration::from_secs(3) {
        assert!(std::time::Instant::now() < deadline, "no probes: {:?}", attempts(&api, &hook));
        std::thread::sleep(Duration::from_millis(50));
    }
    let list = api.get(&format!("/v1/webhooks/{hook}/deliveries?limit=500")).expect(200).json();
    let list = list.as_array().cloned().unwrap_or_default();
    assert_eq!(list.len(), events.len());
    let untouched = list.iter().filter(|d| d["attempts"] == 0 && d["status"] == "pending").count();
    assert!(untouched >= 45, "the backlog was attempted while the endpoint was down: {list:?}");
    let tried: u64 = list.iter().filter_map(|d| d["attempts"].as_u64()).sum();
    assert!(tried < 30, "{tried} attempts for {} events", events.len());

    let receiver = Receiver::start_on(port);
    let hits = receiver.wait("every event", |hits| {
        events.iter().all(|e| hits.iter().any(|h| &h.id == e && h.kind() == "webhook.test"))
    });
    check_signed(&hits, &secret);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let list = api.get(&format!("/v1/webhooks/{hook}/deliveries?limit=500")).expect(200).json();
        if list.as_array().is_some_and(|l| l.iter().all(|d| d["status"] == "succeeded")) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not all succeeded: {list}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_dead_endpoint_gives_up_its_held_backlog_at_max_age_without_attempts() {
    let w = World::start_with_env(&[ALLOW, FAST, ("EDGEMAIL_WEBHOOKS_MAX_AGE", "3s")]);
    let api = w.alpha();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port") // ok: test
        .port();
    let (hook, _) = subscribe(&api, &format!("http://127.0.0.1:{port}/ok"));
    let test = || api.post(&format!("/v1/webhooks/{hook}/test"), json!({})).expect(202);
    for n in 1..=5 {
        test();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while attempts(&api, &hook).0 < n {
            assert!(std::time::Instant::now() < deadline, "no attempt {n}");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    for _ in 0..20 {
        test();
    }
    // Held past max_age, the backlog is given up as failed by a probe, never attempted.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let list = loop {
        let list = api.get(&format!("/v1/webhooks/{hook}/deliveries?limit=500")).expect(200).json();
        let list = list.as_array().cloned().unwrap_or_default();
        if list.iter().all(|d| d["status"] == "failed") {
            break list;
        }
        assert!(std::time::Instant::now() < deadline, "the held backlog never expired: {list:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(list.len(), 25);
    let unattempted = list.iter().filter(|d| d["attempts"] == 0).count();
    assert!(unattempted >= 15, "the held backlog was attempted: {list:?}");
}

#[test]
fn slow_redirecting_and_huge_endpoints_cost_only_their_attempt() {
    let w = World::start_with_env(&[ALLOW, ("EDGEMAIL_WEBHOOKS_RETRY_INITIAL", "1h")]);
    let receiver = Receiver::start();
    let api = w.alpha();
    let hooks: Vec<String> = ["/hang", "/redirect", "/huge", "/ok"]
        .iter()
        .map(|p| subscribe(&api, &receiver.url(p)).0)
        .collect();
    for id in &hooks {
        api.post(&format!("/v1/webhooks/{id}/test"), json!({})).expect(202);
    }
    let redirect = wait_delivery(&api, &hooks[1], |d| d["attempts"] == 1);
    assert_eq!(
        (&redirect["status"], &redirect["lastStatusCode"]),
        (&json!("pending"), &json!(302))
    );
    let huge = wait_delivery(&api, &hooks[2], |d| d["attempts"] == 1);
    assert_eq!((&huge["status"], &huge["lastStatusCode"]), (&json!("succeeded"), &json!(200)));
    let ok = wait_delivery(&api, &hooks[3], |d| d["attempts"] == 1);
    assert_eq!(ok["status"], "succeeded");
    let hung = wait_delivery(&api, &hooks[0], |d| d["attempts"] == 1);
    assert_eq!((&hung["status"], &hung["lastStatusCode"]), (&json!("pending"), &Value::Null));
    assert!(hung["lastError"].as_str().is_some_and(|e| e.contains("10s")), "{hung}");
    let hits = receiver.hits();
    assert_eq!(hits.iter().filter(|h| h.path == "/ok").count(), 1, "the redirect was followed");
    assert_eq!(A, "alpha.test");
}
