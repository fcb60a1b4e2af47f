//! Inbound protection through the real MX: DMARC enforced (reject refused, quarantine and a
//! `pct` sampled-out reject to Junk, spoofs of our own domain refused), a client listed by a
//! DNS blacklist (on the local DNS) scored, the per-mailbox classifier learning from a move
//! into Junk over IMAP and from `not-junk`, the mailbox's history with a sender credited only
//! when the sender authenticated, and an ARC chain from a trusted sealer overriding a DMARC
//! failure.

use std::net::{IpAddr, Ipv4Addr};
use std::time::Duration;

use serde_json::{Value, json};

use crate::harness::A;
use crate::imap::Fixture;
use crate::smtp_client::Talk;

fn message(from: &str, subject: &str, body: &str) -> String {
    let id: u64 = rand_id(subject);
    format!(
        "From: {from}\r\nTo: sales@{A}\r\nSubject: {subject}\r\nMessage-ID: <{id}@mail.test>\r\n\
         Date: Thu, 26 Nov 2026 10:00:00 +0000\r\n\r\n{body}\r\n"
    )
}

/// A Message-ID part that differs per subject (and per call through the counter).
fn rand_id(subject: &str) -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    subject
        .bytes()
        .fold(N.fetch_add(1, Ordering::Relaxed), |h, b| h.wrapping_mul(31) ^ u64::from(b))
}

fn send_from(f: &Fixture, source: Ipv4Addr, mail_from: &str, message: &str) -> String {
    let (mut s, _) = Talk::open_from(f.world.server.smtp, IpAddr::V4(source));
    s.cmd("EHLO mail.sender.test");
    s.mail(mail_from, &[&format!("sales@{A}")], message)
}

fn send(f: &Fixture, mail_from: &str, message: &str) -> String {
    send_from(f, Ipv4Addr::LOCALHOST, mail_from, message)
}

