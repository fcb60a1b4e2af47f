//! The IMAP load of benches/imap-scale.sh: many sessions over implicit TLS (IMAPS), each logged
//! in with the folder selected and in IDLE, and the timings the script's rows report.
//!
//!   imap-idle hold ADDR USER PASS SESSIONS
//!   imap-idle fanout ADDR USER PASS SESSIONS SMTP FROM RCPT DELIVERIES
//!   imap-idle fetch ADDR USER PASS MESSAGES ROUNDS
//!
//! `hold` opens SESSIONS sessions (64 setting up at a time), each `LOGIN`, `SELECT INBOX`,
//! `IDLE`, prints `holding N of SESSIONS in IDLE` once all are in, then again whenever the count
//! changes (a session the server closed), until killed.
//! `fanout` does the same, then delivers DELIVERIES messages one after the other to RCPT over
//! inbound SMTP (one session, no pipelining) and times, for every IDLE session, the `* N EXISTS`
//! line against the moment the SMTP client read the end-of-data answer (a line read before that
//! moment counts as 0 ms). The first delivery warms up and is not counted. Prints each
//! delivery's slowest session, then `exists latency over N: p50 A ms, p99 B ms, max C ms`.
//! `fetch` examines INBOX (read-only) and times, ROUNDS times each, `UID FETCH 1:*
//! (BODY.PEEK[HEADER])` and `FETCH 1:* (FLAGS ENVELOPE)` from the command's write to its tagged
//! OK, every response read off the socket; each must answer MESSAGES messages.
//! The server's certificate is not verified (the bench server's is self-signed).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{Semaphore, mpsc};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
#[path = "../tests/support/any_certificate.rs"]
mod any_certificate;
use any_certificate::AnyCertificate;

type Failure = Box<dyn std::error::Error + Send + Sync>;
type Io = BufReader<TlsStream<TcpStream>>;

/// Sessions setting up at once: enough to keep both cores busy with handshakes, few enough
/// that the listener's accept backlog never overflows.
const SETTING_UP: usize = 64;

/// Where and as whom sessions log in.
struct Target {
    addr: String,
    user: String,
    pass: String,
    tls: TlsConnector,
}

impl Target {
    fn new(addr: &str, user: &str, pass: &str) -> Result<Target, Failure> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate))
            .with_no_client_auth();
        let tls = TlsConnector::from(Arc::new(config));
        Ok(Target { addr: addr.into(), user: user.into(), pass: pass.into(), tls })
    }

    /// A session logged in, with INBOX selected (or examined, when `read_only`).
    async fn session(&self, read_only: bool) -> Result<Io, Failure> {
        let tcp = TcpStream::connect(&self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = rustls::pki_types::ServerName::try_from("localhost")?;
        let mut io = BufReader::new(self.tls.connect(name, tcp).await?);
        let greeting = line(&mut io).await?;
        if !greeting.starts_with("* OK") {
            return Err(format!("greeting: {greeting}").into());
        }
        command(&mut io, "a", &format!("LOGIN \"{}\" \"{}\"", self.user, self.pass)).await?;
        let select = if read_only { "EXAMINE INBOX" } else { "SELECT INBOX" };
        command(&mut io, "b", select).await?;
        Ok(io)
    }

    /// A session in IDLE.
    async fn idling(&self) -> Result<Io, Failure> {
        let mut io = self.session(false).await?;
        io.write_all(b"c IDLE\r\n").await?;
        io.flush().await?;
        loop {
            let l = line(&mut io).await?;
            if l.starts_with('+') {
                return Ok(io);
            }
            if l.starts_with("c ") {
                return Err(format!("IDLE: {l}").into());
            }
        }
    }

    /// `count` sessions in IDLE, set up `SETTING_UP` at a time.
    async fn crowd(self: &Arc<Self>, count: usize) -> Result<Vec<Io>, Failure> {
        let gate = Arc::new(Semaphore::new(SETTING_UP));
        let tasks: Vec<_> = (0..count)
            .map(|_| {
                let (me, gate) = (self.clone(), gate.clone());
                tokio::spawn(async move {
                    let _turn = gate.acquire().await?;
                    me.idling().await
                })
            })
            .collect();
        let mut out = Vec::with_capacity(count);
        for task in tasks {
            out.push(task.await??);
        }
        Ok(out)
    }
}

