//! Addresses that are no mailbox: aliases (several targets, chains, loops), the catch-all,
//! `+tag` sub-addressing and mailbox forwarding between hosted mailboxes, over real SMTP.

use serde_json::{Value, json};

use crate::mail_world::MailWorld;
use crate::smtp_client::Talk;

fn message(to: &str, subject: &str) -> String {
    format!(
        "From: Ada <ada@example.org>\r\nTo: {to}\r\nSubject: {subject}\r\n\
         Message-ID: <{subject}@example.org>\r\n\r\nHello there.\r\n"
    )
}

fn inbox(w: &MailWorld, mailbox: &str) -> Vec<Value> {
    let list =
        w.api().get(&format!("/v1/emails?mailbox={mailbox}&folder=inbox")).expect(200).json();
    list.as_array().cloned().unwrap_or_default()
}

fn full(w: &MailWorld, summary: &Value) -> Value {
    let id = summary["id"].as_str().expect("id"); // ok: test
    w.api().get(&format!("/v1/emails/{id}")).expect(200).json()
}

fn mailboxes(w: &MailWorld, locals: &[&str]) {
    for local in locals {
        w.api().post("/v1/mailboxes", json!({"address": local})).expect(201);
    }
}

#[test]
fn an_alias_reaches_each_target_mailbox_once() {
    let w = MailWorld::start();
    mailboxes(&w, &["ada", "bob", "cy"]);
    let alias = w
        .api()
        .post(
            "/v1/aliases",
            json!({"address": "team", "targets": ["ada@alpha.test", "BOB@alpha.test", "cy@alpha.test"]}),
        )
        .expect(201)
        .json();
    assert_eq!(alias["address"], "team@alpha.test");
    assert_eq!(alias["targets"], json!(["ada@alpha.test", "bob@alpha.test", "cy@alpha.test"]));
    assert!(alias["createdAt"].as_u64().is_some(), "{alias}");
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO client.example.org");
    // The alias and one of its targets named directly: still one copy per mailbox.
    let done = s.mail(
        "ada@example.org",
        &["ada@alpha.test", "team@alpha.test"],
        &message("team@alpha.test", "t1"),
    );
    assert!(done.starts_with("250"), "{done}");
    for local in ["ada", "bob", "cy"] {
        let list = inbox(&w, local);
        assert_eq!(list.len(), 1, "{local}: {list:?}");
        let email = full(&w, &list[0]);
        let expected = if local == "ada" { "ada@alpha.test" } else { "team@alpha.test" };
        assert_eq!(email["deliveredTo"], expected, "{local}");
    }
    assert_eq!(w.api().get("/v1/aliases").expect(200).json().as_array().map(Vec::len), Some(1));
    w.api().get("/v1/aliases/team@alpha.test").expect(200);
    let patched =
        w.api().patch("/v1/aliases/team", json!({"targets": ["cy@alpha.test"]})).expect(200).json();
    assert_eq!(patched["targets"], json!(["cy@alpha.test"]));
    w.api().delete("/v1/aliases/team").expect(200);
    w.api().get("/v1/aliases/team").expect(404);
}

#[test]
fn an_address_is_a_mailbox_or_an_alias_never_both() {
    let w = MailWorld::start();
    mailboxes(&w, &["ada"]);
    let refused =
        w.api().post("/v1/aliases", json!({"address": "ada", "targets": ["x@example.org"]}));
    refused.expect_error(409, "conflict");
    w.api()
        .post("/v1/aliases", json!({"address": "help", "targets": ["ada@alpha.test"]}))
        .expect(201);
    w.api().post("/v1/mailboxes", json!({"address": "help"})).expect_error(409, "conflict");
    w.api()
        .post("/v1/aliases", json!({"address": "help", "targets": ["ada@alpha.test"]}))
        .expect_error(409, "conflict");
    w.api().post("/v1/aliases", json!({"address": "x", "targets": []})).expect(400);
    w.api()
        .post("/v1/aliases", json!({"address": "x@other.test", "targets": ["ada@alpha.test"]}))
        .expect(400);
}

