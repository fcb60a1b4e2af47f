//! Attacks on IMAP and on mail clients' logins, each replayed over real sockets against the real
//! binary and shown refused or bounded: large literals before login (memory) and past the
//! global budget, SEARCH on the async workers (CPU), and failed logins that locked the owner out.
//! The tests share one server while they run (`fixture`), each on mailboxes and client
//! addresses (127.0.2.x, where no test runs a server: Linux routes all of 127/8 to lo) of its own; the one that reads the
//! server's memory and the one that measures the global literal budget have a server each.

use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::json;

use crate::any_certificate::AnyCertificate;
use crate::harness::A;
use crate::mail_world::MailWorld;

/// What every test here runs with: three failed logins per address and mailbox (so fifteen per
/// address), and 6 MiB of literals in flight over all sessions.
const ENV: [(&str, &str); 2] =
    [("EDGEMAIL_SUBMISSION_FAILED_LOGINS", "3"), ("EDGEMAIL_IMAP_MAX_INFLIGHT_BYTES", "6MiB")];

const LOCAL: Ipv4Addr = Ipv4Addr::LOCALHOST;

struct Fixture {
    world: MailWorld,
}

/// The running server, shared by the tests that run at the same time; stopped with the last.
fn fixture() -> Arc<Fixture> {
    static SHARED: Mutex<Weak<Fixture>> = Mutex::new(Weak::new());
    let mut slot = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(running) = slot.upgrade() {
        return running;
    }
    let started = Arc::new(Fixture::start(&ENV));
    *slot = Arc::downgrade(&started);
    started
}

impl Fixture {
    fn start(env: &[(&str, &str)]) -> Fixture {
        let args =
            ["--imap", "127.0.0.1:0", "--imaps", "127.0.0.1:0", "--submissions", "127.0.0.1:0"];
        Fixture { world: MailWorld::start_with(env, &args) }
    }

    fn listener(&self, name: &str) -> SocketAddr {
        self.world.server.listener(name).expect("listener on the start line")
    }

    /// A new mailbox of alpha.test and an app password for it: (address, password).
    fn mailbox(&self, local: &str) -> (String, String) {
        self.world.api().post("/v1/mailboxes", json!({"address": local})).expect(201);
        let made = self
            .world
            .api()
            .post(&format!("/v1/mailboxes/{local}/passwords"), json!({"name": "test"}))
            .expect(201)
            .json();
        (format!("{local}@{A}"), made["password"].as_str().expect("password").to_owned())
    }

    /// The server's resident memory, KiB.
    fn rss_kib(&self) -> u64 {
        let status =
            std::fs::read_to_string(format!("/proc/{}/status", self.world.server.child.id()))
                .expect("server status");
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .expect("VmRSS")
    }

    /// How long `GET /healthz` takes to answer (3 s when it does not).
    fn healthz(&self) -> Duration {
        let started = Instant::now();
        let answered = (|| {
            let mut s = TcpStream::connect(self.world.server.addr).ok()?;
            s.set_read_timeout(Some(Duration::from_secs(3))).ok()?;
            s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").ok()?;
            let mut first = [0u8; 12];
            s.read_exact(&mut first).ok()?;
            first.starts_with(b"HTTP/1.1 200").then_some(())
        })();
        match answered {
            Some(()) => started.elapsed(),
            None => Duration::from_secs(3).max(started.elapsed()),
        }
    }
}

/// A TCP connection to `to` from the local address `from`; reads wait `patience` at most.
fn connect_from(from: Ipv4Addr, to: SocketAddr, patience: Duration) -> TcpStream {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().expect("runtime");
    let stream = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::from((from, 0)))?;
            socket.connect(to).await?.into_std()
        })
        .expect("connect");
    stream.set_nonblocking(false).expect("blocking socket");
    stream.set_read_timeout(Some(patience)).expect("read timeout");
    stream
}

trait Duplex: Read + Write + Send {}
impl<T: Read + Write + Send> Duplex for T {}

/// One client connection, line by line (IMAP or SMTP).
struct Client {
    io: BufReader<Box<dyn Duplex>>,
}

