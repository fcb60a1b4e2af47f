//! The inbound SMTP listener over real TCP: transcripts, limits, hostile clients, STARTTLS, two
//! edgemail processes talking to each other, DSNs and replies about mail we sent.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::{Seed, Server, TempDir};
use crate::mail_world::{MailWorld, header};
use crate::smtp_client::Talk;

const MESSAGE: &str = "From: Ada <ada@example.org>\r\nTo: sales@alpha.test\r\nCc: boss@example.org\r\n\
Subject: Quote request\r\nMessage-ID: <q1@example.org>\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/alternative; boundary=\"x\"\r\n\r\n--x\r\nContent-Type: text/plain\r\n\r\n\
Hello, what does it cost?\r\n..leading dot line\r\n--x\r\nContent-Type: text/html\r\n\r\n\
<p>Hello, what does it <b>cost</b>?</p>\r\n--x--";

fn inbox(w: &MailWorld, mailbox: &str) -> Vec<Value> {
    let list =
        w.api().get(&format!("/v1/emails?mailbox={mailbox}&folder=inbox")).expect(200).json();
    list.as_array().cloned().unwrap_or_default()
}

#[test]
fn a_message_to_a_mailbox_is_stored_in_its_inbox_with_its_fields() {
    let w = MailWorld::start();
    let (mut s, greeting) = Talk::open(w.server.smtp);
    assert!(greeting.starts_with("220 "), "{greeting}");
    let ehlo = s.cmd("EHLO client.example.org");
    for ext in
        ["PIPELINING", "8BITMIME", "SMTPUTF8", "SIZE 26214400", "ENHANCEDSTATUSCODES", "STARTTLS"]
    {
        assert!(ehlo.contains(ext), "{ext} missing from {ehlo}");
    }
    assert!(s.cmd("VRFY sales").starts_with("252"));
    assert!(s.cmd("NOOP").starts_with("250"));
    let done = s.mail("ada@example.org", &["sales@alpha.test"], MESSAGE);
    assert!(done.starts_with("250 2.0.0"), "{done}");
    assert!(s.cmd("QUIT").starts_with("221"));
    let list = inbox(&w, "sales");
    assert_eq!(list.len(), 1);
    let id = list[0]["id"].as_str().expect("id");
    let email = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
    assert_eq!(email["from"], "\"Ada\" <ada@example.org>");
    assert_eq!(email["to"], json!(["sales@alpha.test"]));
    assert_eq!(email["cc"], json!(["boss@example.org"]));
    assert_eq!(email["subject"], "Quote request");
    assert_eq!(email["messageId"], "<q1@example.org>");
    assert_eq!(email["status"], "received");
    assert!(
        email["text"]
            .as_str()
            .is_some_and(|t| t.contains("what does it cost?") && t.contains("\n.leading dot")),
        "{email}"
    );
    assert!(email["html"].as_str().is_some_and(|h| h.contains("<b>cost</b>")));
    let names: Vec<&str> = email["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .filter_map(|h| h["name"].as_str())
        .collect();
    // Our trace headers on top, the spam filter's finding below them, then the sender's.
    assert_eq!(&names[..3], ["Received", "Authentication-Results", "X-Spam-Status"], "{names:?}");
    let status = email["headers"][2]["value"].as_str().unwrap_or("");
    assert!(status.starts_with("No, score="), "{status}");
    assert_eq!(email["spam"]["verdict"], "ham", "{email}");
}

#[test]
fn a_pipelined_session_gets_every_reply_in_order() {
    let w = MailWorld::start();
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO pipe.example.org");
    s.send(&format!(
        "MAIL FROM:<a@example.org>\r\nRCPT TO:<sales@alpha.test>\r\nRCPT TO:<nobody@alpha.test>\r\n\
         RCPT TO:<x@elsewhere.example>\r\nDATA\r\n{MESSAGE}\r\n.\r\nQUIT\r\n"
    ));
    let replies: Vec<String> = (0..7).map(|_| s.reply()).collect();
    let codes: Vec<&str> = replies.iter().map(|r| r.get(..3).unwrap_or("")).collect();
    assert_eq!(codes, ["250", "250", "550", "550", "354", "250", "221"], "{replies:?}");
    assert!(replies[2].contains("5.1.1") && replies[3].contains("5.7.1"), "{replies:?}");
    assert_eq!(inbox(&w, "sales").len(), 1);
}

#[test]
fn unknown_mailboxes_foreign_domains_and_oversize_messages_are_refused() {
    let w = MailWorld::start_with(&[("EDGEMAIL_SMTP_MAX_MESSAGE_SIZE", "4KiB")], &[]);
    let (mut s, _) = Talk::open(w.server.smtp);
    assert!(s.cmd("MAIL FROM:<a@example.org>").starts_with("503"), "EHLO comes first");
    s.cmd("EHLO c.example.org");
    assert!(s.cmd("RCPT TO:<sales@alpha.test>").starts_with("503"), "MAIL comes first");
    assert!(s.cmd("MAIL FROM:<a@example.org>").starts_with("250"));
    assert!(s.cmd("RCPT TO:<ghost@alpha.test>").starts_with("550 5.1.1"));
    assert!(s.cmd("RCPT TO:<someone@gmail.com>").starts_with("550 5.7.1"), "never an open relay");
    assert!(s.cmd("DATA").starts_with("554"));
    assert!(s.cmd("RSET").starts_with("250"));
    assert!(s.cmd("MAIL FROM:<a@example.org> SIZE=999999").starts_with("552"));
    s.cmd("RSET");
    let big = format!("Subject: big\r\n\r\n{}", "x".repeat(78).repeat(100).replace("xx", "x\r\n"));
    let reply = s.mail("a@example.org", &["sales@alpha.test"], &big);
    assert!(reply.starts_with("552 5.3.4"), "{reply}");
    assert!(s.cmd("NOOP").starts_with("250"), "the session goes on");
    assert!(inbox(&w, "sales").is_empty());
}

#[test]
fn too_many_recipients_are_refused_with_452() {
    let w = MailWorld::start_with(&[("EDGEMAIL_SMTP_MAX_RECIPIENTS", "2")], &[]);
    w.api().post("/v1/mailboxes", json!({"address": "b"})).expect(201);
    w.api().post("/v1/mailboxes", json!({"address": "c"})).expect(201);
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO c.example.org");
    s.cmd("MAIL FROM:<a@example.org>");
    assert!(s.cmd("RCPT TO:<sales@alpha.test>").starts_with("250"));
    assert!(s.cmd("RCPT TO:<b@alpha.test>").starts_with("250"));
    assert!(s.cmd("RCPT TO:<c@alpha.test>").starts_with("452"));
}

#[test]
fn garbage_overlong_lines_and_silence_are_answered_and_closed_while_others_are_served() {
    let w = MailWorld::start_with(&[("EDGEMAIL_SMTP_COMMAND_TIMEOUT", "700ms")], &[]);
    // Garbage: each bad command is answered; after ten the connection is closed.
    let (mut s, _) = Talk::open(w.server.smtp);
    let mut last = String::new();
    for _ in 0..12 {
        last = s.cmd("\u{1}\u{2}GARBAGE nonsense");
        if last.starts_with("421") || last.is_empty() {
            break;
        }
        assert!(last.starts_with('5'), "{last}");
    }
    assert!(last.contains("421") || last.is_empty(), "{last}");
    // An overlong line.
    let (mut s, _) = Talk::open(w.server.smtp);
    let reply = s.cmd(&format!("EHLO {}", "a".repeat(10_000)));
    assert!(reply.starts_with('5'), "{reply}");
    let reply = s.cmd(&format!("NOOP {}", "b".repeat(70_000)));
    assert!(reply.starts_with("500"), "{reply}");
    assert!(s.cmd("NOOP").starts_with("250"), "the session survives an overlong line");
    // Silence: the server gives up with 421 after the command timeout.
    let (mut silent, _) = Talk::open(w.server.smtp);
    let started = Instant::now();
    let reply = silent.reply();
    assert!(reply.starts_with("421"), "{reply}");
    assert!(started.elapsed() < Duration::from_secs(8));
    // A well-behaved client meanwhile.
    let (mut ok, _) = Talk::open(w.server.smtp);
    ok.cmd("EHLO fine.example.org");
    assert!(
        ok.mail("a@example.org", &["sales@alpha.test"], "Subject: fine\r\n\r\nfine")
            .starts_with("250")
    );
    // Too many connections from one address get 421.
    let w2 = MailWorld::start_with(&[("EDGEMAIL_SMTP_MAX_CONNECTIONS_PER_IP", "2")], &[]);
    let _a = Talk::open(w2.server.smtp);
    let _b = Talk::open(w2.server.smtp);
    let (_, third) = Talk::open(w2.server.smtp);
    assert!(third.starts_with("421"), "{third}");
}

#[test]
fn a_starttls_session_delivers() {
    let w = MailWorld::start();
    let body = mail_builder::MessageBuilder::new()
        .from(("Ada", "ada@example.org"))
        .to("sales@alpha.test")
        .subject("over TLS")
        .text_body("secret")
        .write_to_vec()
        .expect("message");
    let message =
        mail_send::smtp::message::Message::new("ada@example.org", ["sales@alpha.test"], body);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let mut client =
            mail_send::SmtpClientBuilder::new("127.0.0.1".to_owned(), w.server.smtp.port())
                .expect("builder")
                .implicit_tls(false)
                .allow_invalid_certs()
                .connect()
                .await
                .expect("STARTTLS session");
        client.send(message).await.expect("delivered over TLS");
    });
    let list = inbox(&w, "sales");
    assert_eq!(list.len(), 1);
    let email = w.api().get(&format!("/v1/emails/{}", list[0]["id"].as_str().expect("id"))).json();
    let received = email["headers"][0]["value"].as_str().unwrap_or("");
    assert!(received.contains("with ESMTPS"), "{received}");
}