#[test]
fn catch_all_and_subaddresses_land_where_the_contract_says() {
    let w = MailWorld::start();
    mailboxes(&w, &["ada", "bob"]);
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO client.example.org");
    // Without a catch-all an unknown address is refused at RCPT; a +tag of a mailbox is not.
    s.cmd("MAIL FROM:<ada@example.org>");
    let unknown = s.cmd("RCPT TO:<nobody@alpha.test>");
    assert!(unknown.starts_with("550 5.1.1"), "{unknown}");
    s.cmd("RSET");
    let done =
        s.mail("ada@example.org", &["ada+news@alpha.test"], &message("ada+news@alpha.test", "t2"));
    assert!(done.starts_with("250"), "{done}");
    let list = inbox(&w, "ada");
    assert_eq!(list.len(), 1);
    assert_eq!(full(&w, &list[0])["deliveredTo"], "ada+news@alpha.test");
    // The catch-all takes any other local part; a +tag of a mailbox still goes to the mailbox.
    w.api().post("/v1/aliases", json!({"address": "*", "targets": ["bob@alpha.test"]})).expect(201);
    let done =
        s.mail("ada@example.org", &["whoever@alpha.test"], &message("whoever@alpha.test", "t3"));
    assert!(done.starts_with("250"), "{done}");
    let done = s.mail("ada@example.org", &["ada+x@alpha.test"], &message("ada+x@alpha.test", "t4"));
    assert!(done.starts_with("250"), "{done}");
    let bob = inbox(&w, "bob");
    assert_eq!(bob.len(), 1, "{bob:?}");
    assert_eq!(full(&w, &bob[0])["deliveredTo"], "whoever@alpha.test");
    assert_eq!(inbox(&w, "ada").len(), 2);
    w.api().get("/v1/aliases/%2A").expect(200);
    w.api().delete("/v1/aliases/*").expect(200);
    s.cmd("MAIL FROM:<ada@example.org>");
    let unknown = s.cmd("RCPT TO:<whoever@alpha.test>");
    assert!(unknown.starts_with("550 5.1.1"), "{unknown}");
}

#[test]
fn the_separator_is_configurable_and_can_be_turned_off() {
    let w = MailWorld::start_with(&[("EDGEMAIL_SMTP_SUBADDRESS_SEPARATOR", "")], &[]);
    mailboxes(&w, &["ada"]);
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO client.example.org");
    s.cmd("MAIL FROM:<ada@example.org>");
    let refused = s.cmd("RCPT TO:<ada+news@alpha.test>");
    assert!(refused.starts_with("550 5.1.1"), "{refused}");
}

#[test]
fn mailbox_forwarding_and_alias_loops() {
    let w = MailWorld::start();
    mailboxes(&w, &["ada", "bob"]);
    let shown = w
        .api()
        .patch("/v1/mailboxes/ada", json!({"forwardTo": ["bob@alpha.test"], "keepCopy": false}))
        .expect(200)
        .json();
    assert_eq!(shown["forwardTo"], json!(["bob@alpha.test"]));
    assert_eq!(shown["keepCopy"], false);
    // Two aliases naming each other: the loop ends, and the mailbox it also names gets one copy.
    w.api()
        .post("/v1/aliases", json!({"address": "a", "targets": ["b@alpha.test", "ada@alpha.test"]}))
        .expect(201);
    w.api().post("/v1/aliases", json!({"address": "b", "targets": ["a@alpha.test"]})).expect(201);
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO client.example.org");
    let done = s.mail("ada@example.org", &["a@alpha.test"], &message("a@alpha.test", "t5"));
    assert!(done.starts_with("250"), "{done}");
    assert_eq!(inbox(&w, "ada").len(), 0);
    assert_eq!(inbox(&w, "bob").len(), 1);
    w.api().patch("/v1/mailboxes/ada", json!({"keepCopy": true})).expect(200);
    let done = s.mail("ada@example.org", &["ada@alpha.test"], &message("ada@alpha.test", "t6"));
    assert!(done.starts_with("250"), "{done}");
    assert_eq!(inbox(&w, "ada").len(), 1);
    assert_eq!(inbox(&w, "bob").len(), 2);
}

/// A message as an outside sender signs it: the signature cannot verify here (no key is
/// published for it), but it must reach the forward's receiver byte for byte.
pub const SIGNED: &str = "DKIM-Signature: v=1; a=rsa-sha256; c=relaxed/relaxed; d=example.net; s=s1;\r\n\th=from:to:subject; bh=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=; b=c2lnbmF0dXJl\r\n";

pub fn signed_message(to: &str, subject: &str) -> String {
    format!("{SIGNED}{}", message(to, subject).replace("ada@example.org", "bob@example.net"))
}

