//! The submission policy of the same session: no login before TLS, AUTH PLAIN and LOGIN after
//! it, the sender bound to the mailbox logged in as, recipients judged by the mail system.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

use super::*;

fn plain(user: &str, password: &str) -> String {
    B64.encode(format!("\0{user}\0{password}"))
}

fn b64(s: &str) -> String {
    B64.encode(s)
}

fn submission_ehlo(auth: bool, starttls: bool) -> Vec<&'static str> {
    let mut lines = ehlo_reply(starttls);
    let last = lines.pop();
    if auth {
        lines.push("S: 250-AUTH PLAIN LOGIN");
    }
    lines.extend(last);
    lines
}

#[tokio::test]
async fn no_login_and_no_mail_before_tls_not_even_from_loopback() {
    let mut c = Conversation::submission(false, Fake::with(&["ada@example.org"]));
    let auth = format!("AUTH PLAIN {}\r\n", plain("sales@alpha.test", "right"));
    let end = c
        .run(&[
            "EHLO client.example\r\n",
            &auth,
            "AUTH LOGIN\r\n",
            "MAIL FROM:<sales@alpha.test>\r\n",
            "STARTTLS\r\n",
        ])
        .await;
    assert_eq!(end, End::StartTls);
    let mut expected = vec!["S: 220 mx.test ESMTP edgemail", "C: EHLO client.example"];
    expected.extend(submission_ehlo(false, true));
    expected.extend([
        "C: AUTH PLAIN AHNhbGVzQGFscGhhLnRlc3QAcmlnaHQ=",
        "S: 538 5.7.11 encryption required: use STARTTLS first",
        "C: AUTH LOGIN",
        "S: 538 5.7.11 encryption required: use STARTTLS first",
        "C: MAIL FROM:<sales@alpha.test>",
        "S: 530 5.7.0 authentication required",
        "C: STARTTLS",
        "S: 220 2.0.0 ready to start TLS",
    ]);
    assert_eq!(c.transcript(), expected);
    assert!(c.fake.taken().is_empty());
}

#[tokio::test]
async fn after_starttls_a_mailbox_logs_in_and_sends_as_itself_only() {
    let mut c = Conversation::submission(false, Fake::with(&["ada@example.org"]));
    assert_eq!(c.run(&["EHLO client.example\r\n", "STARTTLS\r\n"]).await, End::StartTls);
    c.secured();
    let auth = format!("AUTH PLAIN {}\r\n", plain("sales@alpha.test", "right"));
    c.run(&[
        "EHLO client.example\r\n",
        "MAIL FROM:<sales@alpha.test>\r\n",
        &auth,
        "MAIL FROM:<boss@alpha.test>\r\n",
        "MAIL FROM:<Sales@Alpha.test>\r\n",
        "RCPT TO:<blocked@example.org>\r\n",
        "RCPT TO:<ada@example.org>\r\n",
        "DATA\r\n",
        "From: sales@alpha.test\r\nSubject: hi\r\n\r\nhello\r\n.\r\n",
        "QUIT\r\n",
    ])
    .await;
    let after_tls: Vec<String> =
        c.transcript().into_iter().skip_while(|l| l != "-- TLS --").skip(2).collect();
    let mut expected = submission_ehlo(true, false);
    expected.extend([
        "C: MAIL FROM:<sales@alpha.test>",
        "S: 530 5.7.0 authentication required",
        "C: AUTH PLAIN AHNhbGVzQGFscGhhLnRlc3QAcmlnaHQ=",
        "S: 235 2.7.0 authentication succeeded",
        "C: MAIL FROM:<boss@alpha.test>",
        "S: 553 5.7.1 sender must be sales@alpha.test, the mailbox you logged in as",
        "C: MAIL FROM:<Sales@Alpha.test>",
        "S: 250 2.1.0 sender ok",
        "C: RCPT TO:<blocked@example.org>",
        "S: 550 5.1.1 no mailbox blocked@example.org here",
        "C: RCPT TO:<ada@example.org>",
        "S: 250 2.1.5 recipient ok",
        "C: DATA",
        "S: 354 end data with <CR><LF>.<CR><LF>",
        "C: From: sales@alpha.test",
        "C: Subject: hi",
        "C: ",
        "C: hello",
        "C: .",
        "S: 250 2.0.0 queued as m1",
        "C: QUIT",
        "S: 221 2.0.0 mx.test closing connection",
    ]);
    assert_eq!(after_tls, expected);
    let taken = c.fake.taken();
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[0].0.login.as_deref(), Some("sales@alpha.test"));
    assert_eq!(taken[0].0.recipients, ["ada@example.org"]);
    assert!(taken[0].0.tls);
}

#[tokio::test]
async fn login_exchange_over_implicit_tls_with_a_wrong_password_first() {
    let mut c = Conversation::submission(true, Fake::default());
    let (user, wrong, right) = (b64("sales@alpha.test"), b64("wrong"), b64("right"));
    c.run(&[
        "EHLO client.example\r\n",
        "STARTTLS\r\n",
        "AUTH LOGIN\r\n",
        &format!("{user}\r\n"),
        &format!("{wrong}\r\n"),
        &format!("AUTH LOGIN {user}\r\n"),
        &format!("{right}\r\n"),
        "AUTH PLAIN\r\n",
    ])
    .await;
    let replies = c.replies();
    let mut expected = vec!["S: 220 mx.test ESMTP edgemail".to_owned()];
    expected.extend(submission_ehlo(true, false).into_iter().map(str::to_owned));
    expected.extend(
        [
            "S: 503 5.5.1 TLS is already active",
            "S: 334 VXNlcm5hbWU6",
            "S: 334 UGFzc3dvcmQ6",
            "S: 535 5.7.8 authentication credentials invalid",
            "S: 334 UGFzc3dvcmQ6",
            "S: 235 2.7.0 authentication succeeded",
            "S: 503 5.5.1 already authenticated",
        ]
        .map(str::to_owned),
    );
    assert_eq!(replies, expected);
}