#[test]
fn two_edgemail_processes_deliver_to_each_other_with_dkim_pass() {
    // B hosts beta.test; A sends to it through its MX, found in the shared test DNS.
    let dir = TempDir::new("peer");
    let seed = Seed::open(&dir.0);
    seed.domain("beta.test");
    seed.mailbox("beta.test", "inbox");
    let b_key = seed.key(Some("beta.test"));
    seed.close();
    let a = MailWorld::start();
    let b = Server::start_with(&dir.0, &["--nameserver", &a.dns.addr().to_string()], &[]);
    a.dns.add_mx("beta.test", 10, "mx.beta.test");
    a.dns.add_a("mx.beta.test", std::net::Ipv4Addr::LOCALHOST);
    // A's MX port is the sink's; route this one recipient's domain to B through a second A
    // instance would need another port, so B listens where A delivers: restart A pointed at B.
    let mut a = a;
    a.server.kill9();
    let env = [("EDGEMAIL_DELIVERY_PORT", b.smtp.port().to_string())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let server = Server::start_with(&a.dir.0, &["--nameserver", &a.dns.addr().to_string()], &env);
    let api = server.client(Some(&a.key));
    let sent = api
        .post("/v1/send", json!({"from": "sales@alpha.test", "to": "inbox@beta.test", "subject": "Across", "html": "<p>Hello B</p>"}))
        .expect(200)
        .json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    let deadline = Instant::now() + Duration::from_secs(20);
    let b_api = b.client(Some(&b_key));
    let received = loop {
        let list = b_api.get("/v1/emails?mailbox=inbox&folder=inbox").expect(200).json();
        if let Some(first) = list.as_array().and_then(|l| l.first()) {
            break first.clone();
        }
        assert!(
            Instant::now() < deadline,
            "B never received it; A log:\n{}\nB log:\n{}",
            server.log(),
            b.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    let email = b_api
        .get(&format!("/v1/emails/{}", received["id"].as_str().expect("id")))
        .expect(200)
        .json();
    let results = email["headers"]
        .as_array()
        .expect("headers")
        .iter()
        .find(|h| h["name"] == "Authentication-Results")
        .and_then(|h| h["value"].as_str())
        .unwrap_or("")
        .to_owned();
    assert!(results.contains("dkim=pass"), "{results}");
    assert!(
        email["headers"][0]["value"].as_str().is_some_and(|r| r.contains("ESMTPS")),
        "A used STARTTLS: {email}"
    );
    let sent_email = api.get(&format!("/v1/emails/{id}")).expect(200).json();
    assert_eq!(sent_email["status"], "delivered");
    drop(a);
}

#[test]
fn a_dsn_marks_the_recipient_bounced_and_suppresses_it() {
    let w = MailWorld::start();
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": "gone@example.org", "subject": "s", "text": "t"}))
        .expect(200)
        .json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    w.wait_status(&id, "delivered");
    let got = w.sink.wait_for(1, Duration::from_secs(10));
    let bounce_address = got[0].mail_from.clone();
    let original_id = header(&got[0].data, "Message-ID").expect("mid");
    let dsn = format!(
        "From: MAILER-DAEMON@mx.example.org\r\nTo: {bounce_address}\r\nSubject: Undelivered Mail\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/report; report-type=delivery-status; boundary=\"b\"\r\n\r\n\
         --b\r\nContent-Type: text/plain\r\n\r\nThe mailbox is gone.\r\n--b\r\n\
         Content-Type: message/delivery-status\r\n\r\nReporting-MTA: dns; mx.example.org\r\n\r\n\
         Final-Recipient: rfc822; gone@example.org\r\nAction: failed\r\nStatus: 5.1.1\r\n\
         Diagnostic-Code: smtp; 550 5.1.1 user unknown\r\n\r\n--b\r\n\
         Content-Type: text/rfc822-headers\r\n\r\nMessage-ID: {original_id}\r\n--b--"
    );
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    assert!(s.mail("", &[&bounce_address], &dsn).starts_with("250"));
    let email = w.wait_email(&id, |e| e["deliveries"][0]["status"] == "bounced");
    assert!(
        email["deliveries"][0]["lastResponse"].as_str().is_some_and(|r| r.contains("5.1.1")),
        "{email}"
    );
    assert_eq!(email["status"], "bounced");
    let e = w.send(json!({"from": "sales@alpha.test", "to": "gone@example.org", "subject": "s", "text": "t"}))
        .expect_error(422, "unprocessable_entity");
    assert_eq!(e["blocked"][0]["reason"], "suppressed");
}

#[test]
fn a_reply_is_linked_to_the_message_it_answers() {
    let w = MailWorld::start();
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": "ada@example.org", "subject": "Offer", "html": "<p>Buy</p>", "type": "campaign"}))
        .expect(200)
        .json();
    let id = sent["messageIds"][0].as_str().expect("id").to_owned();
    let got = w.sink.wait_for(1, Duration::from_secs(10));
    let original = header(&got[0].data, "Message-ID").expect("mid");
    let reply = format!(
        "From: ada@example.org\r\nTo: sales@alpha.test\r\nSubject: Re: Offer\r\nIn-Reply-To: {original}\r\n\
         References: {original}\r\n\r\nYes please."
    );
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO mx.example.org");
    assert!(s.mail("ada@example.org", &["sales@alpha.test"], &reply).starts_with("250"));
    let list = inbox(&w, "sales");
    let answer = w.api().get(&format!("/v1/emails/{}", list[0]["id"].as_str().expect("id"))).json();
    assert_eq!(answer["inReplyToId"], id);
    let original_email = w.api().get(&format!("/v1/emails/{id}")).json();
    assert_eq!(original_email["tracking"]["replies"], 1, "{original_email}");
}

#[test]
fn a_complaint_suppresses_the_address() {
    let w = MailWorld::start();
    // The report must authenticate for its From domain: SPF authorizes the test client.
    w.dns.add_txt("isp.example", "v=spf1 ip4:127.0.0.1 -all");
    let sent = w.send(json!({"from": "sales@alpha.test", "to": "angry@example.org", "subject": "s", "text": "t"})).expect(200).json();
    let _ = sent;
    let got = w.sink.wait_for(1, Duration::from_secs(10));
    let original = header(&got[0].data, "Message-ID").expect("mid");
    let arf = format!(
        "From: fbl@isp.example\r\nTo: abuse@alpha.test\r\nSubject: complaint\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/report; report-type=feedback-report; boundary=\"b\"\r\n\r\n--b\r\n\
         Content-Type: text/plain\r\n\r\nA complaint.\r\n--b\r\nContent-Type: message/feedback-report\r\n\r\n\
         Feedback-Type: abuse\r\nVersion: 1\r\nOriginal-Rcpt-To: <angry@example.org>\r\n\r\n--b\r\n\
         Content-Type: message/rfc822\r\n\r\nMessage-ID: {original}\r\nTo: angry@example.org\r\n\r\nhi\r\n--b--"
    );
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO isp.example");
    assert!(s.mail("fbl@isp.example", &["abuse@alpha.test"], &arf).starts_with("250"));
    let e = w.send(json!({"from": "sales@alpha.test", "to": "angry@example.org", "subject": "s", "text": "t"}))
        .expect_error(422, "unprocessable_entity");
    assert_eq!(e["blocked"][0]["reason"], "suppressed");
    assert!(e["blocked"][0]["message"].as_str().is_some_and(|m| m.contains("complaint")), "{e}");
}
