use super::*;

fn read_all(bytes: &[u8], limit: usize) -> Vec<MboxMessage> {
    let mut reader = MboxReader::new(bytes, limit);
    let mut out = Vec::new();
    loop {
        let next = reader.next_message().expect("read"); // ok: test
        let Some(m) = next else { break };
        out.push(m);
    }
    out
}

#[test]
fn mboxrd_unquotes_one_level_and_takes_the_from_line_date() {
    let mbox = b"From a@b Thu Nov 26 10:00:00 2026\nSubject: x\n\n>From here\n>>From there\nFrom: no\n\nFrom c@d Mon Jan  5 00:00:01 1998\nSubject: y\n\nbody\n";
    let all = read_all(mbox, 1 << 20);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].raw, b"Subject: x\n\nFrom here\n>From there\nFrom: no\n");
    assert_eq!(all[0].date, Some(1_795_687_200_000));
    assert_eq!(all[1].raw, b"Subject: y\n\nbody\n");
    assert_eq!(all[1].date, Some(883_958_401_000));
}

#[test]
fn written_then_read_gives_the_same_bytes_and_flags() {
    let raw = b"Subject: q\r\nMessage-ID: <1@x>\r\n\r\nFrom me\r\n>From you\r\nend".to_vec();
    let flags: Vec<String> =
        ["\\Seen", "\\Flagged", "$Work"].iter().map(|s| (*s).to_owned()).collect();
    let mut out = Vec::new();
    write_message(&mut out, &raw, &flags, "Projekte/Ärger", 1_000_000_000_000).expect("write"); // ok: test
    write_message(&mut out, b"A: b\n\nc\n", &[], "INBOX", 0).expect("write"); // ok: test
    let mut all = read_all(&out, 1 << 20);
    assert_eq!(all.len(), 2);
    assert_eq!(all[0].date, Some(1_000_000_000_000));
    let kept = take_bookkeeping(&mut all[0].raw);
    // A message without a final newline gets one: an mbox line always ends.
    let mut expected = raw.clone();
    expected.push(b'\n');
    assert_eq!(all[0].raw, expected);
    assert_eq!(kept.flags, flags);
    assert_eq!(kept.folder.as_deref(), Some("Projekte/Ärger"));
    let kept = take_bookkeeping(&mut all[1].raw);
    assert_eq!(all[1].raw, b"A: b\n\nc\n");
    assert!(kept.flags.is_empty());
}

#[test]
fn hostile_input_is_bounded() {
    assert!(MboxReader::new(&b"Subject: not an mbox\n"[..], 10).next_message().is_err());
    let mut long = b"From x Thu Nov 26 10:00:00 2026\n".to_vec();
    long.extend(std::iter::repeat_n(b'a', 300_000));
    long.extend_from_slice(b"\nFrom x Thu Nov 26 10:00:00 2026\nA: b\n");
    let all = read_all(&long, 1000);
    assert_eq!(all.len(), 2);
    assert!(all[0].over && all[0].raw.is_empty() && all[0].size > 300_000);
    assert_eq!(all[1].raw, b"A: b\n");
    // A body line that merely continues a long line is not a separator.
    let mut split = b"From x Thu Nov 26 10:00:00 2026\nA: b\n\n".to_vec();
    split.extend(std::iter::repeat_n(b'z', 64 * 1024));
    split.extend_from_slice(b"From not a separator\n");
    assert_eq!(read_all(&split, 1 << 20).len(), 1);
    assert_eq!(from_line_date(b"From x garbage"), None);
}