/// The email with `subject` in `folder` of sales@, once it is there.
fn find(f: &Fixture, folder: &str, subject: &str) -> Value {
    for _ in 0..200 {
        if let Some((id, _)) = f.listed(folder).into_iter().find(|(_, s)| s == subject) {
            return f.world.api().get(&format!("/v1/emails/{id}")).expect(200).json();
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!(
        "{subject:?} never reached {folder}: inbox {:?}, junk {:?}",
        f.listed("inbox"),
        f.listed("junk")
    );
}

/// The email with `subject` in the inbox or in Junk of sales@, once it is in one.
fn find_anywhere(f: &Fixture, subject: &str) -> Value {
    for _ in 0..200 {
        for folder in ["inbox", "junk"] {
            if let Some((id, _)) = f.listed(folder).into_iter().find(|(_, s)| s == subject) {
                return f.world.api().get(&format!("/v1/emails/{id}")).expect(200).json();
            }
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{subject:?} never arrived");
}

fn header<'a>(email: &'a Value, name: &str) -> &'a str {
    email["headers"]
        .as_array()
        .and_then(|h| h.iter().find(|h| h["name"] == name))
        .and_then(|h| h["value"].as_str())
        .unwrap_or("")
}

#[test]
fn dmarc_is_enforced_and_our_own_domain_cannot_be_spoofed() {
    let f = Fixture::start();
    let dns = &f.world.dns;
    dns.add_txt("_dmarc.bank.test", "v=DMARC1; p=reject");
    dns.add_txt("bank.test", "v=spf1 -all");
    dns.add_txt("_dmarc.shop.test", "v=DMARC1; p=quarantine");
    dns.add_txt("shop.test", "v=spf1 -all");
    // pct=0: no failure is sampled for the reject policy, so each gets the next milder one.
    dns.add_txt("_dmarc.sampled.test", "v=DMARC1; p=reject; pct=0");
    dns.add_txt("sampled.test", "v=spf1 -all");

    let refused = send(&f, "alerts@bank.test", &message("Bank <alerts@bank.test>", "forged", "x"));
    assert!(refused.starts_with("550 5.7.1"), "{refused}");
    let spoof = send(&f, "ceo@elsewhere.test", &message(&format!("CEO <ceo@{A}>"), "wire", "x"));
    assert!(
        spoof.starts_with("550 5.7.1"),
        "unauthenticated mail in our own domain's name: {spoof}"
    );

    let quarantined = send(&f, "news@shop.test", &message("<news@shop.test>", "deals", "x"));
    assert!(quarantined.starts_with("250"), "{quarantined}");
    let junked = find(&f, "junk", "deals");
    assert_eq!(junked["spam"]["verdict"], "spam", "{junked}");
    let reasons = junked["spam"]["reasons"].to_string();
    assert!(reasons.contains("p=quarantine"), "{reasons}");
    assert!(header(&junked, "X-Spam-Status").starts_with("Yes"), "{junked}");

    let sampled = send(&f, "a@sampled.test", &message("<a@sampled.test>", "sampled", "x"));
    assert!(sampled.starts_with("250"), "pct=0 turns reject into quarantine: {sampled}");
    find(&f, "junk", "sampled");

    // Nothing refused reached any folder.
    for folder in ["inbox", "junk"] {
        let subjects: Vec<String> = f.listed(folder).into_iter().map(|(_, s)| s).collect();
        assert!(!subjects.iter().any(|s| s == "forged" || s == "wire"), "{folder}: {subjects:?}");
    }
}

#[test]
fn a_blacklisted_client_is_scored_and_a_junked_message_trains_the_next_one() {
    let f = Fixture::start_with(&[("EDGEMAIL_INBOUND_DNSBL", "dnsbl.test")]);
    // RFC 5782's test entry: 127.0.0.2 is listed, 127.0.0.1 never is.
    f.world.dns.add_a("2.0.0.127.dnsbl.test", Ipv4Addr::new(127, 0, 0, 2));
    // Ann's and Bob's mail is authenticated (SPF from 127.0.0.1, aligned with From): what the
    // mailbox's history with them may credit.
    f.world.dns.add_txt("example.org", "v=spf1 ip4:127.0.0.1 -all");
    let listed = send_from(
        &f,
        Ipv4Addr::new(127, 0, 0, 2),
        "ann@example.org",
        &message("Ann <ann@example.org>", "from a listed host", "Hello."),
    );
    assert!(listed.starts_with("250"), "a listing alone never refuses: {listed}");
    let email = find(&f, "inbox", "from a listed host");
    let reasons = email["spam"]["reasons"].to_string();
    assert!(reasons.contains("listed by dnsbl.test"), "{email}");
    assert!(email["spam"]["score"].as_f64().is_some_and(|s| s >= 2.0), "{email}");
    assert!(header(&email, "X-Spam-Status").starts_with("No, score="), "{email}");

    // The mailbox's owner sorts (a model speaks once it knows five of each kind): five offers
    // into Junk over IMAP, five letters kept as ham.
    let spam_body = "Cheap replica watches and casino bonus, claim your prize money now, \
                     limited offer, unsubscribe never, click the winner link today";
    let ham_bodies = [
        "Could we move the quarterly review to Thursday afternoon? The budget sheet is attached.",
        "Thanks for the invoice, I forwarded it to accounting and they will pay next week.",
        "The build on the release branch fails in the storage tests since this morning.",
        "Lunch with the new hire tomorrow at noon, the usual place near the office.",
        "The contract draft is ready for your comments before we send it to the client.",
    ];
    for (i, body) in ham_bodies.iter().enumerate() {
        let subject = format!("letter {i}");
        assert!(
            send(&f, "ann@example.org", &message("Ann <ann@example.org>", &subject, body))
                .starts_with("250")
        );
        let email = find(&f, "inbox", &subject);
        let id = email["id"].as_str().expect("id"); // ok: test
        let kept =
            f.world.api().post(&format!("/v1/emails/{id}/not-junk"), json!({})).expect(200).json();
        assert_eq!(kept["spam"]["trained"], "ham", "{kept}");
    }
    for i in 0..5 {
        let subject = format!("offer {i}");
        let from = format!("Prize Desk <desk{i}@promo{i}.test>");
        assert!(
            send(&f, &format!("desk{i}@promo{i}.test"), &message(&from, &subject, spam_body))
                .starts_with("250")
        );
        find(&f, "inbox", &subject);
    }
    let moved = f.py(
        r#"
m = tls()
m.select('INBOX')
typ, data = m.uid('SEARCH', None, 'SUBJECT', 'offer')
uids = data[0].decode().split()
out('found', len(uids))
typ, data = m.uid('MOVE', ','.join(uids), 'Junk')
out('move', typ)
m.logout()
"#,
        &[],
    );
    assert_eq!(moved, ["found 5", "move OK"]);
    for i in 0..5 {
        let email = find(&f, "junk", &format!("offer {i}"));
        assert_eq!(email["spam"]["trained"], "spam", "{email}");
    }

    // The next offer of the kind goes to Junk by itself.
    let next = send(
        &f,
        "desk9@promo9.test",
        &message("Prize Desk <desk9@promo9.test>", "offer 9", spam_body),
    );
    assert!(next.starts_with("250"), "{next}");
    let email = find(&f, "junk", "offer 9");
    assert_eq!(email["spam"]["verdict"], "spam", "{email}");
    assert!(header(&email, "X-Spam-Status").starts_with("Yes"), "{email}");
    // A letter like the kept ones still reaches the inbox.
    let letter =
        "Could we move the budget review to Friday? The sheet for the quarter is attached.";
    assert!(
        send(&f, "ann@example.org", &message("Ann <ann@example.org>", "letter 9", letter))
            .starts_with("250")
    );
    let kept = find(&f, "inbox", "letter 9");
    assert_eq!(kept["spam"]["verdict"], "ham");
    let reasons = kept["spam"]["reasons"].to_string();
    assert!(reasons.contains("mail from ann@example.org kept before (5 messages)"), "{kept}");

    // A correspondent: the mailbox writes to Bob, and Bob's message (no reply to it, a new
    // thread) is credited for it.
    let to_bob = json!({"from": format!("sales@{A}"), "to": "bob@example.org",
                        "subject": "Our call", "text": "Talk to you on Monday."});
    f.world.api().post("/v1/send", to_bob).expect(200);
    let note = message("Bob <bob@example.org>", "about the call", "Monday at ten works.");
    assert!(send(&f, "bob@example.org", &note).starts_with("250"));
    let bob = find(&f, "inbox", "about the call");
    let reasons = bob["spam"]["reasons"].to_string();
    assert!(reasons.contains("the mailbox wrote to bob@example.org (1 messages)"), "{bob}");
    // The same From without authentication (SPF fails for another host) earns nothing.
    let forged = message("Bob <bob@example.org>", "forged bob", "Monday at ten works.");
    assert!(
        send_from(&f, Ipv4Addr::new(127, 0, 0, 9), "bob@example.org", &forged).starts_with("250")
    );
    let forged = find_anywhere(&f, "forged bob");
    assert!(!forged["spam"]["reasons"].to_string().contains("wrote to"), "{forged}");

    // not-junk moves it back and unlearns the spam lesson for ham.
    let id = email["id"].as_str().expect("id"); // ok: test
    let back =
        f.world.api().post(&format!("/v1/emails/{id}/not-junk"), json!({})).expect(200).json();
    assert_eq!(
        (back["folder"].clone(), back["spam"]["trained"].clone()),
        (json!("inbox"), json!("ham"))
    );
    // Turning the filter off for the mailbox files everything in the inbox.
    let off = f
        .world
        .api()
        .patch("/v1/mailboxes/sales", json!({"spamFilter": {"enabled": false}}))
        .expect(200)
        .json();
    assert_eq!(
        off["spamFilter"],
        json!({"enabled": false, "junkThreshold": 5.0, "rejectThreshold": null})
    );
    assert!(
        send(
            &f,
            "desk8@promo8.test",
            &message("Prize Desk <desk8@promo8.test>", "offer 8", spam_body)
        )
        .starts_with("250")
    );
    find(&f, "inbox", "offer 8");
}

#[test]
fn greylisting_answers_a_new_triplet_451_until_it_retries_after_the_delay() {
    let f = Fixture::start_with(&[
        ("EDGEMAIL_INBOUND_GREYLISTING", "true"),
        ("EDGEMAIL_INBOUND_GREYLIST_DELAY", "1s"),
    ]);
    let first = message("Ann <ann@example.org>", "greylisted", "Hello.");
    let answer = send(&f, "ann@example.org", &first);
    assert!(answer.starts_with("451 4.7.1"), "a new triplet waits: {answer}");
    let again = send(&f, "ann@example.org", &first);
    assert!(again.starts_with("451 4.7.1"), "a retry before the delay waits too: {again}");
    assert!(f.listed("inbox").is_empty(), "nothing was stored");
    std::thread::sleep(Duration::from_millis(1_200));
    let retried = send(&f, "ann@example.org", &first);
    assert!(retried.starts_with("250"), "a retry after the delay passes: {retried}");
    find(&f, "inbox", "greylisted");
    // The triplet is known now: the sender's next message passes at once; another sender waits.
    let next = send(&f, "ann@example.org", &message("Ann <ann@example.org>", "second", "Hi."));
    assert!(next.starts_with("250"), "{next}");
    let stranger = send(&f, "bob@example.net", &message("Bob <bob@example.net>", "bob", "Hi."));
    assert!(stranger.starts_with("451 4.7.1"), "{stranger}");
}

/// `message` with an ARC set (RFC 8617, instance 1) sealed for `sealer` with `key`, as a
/// mailing list or forwarder adds before passing mail on.
fn arc_sealed(message: &str, sealer: &str, key: mail_auth::common::crypto::Ed25519Key) -> String {
    use mail_auth::common::headers::HeaderWriter;
    use mail_auth::{ArcOutput, AuthenticatedMessage, AuthenticationResults, arc::ArcSealer};
    let parsed = AuthenticatedMessage::parse(message.as_bytes()).expect("parse"); // ok: test
    let results = AuthenticationResults::new(sealer);
    let set = ArcSealer::from_key(key)
        .domain(sealer)
        .selector("arc")
        .headers(["From", "To", "Subject", "Message-ID", "Date"])
        .seal(&parsed, &results, &ArcOutput::default())
        .expect("seal"); // ok: test
    format!("{}{message}", set.to_header())
}

#[test]
fn a_dmarc_failure_forwarded_by_a_trusted_arc_sealer_is_delivered_and_by_another_refused() {
    use base64::Engine;
    use mail_auth::common::crypto::Ed25519Key;
    let f = Fixture::start_with(&[("EDGEMAIL_INBOUND_ARC_TRUSTED", "lists.test")]);
    f.world.dns.add_txt("_dmarc.bank.test", "v=DMARC1; p=reject");
    f.world.dns.add_txt("bank.test", "v=spf1 -all");
    let mut keys = Vec::new();
    for sealer in ["lists.test", "elsewhere.test"] {
        let der = Ed25519Key::generate_pkcs8().expect("key"); // ok: test
        let key = Ed25519Key::from_pkcs8_der(&der).expect("key"); // ok: test
        let public = base64::engine::general_purpose::STANDARD.encode(key.public_key());
        f.world.dns.add_txt(
            &format!("arc._domainkey.{sealer}"),
            &format!("v=DKIM1; k=ed25519; p={public}"),
        );
        keys.push(key);
    }
    let mut keys = keys.into_iter();

    // The list rewrote nothing but its envelope: DMARC fails for bank.test (p=reject), but
    // the chain is sealed by a forwarder the configuration trusts.
    let statement = message("Bank <alerts@bank.test>", "statement via the list", "Ready.");
    let sealed = arc_sealed(&statement, "lists.test", keys.next().expect("key")); // ok: test
    let reply = send(&f, "bounces@lists.test", &sealed);
    assert!(reply.starts_with("250"), "a trusted sealer's chain lets it through: {reply}");
    let email = find(&f, "inbox", "statement via the list");
    assert!(header(&email, "Authentication-Results").contains("dmarc=fail"), "{email}");

    // The same failure sealed by a sealer nobody trusts is refused as p=reject asks.
    let other = message("Bank <alerts@bank.test>", "statement via another", "Ready.");
    let sealed = arc_sealed(&other, "elsewhere.test", keys.next().expect("key")); // ok: test
    let reply = send(&f, "bounces@elsewhere.test", &sealed);
    assert!(reply.starts_with("550 5.7.1"), "{reply}");
}
