//! A load generator for the inbound benchmarks that sends real messages: postfix's smtp-source
//! sends lines of one repeated letter, which leaves a spam filter nothing to tokenize, so
//! filtering on against off needs mail of the shape a mailbox gets.
//!
//!   smtp-blast ADDR SESSIONS COUNT FROM RCPT DIR...
//!
//! Reads every file of the DIRs (one RFC 5322 message each, at most 256 KiB), then sends COUNT
//! messages, the files in turn, over SESSIONS connections to ADDR, one recipient each, without
//! pipelining (as smtp-source does by default). Prints `sent N messages (M refused) in T ms:
//! R messages/s`, R counting both; a message refused at the end of DATA is counted, any other
//! unexpected answer ends the run with an error.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// A file as DATA carries it: CRLF line ends, dot-stuffed, ended by the lone dot.
fn as_data(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 40 + 8);
    // Corpus files kept from mbox start with its `From ` separator line, no header field.
    let raw = match raw.strip_prefix(b"From ") {
        Some(rest) => rest.iter().position(|b| *b == b'\n').map_or(&[][..], |at| &rest[at + 1..]),
        None => raw,
    };
    for line in raw.split(|b| *b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.first() == Some(&b'.') {
            out.push(b'.');
        }
        out.extend_from_slice(line);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b".\r\n");
    out
}

/// Reads one (possibly multi-line) reply; its code.
async fn reply(r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>) -> Result<u16, Failure> {
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line).await? == 0 {
            return Err("connection closed".into());
        }
        if line.as_bytes().get(3) != Some(&b'-') {
            return Ok(line.get(..3).and_then(|c| c.parse().ok()).unwrap_or(0));
        }
    }
}

async fn expect(
    r: &mut BufReader<tokio::net::tcp::OwnedReadHalf>,
    want: u16,
    what: &str,
) -> Result<(), Failure> {
    match reply(r).await? {
        code if code == want => Ok(()),
        code => Err(format!("{what}: answered {code}").into()),
    }
}

async fn session(
    addr: String,
    envelope: Arc<(String, String)>,
    messages: Arc<Vec<Vec<u8>>>,
    left: Arc<AtomicUsize>,
    refused: Arc<AtomicUsize>,
) -> Result<usize, Failure> {
    let (read, mut write) = TcpStream::connect(&addr).await?.into_split();
    let mut read = BufReader::new(read);
    expect(&mut read, 220, "greeting").await?;
    write.write_all(b"EHLO blast.test\r\n").await?;
    expect(&mut read, 250, "EHLO").await?;
    let mut sent = 0;
    let (from, rcpt) = (&envelope.0, &envelope.1);
    // Each session takes the next number until none is left; the number picks the file.
    while let Ok(n) = left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |l| l.checked_sub(1))
    {
        let message = &messages[n % messages.len()];
        write.write_all(format!("MAIL FROM:<{from}>\r\n").as_bytes()).await?;
        expect(&mut read, 250, "MAIL").await?;
        write.write_all(format!("RCPT TO:<{rcpt}>\r\n").as_bytes()).await?;
        expect(&mut read, 250, "RCPT").await?;
        write.write_all(b"DATA\r\n").await?;
        expect(&mut read, 354, "DATA").await?;
        write.write_all(message).await?;
        // A refusal of one message (a filter's) is counted, not fatal: the load goes on.
        if reply(&mut read).await? == 250 {
            sent += 1;
        } else {
            refused.fetch_add(1, Ordering::Relaxed);
        }
    }
    write.write_all(b"QUIT\r\n").await?;
    let _ = reply(&mut read).await;
    Ok(sent)
}

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let [_, addr, sessions, count, from, rcpt, dirs @ ..] = args.as_slice() else {
        return Err("usage: smtp-blast ADDR SESSIONS COUNT FROM RCPT DIR...".into());
    };
    let (sessions, count): (usize, usize) = (sessions.parse()?, count.parse()?);
    let mut messages = Vec::new();
    let mut names = Vec::new();
    for dir in dirs {
        names.extend(std::fs::read_dir(dir)?.filter_map(|e| e.ok()).map(|e| e.path()));
    }
    // A fixed shuffle (by a hash of the path), so that any stretch of the run mixes the
    // directories (ham and spam) as a mailbox's day does.
    let fnv = |p: &std::path::PathBuf| {
        let bytes = p.as_os_str().as_encoded_bytes();
        bytes.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3)
        })
    };
    names.sort_by_key(fnv);
    for path in names {
        let raw = std::fs::read(&path)?;
        if raw.len() <= 256 * 1024 {
            messages.push(as_data(&raw));
        }
    }
    if messages.is_empty() {
        return Err(format!("no messages in {dirs:?}").into());
    }
    let (messages, left) = (Arc::new(messages), Arc::new(AtomicUsize::new(count)));
    let envelope = Arc::new((from.clone(), rcpt.clone()));
    let refused = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let tasks: Vec<_> = (0..sessions)
        .map(|_| {
            let counters = (left.clone(), refused.clone());
            let job =
                session(addr.clone(), envelope.clone(), messages.clone(), counters.0, counters.1);
            tokio::spawn(job)
        })
        .collect();
    let mut sent = 0;
    for task in tasks {
        sent += task.await??;
    }
    let ms = start.elapsed().as_millis().max(1);
    let refused = refused.load(Ordering::Relaxed);
    let rate = (sent + refused) as u128 * 1000 / ms;
    println!("sent {sent} messages ({refused} refused) in {ms} ms: {rate} messages/s");
    Ok(())
}
