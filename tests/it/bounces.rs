//! `GET /v1/bounces`: real sends through the test sink (deliveries, a 5xx bounce, a failure after
//! the maximum age, a late DSN), tracked opens and clicks, a reply over inbound SMTP, and the
//! counters they must produce; parameter checks and the org-wide shape.

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::{A, B, World};
use crate::mail_world::{MailWorld, basic, header, html_part};
use crate::smtp_client::send_one;

/// The path of the first tracking link of `kind` (`/t/o/` or `/t/c/`) in an HTML body.
fn tracking_path(html: &str, kind: &str) -> String {
    let at = html.find(kind).unwrap_or_else(|| panic!("no {kind} link in {html}"));
    html[at..].split(['"', '\'', '>', '<', ' ', '\r', '\n']).next().unwrap_or("").to_owned()
}

fn message_id_of(resp: &Value) -> String {
    resp["messageId"].as_str().expect("messageId").to_owned() // ok: test
}

#[test]
fn the_counters_match_what_happened_to_each_recipient() {
    let w = MailWorld::start_with(&[("EDGEMAIL_DELIVERY_MAX_AGE", "1s")], &[]);
    w.sink.set_rcpt_reply("gone@example.org", vec!["550 5.1.1 no such user"]);
    w.dns.add_mx("dead.example.org", 10, "mx.dead.example.org");
    w.dns.add_a("mx.dead.example.org", std::net::Ipv4Addr::LOCALHOST);
    w.sink.set_rcpt_reply("x@dead.example.org", vec!["421 4.4.2 busy"; 50]);
    let before = w.api().get("/v1/bounces").expect(200).json();
    assert_eq!(before["totalSent"], 0, "{before}");
    assert_eq!(before["bounceRate"], 0.0, "{before}");

    let html = "<p>New <a href=\"https://shop.example.com/autumn\">collection</a></p>";
    let campaign = w
        .send(json!({"from": "sales@alpha.test", "subject": "Autumn", "html": html, "type": "campaign",
                     "to": ["ada@example.org", "grace@example.net", "gone@example.org"]}))
        .expect(200)
        .json();
    let ids: Vec<String> = campaign["messageIds"]
        .as_array()
        .expect("ids") // ok: test
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    let failed = message_id_of(&w.send(basic(json!("x@dead.example.org"))).expect(200).json());
    let late = message_id_of(&w.send(basic(json!("late@example.org"))).expect(200).json());
    let to_of =
        |id: &str| w.api().get(&format!("/v1/emails/{id}")).expect(200).json()["to"][0].clone();
    for id in &ids {
        let want = if to_of(id) == "gone@example.org" { "bounced" } else { "delivered" };
        w.wait_status(id, want);
    }
    w.wait_status(&failed, "failed");
    w.wait_status(&late, "delivered");

    // Engagement: ada opens twice and clicks; grace opens once and replies twice.
    let got = w.sink.wait_for(3, Duration::from_secs(10));
    let copy = |to: &str| got.iter().find(|m| m.rcpt_to[0] == to).expect("copy").clone(); // ok: test
    let (ada, grace, late_copy) =
        (copy("ada@example.org"), copy("grace@example.net"), copy("late@example.org"));
    let anonymous = w.server.client(None);
    let ada_html = html_part(&ada.data);
    anonymous.get(&tracking_path(&ada_html, "/t/o/")).expect(200);
    anonymous.get(&tracking_path(&ada_html, "/t/o/")).expect(200);
    anonymous.get(&tracking_path(&ada_html, "/t/c/")).expect(302);
    anonymous.get(&tracking_path(&html_part(&grace.data), "/t/o/")).expect(200);
    let original = header(&grace.data, "Message-ID").expect("Message-ID"); // ok: test
    for n in 0..2 {
        let answer = format!(
            "From: grace@example.net\r\nTo: sales@alpha.test\r\nSubject: Re: Autumn\r\n\
             Message-ID: <r{n}@example.net>\r\nIn-Reply-To: {original}\r\n\r\nTell me more."
        );
        let r = send_one(w.server.smtp, "grace@example.net", "sales@alpha.test", &answer);
        assert!(r.starts_with("250"), "{r}");
    }

    // A DSN after the 250: the delivered recipient becomes a bounce.
    let bounce_address = late_copy.mail_from.clone();
    let late_mid = header(&late_copy.data, "Message-ID").expect("Message-ID"); // ok: test
    let dsn = format!(
        "From: MAILER-DAEMON@mx.example.org\r\nTo: {bounce_address}\r\nSubject: Undelivered\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"b\"\r\n\r\n\
         --b\r\nContent-Type: text/plain\r\n\r\nGone.\r\n--b\r\n\
         Content-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.org\r\n\r\n\
         Final-Recipient: rfc822; late@example.org\r\nAction: failed\r\nStatus: 5.1.1\r\n\
         Diagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n--b\r\n\
         Content-Type: text/rfc822-headers\r\n\r\nMessage-ID: {late_mid}\r\n--b--"
    );
    assert!(send_one(w.server.smtp, "", &bounce_address, &dsn).starts_with("250"));
    w.wait_status(&late, "bounced");

    let stats = w.api().get("/v1/bounces").expect(200).json();
    let want = json!({"domain": A, "days": 30, "totalSent": 5, "delivered": 2, "bounced": 2,
                      "failed": 1, "opened": 2, "clicked": 1, "replied": 1, "bounceRate": 0.4,
                      "byClass": {"invalid_recipient": 2, "mailbox_full": 0, "policy": 0, "dns": 0,
                                  "tls": 0, "protocol": 0, "other": 0}});
    assert_eq!(stats, want, "server log:\n{}", w.server.log());
    let week = w.api().get(&format!("/v1/bounces?days=7&domain={A}")).expect(200).json();
    assert_eq!(week["days"], 7);
    assert_eq!(week["totalSent"], 5);

    // Both hard bounces are suppressed.
    let page = w.api().get("/v1/suppressions").expect(200).json();
    let mut suppressed: Vec<(String, String)> = page["items"]
        .as_array()
        .expect("items") // ok: test
        .iter()
        .map(|i| (i["email"].as_str().unwrap_or("").to_owned(), i["reason"].to_string()))
        .collect();
    suppressed.sort();
    assert_eq!(
        suppressed,
        [
            ("gone@example.org".to_owned(), "\"hard_bounce\"".to_owned()),
            ("late@example.org".to_owned(), "\"hard_bounce\"".to_owned())
        ]
    );
}