/// One line, without its CRLF.
async fn line<R: AsyncBufReadExt + Unpin>(io: &mut R) -> Result<String, Failure> {
    let mut buf = Vec::new();
    if io.read_until(b'\n', &mut buf).await? == 0 {
        return Err("connection closed".into());
    }
    while buf.last().is_some_and(|b| *b == b'\n' || *b == b'\r') {
        buf.pop();
    }
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// Sends `tag text` and reads up to its tagged completion, which must be OK.
async fn command(io: &mut Io, tag: &str, text: &str) -> Result<(), Failure> {
    io.write_all(format!("{tag} {text}\r\n").as_bytes()).await?;
    io.flush().await?;
    loop {
        let l = line(io).await?;
        if let Some(rest) = l.strip_prefix(tag).and_then(|r| r.strip_prefix(' ')) {
            return match rest.starts_with("OK") {
                true => Ok(()),
                false => Err(format!("{text}: {l}").into()),
            };
        }
    }
}

async fn hold(target: Target, count: usize) -> Result<(), Failure> {
    let started = Instant::now();
    let sessions = Arc::new(target).crowd(count).await?;
    let alive = Arc::new(AtomicUsize::new(sessions.len()));
    println!("set up {count} sessions in {} ms", started.elapsed().as_millis());
    for mut io in sessions {
        let alive = alive.clone();
        // Reads whatever comes (nothing should) until the server closes the session.
        tokio::spawn(async move {
            while line(&mut io).await.is_ok() {}
            alive.fetch_sub(1, Ordering::Relaxed);
        });
    }
    let mut told = usize::MAX;
    loop {
        let now = alive.load(Ordering::Relaxed);
        if now != told {
            println!("holding {now} of {count} in IDLE");
            told = now;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The SMTP side of `fanout`: one session, a message at a time; the instant each end-of-data
/// answer was read.
struct Sender {
    read: BufReader<tokio::net::tcp::OwnedReadHalf>,
    write: tokio::net::tcp::OwnedWriteHalf,
    from: String,
    rcpt: String,
}

impl Sender {
    async fn connect(addr: &str, from: &str, rcpt: &str) -> Result<Sender, Failure> {
        let (read, write) = TcpStream::connect(addr).await?.into_split();
        let mut s =
            Sender { read: BufReader::new(read), write, from: from.into(), rcpt: rcpt.into() };
        s.expect(220).await?;
        s.write.write_all(b"EHLO fanout.test\r\n").await?;
        s.expect(250).await?;
        Ok(s)
    }

    async fn expect(&mut self, want: u16) -> Result<(), Failure> {
        loop {
            let l = line(&mut self.read).await?;
            if l.as_bytes().get(3) == Some(&b'-') {
                continue;
            }
            return match l.get(..3).and_then(|c| c.parse::<u16>().ok()) == Some(want) {
                true => Ok(()),
                false => Err(format!("SMTP: expected {want}, got {l}").into()),
            };
        }
    }

    async fn deliver(&mut self, n: usize) -> Result<Instant, Failure> {
        let (from, rcpt) = (self.from.clone(), self.rcpt.clone());
        self.write.write_all(format!("MAIL FROM:<{from}>\r\n").as_bytes()).await?;
        self.expect(250).await?;
        self.write.write_all(format!("RCPT TO:<{rcpt}>\r\n").as_bytes()).await?;
        self.expect(250).await?;
        self.write.write_all(b"DATA\r\n").await?;
        self.expect(354).await?;
        let message = format!(
            "From: <{from}>\r\nTo: <{rcpt}>\r\nSubject: fan-out {n}\r\nMessage-ID: <fanout-{n}@sender.test>\r\n\r\nDelivery {n} to every IDLE session.\r\n.\r\n"
        );
        self.write.write_all(message.as_bytes()).await?;
        self.expect(250).await?;
        Ok(Instant::now())
    }
}

async fn fanout(
    target: Target,
    count: usize,
    smtp: Sender,
    deliveries: usize,
) -> Result<(), Failure> {
    let sessions = Arc::new(target).crowd(count).await?;
    let (tx, mut rx) = mpsc::unbounded_channel::<Instant>();
    for mut io in sessions {
        let tx = tx.clone();
        tokio::spawn(async move {
            while let Ok(l) = line(&mut io).await {
                if l.starts_with("* ") && l.ends_with(" EXISTS") && tx.send(Instant::now()).is_err()
                {
                    return;
                }
            }
        });
    }
    let mut smtp = smtp;
    let mut all = Vec::new();
    for n in 0..=deliveries {
        let answered = smtp.deliver(n).await?;
        let mut worst = Duration::ZERO;
        for _ in 0..count {
            let seen = tokio::time::timeout(Duration::from_secs(10), rx.recv())
                .await
                .map_err(|_| format!("delivery {n}: not every session was told within 10 s"))?
                .ok_or("sessions gone")?;
            let late = seen.saturating_duration_since(answered);
            worst = worst.max(late);
            if n > 0 {
                all.push(late);
            }
        }
        println!(
            "delivery {n}: slowest session {:.2} ms{}",
            ms(worst),
            if n == 0 { " (warm-up)" } else { "" }
        );
        // Sessions settle (their RECENT, the server's writes) before the next delivery.
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    all.sort();
    let at = |q: f64| all[((all.len() as f64 * q).ceil() as usize).clamp(1, all.len()) - 1];
    println!(
        "exists latency over {}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
        all.len(),
        ms(at(0.5)),
        ms(at(0.99)),
        ms(at(1.0))
    );
    Ok(())
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Reads the responses of `tag`'s command; the untagged FETCH responses counted. Literals are
/// read whole (a `{n}` at a line's end is followed by n bytes, then the line goes on).
async fn fetched(io: &mut Io, tag: &str) -> Result<usize, Failure> {
    let mut count = 0;
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if io.read_until(b'\n', &mut buf).await? == 0 {
            return Err("connection closed".into());
        }
        if buf.starts_with(b"* ") && buf.windows(7).take(16).any(|w| w == b" FETCH ") {
            count += 1;
        }
        let mut tail = buf.clone();
        while let Some(n) = literal(&tail) {
            let mut skip = vec![0; n];
            io.read_exact(&mut skip).await?;
            tail.clear();
            io.read_until(b'\n', &mut tail).await?;
        }
        if buf.starts_with(tag.as_bytes()) && buf.get(tag.len()) == Some(&b' ') {
            let ok = buf[tag.len() + 1..].starts_with(b"OK");
            return if ok { Ok(count) } else { Err(String::from_utf8_lossy(&buf).into()) };
        }
    }
}

/// The length of the literal a line announces at its end (`{n}\r\n`).
fn literal(l: &[u8]) -> Option<usize> {
    let l = l.strip_suffix(b"\r\n").or_else(|| l.strip_suffix(b"\n"))?;
    let l = l.strip_suffix(b"}")?;
    let open = l.iter().rposition(|b| *b == b'{')?;
    let digits = l[open + 1..].strip_suffix(b"+").unwrap_or(&l[open + 1..]);
    std::str::from_utf8(digits).ok()?.parse().ok()
}

async fn fetch(target: Target, expected: usize, rounds: usize) -> Result<(), Failure> {
    let mut io = target.session(true).await?;
    let commands = [
        ("UID FETCH 1:* (BODY.PEEK[HEADER])", "headers"),
        ("FETCH 1:* (FLAGS ENVELOPE)", "envelopes"),
    ];
    for round in 1..=rounds {
        for (i, (text, label)) in commands.iter().enumerate() {
            let tag = format!("f{round}x{i}");
            let started = Instant::now();
            io.write_all(format!("{tag} {text}\r\n").as_bytes()).await?;
            io.flush().await?;
            let got = fetched(&mut io, &tag).await?;
            let took = started.elapsed();
            if got != expected {
                return Err(format!("{text}: {got} messages answered, expected {expected}").into());
            }
            println!(
                "{label} round {round}: {text}: {got} messages in {:.3} s",
                took.as_secs_f64()
            );
        }
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().collect();
    let number = |s: &str| s.parse::<usize>().map_err(|e| format!("{s}: {e}"));
    match args.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        [_, "hold", addr, user, pass, n] => hold(Target::new(addr, user, pass)?, number(n)?).await,
        [_, "fanout", addr, user, pass, n, smtp, from, rcpt, d] => {
            let sender = Sender::connect(smtp, from, rcpt).await?;
            fanout(Target::new(addr, user, pass)?, number(n)?, sender, number(d)?).await
        }
        [_, "fetch", addr, user, pass, n, rounds] => {
            fetch(Target::new(addr, user, pass)?, number(n)?, number(rounds)?).await
        }
        _ => Err("usage: see the top of benches/imap_idle.rs".into()),
    }
}
