//! Attacks through our own MX, each reproduced over real SMTP and shown refused: forged
//! complaints and DSNs, smuggled messages, spoofed warmup peers, and address harvesting.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::cli;
use crate::mail_world::{MailWorld, header};
use crate::smtp_client::Talk;

fn suppressed(w: &MailWorld) -> Vec<String> {
    let page = w.api().get("/v1/suppressions").expect(200).json();
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["email"].as_str().map(str::to_owned))
        .collect()
}

fn inbox(w: &MailWorld, mailbox: &str) -> Vec<Value> {
    let list =
        w.api().get(&format!("/v1/emails?mailbox={mailbox}&folder=inbox")).expect(200).json();
    list.as_array().cloned().unwrap_or_default()
}

/// A new send to `to` is accepted: nothing suppresses the address.
fn still_sendable(w: &MailWorld, to: &str) {
    w.send(json!({"from": "sales@alpha.test", "to": to, "subject": "again", "text": "t"}))
        .expect(200);
}

fn arf(from: &str, complained: &str, original: &str) -> String {
    format!(
        "From: {from}\r\nTo: abuse@alpha.test\r\nSubject: complaint\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/report; report-type=feedback-report; boundary=\"b\"\r\n\r\n--b\r\n\
         Content-Type: text/plain\r\n\r\nA complaint.\r\n--b\r\nContent-Type: message/feedback-report\r\n\r\n\
         Feedback-Type: abuse\r\nVersion: 1\r\nOriginal-Rcpt-To: <{complained}>\r\n\r\n--b\r\n\
         Content-Type: message/rfc822\r\n\r\nMessage-ID: {original}\r\nTo: {complained}\r\n\r\nhi\r\n--b--"
    )
}

fn dsn(to: &str, failed: &str, original: &str) -> String {
    format!(
        "From: MAILER-DAEMON@mx.example.org\r\nTo: {to}\r\nSubject: Undelivered Mail\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"b\"\r\n\r\n\
         --b\r\nContent-Type: text/plain\r\n\r\nThe mailbox is gone.\r\n--b\r\n\
         Content-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.org\r\n\r\n\
         Final-Recipient: rfc822; {failed}\r\nAction: failed\r\nStatus: 5.1.1\r\n\
         Diagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n--b\r\n\
         Content-Type: text/rfc822-headers\r\n\r\nMessage-ID: {original}\r\n--b--"
    )
}

/// One session from `helo`, one message; the reply to the message.
fn submit(w: &MailWorld, helo: &str, from: &str, to: &str, message: &str) -> String {
    let (mut s, _) = Talk::open(w.server.smtp);
    assert!(s.cmd(&format!("EHLO {helo}")).starts_with("250"));
    let reply = s.mail(from, &[to], message);
    s.cmd("QUIT");
    reply
}

#[test]
fn forged_complaints_suppress_nobody_and_an_authenticated_one_only_its_recipient() {
    let w = MailWorld::start();
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": "angry@example.org", "subject": "s", "text": "t"}))
        .expect(200)
        .json();
    w.wait_status(sent["messageId"].as_str().expect("id"), "delivered");
    let got = w.sink.wait_for(1, Duration::from_secs(10));
    let original = header(&got[0].data, "Message-ID").expect("mid");

    // Anyone can send a report quoting a real Message-ID: without SPF or DKIM for its From domain
    // it is stored nowhere and acts on nothing.
    let forged = arf("fbl@forger.example", "angry@example.org", &original);
    let reply = submit(&w, "forger.example", "fbl@forger.example", "abuse@alpha.test", &forged);
    assert!(reply.starts_with("250"), "{reply}");
    assert_eq!(suppressed(&w), Vec::<String>::new());
    still_sendable(&w, "angry@example.org");

    // Authenticated (SPF passes for the report's From domain), but about someone the message
    // was never sent to.
    w.dns.add_txt("isp.example", "v=spf1 ip4:127.0.0.1 -all");
    let misdirected = arf("fbl@isp.example", "victim@example.org", &original);
    let reply = submit(&w, "isp.example", "fbl@isp.example", "abuse@alpha.test", &misdirected);
    assert!(reply.starts_with("250"), "{reply}");
    assert_eq!(suppressed(&w), Vec::<String>::new());
    still_sendable(&w, "victim@example.org");

    // The same authenticated report about the real recipient is acted on.
    let genuine = arf("fbl@isp.example", "angry@example.org", &original);
    let reply = submit(&w, "isp.example", "fbl@isp.example", "abuse@alpha.test", &genuine);
    assert!(reply.starts_with("250"), "{reply}");
    assert_eq!(suppressed(&w), ["angry@example.org"]);
    let e = w
        .send(json!({"from": "sales@alpha.test", "to": "angry@example.org", "subject": "s", "text": "t"}))
        .expect_error(422, "unprocessable_entity");
    assert_eq!(e["blocked"][0]["reason"], "suppressed");
}