/// Verifies the ARC chain (and the topmost DKIM signature) of `message` with dkimpy, reading
/// keys from the test's DNS server; `None` when dkimpy is not installed.
pub fn dkimpy(w: &MailWorld, message: &[u8]) -> Option<String> {
    let python = "/usr/bin/python3";
    let probe =
        std::process::Command::new(python).args(["-c", "import dkim, dns.resolver"]).output();
    if !probe.is_ok_and(|o| o.status.success()) {
        eprintln!("dkimpy (python3-dkim) missing: ARC not verified by an outside implementation");
        return None;
    }
    let script = r#"
import sys, dkim, dns.resolver
msg = sys.stdin.buffer.read()
r = dns.resolver.Resolver(configure=False)
r.nameservers = [sys.argv[1]]
r.port = int(sys.argv[2])
def dnsfunc(name, timeout=5):
    answer = r.resolve(name.decode().rstrip('.'), 'TXT', lifetime=timeout)
    return b''.join(b''.join(rd.strings) for rd in answer)
cv, _, why = dkim.arc_verify(msg, dnsfunc=dnsfunc)
ok = dkim.verify(msg, dnsfunc=dnsfunc)
print(cv.decode(), ok, why)
"#;
    let addr = w.dns.addr();
    let mut child = std::process::Command::new(python)
        .args(["-c", script, &addr.ip().to_string(), &addr.port().to_string()])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3"); // ok: test
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(message).expect("write"); // ok: test
    let out = child.wait_with_output().expect("dkimpy"); // ok: test
    Some(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

#[test]
fn a_forward_to_an_outside_address_is_sealed_and_sent_with_an_srs_sender() {
    let w = MailWorld::start();
    mailboxes(&w, &["ada"]);
    w.api()
        .post(
            "/v1/aliases",
            json!({"address": "fwd", "targets": ["friend@example.org", "ada@alpha.test"]}),
        )
        .expect(201);
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO client.example.net");
    let done =
        s.mail("bob@example.net", &["fwd@alpha.test"], &signed_message("fwd@alpha.test", "f1"));
    assert!(done.starts_with("250"), "{done}");
    let got = w.sink.wait_for(1, std::time::Duration::from_secs(20));
    assert_eq!(got.len(), 1);
    let m = &got[0];
    assert_eq!(m.rcpt_to, vec!["friend@example.org".to_owned()]);
    assert!(m.mail_from.starts_with("SRS0="), "{}", m.mail_from);
    assert!(m.mail_from.ends_with("=example.net=bob@alpha.test"), "{}", m.mail_from);
    let data = String::from_utf8_lossy(&m.data).into_owned();
    assert!(data.contains(SIGNED), "original signature changed:\n{data}");
    for name in [
        "ARC-Seal: i=1",
        "ARC-Message-Signature: i=1",
        "ARC-Authentication-Results: i=1",
        "X-Edgemail-Loop: fwd@alpha.test",
    ] {
        assert!(data.contains(name), "{name} missing:\n{data}");
    }
    assert!(data.contains("Hello there."), "{data}");
    // The hosted target got its copy as well.
    assert_eq!(inbox(&w, "ada").len(), 1);
    if let Some(verdict) = dkimpy(&w, &m.data) {
        assert!(verdict.starts_with("pass True"), "dkimpy: {verdict}\n{data}");
    }

    // A bounce to the SRS address goes on to the original sender, with the null sender.
    let srs = m.mail_from.clone();
    let dsn = format!(
        "From: MAILER-DAEMON@example.org\r\nTo: {srs}\r\nSubject: Undelivered Mail\r\n\
         Auto-Submitted: auto-replied\r\nMessage-ID: <dsn1@example.org>\r\n\r\nfriend: no such user\r\n"
    );
    let done = s.mail("", &[&srs], &dsn);
    assert!(done.starts_with("250"), "{done}");
    let got = w.sink.wait_for(2, std::time::Duration::from_secs(20));
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].rcpt_to, vec!["bob@example.net".to_owned()]);
    assert_eq!(got[1].mail_from, "");
    assert!(String::from_utf8_lossy(&got[1].data).contains("friend: no such user"));
    // A made-up SRS address is refused at RCPT.
    s.cmd("MAIL FROM:<>");
    let forged = s.cmd("RCPT TO:<SRS0=AAAAAA=AB=example.net=bob@alpha.test>");
    assert!(forged.starts_with("550"), "{forged}");
}

#[test]
fn loops_are_refused_and_spam_is_not_forwarded() {
    let w = MailWorld::start();
    mailboxes(&w, &["ada"]);
    w.api()
        .patch(
            "/v1/mailboxes/ada",
            json!({"forwardTo": ["friend@example.org"], "spamFilter": {"junkThreshold": -40}}),
        )
        .expect(200);
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO client.example.net");
    let hops: String =
        (0..26).map(|i| format!("Received: from hop{i}.example.net by hop{i}.example.net; Thu, 26 Nov 2026 10:00:00 +0000\r\n")).collect();
    let looping = format!("{hops}{}", message("ada@alpha.test", "l1"));
    let refused = s.mail("bob@example.net", &["ada@alpha.test"], &looping);
    assert!(refused.starts_with("554 5.4.6"), "{refused}");
    let marked = format!("X-Edgemail-Loop: ada@alpha.test\r\n{}", message("ada@alpha.test", "l2"));
    let refused = s.mail("bob@example.net", &["ada@alpha.test"], &marked);
    assert!(refused.starts_with("554 5.4.6"), "{refused}");
    // Ada's filter now calls everything spam: it stays in her Junk and is not forwarded.
    let done = s.mail("bob@example.net", &["ada@alpha.test"], &message("ada@alpha.test", "s1"));
    assert!(done.starts_with("250"), "{done}");
    let junk = w.api().get("/v1/emails?mailbox=ada&folder=junk").expect(200).json();
    assert_eq!(junk.as_array().map(Vec::len), Some(1), "{junk}");
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert!(w.sink.messages().is_empty());
    // Below the threshold again, the next message is forwarded.
    w.api().patch("/v1/mailboxes/ada", json!({"spamFilter": {"junkThreshold": 5}})).expect(200);
    let done = s.mail("bob@example.net", &["ada@alpha.test"], &message("ada@alpha.test", "s2"));
    assert!(done.starts_with("250"), "{done}");
    assert_eq!(w.sink.wait_for(1, std::time::Duration::from_secs(20)).len(), 1);
}