impl Client {
    fn plain(to: SocketAddr, from: Ipv4Addr, patience: Duration) -> Client {
        Client { io: BufReader::new(Box::new(connect_from(from, to, patience))) }
    }

    fn tls(to: SocketAddr, from: Ipv4Addr) -> Client {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate))
            .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from("localhost").expect("name");
        let tls = rustls::ClientConnection::new(Arc::new(config), name).expect("tls client");
        let tcp = connect_from(from, to, Duration::from_secs(20));
        let stream = rustls::StreamOwned::new(tls, tcp);
        Client { io: BufReader::new(Box::new(stream)) }
    }

    /// The next line without its CRLF; empty once the server closed, `(silence)` when it said
    /// nothing in time.
    fn line(&mut self) -> String {
        let mut line = String::new();
        match self.io.read_line(&mut line) {
            Ok(_) => line.trim_end().to_owned(),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                "(silence)".to_owned()
            }
            Err(_) => String::new(),
        }
    }

    /// Whether the bytes could be written.
    fn send(&mut self, bytes: &[u8]) -> bool {
        let io = self.io.get_mut();
        io.write_all(bytes).and_then(|()| io.flush()).is_ok()
    }

    /// Lines up to and with the completion of `tag` (or the server closing).
    fn until(&mut self, tag: &str) -> Vec<String> {
        let mut lines = Vec::new();
        loop {
            let line = self.line();
            let done =
                line.is_empty() || line == "(silence)" || line.starts_with(&format!("{tag} "));
            lines.push(line);
            if done {
                return lines;
            }
        }
    }

    /// An IMAP command without literals; every line of the answer.
    fn cmd(&mut self, tag: &str, command: &str) -> Vec<String> {
        assert!(self.send(format!("{tag} {command}\r\n").as_bytes()), "{tag} {command}: not sent");
        self.until(tag)
    }

    /// `line` announcing a synchronizing literal; when the server says go on, the literal and
    /// `rest`. The answer's lines (the first a refusal when the literal was refused).
    fn with_literal(&mut self, tag: &str, line: &str, literal: &[u8], rest: &str) -> Vec<String> {
        self.send(format!("{tag} {line}{{{}}}\r\n", literal.len()).as_bytes());
        let answer = self.line();
        if !answer.starts_with('+') {
            return vec![answer];
        }
        self.send(literal);
        self.send(format!("{rest}\r\n").as_bytes());
        self.until(tag)
    }

    /// An IMAP session logged in over implicit TLS from `from`.
    fn imap_login(f: &Fixture, from: Ipv4Addr, user: &str, password: &str) -> Client {
        let mut c = Client::tls(f.listener("imaps"), from);
        assert!(c.line().starts_with("* OK"), "greeting");
        let done = c.cmd("l", &format!("LOGIN \"{user}\" \"{password}\""));
        assert!(done.last().is_some_and(|l| l.starts_with("l OK")), "login: {done:?}");
        c
    }
}

/// The tagged completion (last line) of an IMAP login from `from`.
fn imap_login_reply(f: &Fixture, from: Ipv4Addr, user: &str, password: &str) -> String {
    let mut c = Client::tls(f.listener("imaps"), from);
    assert!(c.line().starts_with("* OK"), "greeting");
    c.cmd("l", &format!("LOGIN \"{user}\" \"{password}\"")).pop().unwrap_or_default()
}

/// The reply to SMTP submission's AUTH PLAIN from `from`, over implicit TLS.
fn submission_login_reply(f: &Fixture, from: Ipv4Addr, user: &str, password: &str) -> String {
    let mut c = Client::tls(f.listener("submissions"), from);
    assert!(c.line().starts_with("220"), "greeting");
    c.send(b"EHLO client.test\r\n");
    while c.line().starts_with("250-") {}
    let plain = base64::engine::general_purpose::STANDARD.encode(format!("\0{user}\0{password}"));
    c.send(format!("AUTH PLAIN {plain}\r\n").as_bytes());
    c.line()
}

