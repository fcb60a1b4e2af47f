//! Conversations: greeting to QUIT, transactions, pipelining, input split anywhere, commands
//! out of sequence, STARTTLS.

use super::*;

#[tokio::test]
async fn greeting_to_quit() {
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::default());
    let end = c.run(&["EHLO client.example\r\n", "NOOP\r\n", "VRFY sales\r\n", "QUIT\r\n"]).await;
    assert_eq!(end, End::Closed);
    let mut expected = vec!["S: 220 mx.test ESMTP edgemail", "C: EHLO client.example"];
    expected.extend(ehlo_reply(false));
    expected.extend([
        "C: NOOP",
        "S: 250 2.0.0 ok",
        "C: VRFY sales",
        "S: 252 2.5.0 cannot verify, but will accept and attempt delivery",
        "C: QUIT",
        "S: 221 2.0.0 mx.test closing connection",
    ]);
    assert_eq!(c.transcript(), expected);
}

#[tokio::test]
async fn a_full_transaction_hands_the_envelope_and_the_unstuffed_message_over() {
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::with(&["sales@alpha.test"]));
    c.run(&[
        "HELO client.example\r\n",
        "MAIL FROM:<ada@example.org>\r\n",
        "RCPT TO:<Sales@alpha.test>\r\n",
        "DATA\r\n",
        "Subject: hi\r\n\r\n..a dot\r\n.\r\n",
        "MAIL FROM:<bob@example.org>\r\n",
        "RCPT TO:<sales@alpha.test>\r\n",
        "DATA\r\n",
        "second\r\n.\r\n",
        "QUIT\r\n",
    ])
    .await;
    assert_eq!(
        c.transcript(),
        [
            "S: 220 mx.test ESMTP edgemail",
            "C: HELO client.example",
            "S: 250 mx.test",
            "C: MAIL FROM:<ada@example.org>",
            "S: 250 2.1.0 sender ok",
            "C: RCPT TO:<Sales@alpha.test>",
            "S: 250 2.1.5 recipient ok",
            "C: DATA",
            "S: 354 end data with <CR><LF>.<CR><LF>",
            "C: Subject: hi",
            "C: ",
            "C: ..a dot",
            "C: .",
            "S: 250 2.0.0 queued as m1",
            "C: MAIL FROM:<bob@example.org>",
            "S: 250 2.1.0 sender ok",
            "C: RCPT TO:<sales@alpha.test>",
            "S: 250 2.1.5 recipient ok",
            "C: DATA",
            "S: 354 end data with <CR><LF>.<CR><LF>",
            "C: second",
            "C: .",
            "S: 250 2.0.0 queued as m2",
            "C: QUIT",
            "S: 221 2.0.0 mx.test closing connection",
        ]
    );
    let taken = c.fake.taken();
    assert_eq!(taken.len(), 2);
    let envelope = Envelope {
        ip: IpAddr::from(CLIENT),
        helo: "client.example".into(),
        from: "ada@example.org".into(),
        recipients: vec!["Sales@alpha.test".into()],
        tls: false,
        login: None,
    };
    assert_eq!(taken[0], (envelope, b"Subject: hi\r\n\r\n.a dot\r\n".to_vec()));
    assert_eq!(taken[1].0.from, "bob@example.org", "the second transaction starts afresh");
    assert_eq!(taken[1].0.helo, "client.example", "the greeting outlives a transaction");
}

#[tokio::test]
async fn pipelined_commands_are_answered_in_order_in_one_write() {
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::with(&["sales@alpha.test"]));
    c.run(&[
        "EHLO client.example\r\n",
        "MAIL FROM:<ada@example.org>\r\nRCPT TO:<sales@alpha.test>\r\nRCPT TO:<ghost@alpha.test>\r\n\
         RCPT TO:<busy@busy.test>\r\nDATA\r\n",
        "Subject: pipelined\r\n\r\nbody\r\n.\r\nQUIT\r\n",
    ])
    .await;
    assert_eq!(
        c.replies()[7..],
        [
            "S: 250 2.1.0 sender ok",
            "S: 250 2.1.5 recipient ok",
            "S: 550 5.1.1 no mailbox ghost@alpha.test here",
            "S: 451 4.3.0 try again later",
            "S: 354 end data with <CR><LF>.<CR><LF>",
            "S: 250 2.0.0 queued as m1",
            "S: 221 2.0.0 mx.test closing connection",
        ]
    );
    assert_eq!(c.writes_per_read(), [1, 1, 1], "one write per read, however many replies");
    assert_eq!(c.fake.taken()[0].0.recipients, ["sales@alpha.test"]);
}