#[test]
fn each_bounce_class_follows_its_suppression_rule() {
    let w = MailWorld::start();
    let cases = [
        (
            "unknown@example.org",
            "550 5.1.1 <unknown@example.org>: User unknown",
            "invalid_recipient",
        ),
        ("full@example.org", "552 5.2.2 The email account is over quota.", "mailbox_full"),
        ("blocked@example.org", "554 5.7.1 Client host blocked using zen.spamhaus.org", "policy"),
        ("tls@example.org", "530 5.7.0 Must issue a STARTTLS command first.", "tls"),
        ("syntax@example.org", "501 5.5.2 Syntax error in parameters", "protocol"),
        ("noroute@example.org", "550 5.4.4 Unable to route", "dns"),
        ("huge@example.org", "552 5.3.4 Message size exceeds fixed limit", "other"),
    ];
    for (to, reply, _) in cases {
        w.sink.set_rcpt_reply(to, vec![reply]);
    }
    let ids: Vec<String> = cases
        .iter()
        .map(|(to, ..)| message_id_of(&w.send(basic(json!(to))).expect(200).json()))
        .collect();
    for ((to, reply, class), id) in cases.iter().zip(&ids) {
        let email = w.wait_status(id, "bounced");
        let d = &email["deliveries"][0];
        assert_eq!(d["bounceClass"], *class, "{to}: {email}");
        assert_eq!(d["lastResponse"].as_str().map(|r| r.contains(&reply[4..9])), Some(true));
    }
    let stats = w.api().get("/v1/bounces").expect(200).json();
    for (.., class) in cases {
        assert_eq!(stats["byClass"][class], 1, "{stats}");
    }
    // Only the unknown address is suppressed: the others stay sendable.
    let page = w.api().get("/v1/suppressions").expect(200).json();
    let suppressed: Vec<&str> = page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["email"].as_str())
        .collect();
    assert_eq!(suppressed, ["unknown@example.org"]);
    let again = w.send(basic(json!("blocked@example.org"))).expect(200).json();
    assert_eq!(again["status"], "queued", "a policy refusal leaves the address sendable: {again}");
    let refused = w.send(basic(json!("unknown@example.org")));
    assert_eq!(refused.status, 422, "the unknown address is refused: {}", refused.text());
}