/// The numeric value of an id's 26 Crockford base32 characters.
fn id_value(id: &str) -> u128 {
    const ALPHABET: &[u8] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let digits = id.rsplit('_').next().expect("id body");
    assert_eq!(digits.len(), 26, "{id}");
    digits.bytes().fold(0u128, |acc, c| {
        let digit = ALPHABET.iter().position(|a| *a == c).unwrap_or_else(|| panic!("{id}"));
        (acc << 5) | digit as u128
    })
}

/// `bounces+<id>.<n>-<tag>@alpha.test` into the id and the tag.
fn bounce_parts(address: &str) -> (String, String) {
    let local = address
        .strip_prefix("bounces+")
        .and_then(|a| a.strip_suffix("@alpha.test"))
        .unwrap_or_else(|| panic!("not a bounce address of alpha.test: {address}"));
    let (name, tag) = local.rsplit_once('-').unwrap_or_else(|| panic!("untagged: {address}"));
    assert!(tag.len() == 16 && tag.bytes().all(|b| b.is_ascii_hexdigit()), "{address}");
    // `<id>.<recipient number>`: the id is what the API knows.
    let (id, n) = name.rsplit_once('.').unwrap_or_else(|| panic!("no recipient number: {address}"));
    assert!(n.parse::<usize>().is_ok(), "{address}");
    (id.to_owned(), tag.to_owned())
}

#[test]
fn forged_dsns_are_refused_at_rcpt_or_bounce_nothing() {
    let w = MailWorld::start_with(&[("EDGEMAIL_SMTP_ERROR_DELAY", "10ms")], &[]);
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": ["gone@example.org", "ada@example.org"],
                     "subject": "s", "text": "t", "type": "campaign"}))
        .expect(200)
        .json();
    let ids: Vec<String> = sent["messageIds"]
        .as_array()
        .expect("ids")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    assert_eq!(ids.len(), 2, "{sent}");
    // Ids made in one request must not be guessable from each other: a bounce address or a link
    // names one.
    let (a, b) = (id_value(&ids[0]), id_value(&ids[1]));
    assert!(a.abs_diff(b) > 1, "neighbouring ids {ids:?}");

    let got = w.sink.wait_for(2, Duration::from_secs(10));
    let envelope_of = |rcpt: &str| {
        let m = got.iter().find(|m| m.rcpt_to == [rcpt]).expect("a copy per recipient");
        (m.mail_from.clone(), header(&m.data, "Message-ID").expect("mid"))
    };
    let (genuine, original) = envelope_of("gone@example.org");
    let (gone_id, tag) = bounce_parts(&genuine);
    let (ada_id, _) = bounce_parts(&envelope_of("ada@example.org").0);
    assert!(ids.contains(&gone_id) && ids.contains(&ada_id) && gone_id != ada_id, "{ids:?}");
    w.wait_status(&gone_id, "delivered");

    let data = w.dir.0.to_str().expect("utf-8 path");
    let (ok, _, err) = cli(&["domain", "add", "beta.test", "--data", data]);
    assert!(ok, "domain add: {err}");

    let flipped = format!("{}{}", &tag[..15], if tag.ends_with('0') { '1' } else { '0' });
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    assert!(s.cmd("MAIL FROM:<>").starts_with("250"));
    for forged in [
        format!("bounces+{gone_id}@alpha.test"),
        format!("bounces+{gone_id}.0@alpha.test"),
        format!("bounces+{gone_id}.0-{flipped}@alpha.test"),
        format!("bounces+{ada_id}.0-{tag}@alpha.test"),
        format!("bounces+{gone_id}.1-{tag}@alpha.test"),
        format!("bounces+{gone_id}.0-{tag}@beta.test"),
    ] {
        let reply = s.cmd(&format!("RCPT TO:<{forged}>"));
        assert!(reply.starts_with("550 5.1.1"), "{forged}: {reply}");
    }
    // beta.test is hosted: its refusal above was the tag's, not relaying's.
    assert!(s.cmd("RCPT TO:<postmaster@beta.test>").starts_with("250"));
    assert!(s.cmd("RSET").starts_with("250"));

    // The genuine address, but a report about someone the message was not sent to.
    let about_victim = dsn(&genuine, "victim@example.org", &original);
    let reply = s.mail("", &[&genuine], &about_victim);
    assert!(reply.starts_with("250"), "{reply}");
    let email = w.api().get(&format!("/v1/emails/{gone_id}")).expect(200).json();
    assert_eq!(email["status"], "delivered", "{email}");
    assert_eq!(email["deliveries"][0]["status"], "delivered", "{email}");
    assert_eq!(suppressed(&w), Vec::<String>::new());
    still_sendable(&w, "victim@example.org");

    // The genuine report about the real recipient does bounce it.
    let reply = s.mail("", &[&genuine], &dsn(&genuine, "gone@example.org", &original));
    assert!(reply.starts_with("250"), "{reply}");
    w.wait_email(&gone_id, |e| e["deliveries"][0]["status"] == "bounced");
    assert_eq!(suppressed(&w), ["gone@example.org"]);
}

