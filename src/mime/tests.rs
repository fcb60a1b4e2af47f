//! The limits hold for every way of nesting the parser follows, and mail within them is parsed
//! from its own bytes, untouched.

use super::{MAX_DEPTH, MAX_PARTS, bound, shape};

/// Parses and drops on a thread with a tokio worker's stack (2 MiB): what the server does.
fn parse_on_small_stack(raw: Vec<u8>) -> (usize, usize, bool, usize) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let b = bound(&raw);
            assert_eq!(b.bytes().len(), raw.len(), "same length, same offsets");
            let m = b.parse().expect("parses"); // ok: test
            let (depth, parts) = shape(&m);
            (depth, parts, b.limited(), m.parts.len())
        })
        .expect("thread") // ok: test
        .join()
        .expect("no overflow") // ok: test
}

fn nested_messages(levels: usize) -> Vec<u8> {
    let mut m = b"Subject: top\r\n".to_vec();
    for _ in 0..levels {
        m.extend_from_slice(b"Content-Type: message/rfc822\r\n\r\n");
    }
    m.extend_from_slice(b"Subject: bottom\r\n\r\nbottom\r\n");
    m
}

fn nested_multiparts(levels: usize) -> Vec<u8> {
    let mut m = b"Subject: top\r\n".to_vec();
    for i in 0..levels {
        m.extend(format!("Content-Type: multipart/mixed; boundary=b{i}\r\n\r\n--b{i}\r\n").bytes());
    }
    m.extend_from_slice(b"Content-Type: text/plain\r\n\r\nbottom\r\n");
    for i in (0..levels).rev() {
        m.extend(format!("--b{i}--\r\n").bytes());
    }
    m
}

#[test]
fn fifty_thousand_attached_messages_are_cut_at_the_depth_limit() {
    let (depth, _, limited, _) = parse_on_small_stack(nested_messages(50_000));
    assert!(limited);
    assert!(depth <= MAX_DEPTH + 1, "{depth}");
}

#[test]
fn fifty_thousand_multiparts_are_cut_at_the_depth_limit() {
    let (depth, _, limited, _) = parse_on_small_stack(nested_multiparts(50_000));
    assert!(limited);
    assert!(depth <= MAX_DEPTH + 1, "{depth}");
}

#[test]
fn mail_within_the_limits_is_parsed_from_its_own_bytes() {
    for raw in [nested_messages(3), nested_multiparts(40), nested_messages(MAX_DEPTH / 2 - 1)] {
        let b = bound(&raw);
        assert!(!b.limited());
        assert!(std::ptr::eq(b.bytes().as_ptr(), raw.as_ptr()));
    }
    // At the limit exactly: found by the walk, nothing made opaque.
    let (depth, _, limited, _) = parse_on_small_stack(nested_messages(MAX_DEPTH));
    assert!(!limited);
    assert_eq!(depth, MAX_DEPTH);
    let (depth, _, limited, _) = parse_on_small_stack(nested_messages(MAX_DEPTH + 1));
    assert!(limited);
    assert_eq!(depth, MAX_DEPTH);
}

#[test]
fn attached_messages_under_base64_are_looked_into() {
    use base64::Engine;
    let inner = nested_messages(50_000);
    let encoded = base64::engine::general_purpose::STANDARD.encode(&inner);
    let mut raw = b"Subject: x\r\nContent-Type: multipart/mixed; boundary=q\r\n\r\n--q\r\n\
        Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n\r\n"
        .to_vec();
    for line in encoded.as_bytes().chunks(76) {
        raw.extend_from_slice(line);
        raw.extend_from_slice(b"\r\n");
    }
    raw.extend_from_slice(b"--q--\r\n");
    let (depth, _, limited, _) = parse_on_small_stack(raw);
    assert!(limited);
    assert!(depth <= 2, "the encoded message is opaque: {depth}");

    // A small encoded message is still a message.
    let small = base64::engine::general_purpose::STANDARD.encode(nested_messages(2));
    let raw = format!(
        "Subject: x\r\nContent-Type: multipart/mixed; boundary=q\r\n\r\n--q\r\n\
         Content-Type: message/rfc822\r\nContent-Transfer-Encoding: base64\r\n\r\n{small}\r\n--q--\r\n"
    );
    let (depth, _, limited, _) = parse_on_small_stack(raw.into_bytes());
    assert!(!limited);
    assert_eq!(depth, 4);
}

