//! What a stored copy says about how it arrived (issue 32, findings 11 and 12): each local copy
//! names its own bounce address, never a co-recipient's, so no recipient can forge a DSN about
//! another; and Authentication-Results fields a sender wrote in our name are removed, while ours
//! says `dkim=none` for unsigned mail.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::A;
use crate::mail_world::MailWorld;
use crate::smtp_client::Talk;

/// The inbox of `mailbox` once it holds `n` messages.
fn inbox(w: &MailWorld, mailbox: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = w.api().get(&format!("/v1/emails?mailbox={mailbox}")).expect(200).json();
        let list = list.as_array().cloned().unwrap_or_default();
        if list.len() >= n {
            return list;
        }
        assert!(Instant::now() < deadline, "{mailbox} got {} of {n} messages", list.len());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn raw_of(w: &MailWorld, mailbox: &str) -> String {
    let list = inbox(w, mailbox, 1);
    let id = list[0]["id"].as_str().expect("id");
    String::from_utf8_lossy(&w.api().get(&format!("/v1/emails/{id}/raw")).expect(200).body)
        .into_owned()
}

/// Every `bounces+...@alpha.test` address a text names.
fn bounce_addresses(text: &str) -> Vec<String> {
    let mut found: Vec<String> = text
        .match_indices("bounces+")
        .map(|(at, _)| {
            text[at..]
                .chars()
                .take_while(|c| !c.is_whitespace() && !matches!(c, ';' | '>' | ')'))
                .collect()
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

fn suppressed(w: &MailWorld) -> Vec<String> {
    let page = w.api().get("/v1/suppressions").expect(200).json();
    let items = page["items"].as_array().cloned().unwrap_or_default();
    items.iter().filter_map(|i| i["email"].as_str().map(str::to_owned)).collect()
}

#[test]
fn each_local_copy_names_only_its_own_bounce_address() {
    let w = MailWorld::start();
    w.api().post("/v1/mailboxes", json!({"address": "ops"})).expect(201);
    let sent = w
        .send(json!({
            "from": "sales@alpha.test", "to": ["sales@alpha.test", "ops@alpha.test"],
            "subject": "to two", "text": "one message, two local copies"
        }))
        .expect(200)
        .json();
    w.wait_status(sent["messageId"].as_str().expect("id"), "delivered");
    let (to_sales, to_ops) = (raw_of(&w, "sales"), raw_of(&w, "ops"));
    let (sales, ops) = (bounce_addresses(&to_sales), bounce_addresses(&to_ops));
    assert_eq!(sales.len(), 1, "{to_sales}");
    assert_eq!(ops.len(), 1, "{to_ops}");
    assert_ne!(sales, ops, "each copy has its own bounce address");

    // The ops mailbox forges a DSN through the one bounce address it saw, about sales@: it may
    // speak only for its own recipient, so nobody is suppressed.
    let dsn = format!(
        "From: MAILER-DAEMON@alpha.test\r\nTo: {0}\r\nSubject: Undelivered\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/report; report-type=delivery-status; boundary=\"b\"\r\n\r\n--b\r\n\
         Content-Type: text/plain\r\n\r\ngone\r\n--b\r\nContent-Type: message/delivery-status\r\n\r\n\
         Reporting-MTA: dns; mx.example.org\r\n\r\nFinal-Recipient: rfc822; sales@{A}\r\n\
         Action: failed\r\nStatus: 5.1.1\r\n\r\n--b--\r\n",
        ops[0]
    );
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO example.org");
    let reply = s.mail("", &[&ops[0]], &dsn);
    s.cmd("QUIT");
    assert!(reply.starts_with("250") || reply.starts_with('5'), "{reply}");
    assert_eq!(suppressed(&w), Vec::<String>::new());
}

#[test]
fn results_in_our_name_are_removed_and_unsigned_mail_says_dkim_none() {
    let w = MailWorld::start();
    // Our authserv-id is the host our Received field names.
    let probe = "From: ann@example.org\r\nSubject: probe\r\n\r\nx\r\n";
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO example.org");
    assert!(s.mail("ann@example.org", &[&format!("sales@{A}")], probe).starts_with("250"));
    let first = raw_of(&w, "sales");
    let host = first
        .lines()
        .find_map(|l| l.strip_prefix("Authentication-Results: "))
        .and_then(|v| v.split(';').next())
        .expect("our results")
        .trim()
        .to_owned();

    let forged = format!(
        "Authentication-Results: {host}; dkim=pass header.d=paypal.com; dmarc=pass\r\n\
         Authentication-Results: {} 1;\r\n spf=pass\r\n\
         Authentication-Results: mx.google.com; spf=pass smtp.mailfrom=example.org\r\n\
         From: ann@example.org\r\nSubject: forged\r\n\r\nbody\r\n",
        host.to_ascii_uppercase()
    );
    assert!(s.mail("ann@example.org", &[&format!("sales@{A}")], &forged).starts_with("250"));
    s.cmd("QUIT");
    let list = inbox(&w, "sales", 2);
    let id = list.iter().find(|e| e["subject"] == "forged").expect("stored")["id"]
        .as_str()
        .expect("id")
        .to_owned();
    let raw = w.api().get(&format!("/v1/emails/{id}/raw")).expect(200).body;
    let raw = String::from_utf8_lossy(&raw);
    let ours: Vec<&str> = raw
        .split("\r\n")
        .filter(|l| l.to_ascii_lowercase().starts_with("authentication-results:"))
        .collect();
    assert_eq!(ours.len(), 2, "ours and google's: {raw}");
    assert!(ours[1].contains("mx.google.com"), "{raw}");
    assert!(!raw.contains("header.d=paypal.com"), "{raw}");
    assert!(raw.contains("dkim=none"), "unsigned mail: {raw}");
}
