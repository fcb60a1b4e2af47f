//! Limits and refusals: recipients, sizes, long lines, bad commands, refused recipients,
//! smuggling, silence, memory; and the session's actions seen without the I/O loop.

use super::*;

#[tokio::test]
async fn recipients_past_the_limit_get_452_and_a_repeated_one_counts_once() {
    let ours = ["a@alpha.test", "b@alpha.test", "c@alpha.test", "d@alpha.test"];
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::with(&ours));
    c.run(&[
        "EHLO client.example\r\nMAIL FROM:<ada@example.org>\r\n",
        "RCPT TO:<a@alpha.test>\r\nRCPT TO:<A@alpha.test>\r\nRCPT TO:<b@alpha.test>\r\n",
        "RCPT TO:<c@alpha.test>\r\nRCPT TO:<d@alpha.test>\r\n",
        "DATA\r\nx\r\n.\r\n",
    ])
    .await;
    assert_eq!(
        c.replies()[8..],
        [
            "S: 250 2.1.5 recipient ok",
            "S: 250 2.1.5 recipient ok",
            "S: 250 2.1.5 recipient ok",
            "S: 250 2.1.5 recipient ok",
            "S: 452 4.5.3 too many recipients",
            "S: 354 end data with <CR><LF>.<CR><LF>",
            "S: 250 2.0.0 queued as m1",
        ]
    );
    let recipients = &c.fake.taken()[0].0.recipients;
    assert_eq!(recipients, &["a@alpha.test", "b@alpha.test", "c@alpha.test"]);
}

#[tokio::test]
async fn an_oversize_message_is_read_to_its_end_and_refused_with_552() {
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::with(&["sales@alpha.test"]));
    let line = "x".repeat(998);
    let body: String = std::iter::repeat_n(format!("{line}\r\n"), 20).collect();
    let start = "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<sales@alpha.test>\r\n";
    c.run(&[start, "DATA\r\n", &body, &body, ".\r\nNOOP\r\n"]).await;
    assert_eq!(
        c.replies()[9..],
        [
            "S: 354 end data with <CR><LF>.<CR><LF>",
            "S: 552 5.3.4 message exceeds the size limit",
            "S: 250 2.0.0 ok",
        ]
    );
    assert!(c.fake.taken().is_empty());
}

#[tokio::test]
async fn a_size_parameter_over_the_limit_is_refused_with_552_before_any_data() {
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::with(&["sales@alpha.test"]));
    c.run(&[
        "EHLO c.example\r\n",
        "MAIL FROM:<a@example.org> SIZE=10001\r\n",
        "RCPT TO:<sales@alpha.test>\r\n",
        "MAIL FROM:<a@example.org> SIZE=10000\r\n",
    ])
    .await;
    assert_eq!(
        c.replies()[7..],
        [
            "S: 552 5.3.4 message exceeds the size limit",
            "S: 503 5.5.1 MAIL first",
            "S: 250 2.1.0 sender ok",
        ]
    );
}

#[tokio::test]
async fn an_overlong_line_gets_500_and_its_rest_is_not_read_as_commands() {
    // Only a line still unfinished past 4096 bytes is too long; a whole line in one read is
    // parsed as it is.
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::default());
    let long = "a".repeat(5000);
    c.run(&["EHLO c.example\r\n", &long, &long, "a QUIT\r\nNOOP\r\n"]).await;
    assert_eq!(c.replies()[7..], ["S: 500 5.5.2 line too long", "S: 250 2.0.0 ok"]);
}