/// A message of exactly `size` bytes: a few headers and lines of text.
fn message(subject: &str, size: usize) -> Vec<u8> {
    let mut m =
        format!("From: ann@example.org\r\nTo: x@{A}\r\nSubject: {subject}\r\n\r\n").into_bytes();
    while m.len() < size {
        let line = b"The quick brown fox jumps over the lazy dog 0123456789.\r\n";
        m.extend_from_slice(&line[..line.len().min(size - m.len())]);
    }
    m
}

/// Samples the server's memory every 20 ms until dropped; the highest seen.
struct Peak {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Peak {
    fn watch(f: &Arc<Fixture>) -> Peak {
        let (stop, peak) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicU64::new(0)));
        let (f, s, p) = (f.clone(), stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                p.fetch_max(f.rss_kib(), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        Peak { stop, peak, thread: Some(thread) }
    }

    fn highest(mut self) -> u64 {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.load(Ordering::Relaxed)
    }
}

#[test]
fn large_literals_before_login_are_refused_and_memory_stays_bounded() {
    const LITERAL: usize = 8 << 20;
    const BOUND_KIB: u64 = 100 << 10;
    // Alone on its server, so that what the memory does is this test's doing.
    let f = Arc::new(Fixture::start(&ENV));
    let to = f.listener("imap");
    let base = f.rss_kib();
    let peak = Peak::watch(&f);
    // 60 connections from three addresses (20 each, the per-address cap), each announcing an
    // 8 MiB literal before logging in: synchronizing ones wait for the go-ahead, LITERAL+ ones
    // send it all at once.
    let attackers: Vec<_> = (0..60u8)
        .map(|i| {
            std::thread::spawn(move || {
                let from = Ipv4Addr::new(127, 0, 2, 11 + i % 3);
                let mut c = Client::plain(to, from, Duration::from_secs(2));
                assert!(c.line().starts_with("* OK"), "greeting");
                let tag = format!("f{i}");
                let answer = if i % 2 == 0 {
                    c.send(format!("{tag} LOGIN {{{LITERAL}}}\r\n").as_bytes());
                    let answer = c.line();
                    if answer.starts_with('+') {
                        c.send(&vec![b'x'; LITERAL]);
                    }
                    answer
                } else {
                    c.send(format!("{tag} LOGIN {{{LITERAL}+}}\r\n").as_bytes());
                    let chunk = vec![b'x'; 64 << 10];
                    let _ = (0..LITERAL / chunk.len()).all(|_| c.send(&chunk));
                    c.line()
                };
                (tag, answer, c)
            })
        })
        .collect();
    let held: Vec<_> = attackers.into_iter().map(|t| t.join().expect("attacker")).collect();
    // The attackers keep their connections open a moment.
    std::thread::sleep(Duration::from_millis(500));
    let highest = peak.highest();
    eprintln!("pre-login literals: RSS {base} KiB before, {highest} KiB at most during");
    for (tag, answer, _) in &held {
        let refused = answer.is_empty()
            || answer.starts_with("* BYE")
            || answer.starts_with(&format!("{tag} BAD"))
            || answer.starts_with(&format!("{tag} NO"));
        assert!(refused, "{tag}: the literal was taken: {answer:?}");
    }
    assert!(
        highest < base + BOUND_KIB,
        "RSS grew from {base} KiB to {highest} KiB (bound: +{BOUND_KIB} KiB)"
    );
    drop(held);
    std::thread::sleep(Duration::from_millis(500));
    let after = f.rss_kib();
    eprintln!("pre-login literals: RSS {after} KiB after the connections closed");
    assert!(after < base + (30 << 10), "memory kept: {base} KiB before, {after} KiB after");

    // Small literals before login are still taken (here refused for want of TLS, as always).
    let mut c = Client::plain(to, LOCAL, Duration::from_secs(20));
    assert!(c.line().starts_with("* OK"), "greeting");
    c.send(b"s LOGIN {16}\r\n");
    assert!(c.line().starts_with('+'));
    c.send(format!("sales@{A} {{6}}\r\n").as_bytes());
    assert!(c.line().starts_with('+'));
    c.send(b"secret\r\n");
    let done = c.until("s").pop().unwrap_or_default();
    assert!(done.starts_with("s NO [PRIVACYREQUIRED]"), "{done}");
    // And the server still serves mail clients.
    let (user, password) = f.mailbox("preauth");
    let mut c = Client::imap_login(&f, LOCAL, &user, &password);
    let selected = c.cmd("a", "SELECT INBOX");
    assert!(selected.last().is_some_and(|l| l.starts_with("a OK")), "{selected:?}");
}

#[test]
fn literals_past_the_global_budget_are_refused_until_it_frees() {
    // A server of its own: the budget is global, and another test's 2 MB APPEND running at the
    // same time would take from it.
    let f = Fixture::start(&ENV);
    let (user, password) = f.mailbox("budget");
    let mut a = Client::imap_login(&f, LOCAL, &user, &password);
    let mut b = Client::imap_login(&f, LOCAL, &user, &password);
    // A takes 4 MB of the 6 MiB budget and sends half of it.
    let big = message("four", 4_000_000);
    a.send(format!("a1 APPEND INBOX {{{}}}\r\n", big.len()).as_bytes());
    assert!(a.line().starts_with('+'), "A may send its message");
    a.send(&big[..2_000_000]);
    // B's 3 MB would pass the budget: refused before a byte of it is sent; 1 MB fits.
    let refused = b.with_literal("b1", "APPEND INBOX ", &message("three", 3_000_000), "");
    assert!(refused[0].starts_with("b1 NO [LIMIT]"), "{refused:?}");
    let small = b.with_literal("b2", "APPEND INBOX ", &message("one", 1_000_000), "");
    assert!(small.last().is_some_and(|l| l.starts_with("b2 OK")), "{small:?}");
    // A finishes; its share comes back and B's 3 MB goes through.
    a.send(&big[2_000_000..]);
    a.send(b"\r\n");
    let done = a.until("a1").pop().unwrap_or_default();
    assert!(done.starts_with("a1 OK"), "{done}");
    let retried = b.with_literal("b3", "APPEND INBOX ", &message("three", 3_000_000), "");
    assert!(retried.last().is_some_and(|l| l.starts_with("b3 OK")), "{retried:?}");
    // More than the whole budget can never go through; a LITERAL+ one ends the session, since
    // its bytes are on their way.
    let never = b.with_literal("b4", "APPEND INBOX ", &message("seven", 7_000_000), "");
    assert!(never[0].starts_with("b4 NO [TOOBIG]"), "{never:?}");
    b.send(b"b5 APPEND INBOX {7000000+}\r\n");
    let bye = b.line();
    assert!(bye.starts_with("* BYE"), "{bye}");
    let listed = a.cmd("a2", "STATUS INBOX (MESSAGES)");
    assert!(listed[0].contains("MESSAGES 3"), "{listed:?}");
}

#[test]
fn search_is_linear_off_the_async_workers_and_caps_its_needle() {
    let f = fixture();
    let (user, password) = f.mailbox("search");
    // One 2 MB message of a single long body line.
    let mut setup = Client::imap_login(&f, LOCAL, &user, &password);
    let mut big =
        format!("From: ann@example.org\r\nTo: {user}\r\nSubject: big\r\n\r\n").into_bytes();
    big.resize(2_000_000, b'a');
    big.extend_from_slice(b"\r\n");
    let stored = setup.with_literal("s", "APPEND INBOX ", &big, "");
    assert!(stored.last().is_some_and(|l| l.starts_with("s OK")), "{stored:?}");

    let started = Instant::now();
    let searchers: Vec<_> = (0..2)
        .map(|_| {
            let (f, user, password) = (f.clone(), user.clone(), password.clone());
            std::thread::spawn(move || {
                let mut c = Client::imap_login(&f, LOCAL, &user, &password);
                let selected = c.cmd("a", "SELECT INBOX");
                assert!(selected.last().is_some_and(|l| l.starts_with("a OK")), "{selected:?}");
                let mut long = vec![b'a'; 50 * 1024];
                *long.last_mut().expect("needle") = b'b';
                let mut kib = vec![b'A'; 1024];
                *kib.last_mut().expect("needle") = b'b';
                for round in 0..3 {
                    // 50 KB: refused before any matching, with a clear text.
                    let refused = c.with_literal("b", "SEARCH BODY ", &long, "");
                    let done = refused.last().cloned().unwrap_or_default();
                    assert!(done.starts_with("b NO [LIMIT]"), "round {round}: {refused:?}");
                    // 1 KiB (the cap), matched in linear time: not there.
                    let missing = c.with_literal("t", "SEARCH TEXT ", &kib, "");
                    assert_eq!(
                        missing.first().map(String::as_str),
                        Some("* SEARCH"),
                        "{missing:?}"
                    );
                    // And found, whatever the case.
                    let found = c.cmd("f", "SEARCH BODY \"AAAAAAAAAAAAAAAA\"");
                    assert_eq!(found[0], "* SEARCH 1", "{found:?}");
                }
            })
        })
        .collect();
    // Meanwhile every listener answers: /healthz stays fast.
    let mut slowest = Duration::ZERO;
    while !searchers.iter().all(|t| t.is_finished()) {
        slowest = slowest.max(f.healthz());
        assert!(slowest < Duration::from_secs(1), "/healthz took {slowest:?} during the searches");
        assert!(started.elapsed() < Duration::from_secs(60), "the searches did not finish");
        std::thread::sleep(Duration::from_millis(50));
    }
    for t in searchers {
        t.join().expect("searcher");
    }
    eprintln!("search: slowest /healthz {slowest:?}, searches took {:?}", started.elapsed());
}

#[test]
fn failed_logins_lock_the_guessing_address_not_the_owner() {
    let f = fixture();
    let (owner, password) = f.mailbox("owner");
    let attacker = Ipv4Addr::new(127, 0, 2, 2);
    // Three failures per address and mailbox; the fourth still gets its answer and empties the
    // bucket, the fifth is refused unchecked.
    for attempt in 0..4 {
        let reply = imap_login_reply(&f, attacker, &owner, "guess");
        assert!(reply.starts_with("l NO [AUTHENTICATIONFAILED]"), "{attempt}: {reply}");
    }
    let reply = imap_login_reply(&f, attacker, &owner, "guess");
    assert!(reply.starts_with("l NO [UNAVAILABLE]"), "{reply}");
    // The owner, from their own address, logs in over IMAP and submission alike.
    let reply = imap_login_reply(&f, LOCAL, &owner, &password);
    assert!(reply.starts_with("l OK"), "the owner is locked out: {reply}");
    let reply = submission_login_reply(&f, LOCAL, &owner, &password);
    assert!(reply.starts_with("235"), "the owner is locked out of submission: {reply}");
    // The guessing address stays refused, even with the right password, on both.
    let reply = imap_login_reply(&f, attacker, &owner, &password);
    assert!(reply.starts_with("l NO [UNAVAILABLE]"), "{reply}");
    let reply = submission_login_reply(&f, attacker, &owner, &password);
    assert!(reply.starts_with("454"), "{reply}");

    // An address guessing across mailboxes: fifteen failures (five times three) are answered,
    // then every login from it is refused, the owner's mailbox included; not from elsewhere.
    let sprayer = Ipv4Addr::new(127, 0, 2, 3);
    let mut c = Client::tls(f.listener("imaps"), sprayer);
    assert!(c.line().starts_with("* OK"), "greeting");
    for i in 0..16 {
        let reply = c.cmd("l", &format!("LOGIN \"nobody{i}@{A}\" \"guess\"")).pop();
        let reply = reply.unwrap_or_default();
        assert!(reply.starts_with("l NO [AUTHENTICATIONFAILED]"), "{i}: {reply}");
    }
    let reply = imap_login_reply(&f, sprayer, &owner, &password);
    assert!(reply.starts_with("l NO [UNAVAILABLE]"), "{reply}");
    let reply = imap_login_reply(&f, LOCAL, &owner, &password);
    assert!(reply.starts_with("l OK"), "{reply}");
}