#[test]
fn smuggled_commands_after_a_bare_line_ending_are_never_commands() {
    let w = MailWorld::start();
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    let smuggled = "MAIL FROM:<ceo@alpha.test>\r\nRCPT TO:<sales@alpha.test>\r\nDATA\r\n\
                    From: ceo@alpha.test\r\nSubject: forged\r\n\r\nwire the money\r\n";
    // A bare CR: the message is refused whole.
    for end in ["\r\n.\r\r\n", "\r.\r"] {
        let first = format!("From: a@example.org\r\nSubject: cover\r\n\r\nhello{end}{smuggled}");
        let reply = s.mail("a@example.org", &["sales@alpha.test"], &first);
        assert!(reply.starts_with("550 5.6.11"), "{end:?}: {reply}");
        assert!(inbox(&w, "sales").is_empty(), "{end:?} stored something");
    }
    // A bare LF is a line end (Postfix's `normalize`), but a line after one never ends the
    // message: the would-be end and commands are text of the one message.
    for (n, end) in ["\n.\n", "\r\n.\n", "\n.\r\n"].into_iter().enumerate() {
        let first =
            format!("From: a@example.org\r\nSubject: cover {n}\r\n\r\nhello{end}{smuggled}");
        let reply = s.mail("a@example.org", &["sales@alpha.test"], &first);
        assert!(reply.starts_with("250 2.0.0"), "{end:?}: {reply}");
    }
    // The session goes on, in step: each reply below answers its own command, so none of the
    // smuggled commands were answered.
    assert!(s.cmd("MAIL FROM:<a@example.org>").starts_with("250 2.1.0"));
    assert!(s.cmd("RCPT TO:<sales@alpha.test>").starts_with("250 2.1.5"));
    assert!(s.cmd("DATA").starts_with("354"));
    s.send("From: a@example.org\r\nSubject: clean\r\n\r\nhello\r\n.\r\n");
    let reply = s.reply();
    assert!(reply.starts_with("250 2.0.0"), "{reply}");
    assert!(s.cmd("NOOP").starts_with("250"));
    let list = inbox(&w, "sales");
    let mut subjects: Vec<&str> = list.iter().filter_map(|e| e["subject"].as_str()).collect();
    subjects.sort_unstable();
    assert_eq!(subjects, ["clean", "cover 0", "cover 1", "cover 2"]);
    for email in list.iter().filter(|e| e["subject"] != "clean") {
        let id = email["id"].as_str().expect("id");
        let raw = w.api().get(&format!("/v1/emails/{id}/raw")).expect(200).text();
        assert!(raw.contains("hello\r\n.\r\nMAIL FROM:<ceo@alpha.test>\r\n"), "{raw:?}");
        assert!(!raw.replace("\r\n", "").contains('\n'), "a bare LF was stored: {raw:?}");
    }
}

#[test]
fn a_script_writing_bare_lf_line_endings_is_accepted_and_stored_with_crlf() {
    let w = MailWorld::start();
    // Python's smtplib sends a bytes message as it is (dot-stuffed, bare LFs kept), as a
    // script's `server.sendmail(from, to, msg.as_bytes())` does.
    let script = r#"
import smtplib, sys
host, port = sys.argv[1].rsplit(":", 1)
msg = (b"From: Script <cron@example.org>\nTo: sales@alpha.test\nSubject: nightly report\n"
       b"Message-ID: <r1@example.org>\n\nAll jobs ran.\n.hidden line\n\nbye\n")
with smtplib.SMTP(host, int(port), local_hostname="cron.example.org") as s:
    s.sendmail("cron@example.org", ["sales@alpha.test"], msg)
print("sent")
"#;
    let out = std::process::Command::new("python3")
        .args(["-c", script, &w.server.smtp.to_string()])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let list = inbox(&w, "sales");
    assert_eq!(list.len(), 1, "{list:?}");
    assert_eq!(list[0]["subject"], "nightly report");
    let id = list[0]["id"].as_str().expect("id");
    let email = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
    assert_eq!(email["from"], "\"Script\" <cron@example.org>", "{email}");
    assert_eq!(email["text"], "All jobs ran.\n.hidden line\n\nbye\n\n", "{email}");
    // smtplib ends a message that lacks a final CRLF with one more.
    let raw = w.api().get(&format!("/v1/emails/{id}/raw")).expect(200).text();
    assert!(
        raw.ends_with("Subject: nightly report\r\nMessage-ID: <r1@example.org>\r\n\r\nAll jobs ran.\r\n.hidden line\r\n\r\nbye\r\n\r\n"),
        "{raw:?}"
    );
}