#[test]
fn digests_and_repeated_fields_do_not_hide_nesting() {
    // Each level a digest whose one part is a message by default.
    let mut raw = b"Subject: top\r\n".to_vec();
    for i in 0..20_000 {
        raw.extend(
            format!("Content-Type: multipart/digest; boundary=d{i}\r\n\r\n--d{i}\r\n").bytes(),
        );
    }
    raw.extend_from_slice(b"Subject: bottom\r\n\r\nbottom\r\n");
    let (depth, _, limited, _) = parse_on_small_stack(raw);
    assert!(limited);
    assert!(depth <= MAX_DEPTH + 1, "{depth}");

    // The parser takes the last of repeated fields: a harmless first one hides nothing.
    let mut raw = b"Subject: top\r\n".to_vec();
    for _ in 0..50_000 {
        raw.extend_from_slice(b"Content-Type: text/plain\r\nContent-Type: message/rfc822\r\n\r\n");
    }
    raw.extend_from_slice(b"Subject: bottom\r\n\r\nbottom\r\n");
    let (depth, _, _, _) = parse_on_small_stack(raw);
    assert!(depth <= MAX_DEPTH + 1, "{depth}");
}

#[test]
fn parts_past_the_limit_are_not_split() {
    let mut raw = b"Subject: many\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n".to_vec();
    for _ in 0..200_000 {
        raw.extend_from_slice(b"--x\r\n\r\na\r\n");
    }
    raw.extend_from_slice(b"--x--\r\n");
    let (_, parts, limited, flat) = parse_on_small_stack(raw);
    assert!(limited);
    assert!(parts <= MAX_PARTS && flat <= MAX_PARTS, "{parts} {flat}");

    // Boundaries the parser finds inside lines count too.
    let mut raw = b"Subject: many\r\nContent-Type: multipart/mixed; boundary=x\r\n\r\n".to_vec();
    for _ in 0..200_000 {
        raw.extend_from_slice(b"a--x\r\n");
    }
    let (_, parts, _, flat) = parse_on_small_stack(raw);
    assert!(parts <= MAX_PARTS && flat <= MAX_PARTS, "{parts} {flat}");
}

fn nested_digests(levels: usize) -> Vec<u8> {
    let mut m = b"Subject: fuzz\r\n".to_vec();
    for j in 0..levels {
        m.extend(
            format!("Content-Type: multipart/digest; boundary=b{j}\r\n\r\n--b{j}\r\n").bytes(),
        );
    }
    m.extend_from_slice(b"Subject: bottom\r\n\r\nbottom\r\n");
    for j in (0..levels).rev() {
        m.extend(format!("--b{j}--\r\n").bytes());
    }
    m
}

#[test]
fn digests_nested_past_the_limit_stop_at_it() {
    for levels in [99, 100, 101, 150, 499, 500, 501, 600, 5121] {
        let (depth, _, _, _) = parse_on_small_stack(nested_digests(levels));
        assert!(depth <= MAX_DEPTH + 1, "{levels} levels: depth {depth}");
    }
}

/// Digests down to `levels`, whose deepest part is an attached message under quoted-printable
/// holding 200 more attached messages.
fn digests_over_an_encoded_message(levels: usize) -> Vec<u8> {
    let mut m = b"Subject: top\r\n".to_vec();
    for j in 0..levels {
        m.extend(
            format!("Content-Type: multipart/digest; boundary=d{j}\r\n\r\n--d{j}\r\n").bytes(),
        );
    }
    m.extend_from_slice(
        b"Content-Type: message/rfc822\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n",
    );
    m.extend(nested_messages(200));
    for j in (0..levels).rev() {
        m.extend(format!("--d{j}--\r\n").bytes());
    }
    m
}

#[test]
fn an_encoded_message_in_a_digest_at_the_limit_is_read_as_it_stands() {
    for levels in [97, 98, 99, 100, 120] {
        let (depth, _, limited, _) = parse_on_small_stack(digests_over_an_encoded_message(levels));
        assert!(depth <= MAX_DEPTH + 1, "{levels} levels: depth {depth}");
        assert!(limited, "{levels}");
    }
}

#[test]
fn a_field_name_read_as_the_parser_reads_it_is_bounded_too() {
    // The fuzzer's `::…::Content-Type: multipart/digest` (colons before the name, which
    // mail-parser skips), and blanks inside a name, which it drops.
    for prefix in [":::".repeat(700), String::from(":: "), String::new()] {
        for name in ["Content-Type", "Content - Type"] {
            // ok: test, the message is built of ASCII
            let raw = String::from_utf8(nested_digests(600)).expect("ascii"); // ok: test
            let raw = raw.replacen("Content-Type", &format!("{prefix}{name}"), 1);
            let (depth, _, _, _) = parse_on_small_stack(raw.into_bytes());
            assert!(depth <= MAX_DEPTH + 1, "{prefix:.6}{name}: depth {depth}");
        }
    }
}
