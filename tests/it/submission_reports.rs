//! A message a mail client submitted that cannot be delivered comes back to its sender as a
//! delivery status notification (RFC 3464) in the mailbox's INBOX, announced to an idling IMAP
//! client like any new mail. Mail sent through the API reports through its status and events
//! only, and no report is written about a report.

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::Duration;

use crate::mail_clients::{Clients, message};
use crate::mail_world::basic;

/// Idles in INBOX until a message arrives, then writes its bytes to `args[0]`.
const WATCHER: &str = r#"
m = imap()
m.select('INBOX')
tag = m._new_tag()
m.send(tag + b' IDLE\r\n')
out('cont', m.readline().decode().strip())
out('idling')
m.sock.settimeout(30)
while True:
    line = m.readline().strip()
    out('news', line.decode())
    if line.endswith(b'EXISTS') and not line.startswith(b'* 0 '):
        break
m.send(b'DONE\r\n')
while not m.readline().startswith(tag):
    pass
typ, data = m.fetch('1', '(BODY.PEEK[])')
open(args[0], 'wb').write(data[0][1])
out('fetched')
"#;

/// Sends `args[2]` to the comma-separated recipients `args[1]`; prints the DATA reply.
const SEND: &str = r#"
s = submit()
code, text = s.mail(user)
for r in args[1].split(','):
    s.rcpt(r)
code, text = s.data(args[2].encode())
out('data', code, text.decode())
s.quit()
"#;

fn send(c: &Clients, to: &str, message: &str) -> String {
    let lines = c.py(SEND, &["-", to, message]);
    let data = lines.iter().find(|l| l.starts_with("data ")).expect("data line");
    assert!(data.starts_with("data 250"), "{lines:?}");
    data.rsplit(' ').next().expect("id").to_owned()
}

#[test]
fn an_undeliverable_submission_comes_back_as_a_dsn_in_the_senders_inbox_seen_by_idle() {
    let c = Clients::start();
    let refusal = "550 5.1.1 no such user here";
    // A hard bounce suppresses its address: each case below refuses at an address of its own.
    for gone in ["gone", "gone-api", "gone-report"] {
        c.world.sink.set_rcpt_reply(&format!("{gone}@example.org"), vec![refusal]);
    }
    let saved = c.world.dir.0.join("dsn.eml");
    let saved_arg = saved.display().to_string();
    let mut command = c.command(&c.password, WATCHER, &[&saved_arg]);
    let mut watcher = command.stdout(Stdio::piped()).spawn().expect("python3");
    let mut out = BufReader::new(watcher.stdout.take().expect("stdout"));
    let mut seen = Vec::new();
    while !seen.iter().any(|l: &String| l == "idling") {
        let mut line = String::new();
        out.read_line(&mut line).expect("line");
        assert!(!line.is_empty(), "watcher ended early: {seen:?}");
        seen.push(line.trim().to_owned());
    }

    // One recipient takes it, the other refuses it for good.
    let original =
        message("gone@example.org, a@example.org", "Quarterly offer", "offer-1@alpha.test");
    let id = send(&c, "gone@example.org,a@example.org", &original);
    let rest: Vec<String> = out.lines().map_while(Result::ok).collect();
    assert!(watcher.wait().expect("wait").success(), "{seen:?} {rest:?}\n{}", c.world.server.log());
    assert!(rest.contains(&"news * 1 EXISTS".to_owned()), "announced while idling: {rest:?}");
    let dsn = std::fs::read(&saved).expect("the fetched report");
    let text = String::from_utf8_lossy(&dsn);
    for needle in [
        "Subject: Undelivered Mail Returned to Sender",
        "To: <sales@alpha.test>",
        "Auto-Submitted: auto-replied",
        "Content-Type: multipart/report; report-type=\"delivery-status\"",
        "Content-Type: message/delivery-status",
        "Reporting-MTA: dns; ",
        "Final-Recipient: rfc822; gone@example.org\r\nAction: failed\r\nStatus: 5.1.1\r\n\
         Diagnostic-Code: smtp; 550 5.1.1 no such user here",
        "Content-Type: text/rfc822-headers",
        "Subject: Quarterly offer",
        "Message-ID: <offer-1@alpha.test>",
    ] {
        assert!(text.contains(needle), "{needle:?} missing from the report:\n{text}");
    }
    assert!(!text.contains("Final-Recipient: rfc822; a@example.org"), "delivered: {text}");
    assert!(!text.contains("Hello: Quarterly offer"), "the body is not returned: {text}");
    let email = c.world.wait_email(&id, |e| e["deliveries"][0]["status"] != "queued");
    assert_eq!(email["deliveries"][0]["status"], "bounced", "{email}");
    assert_eq!(c.world.sink.wait_for(1, Duration::from_secs(20))[0].rcpt_to, ["a@example.org"]);
    let inbox = c.listed("inbox");
    assert_eq!(inbox.len(), 1, "{inbox:?}");
    let full = c.world.api().get(&format!("/v1/emails/{}", inbox[0].0)).expect(200).json();
    assert!(full["from"].as_str().is_some_and(|f| f.contains("<MAILER-DAEMON@")), "{full}");

    // Sent through the API instead: the status and events report it, not the inbox.
    let api = c.world.send(basic(serde_json::json!(["gone-api@example.org"]))).expect(200).json();
    let api_id = api["messageId"].as_str().expect("messageId").to_owned();
    c.world.wait_status(&api_id, "bounced");
    // A report submitted by a client (a forwarded bounce, say) gets no report of its own.
    let report = "From: sales@alpha.test\r\nTo: gone-report@example.org\r\nSubject: a report\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; \
         boundary=b\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\nfyi\r\n--b--\r\n";
    let report_id = send(&c, "gone-report@example.org", report);
    c.world.wait_status(&report_id, "bounced");
    assert_eq!(c.listed("inbox").len(), 1, "still only the first report");
}
