//! Mail from a hosted domain to a mailbox of the same server: filed in the recipient's inbox
//! directly, DKIM-signed as ever, without any DNS lookup for the recipient domain, and
//! `delivered` for the sender; other recipients of the same message still go out over SMTP.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::Client;
use crate::harness::{B, Seed, TempDir};
use crate::mail_world::{MailWorld, header, verify_dkim};

/// The inbox of `mailbox` once it holds `n` messages.
fn inbox(c: &Client, mailbox: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let list = c.get(&format!("/v1/emails?mailbox={mailbox}")).expect(200).json();
        let list = list.as_array().cloned().unwrap_or_default();
        if list.len() >= n {
            return list;
        }
        assert!(Instant::now() < deadline, "{mailbox} got {} of {n} messages", list.len());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn mail_between_hosted_domains_is_filed_directly_signed_and_delivered() {
    let dir = TempDir::new("local");
    let seed = Seed::open(&dir.0);
    seed.domain(B);
    seed.mailbox(B, "ops");
    let beta_key = seed.key(Some(B));
    seed.close();
    // No DNS record names beta.test anywhere: only local delivery can reach it.
    let w = MailWorld::start_in(dir, &[], &[]);
    let beta = w.server.client(Some(&beta_key));

    let sent = w
        .send(json!({
            "from": "sales@alpha.test",
            "to": ["ops@beta.test", "ada@example.org", "nobody@beta.test"],
            "subject": "Handover", "text": "From one hosted domain to another."
        }))
        .expect(200)
        .json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    let email = w.wait_email(&id, |e| {
        e["deliveries"].as_array().is_some_and(|d| d.iter().all(|d| d["status"] != "queued"))
    });
    let status = |rcpt: &str| {
        let d = email["deliveries"].as_array().expect("deliveries");
        d.iter().find(|d| d["recipient"] == rcpt).cloned().expect("a delivery")
    };
    assert_eq!(status("ops@beta.test")["status"], "delivered", "{email}");
    assert_eq!(status("ada@example.org")["status"], "delivered", "{email}");
    let nobody = status("nobody@beta.test");
    assert_eq!(nobody["status"], "bounced", "{email}");
    assert!(nobody["lastResponse"].as_str().is_some_and(|r| r.starts_with("550 5.1.1")));
    // Only the outside recipient went over SMTP.
    let got = w.sink.wait_for(1, Duration::from_secs(20));
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].rcpt_to, ["ada@example.org"]);

    let list = inbox(&beta, "ops", 1);
    assert_eq!(list.len(), 1, "filed once: {list:?}");
    assert_eq!(list[0]["subject"], "Handover");
    assert_eq!(list[0]["folder"], "inbox");
    let copy_id = list[0]["id"].as_str().expect("id");
    let copy = beta.get(&format!("/v1/emails/{copy_id}")).expect(200).json();
    assert_eq!(copy["from"], "sales@alpha.test");
    assert_eq!(copy["status"], "received");
    assert_eq!(copy["text"], "From one hosted domain to another.");
    let names: Vec<&str> = copy["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .filter_map(|h| h["name"].as_str())
        .collect();
    assert_eq!(&names[..2], ["Received", "Authentication-Results"], "{names:?}");
    assert!(names.contains(&"DKIM-Signature"), "{names:?}");

    let raw = beta.get(&format!("/v1/emails/{copy_id}/raw")).expect(200).body;
    let results = header(&raw, "Authentication-Results").expect("Authentication-Results");
    assert!(results.contains("dkim=pass") && results.contains("dmarc=pass"), "{results}");
    let verified = verify_dkim(&w.dns, &raw);
    assert!(!verified.is_empty() && verified.iter().all(|(_, r)| r == "Pass"), "{verified:?}");

    let asked: Vec<String> = w.dns.queries().into_iter().map(|q| q.name).collect();
    assert!(!asked.iter().any(|name| name.ends_with("beta.test")), "DNS was asked: {asked:?}");
}

#[test]
fn mail_to_a_mailbox_of_the_same_domain_lands_in_its_inbox() {
    let w = MailWorld::start();
    w.api().post("/v1/mailboxes", json!({"address": "team"})).expect(201);
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": "team@alpha.test", "subject": "Hi team",
                     "html": "<p>Lunch?</p>"}))
        .expect(200)
        .json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    let email = w.wait_status(&id, "delivered");
    assert_eq!(email["folder"], "sent");
    let list = inbox(&w.api(), "team", 1);
    assert_eq!(list[0]["subject"], "Hi team");
    assert_eq!(w.sink.messages().len(), 0, "nothing went over SMTP");
    let asked: Vec<String> = w.dns.queries().into_iter().map(|q| q.name).collect();
    assert!(!asked.iter().any(|name| name.contains("alpha.test")), "DNS was asked: {asked:?}");
}
