//! Sieve filters and vacation through the real MX: a script with an error is refused at upload
//! with its line and column, `fileinto` files received mail into a folder, `reject` refuses at
//! the end of DATA, and vacation answers a sender once per `days`, never a list or bulk message,
//! with `Auto-Submitted: auto-replied`.

use std::time::Duration;

use serde_json::json;

use crate::harness::A;
use crate::imap::Fixture;
use crate::mail_world::header;
use crate::smtp_client::Talk;

fn message(from: &str, subject: &str, extra: &str) -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    let n = N.fetch_add(1, Ordering::Relaxed);
    format!(
        "From: {from}\r\nTo: Sales <sales@{A}>\r\nSubject: {subject}\r\nMessage-ID: <s{n}@mail.test>\r\n\
         Date: Thu, 26 Nov 2026 10:00:00 +0000\r\n{extra}\r\nHello there.\r\n"
    )
}

fn send(f: &Fixture, mail_from: &str, message: &str) -> String {
    let (mut s, _) = Talk::open(f.world.server.smtp);
    s.cmd("EHLO mail.sender.test");
    s.mail(mail_from, &[&format!("sales@{A}")], message)
}

fn wait_listed(f: &Fixture, folder: &str, subject: &str) {
    for _ in 0..200 {
        if f.listed(folder).iter().any(|(_, s)| s == subject) {
            return;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    panic!("{subject:?} never reached {folder}: inbox {:?}", f.listed("inbox"));
}

#[test]
fn a_script_with_an_error_is_refused_with_its_line_and_column() {
    let f = Fixture::start();
    let api = f.world.api();
    api.get("/v1/mailboxes/sales/sieve").expect(404);
    let bad = api
        .put(
            "/v1/mailboxes/sales/sieve",
            json!({"script": "require \"fileinto\";\nfileinto \"x\"\nkeep;\n"}),
        )
        .expect(400)
        .json();
    let text =
        bad["error"]["message"].as_str().or(bad["message"].as_str()).unwrap_or("").to_owned();
    assert!(text.contains("line ") && text.contains("column "), "{bad}");
    let good = "require \"fileinto\";\nfileinto \"x\";\n";
    let put = api.put("/v1/mailboxes/sales/sieve", json!({"script": good})).expect(200).json();
    assert_eq!(put["script"], good, "{put}");
    assert!(put["updatedAt"].as_u64().is_some(), "{put}");
    let got = api.get("/v1/mailboxes/sales/sieve").expect(200).json();
    assert_eq!(got["script"], good);
    api.delete("/v1/mailboxes/sales/sieve").expect(200);
    api.get("/v1/mailboxes/sales/sieve").expect(404);
    api.delete("/v1/mailboxes/sales/sieve").expect(404);
}

#[test]
fn fileinto_files_discard_drops_and_reject_refuses_at_the_end_of_data() {
    let f = Fixture::start();
    let api = f.world.api();
    api.post("/v1/mailboxes/sales/folders", json!({"name": "Invoices"})).expect(201);
    let script = "require [\"fileinto\", \"reject\", \"imap4flags\", \"mailbox\"];\n\
                  if header :contains \"subject\" \"invoice\" { fileinto :flags \"\\\\Flagged\" \"Invoices\"; stop; }\n\
                  if header :contains \"subject\" \"offer\" { reject \"no offers, thanks\"; stop; }\n\
                  if header :contains \"subject\" \"noise\" { discard; stop; }\n\
                  if header :contains \"subject\" \"made\" { fileinto :create \"Made/Here\"; stop; }\n\
                  if header :contains \"subject\" \"missing\" { fileinto \"Nowhere\"; stop; }\n";
    api.put("/v1/mailboxes/sales/sieve", json!({"script": script})).expect(200);

    let filed = send(&f, "ann@example.org", &message("Ann <ann@example.org>", "invoice 42", ""));
    assert!(filed.starts_with("250"), "{filed}");
    wait_listed(&f, "Invoices", "invoice 42");

    let refused = send(&f, "bob@example.org", &message("Bob <bob@example.org>", "an offer", ""));
    assert!(refused.starts_with("550 5.7.1"), "{refused}");
    assert!(refused.contains("no offers, thanks"), "{refused}");

    let dropped = send(&f, "ann@example.org", &message("<ann@example.org>", "noise", ""));
    assert!(dropped.starts_with("250"), "{dropped}");
    send(&f, "ann@example.org", &message("<ann@example.org>", "made", ""));
    wait_listed(&f, "Made/Here", "made");
    send(&f, "ann@example.org", &message("<ann@example.org>", "missing", ""));
    wait_listed(&f, "inbox", "missing");
    let inbox: Vec<String> = f.listed("inbox").into_iter().map(|(_, s)| s).collect();
    assert!(
        !inbox.iter().any(|s| s == "noise" || s == "an offer" || s == "invoice 42"),
        "{inbox:?}"
    );
}

#[test]
fn vacation_answers_once_per_sender_and_never_a_list_or_bulk_message() {
    let f = Fixture::start();
    let api = f.world.api();
    let set = api
        .put(
            "/v1/mailboxes/sales/vacation",
            json!({"enabled": true, "subject": "Away", "text": "Back on Monday.", "days": 3}),
        )
        .expect(200)
        .json();
    assert_eq!(set["days"], 3, "{set}");
    api.get("/v1/mailboxes/sales/vacation").expect(200);

    let first = message("Ann <ann@example.org>", "question", "");
    assert!(send(&f, "ann@example.org", &first).starts_with("250"));
    let list = message("List <news@example.org>", "digest", "List-Id: <news.example.org>\r\n");
    assert!(send(&f, "news@example.org", &list).starts_with("250"));
    let bulk = message("Shop <shop@example.org>", "deals", "Precedence: bulk\r\n");
    assert!(send(&f, "shop@example.org", &bulk).starts_with("250"));
    let again = message("Ann <ann@example.org>", "question again", "");
    assert!(send(&f, "ann@example.org", &again).starts_with("250"));
    wait_listed(&f, "inbox", "question again");

    let replies = f.world.sink.wait_for(1, Duration::from_secs(20));
    std::thread::sleep(Duration::from_secs(2));
    let replies = if replies.len() > 1 { replies } else { f.world.sink.messages() };
    assert_eq!(
        replies.len(),
        1,
        "one answer only: {:?}",
        replies.iter().map(|r| r.rcpt_to.clone()).collect::<Vec<_>>()
    );
    let reply = &replies[0];
    assert_eq!(reply.rcpt_to, vec!["ann@example.org".to_owned()]);
    assert_eq!(header(&reply.data, "Auto-Submitted").as_deref(), Some("auto-replied"));
    assert!(header(&reply.data, "In-Reply-To").is_some_and(|v| v.contains("@mail.test")));
    assert_eq!(header(&reply.data, "Subject").as_deref(), Some("Away"));
    assert!(header(&reply.data, "DKIM-Signature").is_some(), "signed");

    api.delete("/v1/mailboxes/sales/vacation").expect(200);
    api.get("/v1/mailboxes/sales/vacation").expect(404);
}

/// Runs Debian's sieve-connect against the ManageSieve listener (STARTTLS with our self-signed
/// certificate, so without verifying it), the app password on its standard input.
fn sieve_connect(f: &Fixture, args: &[&str]) -> String {
    use std::io::Write;
    let port = f.port("managesieve").to_string();
    let user = format!("sales@{A}");
    let mut child = std::process::Command::new("sieve-connect")
        .args(["--server", "127.0.0.1", "--port", &port, "--user", &user, "--passwordfd", "0"])
        .args(["--notlsverify", "--authmech", "PLAIN", "--noclearauth"])
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("sieve-connect (scripts/test.sh installs it)"); // ok: test
    child
        .stdin
        .take()
        .expect("stdin") // ok: test
        .write_all(format!("{}\n", f.password).as_bytes())
        .expect("password"); // ok: test
    let out = child.wait_with_output().expect("sieve-connect ran"); // ok: test
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "sieve-connect {args:?}: {text}");
    text
}

#[test]
fn a_script_uploaded_with_sieve_connect_files_mail_and_hostile_input_is_refused() {
    let f = Fixture::start_with(&[("EDGEMAIL_MANAGESIEVE_LISTEN", "127.0.0.1:0")]);
    let api = f.world.api();
    api.post("/v1/mailboxes/sales/folders", json!({"name": "Reports"})).expect(201);
    let script = f.world.dir.0.join("reports.sieve");
    std::fs::write(
        &script,
        "require \"fileinto\";\nif header :contains \"subject\" \"report\" { fileinto \"Reports\"; }\n",
    )
    .expect("script written"); // ok: test
    let local = script.display().to_string();
    sieve_connect(&f, &["--localsieve", &local, "--remotesieve", "reports", "--upload"]);
    sieve_connect(&f, &["--remotesieve", "reports", "--activate"]);
    let listed = sieve_connect(&f, &["--list"]);
    assert!(listed.contains("reports"), "{listed}");
    let shown = api.get("/v1/mailboxes/sales/sieve").expect(200).json();
    assert!(shown["script"].as_str().is_some_and(|s| s.contains("Reports")), "{shown}");

    let sent = send(&f, "ann@example.org", &message("Ann <ann@example.org>", "weekly report", ""));
    assert!(sent.starts_with("250"), "{sent}");
    wait_listed(&f, "Reports", "weekly report");

    // Hostile input: a literal far past the bound, and a line far past its bound.
    let addr: std::net::SocketAddr = ([127, 0, 0, 1], f.port("managesieve")).into();
    for hostile in [
        b"PUTSCRIPT \"x\" {999999999+}\r\n".to_vec(),
        [vec![b'A'; 100_000], b"\r\n".to_vec()].concat(),
    ] {
        let answer = raw_exchange(addr, &hostile);
        assert!(answer.contains("BYE") || answer.contains("NO"), "{answer}");
    }
    let again = raw_exchange(addr, b"LOGOUT\r\n");
    assert!(again.contains("IMPLEMENTATION") && again.contains("OK"), "still serving: {again}");
}

/// Sends `input` after the greeting and reads what comes back until the server closes.
fn raw_exchange(addr: std::net::SocketAddr, input: &[u8]) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).expect("connect"); // ok: test
    s.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout"); // ok: test
    let _ = s.write_all(input);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}