#[test]
fn the_counters_survive_a_restart() {
    let mut w = MailWorld::start();
    let id =
        message_id_of(&w.send(basic(json!(["a@example.org", "b@example.net"]))).expect(200).json());
    w.wait_status(&id, "delivered");
    w.crash_and_restart();
    let stats = w.api().get("/v1/bounces?days=1").expect(200).json();
    assert_eq!(stats["totalSent"], 2, "{stats}");
    assert_eq!(stats["delivered"], 2, "{stats}");
    assert_eq!(stats["days"], 1);
}

#[test]
fn bad_windows_other_domains_and_org_keys() {
    let w = World::start();
    for q in ["days=0", "days=91", "days=abc", "days=-1", "days=1.5", "days="] {
        let e = w.alpha().get(&format!("/v1/bounces?{q}")).expect_error(400, "invalid_request");
        assert!(e["message"].as_str().is_some_and(|m| m.contains("`days`")), "{e}");
    }
    for q in ["days=1", "days=90"] {
        w.alpha().get(&format!("/v1/bounces?{q}")).expect(200);
    }
    w.alpha().get(&format!("/v1/bounces?domain={B}")).expect_error(404, "not_found");
    w.anonymous().get("/v1/bounces").expect_error(401, "unauthorized");
    let own = w.beta().get("/v1/bounces").expect(200).json();
    assert_eq!(own["domain"], B);
    assert_eq!(own["days"], 30);

    let all = w.org().get("/v1/bounces?days=14").expect(200).json();
    let rows = all.as_array().expect("an array for an org-wide key"); // ok: test
    let domains: Vec<&str> = rows.iter().filter_map(|r| r["domain"].as_str()).collect();
    assert_eq!(domains, [A, B]);
    assert!(rows.iter().all(|r| r["days"] == 14 && r["totalSent"] == 0 && r["bounceRate"] == 0.0));
    let only = w.org().get(&format!("/v1/bounces?domain={B}")).expect(200).json();
    assert_eq!(only.as_array().map(Vec::len), Some(1), "{only}");
    assert_eq!(only[0]["domain"], B);
    w.org().get("/v1/bounces?domain=unknown.test").expect_error(404, "not_found");
}

#[test]
fn a_dsn_returning_only_the_header_to_another_address_bounces_by_message_id() {
    let w = MailWorld::start();
    // The report reaches a mailbox, not a bounce address: it counts only when its sender
    // authenticated for its From domain (SPF for the HELO of a null sender).
    w.dns.add_txt("mx.example.org", "v=spf1 ip4:127.0.0.1 -all");
    let id = message_id_of(&w.send(basic(json!("moved@example.org"))).expect(200).json());
    w.wait_status(&id, "delivered");
    let got = w.sink.wait_for(1, Duration::from_secs(10));
    let original = header(&got[0].data, "Message-ID").expect("Message-ID"); // ok: test
    let dsn = format!(
        "From: MAILER-DAEMON@mx.example.org\r\nTo: sales@alpha.test\r\nSubject: Undelivered\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"b\"\r\n\r\n\
         --b\r\nContent-Type: text/plain\r\n\r\nGone.\r\n--b\r\n\
         Content-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.org\r\n\r\n\
         Final-Recipient: rfc822; moved@example.org\r\nAction: failed\r\nStatus: 5.1.1\r\n\
         Diagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n--b\r\n\
         Content-Type: text/rfc822-headers\r\n\r\nFrom: sales@alpha.test\r\nTo: moved@example.org\r\n\
         Message-ID: {original}\r\nSubject: Hello\r\n--b--"
    );
    let (mut s, _) = crate::smtp_client::Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    assert!(s.mail("", &["sales@alpha.test"], &dsn).starts_with("250"));
    let email = w.wait_status(&id, "bounced");
    let d = &email["deliveries"][0];
    assert_eq!(d["status"], "bounced", "{email}");
    assert_eq!(d["bounceClass"], "invalid_recipient", "{email}");
    let stats = w.api().get("/v1/bounces").expect(200).json();
    assert_eq!(stats["byClass"]["invalid_recipient"], 1, "{stats}");
}