#[tokio::test]
async fn commands_split_across_reads_are_answered_when_complete() {
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::with(&["sales@alpha.test"]));
    c.run(&[
        "EH",
        "LO client.example\r",
        "\nMAIL FROM:<ada@example.org>\r\nRC",
        "PT TO:<sa",
        "les@alpha.test>\r\n",
    ])
    .await;
    let mut expected =
        vec!["S: 220 mx.test ESMTP edgemail", "C: EH…", "C: LO client.example\\r…", "C: \\n"];
    expected.extend(["C: MAIL FROM:<ada@example.org>", "C: RC…"]);
    expected.extend(ehlo_reply(false));
    expected.extend([
        "S: 250 2.1.0 sender ok",
        "C: PT TO:<sa…",
        "C: les@alpha.test>",
        "S: 250 2.1.5 recipient ok",
    ]);
    assert_eq!(c.transcript(), expected);
    assert_eq!(c.writes_per_read(), [0, 0, 1, 0, 1]);
}

#[tokio::test]
async fn commands_out_of_sequence_are_refused_and_the_session_goes_on() {
    let mut patient = cfg();
    patient.max_errors = 10;
    let mut c = Conversation::new(patient, NO_TLS, Fake::with(&["sales@alpha.test"]));
    c.run(&[
        "MAIL FROM:<a@example.org>\r\n",
        "EHLO c.example\r\n",
        "RCPT TO:<sales@alpha.test>\r\n",
        "DATA\r\n",
        "MAIL FROM:<a@example.org>\r\n",
        "DATA\r\n",
        "MAIL FROM:<b@example.org>\r\n",
        "BDAT 10 LAST\r\n",
        "RSET\r\n",
        "MAIL FROM:<b@example.org>\r\n",
    ])
    .await;
    let replies = c.replies();
    assert_eq!(replies[1], "S: 503 5.5.1 say EHLO first");
    assert_eq!(
        replies[8..],
        [
            "S: 503 5.5.1 MAIL first",
            "S: 503 5.5.1 MAIL first",
            "S: 250 2.1.0 sender ok",
            "S: 554 5.5.1 no valid recipients",
            "S: 503 5.5.1 a transaction is already open",
            "S: 502 5.5.1 CHUNKING is not offered",
            "S: 250 2.0.0 reset",
            "S: 250 2.1.0 sender ok",
        ]
    );
}

#[tokio::test]
async fn starttls_is_offered_only_when_available() {
    let mut c = Conversation::new(cfg(), NO_TLS, Fake::default());
    c.run(&["EHLO c.example\r\n", "STARTTLS\r\n"]).await;
    assert!(!c.transcript().contains(&"S: 250-STARTTLS".to_owned()));
    assert_eq!(c.replies().last().map(String::as_str), Some("S: 502 5.5.1 STARTTLS not available"));

    let mut c = Conversation::new(cfg(), TLS, Fake::default());
    c.run(&["EHLO c.example\r\n"]).await;
    let mut expected = vec!["S: 220 mx.test ESMTP edgemail", "C: EHLO c.example"];
    expected.extend(ehlo_reply(true));
    assert_eq!(c.transcript(), expected);
}

#[tokio::test]
async fn starttls_forgets_everything_before_it_including_pipelined_input() {
    let mut c = Conversation::new(cfg(), TLS, Fake::with(&["sales@alpha.test"]));
    let end = c
        .run(&[
            "EHLO c.example\r\nMAIL FROM:<a@example.org>\r\n",
            "STARTTLS\r\nRCPT TO:<sales@alpha.test>\r\n",
        ])
        .await;
    assert_eq!(end, End::StartTls);
    c.secured();
    c.run(&[
        "RCPT TO:<sales@alpha.test>\r\n",
        "EHLO c.example\r\n",
        "STARTTLS\r\n",
        "MAIL FROM:<b@example.org>\r\nRCPT TO:<sales@alpha.test>\r\nDATA\r\nhi\r\n.\r\n",
    ])
    .await;
    let transcript = c.transcript();
    let tls = transcript.iter().position(|l| l == "-- TLS --").unwrap_or(0);
    assert_eq!(
        transcript[tls - 2..tls],
        ["C: RCPT TO:<sales@alpha.test>", "S: 220 2.0.0 ready to start TLS"]
    );
    let mut expected = vec![
        "-- TLS --",
        "C: RCPT TO:<sales@alpha.test>",
        "S: 503 5.5.1 MAIL first",
        "C: EHLO c.example",
    ];
    expected.extend(ehlo_reply(false));
    expected.extend([
        "C: STARTTLS",
        "S: 503 5.5.1 TLS is already active",
        "C: MAIL FROM:<b@example.org>",
        "C: RCPT TO:<sales@alpha.test>",
        "C: DATA",
        "C: hi",
        "C: .",
        "S: 250 2.1.0 sender ok",
        "S: 250 2.1.5 recipient ok",
        "S: 354 end data with <CR><LF>.<CR><LF>",
        "S: 250 2.0.0 queued as m1",
    ]);
    assert_eq!(transcript[tls..], expected);
    let taken = c.fake.taken();
    assert_eq!((taken[0].0.from.as_str(), taken[0].0.tls), ("b@example.org", true));
}
