//! Messages nested without end (issue 32, findings 1 and 2): `message/rfc822` inside
//! `message/rfc822` 50,000 times, or multiparts inside multiparts, sent by anyone to our MX. The
//! process keeps serving, the mail is stored with its bytes intact, and every view of it (the API's
//! email, its download, IMAP's BODYSTRUCTURE, ENVELOPE, SEARCH and sections) answers, also after a
//! restart.

use crate::harness::A;
use crate::imap::Fixture;
use crate::smtp_client::Talk;

/// `levels` attached messages, each the whole content of the one around it, without any transfer
/// encoding (what the parser follows without a limit of its own).
fn nested_messages(subject: &str, levels: usize) -> String {
    let mut m = format!(
        "From: ann@example.org\r\nTo: sales@{A}\r\nSubject: {subject}\r\nMIME-Version: 1.0\r\n"
    );
    for _ in 0..levels {
        m.push_str("Content-Type: message/rfc822\r\n\r\n");
    }
    m.push_str("Subject: innermost\r\n\r\nthe bottom\r\n");
    m
}

/// `levels` multiparts, each the only part of the one around it.
fn nested_multiparts(subject: &str, levels: usize) -> String {
    let mut m = format!(
        "From: ann@example.org\r\nTo: sales@{A}\r\nSubject: {subject}\r\nMIME-Version: 1.0\r\n"
    );
    for i in 0..levels {
        m.push_str(&format!("Content-Type: multipart/mixed; boundary=\"b{i}\"\r\n\r\n--b{i}\r\n"));
    }
    m.push_str("Content-Type: text/plain\r\n\r\nthe bottom\r\n");
    for i in (0..levels).rev() {
        m.push_str(&format!("--b{i}--\r\n"));
    }
    m
}

fn deliver(f: &Fixture, message: &str) -> String {
    let (mut s, _) = Talk::open(f.world.server.smtp);
    s.cmd("EHLO sender.example.org");
    let reply = s.mail("ann@example.org", &[&format!("sales@{A}")], message);
    s.cmd("QUIT");
    reply
}

fn alive(f: &Fixture) {
    f.world.api().get("/v1/mailboxes").expect(200);
}

/// Every view of every message in the INBOX, over IMAP: what a mail client asks for first.
const EVERY_VIEW: &str = r#"
m = tls()
typ, data = m.select('INBOX')
n = int(data[0])
out('exists', n)
for i in range(1, n + 1):
    typ, data = m.fetch(str(i), '(BODYSTRUCTURE ENVELOPE BODY RFC822.SIZE)')
    out('structure', typ, len(b''.join(d if isinstance(d, bytes) else b''.join(d) for d in data)))
    typ, data = m.fetch(str(i), '(BODY.PEEK[1.1.1] BODY.PEEK[1.1.1.MIME] BODY.PEEK[TEXT])')
    out('sections', typ)
typ, data = m.search(None, 'TEXT', 'bottom')
out('search', typ, data[0].decode())
typ, data = m.search(None, 'SUBJECT', 'innermost')
out('search-subject', typ)
m.logout()
"#;

#[test]
fn messages_nested_without_end_never_stop_the_server() {
    let mut f = Fixture::start();
    let cases = [
        ("deep-messages", nested_messages("deep-messages", 50_000)),
        ("deep-multiparts", nested_multiparts("deep-multiparts", 50_000)),
        ("stored-deep", nested_messages("stored-deep", 2_000)),
    ];
    for (subject, message) in &cases {
        let reply = deliver(&f, message);
        assert!(reply.starts_with("250"), "{subject}: {reply}");
        alive(&f);
    }
    let list = f.world.api().get("/v1/emails?mailbox=sales&folder=inbox").expect(200).json();
    let items = list.as_array().expect("array").clone();
    assert_eq!(items.len(), cases.len(), "{list}");
    for item in &items {
        let id = item["id"].as_str().expect("id");
        let full = f.world.api().get(&format!("/v1/emails/{id}")).expect(200).json();
        let subject = full["subject"].as_str().expect("subject");
        let (_, sent) = cases.iter().find(|(s, _)| *s == subject).expect("a sent subject");
        let raw = f.world.api().get(&format!("/v1/emails/{id}/raw")).expect(200);
        // Our trace fields come first, then the sent bytes, untouched.
        let stored = raw.body.strip_suffix(b"\r\n").unwrap_or(&raw.body);
        assert!(
            stored.ends_with(sent.as_bytes()),
            "{subject}: the stored bytes are the sent bytes"
        );
    }

    let lines = f.py(EVERY_VIEW, &[]);
    assert!(lines.contains(&format!("exists {}", cases.len())), "{lines:?}");
    assert_eq!(lines.iter().filter(|l| l.starts_with("structure OK")).count(), 3, "{lines:?}");
    assert_eq!(lines.iter().filter(|l| l.starts_with("sections OK")).count(), 3, "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("search OK")), "{lines:?}");
    alive(&f);

    // Stored, the same message is read again after a restart: no crash loop.
    f.world.crash_and_restart();
    let again = f.py(EVERY_VIEW, &[]);
    assert_eq!(lines, again);
    for item in &items {
        let id = item["id"].as_str().expect("id");
        let _ = f.world.api().get(&format!("/v1/emails/{id}/attachments/0"));
        alive(&f);
    }
}
