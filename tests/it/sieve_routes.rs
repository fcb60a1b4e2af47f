//! How what Sieve and vacation send leaves the server, through the real MX, the delivery queue
//! and a sink SMTP server: answers with the null envelope sender (`MAIL FROM:<>`), DKIM-signed;
//! redirects as forwards (SRS sender, ARC seal verified by dkimpy) whose bounces return to the
//! original sender; vacation answering mail to any address of the mailbox (aliases, `+tag`) and
//! to nothing else; a partial reject noticed only to an authenticated sender, with the null
//! sender; and mail between mailboxes of this server routed exactly as mail from outside
//! (aliases, outside forwards, Sieve, vacation).

use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::A;
use crate::mail_world::{MailWorld, header, verify_dkim};
use crate::routing::{SIGNED, dkimpy, signed_message};
use crate::smtp_client::Talk;

fn message(from: &str, to: &str, subject: &str) -> String {
    format!(
        "From: {from}\r\nTo: {to}\r\nSubject: {subject}\r\nMessage-ID: <{subject}@mail.test>\r\n\
         Date: Thu, 26 Nov 2026 10:00:00 +0000\r\n\r\nHello there.\r\n"
    )
}

fn mail(w: &MailWorld, from: &str, rcpt: &[&str], message: &str) -> String {
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mail.sender.test");
    s.mail(from, rcpt, message)
}

fn emails(w: &MailWorld, mailbox: &str, folder: &str) -> Vec<Value> {
    let path = format!("/v1/emails?mailbox={mailbox}&folder={folder}");
    w.api().get(&path).expect(200).json().as_array().cloned().unwrap_or_default()
}