#[tokio::test]
async fn cancelled_malformed_and_throttled_logins_are_refused() {
    let mut c = Conversation::submission(true, Fake::default());
    c.run(&[
        "EHLO client.example\r\n",
        "AUTH PLAIN\r\n",
        "*\r\n",
        "AUTH PLAIN !!!\r\n",
        "AUTH CRAM-MD5\r\n",
        &format!("AUTH PLAIN {}\r\n", plain("throttled@alpha.test", "right")),
        "MAIL FROM:<throttled@alpha.test>\r\n",
    ])
    .await;
    let replies = c.replies();
    let tail: Vec<&str> = replies.iter().rev().take(6).rev().map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            "S: 501 5.7.0 authentication cancelled",
            "S: 501 5.5.2 cannot decode the response",
            "S: 504 5.5.4 unsupported mechanism; use PLAIN or LOGIN",
            "S: 454 4.7.0 too many failed logins, try later",
            "S: 530 5.7.0 authentication required",
            "S: 421 4.7.0 too many errors, closing connection",
        ],
        "failed logins count as errors (smtp.max_errors is 5 here)"
    );
}

#[tokio::test]
async fn the_mx_never_offers_or_accepts_a_login_even_over_tls() {
    let mut c = Conversation::new(cfg(), TLS, Fake::default());
    assert_eq!(c.run(&["EHLO client.example\r\n", "STARTTLS\r\n"]).await, End::StartTls);
    c.secured();
    let auth = format!("AUTH PLAIN {}\r\n", plain("sales@alpha.test", "right"));
    c.run(&["EHLO client.example\r\n", &auth]).await;
    let replies = c.replies();
    assert!(!replies.iter().any(|r| r.contains("250-AUTH")), "{replies:?}");
    assert_eq!(
        replies.last().map(String::as_str),
        Some("S: 502 5.5.1 AUTH is not offered on this port")
    );
}

#[tokio::test]
async fn utf8_addresses_need_the_smtputf8_parameter() {
    let fake = Fake::with(&["用户@example.org", "ada@bücher.example"]);
    let mut c = Conversation::submission(true, fake);
    let auth = format!("AUTH PLAIN {}\r\n", plain("sales@alpha.test", "right"));
    c.run(&[
        "EHLO client.example\r\n",
        &auth,
        "MAIL FROM:<sales@alpha.test>\r\n",
        "RCPT TO:<用户@example.org>\r\n",
        "RSET\r\n",
        "MAIL FROM:<sales@alpha.test> SMTPUTF8\r\n",
        "RCPT TO:<用户@example.org>\r\n",
        "RCPT TO:<ada@bücher.example>\r\n",
        "DATA\r\n",
        "From: sales@alpha.test\r\nTo: 用户@example.org\r\nSubject: hi\r\n\r\nhello\r\n.\r\n",
        "MAIL FROM:<sales@xn--lpha-2na.test> SMTPUTF8\r\n",
        "MAIL FROM:<sales@älpha.test>\r\n",
    ])
    .await;
    let replies = c.replies();
    assert!(replies.contains(&"S: 250-SMTPUTF8".to_owned()), "advertised: {replies:?}");
    let tail: Vec<&str> = replies.iter().rev().take(10).rev().map(String::as_str).collect();
    assert_eq!(
        tail,
        [
            "S: 250 2.1.0 sender ok",
            "S: 553 5.6.7 a non-ASCII address needs the SMTPUTF8 parameter on MAIL FROM",
            "S: 250 2.0.0 reset",
            "S: 250 2.1.0 sender ok",
            "S: 250 2.1.5 recipient ok",
            "S: 250 2.1.5 recipient ok",
            "S: 354 end data with <CR><LF>.<CR><LF>",
            "S: 250 2.0.0 queued as m1",
            "S: 553 5.7.1 sender must be sales@alpha.test, the mailbox you logged in as",
            "S: 553 5.6.7 a non-ASCII address needs the SMTPUTF8 parameter on MAIL FROM",
        ]
    );
    let taken = c.fake.taken();
    assert_eq!(taken[0].0.recipients, ["用户@example.org", "ada@bücher.example"]);
}

#[tokio::test]
async fn invalid_utf8_in_an_address_is_no_address() {
    let mut c = Conversation::submission(true, Fake::with(&["ada@example.org"]));
    let auth = format!("AUTH PLAIN {}\r\n", plain("sales@alpha.test", "right"));
    let reads: VecDeque<Input> = [
        say("EHLO client.example\r\n"),
        say(&auth),
        say("MAIL FROM:<sales@alpha.test> SMTPUTF8\r\n"),
        Input::Say(b"RCPT TO:<a\xff\xfe@example.org>\r\n".to_vec()),
        say("RCPT TO:<a\u{85}b@example.org>\r\n"),
    ]
    .into();
    c.run_bytes(reads).await;
    let replies = c.replies();
    let tail: Vec<&str> = replies.iter().rev().take(2).rev().map(String::as_str).collect();
    assert_eq!(tail, ["S: 501 5.6.7 the address is not valid UTF-8"; 2]);
}
