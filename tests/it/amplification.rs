//! Regression: a large message to many hosted mailboxes must cost about one copy of it, in the
//! data file and in the server's memory, whatever the number of mailboxes. Each copy used to
//! carry the whole raw message and its decoded bodies.

use std::time::Instant;

use edgemail::store::Email;
use serde_json::json;

use crate::harness::TempDir;
use crate::mail_world::MailWorld;
use crate::smtp_client::Talk;

const MAILBOXES: [&str; 5] = ["sales", "b", "c", "d", "e"];

/// A plain-text message of about `size` bytes: numbered lines, so a truncated or shuffled body
/// shows.
fn big_message(size: usize) -> String {
    let mut m = String::with_capacity(size + 1024);
    m.push_str(
        "From: Ada <ada@example.org>\r\nTo: sales@alpha.test\r\nSubject: The big report\r\n\
         Message-ID: <big@example.org>\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\n",
    );
    let mut n = 0;
    while m.len() < size {
        m.push_str(&format!(
            "line {n:07} of the big report, padded to a fixed width {:-<20}\r\n",
            ""
        ));
        n += 1;
    }
    m.push_str("the end");
    m
}

/// A line of `/proc/<pid>/status` in bytes, such as `VmHWM`.
fn proc_status(pid: u32, field: &str) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let line = status
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or_else(|| panic!("no {field} in {status}"));
    let kb: u64 = line.trim().trim_end_matches("kB").trim().parse().expect("a kB figure");
    kb * 1024
}

fn data_file_len(w: &MailWorld) -> u64 {
    std::fs::metadata(w.dir.0.join(edgemail::store::DB_FILE)).expect("data file").len()
}

#[test]
fn a_20mib_message_to_five_mailboxes_is_stored_and_held_about_once() {
    if crate::harness::on_postgres() {
        return; // it measures the data file's growth
    }
    let w = MailWorld::start();
    for local in &MAILBOXES[1..] {
        w.api().post("/v1/mailboxes", json!({"address": local})).expect(201);
    }
    let pid = w.server.child.id();
    let message = big_message(20 << 20);
    let file_before = data_file_len(&w);
    let rss_before = proc_status(pid, "VmRSS");
    let started = Instant::now();

    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO big.example.org");
    let to: Vec<String> = MAILBOXES.iter().map(|l| format!("{l}@alpha.test")).collect();
    let to: Vec<&str> = to.iter().map(String::as_str).collect();
    let done = s.mail("ada@example.org", &to, &message);
    assert!(done.starts_with("250 "), "{done}");
    s.cmd("QUIT");
    let stored_in = started.elapsed();
    let growth = data_file_len(&w) - file_before;

    // The line break before the terminating dot belongs to the message.
    let sent = format!("{message}\r\n");
    let expected = mail_parser::MessageParser::default().parse(sent.as_bytes()).expect("parse");
    // As the API shows received mail: LF line endings, HTML only where the sender sent some.
    let (text, html) = edgemail::store::received_bodies(&expected);
    let text = text.expect("text");
    let read = |local: &str, id: &str| {
        let email = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
        assert_eq!(email["subject"], "The big report");
        assert_eq!(email["mailbox"], format!("{local}@alpha.test"));
        assert!(email["text"].as_str() == Some(&*text), "the text of {local}'s copy differs");
        assert!(email["html"].as_str() == html.as_deref(), "the html of {local}'s copy differs");
        let headers = email["headers"].as_array().expect("headers");
        let names: Vec<&str> = headers.iter().filter_map(|h| h["name"].as_str()).collect();
        assert_eq!(
            &names[..4],
            ["Received", "Authentication-Results", "X-Spam-Status", "From"],
            "{names:?}"
        );
    };
    let mut ids = Vec::new();
    for local in MAILBOXES {
        let list = w.api().get(&format!("/v1/emails?mailbox={local}")).expect(200).json();
        let id = list[0]["id"].as_str().expect("a stored copy").to_owned();
        read(local, &id);
        ids.push(id);
    }
    let peak = proc_status(pid, "VmHWM");

    // The copies share one raw message: removing four leaves the fifth whole.
    for id in &ids[..4] {
        w.api().delete(&format!("/v1/emails/{id}")).expect(200);
        w.api().delete(&format!("/v1/emails/{id}")).expect(200);
        w.api().get(&format!("/v1/emails/{id}")).expect_error(404, "not_found");
    }
    read(MAILBOXES[4], &ids[4]);

    let mib = |b: u64| b as f64 / f64::from(1 << 20);
    eprintln!(
        "{:.1} MiB to {} mailboxes: data file +{:.1} MiB, RSS {:.1} MiB before, peak {:.1} MiB; \
         stored in {stored_in:?}, all in {:?}",
        mib(message.len() as u64),
        MAILBOXES.len(),
        mib(growth),
        mib(rss_before),
        mib(peak),
        started.elapsed()
    );
    assert!(
        growth < message.len() as u64 * 5 / 2,
        "the data file grew by {:.1} MiB for a {:.1} MiB message",
        mib(growth),
        mib(message.len() as u64)
    );
    assert!(peak < 400 << 20, "the server's peak RSS was {:.1} MiB", mib(peak));
}