fn wait_subject(w: &MailWorld, mailbox: &str, folder: &str, subject: &str) -> Value {
    for _ in 0..400 {
        if let Some(e) = emails(w, mailbox, folder).into_iter().find(|e| e["subject"] == subject) {
            return e;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{subject:?} never reached {mailbox}/{folder}\nserver log:\n{}", w.server.log());
}

/// Everything the sink got once nothing more arrives for a while.
fn settled(w: &MailWorld, at_least: usize) -> Vec<crate::smtp_sink::Received> {
    w.sink.wait_for(at_least, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(1500));
    w.sink.messages()
}

#[test]
fn vacation_answers_every_address_of_the_mailbox_with_the_null_sender() {
    let w = MailWorld::start();
    w.api()
        .post("/v1/aliases", json!({"address": "info", "targets": [format!("sales@{A}")]}))
        .expect(201);
    w.api()
        .put(
            "/v1/mailboxes/sales/vacation",
            json!({"enabled": true, "subject": "Away", "text": "Back soon."}),
        )
        .expect(200);
    // To the alias, to a +tag address, and (Bcc) with no address of the mailbox in the header.
    let info = format!("info@{A}");
    let tagged = format!("sales+shop@{A}");
    let sales = format!("sales@{A}");
    assert!(
        mail(&w, "ann@example.org", &[&info], &message("<ann@example.org>", &info, "v1"))
            .starts_with("250")
    );
    assert!(
        mail(&w, "cy@example.org", &[&tagged], &message("<cy@example.org>", &tagged, "v2"))
            .starts_with("250")
    );
    let bcc = message("<dan@example.org>", "someone@example.net", "v3");
    assert!(mail(&w, "dan@example.org", &[&sales], &bcc).starts_with("250"));
    wait_subject(&w, "sales", "inbox", "v3");
    let got = settled(&w, 2);
    let mut to: Vec<String> = got.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    to.sort();
    assert_eq!(to, ["ann@example.org", "cy@example.org"], "dan's Bcc copy gets no answer");
    for reply in &got {
        assert_eq!(reply.mail_from, "", "an automatic answer has the null sender");
        assert_eq!(header(&reply.data, "Auto-Submitted").as_deref(), Some("auto-replied"));
        assert_eq!(header(&reply.data, "Subject").as_deref(), Some("Away"));
        let dkim = verify_dkim(&w.dns, &reply.data);
        assert!(dkim.iter().any(|(_, r)| r == "Pass"), "DKIM: {dkim:?}");
    }
}

#[test]
fn a_redirect_leaves_as_a_forward_and_its_bounce_returns_to_the_sender() {
    let w = MailWorld::start();
    let script = "require [\"copy\"];\nif header :contains \"subject\" \"keep\" { redirect :copy \"friend@example.org\"; } else { redirect \"friend@example.org\"; }\n";
    w.api().put("/v1/mailboxes/sales/sieve", json!({"script": script})).expect(200);
    let sales = format!("sales@{A}");
    let done = mail(&w, "bob@example.net", &[&sales], &signed_message(&sales, "r1"));
    assert!(done.starts_with("250"), "{done}");
    let got = w.sink.wait_for(1, Duration::from_secs(20));
    let m = &got[0];
    assert_eq!(m.rcpt_to, ["friend@example.org"]);
    assert!(m.mail_from.starts_with("SRS0="), "{}", m.mail_from);
    assert!(m.mail_from.ends_with(&format!("=example.net=bob@{A}")), "{}", m.mail_from);
    let data = String::from_utf8_lossy(&m.data).into_owned();
    assert!(data.contains(SIGNED), "the sender's signature is kept:\n{data}");
    assert!(
        data.contains("ARC-Seal: i=1") && data.contains("ARC-Message-Signature: i=1"),
        "{data}"
    );
    if let Some(verdict) = dkimpy(&w, &m.data) {
        assert!(verdict.starts_with("pass True"), "dkimpy: {verdict}\n{data}");
    }
    // Without :copy nothing stays here; with it, a copy does.
    assert!(emails(&w, "sales", "inbox").is_empty());
    let done = mail(&w, "bob@example.net", &[&sales], &signed_message(&sales, "keep1"));
    assert!(done.starts_with("250"), "{done}");
    wait_subject(&w, "sales", "inbox", "keep1");

    // The destination bounces the redirect: the DSN reaches bob, with the null sender.
    let srs = m.mail_from.clone();
    let dsn = format!(
        "From: MAILER-DAEMON@example.org\r\nTo: {srs}\r\nSubject: Undelivered Mail\r\n\
         Auto-Submitted: auto-replied\r\nMessage-ID: <dsn-r1@example.org>\r\n\r\nfriend: gone\r\n"
    );
    assert!(mail(&w, "", &[&srs], &dsn).starts_with("250"));
    let got = w.sink.wait_for(3, Duration::from_secs(20));
    let back = got.iter().find(|m| m.rcpt_to == ["bob@example.net"]).expect("bounce passed back"); // ok: test
    assert_eq!(back.mail_from, "");
    assert!(String::from_utf8_lossy(&back.data).contains("friend: gone"));
}

#[test]
fn a_partial_reject_notices_only_an_authenticated_sender_and_never_backscatters() {
    let w = MailWorld::start();
    w.dns.add_txt("example.net", "v=spf1 ip4:127.0.0.1 -all");
    w.api().post("/v1/mailboxes", json!({"address": "ada"})).expect(201);
    let script = "require \"reject\";\nreject \"not here, thanks\";\n";
    w.api().put("/v1/mailboxes/ada/sieve", json!({"script": script})).expect(200);
    let (ada, sales) = (format!("ada@{A}"), format!("sales@{A}"));
    // Only ada: refused at SMTP time, with the reason.
    let refused = mail(&w, "eve@forged.test", &[&ada], &message("<eve@forged.test>", &ada, "p0"));
    assert!(refused.starts_with("550 5.7.1") && refused.contains("not here, thanks"), "{refused}");
    // Ada and sales from a sender nothing proves: sales keeps it, nobody is told.
    let forged = message("<eve@forged.test>", &ada, "p1");
    assert!(mail(&w, "eve@forged.test", &[&ada, &sales], &forged).starts_with("250"));
    wait_subject(&w, "sales", "inbox", "p1");
    // The same from a sender SPF proves: the notice goes to it, with the null sender.
    let proven = message("<bob@example.net>", &ada, "p2");
    assert!(mail(&w, "bob@example.net", &[&ada, &sales], &proven).starts_with("250"));
    wait_subject(&w, "sales", "inbox", "p2");
    let got = settled(&w, 1);
    assert_eq!(got.len(), 1, "{:?}", got.iter().map(|m| &m.rcpt_to).collect::<Vec<_>>());
    assert_eq!(got[0].rcpt_to, ["bob@example.net"]);
    assert_eq!(got[0].mail_from, "");
    assert!(String::from_utf8_lossy(&got[0].data).contains("not here, thanks"));
    assert!(emails(&w, "ada", "inbox").is_empty());
}

#[test]
fn mail_between_mailboxes_of_this_server_is_routed_as_mail_from_outside() {
    let w = MailWorld::start();
    w.api().post("/v1/mailboxes", json!({"address": "bob"})).expect(201);
    let targets = json!([format!("bob@{A}"), "friend@example.org"]);
    w.api().post("/v1/aliases", json!({"address": "team", "targets": targets})).expect(201);
    let script = "require [\"fileinto\", \"imap4flags\", \"mailbox\"];\n\
                  if header :contains \"subject\" \"file\" { fileinto :create :flags \"\\\\Flagged\" \"Later\"; }\n";
    w.api().put("/v1/mailboxes/bob/sieve", json!({"script": script})).expect(200);
    w.api()
        .put(
            "/v1/mailboxes/bob/vacation",
            json!({"enabled": true, "subject": "Bob is away", "text": "Later."}),
        )
        .expect(200);
    let team = format!("team@{A}");
    let body = json!({"from": format!("sales@{A}"), "to": [team], "subject": "file this", "text": "Hi team"});
    let sent = w.send(body).expect(200).json();
    let id = sent["messageId"].as_str().expect("id").to_owned(); // ok: test
    w.wait_status(&id, "delivered");
    // Sieve filed bob's copy, with its flags.
    let filed = wait_subject(&w, "bob", "Later", "file this");
    let full = w
        .api()
        .get(&format!("/v1/emails/{}", filed["id"].as_str().unwrap_or("")))
        .expect(200)
        .json();
    let flags = full["flags"].to_string();
    assert!(flags.contains("\\\\Flagged"), "{full}");
    assert!(emails(&w, "bob", "inbox").is_empty());
    // The alias's outside target got a forward with an SRS sender.
    let got = w.sink.wait_for(1, Duration::from_secs(20));
    assert_eq!(got[0].rcpt_to, ["friend@example.org"]);
    assert!(got[0].mail_from.starts_with("SRS0="), "{}", got[0].mail_from);
    assert!(String::from_utf8_lossy(&got[0].data).contains("ARC-Seal: i=1"));
    // Bob's vacation answered sales, inside this server, and only once.
    wait_subject(&w, "sales", "inbox", "Bob is away");
    let again = json!({"from": format!("sales@{A}"), "to": [format!("team@{A}")], "subject": "second", "text": "Hi"});
    let sent = w.send(again).expect(200).json();
    w.wait_status(sent["messageId"].as_str().unwrap_or(""), "delivered");
    wait_subject(&w, "bob", "inbox", "second");
    std::thread::sleep(Duration::from_millis(1500));
    let answers =
        emails(&w, "sales", "inbox").into_iter().filter(|e| e["subject"] == "Bob is away");
    assert_eq!(answers.count(), 1);
}