#[test]
fn a_spoofed_warmup_peer_gets_no_warmup_treatment() {
    let w = MailWorld::start_with(&[("EDGEMAIL_WARMUP_PEERS", "peer@gamma.test")], &[]);
    w.api().post("/v1/warmup", json!({"mailbox": "sales"})).expect(200);
    let status = || w.api().get("/v1/warmup?mailbox=sales").expect(200).json()[0].clone();
    let before = status();
    // Unsigned, From the configured peer, with an envelope sender whose quoted local part puts
    // `dkim=pass header.d=gamma.test` into our Authentication-Results header.
    let envelope = "\"x; dkim=pass header.d=gamma.test ;\"@gamma.test";
    let message = "From: peer@gamma.test\r\nTo: sales@alpha.test\r\nSubject: warm\r\n\
                   Message-ID: <w1@gamma.test>\r\nX-Edgemail-Warmup: em_made_up\r\n\r\nhello";
    let reply = submit(&w, "gamma.test", envelope, "sales@alpha.test", message);
    assert!(reply.starts_with("250"), "{reply}");
    let list = inbox(&w, "sales");
    assert_eq!(list.len(), 1, "ordinary mail lands in the inbox: {list:?}");
    let id = list[0]["id"].as_str().expect("id");
    let email = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
    let results = email["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .find(|h| h["name"] == "Authentication-Results")
        .and_then(|h| h["value"].as_str())
        .unwrap_or("")
        .to_owned();
    assert!(results.contains("dkim=pass header.d=gamma.test"), "the attack's premise: {results}");
    let after = status();
    for field in ["receivedTotal", "receivedToday", "repliedTotal", "landedTotal"] {
        assert_eq!(after[field], before[field], "{field}: {before} then {after}");
    }
}

#[test]
fn refused_recipients_are_slowed_down_and_end_the_session_at_max_errors() {
    let w = MailWorld::start_with(&[("EDGEMAIL_SMTP_ERROR_DELAY", "200ms")], &[]);
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO harvester.example.org");
    assert!(s.cmd("MAIL FROM:<h@example.org>").starts_with("250"));
    let started = Instant::now();
    // A harvester guesses on; the tenth refusal (smtp.max_errors) ends the session, so guesses
    // eleven and twelve are never answered.
    for i in 0..10 {
        let reply = s.cmd(&format!("RCPT TO:<guess{i}@alpha.test>"));
        assert!(reply.starts_with("550 5.1.1"), "guess {i}: {reply}");
    }
    let elapsed = started.elapsed();
    let closing = s.reply();
    assert!(closing.starts_with("421"), "after the tenth refusal: {closing:?}");
    assert_eq!(s.reply(), "", "the connection is closed");
    // Refusals three to ten each waited the error delay.
    assert!(elapsed >= Duration::from_millis(8 * 200), "{elapsed:?}");
}

#[test]
fn one_recipient_cannot_bounce_another_recipient_of_the_same_message() {
    let w = MailWorld::start();
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": "ada@example.org, gone@example.org",
            "subject": "s", "text": "t"}))
        .expect(200)
        .json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    w.wait_status(&id, "delivered");
    let got = w.sink.wait_for(2, Duration::from_secs(10));
    let bounce_of = |rcpt: &str| {
        got.iter().find(|m| m.rcpt_to == [rcpt]).expect("one transaction each").mail_from.clone()
    };
    let (ada_address, gone_address) = (bounce_of("ada@example.org"), bounce_of("gone@example.org"));
    assert_ne!(ada_address, gone_address);
    let original = header(&got[0].data, "Message-ID").expect("mid");

    // Ada saw her own bounce address and the Message-ID; neither lets her speak for Gone.
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    let forged = dsn(&ada_address, "gone@example.org", &original);
    assert!(s.mail("", &[&ada_address], &forged).starts_with("250"));
    std::thread::sleep(Duration::from_millis(300));
    let email = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
    assert!(
        email["deliveries"]
            .as_array()
            .expect("deliveries")
            .iter()
            .all(|d| d["status"] == "delivered"),
        "{email}"
    );
    assert_eq!(suppressed(&w), Vec::<String>::new());

    let genuine = dsn(&gone_address, "gone@example.org", &original);
    assert!(s.mail("", &[&gone_address], &genuine).starts_with("250"));
    w.wait_email(&id, |e| {
        e["deliveries"].as_array().is_some_and(|ds| {
            ds.iter().any(|d| d["recipient"] == "gone@example.org" && d["status"] == "bounced")
        })
    });
    assert_eq!(suppressed(&w), ["gone@example.org"]);
}