/// A large copy is stored without its decoded bodies and headers, which reads decode again from
/// the raw message: what a reader gets must be exactly what inbound parsing made of it.
#[test]
fn a_large_copy_reads_back_exactly_as_inbound_parsing_made_it() {
    let mut raw = "Received: from c.example.org (127.0.0.1) by mx.test with ESMTP id x; \
        Thu, 1 Jan 2026 00:00:00 +0000\r\nAuthentication-Results: mx.test; dkim=none\r\n\
        From: =?utf-8?q?Ad=C3=A0?= <ada@example.org>\r\nTo: a@alpha.test, b@alpha.test\r\n\
        Subject: =?utf-8?b?UmFwcG9ydCDDqXTDqQ==?=\r\nX-Folded: one\r\n  two\r\n\
        Message-ID: <exact@example.org>\r\nMIME-Version: 1.0\r\n\
        Content-Type: multipart/mixed; boundary=\"m\"\r\n\r\n--m\r\n\
        Content-Type: multipart/alternative; boundary=\"a\"\r\n\r\n--a\r\n\
        Content-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n"
        .to_owned();
    for n in 0..2000 {
        raw.push_str(&format!("=C3=A9t=C3=A9 line {n} with a soft break=\r\n here\r\n"));
    }
    raw.push_str("--a\r\nContent-Type: text/html; charset=utf-8\r\n\r\n");
    for n in 0..2000 {
        raw.push_str(&format!("<p>line {n} &amp; more</p>\r\n"));
    }
    raw.push_str("--a--\r\n--m\r\nContent-Type: application/pdf; name=\"r.pdf\"\r\n\
        Content-Disposition: attachment; filename=\"r.pdf\"\r\nContent-Transfer-Encoding: base64\r\n\r\n");
    raw.push_str(&"QUJDRA==\r\n".repeat(1000));
    raw.push_str("--m--\r\n");
    let raw = raw.into_bytes();
    let parsed = edgemail::inbound::inspect(&raw, 1).expect("a parsable message").email;
    assert!(parsed.text.as_ref().is_some_and(|t| t.len() > 64 << 10), "large enough to move");

    let dir = TempDir::new("exact");
    let store = crate::harness::open_store(&dir.0);
    let copies: Vec<Email> = ["a", "b"]
        .iter()
        .map(|local| {
            let mut copy = parsed.clone();
            copy.summary.id = edgemail::ids::new_id("em");
            copy.summary.mailbox = format!("{local}@alpha.test");
            copy
        })
        .collect();
    let pairs: Vec<(String, String)> =
        copies.iter().map(|c| (c.summary.id.clone(), c.summary.mailbox.clone())).collect();
    let (template, shared) = (parsed.clone(), raw.clone());
    store.write_blocking(move |w| w.store_copies(&template, &pairs, &shared, None)).expect("store");
    for copy in copies {
        let (id, raw) = (copy.summary.id.clone(), raw.clone());
        let (email, by_id, kept) = store
            .read_blocking(move |r| -> edgemail::store::Result<_> {
                Ok((r.email("alpha.test", &id)?, r.email_by_id(&id)?, r.raw_message(&id)?))
            })
            .expect("read");
        let json = |e: &Email| serde_json::to_string(e).expect("json");
        assert_eq!(email.as_ref().map(json), Some(json(&copy)));
        assert_eq!(by_id.as_ref().map(json), Some(json(&copy)));
        assert_eq!(kept, Some(raw));
    }
    store.close();
}