#[tokio::test]
async fn too_many_bad_commands_end_the_session_with_421() {
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::default());
    let end = c
        .run(&["HELO c.example\r\nFOO\r\nBAR\r\n", "AUTH PLAIN\r\nLHLO x\r\nBAZ\r\nNOOP\r\n"])
        .await;
    assert_eq!(end, End::Closed);
    assert_eq!(
        c.replies(),
        [
            "S: 220 mx.test ESMTP edgemail",
            "S: 250 mx.test",
            "S: 500 5.5.2 command not recognized",
            "S: 500 5.5.2 command not recognized",
            "S: 502 5.5.1 AUTH is not offered on this port",
            "S: 500 5.5.1 this is SMTP, not LMTP",
            "S: 500 5.5.2 command not recognized",
            "S: 421 4.7.0 too many errors, closing connection",
        ]
    );
}

#[tokio::test]
async fn refused_recipients_count_as_errors_and_temporary_refusals_do_not() {
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::default());
    let end = c
        .run(&[
            "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\n",
            "RCPT TO:<x@busy.test>\r\nRCPT TO:<y@busy.test>\r\n",
            "RCPT TO:<1@alpha.test>\r\nRCPT TO:<2@alpha.test>\r\nRCPT TO:<3@alpha.test>\r\n",
            "RCPT TO:<4@alpha.test>\r\nRCPT TO:<5@alpha.test>\r\nNOOP\r\n",
        ])
        .await;
    assert_eq!(end, End::Closed);
    assert_eq!(
        codes(&c.replies()[8..]),
        ["451", "451", "550", "550", "550", "550", "550", "421"],
        "{:?}",
        c.replies()
    );
}

fn smuggle(smuggled: &str) -> String {
    format!(
        "Subject: one\r\n\r\na{smuggled}MAIL FROM:<evil@example.org>\r\n\
         RCPT TO:<sales@alpha.test>\r\nDATA\r\nforged\r\n.\r\n"
    )
}

#[tokio::test]
async fn smuggling_with_a_bare_cr_does_not_end_the_data_and_the_message_is_refused_with_550() {
    for smuggled in ["\r\n.\r\r\n", "\r.\r"] {
        let mut c = Conversation::new(cfg(), NO_TLS, Fake::with(&["sales@alpha.test"]));
        c.run(&[
            "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<sales@alpha.test>\r\n",
            "DATA\r\n",
            &smuggle(smuggled),
            "NOOP\r\n",
        ])
        .await;
        assert_eq!(
            c.replies()[9..],
            [
                "S: 354 end data with <CR><LF>.<CR><LF>",
                "S: 550 5.6.11 bare CR in the message; lines must end with CRLF (or LF)",
                "S: 250 2.0.0 ok",
            ],
            "{smuggled:?}"
        );
        assert!(c.fake.taken().is_empty(), "{smuggled:?}");
    }
}

#[tokio::test]
async fn smuggling_with_bare_lfs_is_one_message_whose_text_holds_the_would_be_commands() {
    for smuggled in ["\n.\n", "\r\n.\n", "\n.\r\n"] {
        let mut c = Conversation::new(cfg(), NO_TLS, Fake::with(&["sales@alpha.test"]));
        c.run(&[
            "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<sales@alpha.test>\r\n",
            "DATA\r\n",
            &smuggle(smuggled),
            "NOOP\r\n",
        ])
        .await;
        assert_eq!(
            c.replies()[9..],
            [
                "S: 354 end data with <CR><LF>.<CR><LF>",
                "S: 250 2.0.0 queued as m1",
                "S: 250 2.0.0 ok",
            ],
            "{smuggled:?}"
        );
        let taken = c.fake.taken();
        assert_eq!(taken.len(), 1, "{smuggled:?}");
        let text = String::from_utf8_lossy(&taken[0].1);
        assert!(
            text.ends_with("a\r\n.\r\nMAIL FROM:<evil@example.org>\r\nRCPT TO:<sales@alpha.test>\r\nDATA\r\nforged\r\n"),
            "{smuggled:?}: {text:?}"
        );
    }
}

