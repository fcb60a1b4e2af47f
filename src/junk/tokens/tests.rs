use super::*;

fn names(f: &Features) -> Vec<&str> {
    let mut out: Vec<&str> = f.hashes.iter().filter_map(|h| f.name(*h)).collect();
    out.sort_unstable();
    out
}

#[test]
fn a_plain_message_gives_prefixed_deduplicated_tokens() {
    let raw = b"From: \"Cheap Pharmacy\" <sales@pills.example>\r\n\
        To: bob@x.test\r\nReply-To: other@elsewhere.example\r\n\
        Subject: FREE VIAGRA NOW!!\r\nX-Mailer: Bulk Mailer 3\r\n\
        Content-Type: text/plain; charset=us-ascii\r\n\r\n\
        Buy buy buy at http://www.pills.example/now?x=1 or mail deals@pills.example.\r\n\
        aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
    let f = features(raw);
    let n = names(&f);
    for want in [
        "s:free",
        "s:viagra",
        "s:<mostly-caps>",
        "s:<exclamations>",
        "f:cheap",
        "fd:pills.example",
        "td:x.test",
        "rd:elsewhere.example",
        "h:reply-to:other-domain",
        "h:no-date",
        "h:no-message-id",
        "xm:bulk",
        "hn:x-mailer",
        "buy",
        "url:www.pills.example",
        "url:pills.example",
        "email:pills.example",
        "skip:a50",
        "cs:us-ascii",
        "h:received:0",
    ] {
        assert!(n.contains(&want), "{want} missing from {n:?}");
    }
    assert_eq!(n.iter().filter(|t| **t == "buy").count(), 1, "deduplicated");
    assert!(f.hashes.windows(2).all(|w| w[0] < w[1]), "sorted and distinct");
    assert!(!n.iter().any(|t| t.starts_with("hn:x-spam")));
}

#[test]
fn html_tricks_are_seen() {
    let raw = b"From: a@b.test\r\nSubject: hi\r\nContent-Type: text/html\r\n\r\n\
        <html><body><div style=\"display: none\">hidden words</div>\
        <a href=\"http://click.track.example/x\"><img src=\"http://10.0.0.1/a.gif\"></a>\
        </body></html>\r\n";
    let n = features(raw);
    let n = names(&n);
    for want in [
        "html:hidden",
        "html:image-only",
        "html:no-text-alternative",
        "url:click.track.example",
        "url:track.example",
        "img:10.0.0.1",
        "img:numeric-ip",
        "hidden",
        "words",
    ] {
        assert!(n.contains(&want), "{want} missing from {n:?}");
    }
}

#[test]
fn garbage_and_empty_input_do_not_panic() {
    for raw in [&b""[..], b"\0\0\0", b"\xff\xfe garbage", b"Subject: \xc3\r\n\r\n\xc3\x28"] {
        let _ = features(raw);
    }
}

#[test]
fn hostile_messages_stay_bounded() {
    // 5,000 nested multiparts, then a body of 4 MiB of distinct words.
    let mut raw = String::from("From: a@b.test\r\nSubject: deep\r\n");
    for i in 0..5000 {
        raw.push_str(&format!(
            "Content-Type: multipart/mixed; boundary=\"b{i}\"\r\n\r\n--b{i}\r\n"
        ));
    }
    raw.push_str("Content-Type: text/plain\r\n\r\n");
    let mut i = 0u64;
    while raw.len() < 4 << 20 {
        raw.push_str(&format!("word{i} "));
        i += 1;
    }
    let started = std::time::Instant::now();
    let f = features(raw.as_bytes());
    // At most MAX_TEXT bytes of one part are words: ~9,000 of 8-byte words, plus a few facts.
    assert!(f.len() < MAX_TEXT / 4, "{}", f.len());
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "{:?}", started.elapsed());

    // Thousands of parts: at most MAX_PARTS read.
    let mut raw =
        String::from("From: a@b.test\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n");
    for i in 0..3000 {
        raw.push_str(&format!("--x\r\nContent-Type: text/plain\r\n\r\nuniq{i}\r\n"));
    }
    raw.push_str("--x--\r\n");
    let f = features(raw.as_bytes());
    let n = names(&f);
    assert!(n.contains(&"h:many-parts"), "{n:?}");
    assert!(n.iter().filter(|t| t.starts_with("uniq")).count() < MAX_PARTS);
}

#[test]
fn a_cut_falls_on_a_line_end() {
    let mut raw = vec![b'a'; MAX_RAW - 10];
    raw.extend_from_slice(b"\r\nbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
    assert_eq!(cut(&raw), MAX_RAW - 8);
    assert_eq!(cut(b"short"), 5);
    assert_eq!(floor("héllo", 2), 1);
}
