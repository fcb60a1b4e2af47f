//! Messages nested as deep as the input asks: each input byte picks a container (attached
//! message, multipart, digest, repeated or misleading fields) and how many times to repeat it,
//! so a few bytes describe 50,000 levels. Whatever the shape, the bounded parse holds the
//! depth and part limits, and inbound parsing returns.
#![no_main]

use libfuzzer_sys::fuzz_target;
use edgemail::mime::{MAX_DEPTH, MAX_PARTS, bound, shape};

fn build(data: &[u8]) -> Vec<u8> {
    let mut m = b"Subject: fuzz\r\n".to_vec();
    let mut closers: Vec<Vec<u8>> = Vec::new();
    for (i, pair) in data.chunks(2).enumerate() {
        let repeat = 1 + usize::from(pair.get(1).copied().unwrap_or(0)) * 40;
        for j in 0..repeat {
            let b = format!("b{i}x{j}");
            match pair[0] % 8 {
                0 => m.extend_from_slice(b"Content-Type: message/rfc822\r\n\r\n"),
                1 => {
                    m.extend(format!("Content-Type: multipart/mixed; boundary={b}\r\n\r\n--{b}\r\n").bytes());
                    closers.push(format!("--{b}--\r\n").into_bytes());
                }
                2 => {
                    m.extend(format!("Content-Type: multipart/digest; boundary={b}\r\n\r\n--{b}\r\n").bytes());
                    closers.push(format!("--{b}--\r\n").into_bytes());
                }
                3 => m.extend_from_slice(b"Content-Type: text/plain\r\nContent-Type: message/rfc822\r\n\r\n"),
                4 => m.extend_from_slice(b"Content-Type:\r\n message/global\r\n\r\n"),
                5 => m.extend(format!("Content-Type: multipart/mixed; boundary=\"{b}\"\r\n\r\nx--{b}\r\n\r\n--{b}\r\n\r\n").bytes()),
                6 => m.extend_from_slice(b"--\r\n"),
                _ => m.extend_from_slice(&pair[1..]),
            }
        }
    }
    m.extend_from_slice(b"Subject: bottom\r\n\r\nbottom\r\n");
    for c in closers.iter().rev() {
        m.extend_from_slice(c);
    }
    m
}

fuzz_target!(|data: &[u8]| {
    let raw = build(data);
    let bounded = bound(&raw);
    assert_eq!(bounded.bytes().len(), raw.len());
    if let Some(message) = bounded.parse() {
        let (depth, parts) = shape(&message);
        assert!(depth <= MAX_DEPTH + 1, "depth {depth}");
        assert!(parts <= MAX_PARTS + MAX_DEPTH, "parts {parts}");
    }
    let _ = edgemail::inbound::inspect(&raw, 1_795_305_600_000);
    let _ = edgemail::inbound::inspect(data, 1_795_305_600_000);
});
