//! SMTPUTF8 (RFC 6531) through submission: a UTF-8 local part and a Unicode domain accepted
//! from a client that declared it, refused (553 5.6.7) from one that did not, delivered to a
//! receiver that offers SMTPUTF8, and failed for good, with a report to the sender, when the
//! receiver does not offer it.

use std::time::Duration;

use crate::mail_clients::Clients;
use crate::mail_world::{header, verify_dkim};

/// Sends `args[1]` (UTF-8 bytes) to the comma-separated `args[0]` over implicit TLS: first a
/// RCPT of the first address without SMTPUTF8 (as raw bytes), then the real transaction with it.
const SEND_UTF8: &str = r#"
rcpts, msg = args[0].split(','), args[1]
s = submit()
out('offered', 'yes' if s.has_extn('smtputf8') else 'no')
out('mail', s.mail(user)[0])
s.send(('RCPT TO:<%s>\r\n' % rcpts[0]).encode())
code, text = s.getreply()
out('undeclared', code, text.decode())
s.rset()
out('mail-utf8', s.mail(user, ['SMTPUTF8'])[0])
for r in rcpts:
    out('rcpt', r, s.rcpt(r)[0])
code, text = s.data(msg.replace('\n', '\r\n').encode())
out('data', code, text.decode())
s.quit()
"#;

const USER: &str = "\u{7528}\u{6237}@example.org";

fn utf8_message(to: &str, subject: &str) -> String {
    format!(
        "From: Sales <sales@alpha.test>\nTo: {to}\nSubject: {subject}\nMessage-ID: <{}@alpha.test>\n\
         MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\nGr\u{fc}\u{df}e.\n",
        crate::harness::unique()
    )
}

fn queued_id(lines: &[String]) -> String {
    let data = lines.iter().find(|l| l.starts_with("data ")).expect("a data line");
    assert!(data.starts_with("data 250"), "{lines:?}");
    data.rsplit(' ').next().expect("id").to_owned()
}

#[test]
fn a_utf8_local_part_and_a_unicode_domain_are_submitted_and_delivered_with_smtputf8() {
    let c = Clients::start();
    // bücher.example, known to DNS (as all names are) in its A-label form.
    c.world.dns.add_mx("xn--bcher-kva.example", 10, "mx.example.org");
    let to = format!("{USER},ada@b\u{fc}cher.example");
    let message = utf8_message(&format!("{USER}, ada@b\u{fc}cher.example"), "Gr\u{fc}\u{df}e");
    let lines = c.py(SEND_UTF8, &[&to, &message]);
    assert_eq!(lines[0], "offered yes", "{lines:?}");
    assert!(
        lines[2].starts_with("undeclared 553 5.6.7 a non-ASCII address needs the SMTPUTF8"),
        "{lines:?}"
    );
    assert_eq!(lines[3], "mail-utf8 250", "{lines:?}");
    assert_eq!(lines[4], format!("rcpt {USER} 250"), "{lines:?}");
    assert_eq!(lines[5], "rcpt ada@b\u{fc}cher.example 250", "{lines:?}");
    let id = queued_id(&lines);

    let got = c.world.sink.wait_for(2, Duration::from_secs(20));
    let mut rcpts: Vec<String> = got.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    rcpts.sort();
    assert_eq!(rcpts, ["ada@xn--bcher-kva.example", USER], "the domain goes out in A-labels");
    let commands = c.world.sink.commands();
    let mails: Vec<&String> =
        commands.iter().map(|(_, l)| l).filter(|l| l.starts_with("MAIL FROM:")).collect();
    assert!(
        mails.iter().any(|l| l.ends_with("@alpha.test> SMTPUTF8")),
        "the UTF-8 local part's transaction declares SMTPUTF8: {mails:?}"
    );
    for m in &got {
        let text = String::from_utf8_lossy(&m.data);
        assert!(text.contains(&format!("To: {USER}, ada@b\u{fc}cher.example")), "{text}");
        assert_eq!(header(&m.data, "Subject").as_deref(), Some("Gr\u{fc}\u{df}e"));
        let results = verify_dkim(&c.world.dns, &m.data);
        assert!(results.iter().all(|(_, r)| r == "Pass"), "{results:?}");
    }
    let email = c.world.wait_status(&id, "delivered");
    assert!(email["to"].to_string().contains(USER), "{email}");
    assert_eq!(c.wait_listed("sent", 1)[0].0, id, "kept in Sent");
}

#[test]
fn a_receiver_without_smtputf8_fails_the_message_for_good_and_the_sender_hears_of_it() {
    let c = Clients::start();
    c.world.sink.offer_smtputf8(false);
    let lines = c.py(SEND_UTF8, &[USER, &utf8_message(USER, "to a UTF-8 address")]);
    let address = queued_id(&lines);
    // A plain address, but a UTF-8 header (RFC 6532): the receiver cannot take that either.
    let header_only = utf8_message("b@example.net", "Gr\u{fc}\u{df}e");
    let lines = c.py(SEND_UTF8, &["b@example.net", &header_only]);
    let header_id = queued_id(&lines);

    for (id, code) in [(&address, "550 5.6.7"), (&header_id, "550 5.6.9")] {
        let email = c.world.wait_status(id, "bounced");
        let response = email["deliveries"][0]["lastResponse"].as_str().unwrap_or("").to_owned();
        assert!(response.starts_with(code), "{email}");
        assert!(response.contains("does not support SMTPUTF8"), "{email}");
    }
    assert!(c.world.sink.messages().is_empty(), "no invalid bytes were sent");
    let commands = c.world.sink.commands();
    assert!(!commands.iter().any(|(_, l)| l.starts_with("MAIL")), "no transaction: {commands:?}");
    // The suppression list is for bad addresses; this one is fine, its server is not.
    let suppressions = c.world.api().get("/v1/suppressions").expect(200).text();
    assert!(!suppressions.contains("example"), "{suppressions}");
    let inbox = c.wait_listed("inbox", 2);
    assert!(inbox.iter().all(|(_, s)| s == "Undelivered Mail Returned to Sender"), "{inbox:?}");
}