#[tokio::test]
async fn silence_is_answered_with_421_in_commands_and_in_data() {
    let mut short = cfg();
    short.command_timeout = Duration::from_millis(30);
    short.data_timeout = Duration::from_millis(60);
    let mut c = Conversation::new(short.clone(), NO_TLS, Fake::default());
    let end = c.run_bytes([say("EHLO c.example\r\n"), Input::Silence].into()).await;
    assert_eq!(end, End::Closed);
    assert_eq!(
        c.replies().last().map(String::as_str),
        Some("S: 421 4.4.2 timeout, closing connection")
    );

    let mut c = Conversation::new(short, NO_TLS, Fake::with(&["sales@alpha.test"]));
    let start = "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<sales@alpha.test>\r\n";
    let end = c.run_bytes([say(start), say("DATA\r\npart"), Input::Silence].into()).await;
    assert_eq!(end, End::Closed);
    assert_eq!(
        c.replies()[9..],
        ["S: 354 end data with <CR><LF>.<CR><LF>", "S: 421 4.4.2 timeout, closing connection"]
    );
}

#[tokio::test]
async fn a_spent_memory_budget_refuses_the_message_with_452() {
    let budget = super::super::data::budget(0);
    let mut spent = None;
    assert!(budget.cover(&mut spent, 1));
    let mut c =
        Conversation::with_budget(cfg(), NO_TLS, Fake::with(&["sales@alpha.test"]), budget.clone());
    let start = "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\nRCPT TO:<sales@alpha.test>\r\n";
    c.run(&[start, "DATA\r\nhello\r\n.\r\n"]).await;
    assert_eq!(
        c.replies().last().map(String::as_str),
        Some("S: 452 4.3.1 insufficient system resources, try again later")
    );
    drop(spent);
    c.run(&["MAIL FROM:<a@example.org>\r\nRCPT TO:<sales@alpha.test>\r\nDATA\r\nhello\r\n.\r\n"])
        .await;
    assert_eq!(c.replies().last().map(String::as_str), Some("S: 250 2.0.0 queued as m1"));
}

#[test]
fn refused_recipients_are_slowed_down_from_the_third_on() {
    let mut slow = cfg();
    slow.error_delay = Duration::from_secs(7);
    slow.max_errors = 10;
    let refuse = |a: &str| Err(format!("550 5.1.1 no {a}\r\n"));
    let seen = actions(
        slow,
        "HELO c\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<1@x.test>\r\nRCPT TO:<2@x.test>\r\n\
         RCPT TO:<3@x.test>\r\nRCPT TO:<4@x.test>\r\n",
        refuse,
    );
    assert_eq!(
        seen,
        [
            "write 220 mx.test ESMTP edgemail",
            "check 1@x.test",
            "check 2@x.test",
            "check 3@x.test",
            "pause 7s",
            "check 4@x.test",
            "pause 7s",
            "write 250 mx.test\r\n250 2.1.0 sender ok\r\n550 5.1.1 no 1@x.test\r\n\
             550 5.1.1 no 2@x.test\r\n550 5.1.1 no 3@x.test\r\n550 5.1.1 no 4@x.test",
        ]
    );
}

#[test]
fn a_question_left_unanswered_gets_a_temporary_failure() {
    let peer = Peer { ip: IpAddr::from(CLIENT), tls_available: false };
    let mut session = Session::new(Arc::new(cfg()), peer, super::super::data::budget(1 << 20));
    assert!(matches!(session.next_action(), Action::Write(_)), "the greeting");
    session.feed(b"HELO c\r\nMAIL FROM:<a@b.example>\r\nRCPT TO:<1@x.test>\r\nDATA\r\n");
    assert!(matches!(session.next_action(), Action::CheckRecipient(a) if a == "1@x.test"));
    match session.next_action() {
        Action::Write(bytes) => assert_eq!(
            bytes,
            b"250 mx.test\r\n250 2.1.0 sender ok\r\n\
              451 4.3.0 temporary failure, try again later\r\n554 5.5.1 no valid recipients\r\n"
        ),
        other => panic!("{other:?}"),
    }
}
