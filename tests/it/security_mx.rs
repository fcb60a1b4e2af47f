//! Abuse of the MX and of the IMAP listeners, each replayed against the real binary over real
//! sockets and shown bounded: one mailbox filled without limit, one address pushing gigabytes,
//! silent sessions holding every slot while real clients wait, and recipient guessing spread
//! over many sessions. Clients choose their source address in 127/8 (any of it is ours on
//! Linux), so per-address limits see several clients.

use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::harness::A;
use crate::mail_world::MailWorld;

/// A connection from `local` to `to`, or `None` when it cannot be made within a second. std
/// cannot choose the source address of a connection; tokio's socket can, without unsafe code.
fn connect_from(
    rt: &tokio::runtime::Runtime,
    local: Ipv4Addr,
    to: SocketAddr,
) -> Option<TcpStream> {
    let stream = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::new(IpAddr::V4(local), 0))?;
            let connect = socket.connect(to);
            match tokio::time::timeout(Duration::from_secs(1), connect).await {
                Ok(stream) => stream?.into_std(),
                Err(_) => Err(std::io::Error::other("connect timed out")),
            }
        })
        .ok()?;
    stream.set_nonblocking(false).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    Some(stream)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
}

/// A line-oriented SMTP client on a connection from a chosen address.
struct Smtp {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Smtp {
    /// A session from `local`, after the greeting; `None` when no 220 came.
    fn open(local: Ipv4Addr, to: SocketAddr) -> Option<Smtp> {
        let stream = connect_from(&runtime(), local, to)?;
        let mut s = Smtp { stream, buf: Vec::new() };
        s.reply().starts_with("220").then_some(s)
    }

    /// One (possibly multi-line) reply; empty when the connection closed or timed out.
    fn reply(&mut self) -> String {
        let mut all = String::new();
        loop {
            let line = loop {
                if let Some(at) = self.buf.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = self.buf.drain(..=at).collect();
                    break String::from_utf8_lossy(&line).into_owned();
                }
                let mut chunk = [0u8; 4096];
                match self.stream.read(&mut chunk) {
                    Ok(0) | Err(_) => return all,
                    Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                }
            };
            all.push_str(&line);
            if line.len() < 4 || line.as_bytes()[3] != b'-' {
                return all;
            }
        }
    }

    fn cmd(&mut self, line: &str) -> String {
        if self.stream.write_all(format!("{line}\r\n").as_bytes()).is_err() {
            return String::new();
        }
        self.reply()
    }

    /// The message and its end, then the reply to it.
    fn data(&mut self, message: &str) -> String {
        if !self.cmd("DATA").starts_with("354") {
            return String::new();
        }
        if self.stream.write_all(format!("{message}\r\n.\r\n").as_bytes()).is_err() {
            return String::new();
        }
        self.reply()
    }
}

/// One whole delivery from `local`: the reply to each step that was refused, or the message's.
fn deliver(local: Ipv4Addr, to: SocketAddr, rcpt: &str, message: &str) -> String {
    let Some(mut s) = Smtp::open(local, to) else { return "no greeting".into() };
    s.cmd("EHLO sender.example.org");
    let mail = s.cmd("MAIL FROM:<ann@example.org>");
    if !mail.starts_with("250") {
        return mail;
    }
    let reply = s.cmd(&format!("RCPT TO:<{rcpt}>"));
    if !reply.starts_with("250") {
        return reply;
    }
    let reply = s.data(message);
    s.cmd("QUIT");
    reply
}

fn message(subject: &str, body_len: usize) -> String {
    let mut body = String::with_capacity(body_len + 80);
    while body.len() < body_len {
        body.push_str("the quick brown fox jumps over the lazy dog, again and again and on\r\n");
    }
    format!("From: Ann <ann@example.org>\r\nTo: sales@{A}\r\nSubject: {subject}\r\n\r\n{body}")
}

const HOME: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 1);

/// Client addresses in 127.0.2.0/24, where no test runs a server: a client socket bound to an
/// address a sink listens on could take that sink's port (the ephemeral range is shared).
fn local(n: u8) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 2, n)
}

/// The IMAP side of a world: an app password of sales@ and the pinned certificate.
struct Imap {
    password: String,
    cert: std::path::PathBuf,
}

impl Imap {
    fn set_up(w: &MailWorld) -> Imap {
        let made = w
            .api()
            .post("/v1/mailboxes/sales/passwords", json!({"name": "imap"}))
            .expect(201)
            .json();
        let password = made["password"].as_str().expect("password").to_owned();
        let cert = w.dir.0.join("imap-cert.pem");
        let fetch = format!(
            "import ssl; open({:?}, 'w').write(ssl.get_server_certificate(('127.0.0.1', {})))",
            cert.display().to_string(),
            port(w, "imaps")
        );
        let out = std::process::Command::new("python3").args(["-c", &fetch]).output();
        let out = out.expect("python3");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        Imap { password, cert }
    }

    fn command(&self, w: &MailWorld, script: &str) -> std::process::Command {
        let mut cmd = std::process::Command::new("python3");
        cmd.arg("-c")
            .arg(format!("{}\n{script}", crate::imap::PRELUDE))
            .args([port(w, "imap").to_string(), port(w, "imaps").to_string()])
            .arg(&self.cert)
            .args([format!("sales@{A}"), self.password.clone()]);
        cmd
    }

    /// Runs a script to its end; its output lines.
    fn py(&self, w: &MailWorld, script: &str) -> Vec<String> {
        let out = self.command(w, script).output().expect("python3");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "script failed: {}\n{stdout}\nserver log tail:\n{}",
            String::from_utf8_lossy(&out.stderr),
            tail(&w.server.log())
        );
        stdout.lines().map(str::to_owned).collect()
    }
}

fn port(w: &MailWorld, name: &str) -> u16 {
    w.server.listener(name).expect("listener on the start line").port()
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(40)..].join("\n")
}

fn mailbox(w: &MailWorld, local: &str) -> Value {
    w.api().get(&format!("/v1/mailboxes/{local}")).expect(200).json()
}

#[test]
fn a_full_mailbox_is_refused_and_one_address_cannot_flood_the_mx() {
    let env = [
        ("EDGEMAIL_SMTP_MAX_BYTES_PER_IP_PER_MINUTE", "1MiB"),
        ("EDGEMAIL_SMTP_MAX_MESSAGE_SIZE", "256KiB"),
    ];
    let w = MailWorld::start_with(&env, &["--imaps", "127.0.0.1:0", "--imap", "127.0.0.1:0"]);
    let mx = w.server.smtp;
    w.api().post("/v1/mailboxes", json!({"address": "support"})).expect(201);

    // A quota of 100,000 bytes on sales@, shown by GET with what is used.
    let patched =
        w.api().patch("/v1/mailboxes/sales", json!({"quotaBytes": 100_000})).expect(200).json();
    assert_eq!(patched["quotaBytes"], 100_000, "{patched}");
    let shown = mailbox(&w, "sales");
    assert_eq!(shown["quota"], json!({"usedBytes": 0, "limitBytes": 100_000}), "{shown}");
    let default = mailbox(&w, "support");
    assert_eq!(default["quota"]["limitBytes"], 5u64 << 30, "the default quota: {default}");

    // 30 KB messages fit three times; the fourth would pass the quota and is refused at its end.
    let mut replies = Vec::new();
    for i in 0..5 {
        let reply = deliver(HOME, mx, &format!("sales@{A}"), &message(&format!("m{i}"), 30_000));
        replies.push(reply.clone());
        if !reply.starts_with("250") {
            break;
        }
    }
    assert_eq!(replies.len(), 4, "{replies:?}");
    assert!(replies[3].starts_with("552 5.2.2"), "{replies:?}");
    let listed = w.api().get("/v1/emails?mailbox=sales&folder=inbox").expect(200).json();
    let stored: u64 =
        listed.as_array().expect("list").iter().filter_map(|e| e["size"].as_u64()).sum();
    let quota = mailbox(&w, "sales")["quota"].clone();
    assert_eq!(quota, json!({"usedBytes": stored, "limitBytes": 100_000}), "{listed}");
    assert!(stored > 90_000, "{stored}");

    // A sender that declares the size hears it at RCPT, per recipient: support@ still gets it.
    let mut s = Smtp::open(HOME, mx).expect("greeting");
    s.cmd("EHLO sender.example.org");
    assert!(s.cmd("MAIL FROM:<ann@example.org> SIZE=20000").starts_with("250"));
    let sales = s.cmd(&format!("RCPT TO:<sales@{A}>"));
    assert!(sales.starts_with("552 5.2.2"), "{sales}");
    assert!(s.cmd(&format!("RCPT TO:<support@{A}>")).starts_with("250"));
    let done = s.data(&message("shared", 19_000));
    assert!(done.starts_with("250"), "{done}");
    let support = w.api().get("/v1/emails?mailbox=support&folder=inbox").expect(200).json();
    assert_eq!(support.as_array().map(Vec::len), Some(1), "{support}");

    // A mailbox at or over its quota refuses every recipient at RCPT, and IMAP APPEND.
    w.api().patch("/v1/mailboxes/sales", json!({"quotaBytes": 50_000})).expect(200);
    let mut s = Smtp::open(HOME, mx).expect("greeting");
    s.cmd("EHLO sender.example.org");
    assert!(s.cmd("MAIL FROM:<ann@example.org>").starts_with("250"));
    let full = s.cmd(&format!("RCPT TO:<sales@{A}>"));
    assert!(full.starts_with("552 5.2.2"), "{full}");
    let imap = Imap::set_up(&w);
    let appended = imap.py(
        &w,
        "m = tls()\ntyp, data = m.append('INBOX', None, None, b'Subject: x\\r\\n\\r\\nhello\\r\\n')\n\
         out(typ, data[0].decode())",
    );
    assert!(appended[0].starts_with("NO [OVERQUOTA]"), "{appended:?}");

    // Removing mail gives its bytes back; null goes back to the default quota.
    let first = listed[0]["id"].as_str().expect("id");
    let size = listed[0]["size"].as_u64().expect("size");
    w.api().delete(&format!("/v1/emails/{first}")).expect(200);
    assert_eq!(mailbox(&w, "sales")["quota"]["usedBytes"], stored, "still in the trash");
    w.api().delete(&format!("/v1/emails/{first}")).expect(200);
    assert_eq!(mailbox(&w, "sales")["quota"]["usedBytes"], stored - size);
    let reset = w.api().patch("/v1/mailboxes/sales", json!({"quotaBytes": null})).expect(200);
    assert_eq!(reset.json()["quota"]["limitBytes"], 5u64 << 30);
    let again = deliver(HOME, mx, &format!("sales@{A}"), &message("after", 1_000));
    assert!(again.starts_with("250"), "{again}");

    // One address floods with 200 KB messages from eight sessions for four seconds: about its
    // 1 MiB a minute is taken, the rest deferred (4xx), never refused for good.
    let flooder = local(2);
    let stop = Instant::now() + Duration::from_secs(4);
    let taken = Arc::new(AtomicUsize::new(0));
    let refusals = Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (taken, refusals) = (taken.clone(), refusals.clone());
            std::thread::spawn(move || {
                let big = message("flood", 200_000);
                while Instant::now() < stop {
                    let reply = deliver(flooder, mx, &format!("support@{A}"), &big);
                    if reply.starts_with("250") {
                        taken.fetch_add(1, Ordering::Relaxed);
                    } else {
                        refusals.lock().expect("lock").push(reply);
                    }
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().expect("flooder"));
    let taken = taken.load(Ordering::Relaxed);
    let refusals = refusals.lock().expect("lock").clone();
    eprintln!("flood: {taken} messages of 200 KB taken, {} deferred", refusals.len());
    // 1 MiB plus 4 s of refill (70 KB) holds five messages of 200 KB.
    assert!(taken <= 5, "{taken} messages of 200 KB taken from one address in 4 s");
    assert!(!refusals.is_empty());
    let permanent: Vec<&String> = refusals.iter().filter(|r| !r.starts_with('4')).collect();
    assert!(permanent.is_empty(), "only temporary refusals: {permanent:?}");
    // Another address is not held back by it.
    let other = deliver(local(3), mx, &format!("support@{A}"), &message("other", 200_000));
    assert!(other.starts_with("250"), "{other}");
}

/// Keeps `per_address` connections from each of `addresses` open to `to`, silent, opening a
/// new one whenever the server closes one, until `stop`.
fn hold(
    addresses: Vec<Ipv4Addr>,
    per_address: usize,
    to: SocketAddr,
    stop: Arc<AtomicBool>,
) -> Vec<std::thread::JoinHandle<usize>> {
    addresses
        .into_iter()
        .map(|address| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let rt = runtime();
                let mut open: Vec<TcpStream> = Vec::new();
                let mut opened = 0;
                while !stop.load(Ordering::Relaxed) {
                    open.retain_mut(|s| {
                        let mut buf = [0u8; 512];
                        match s.read(&mut buf) {
                            Ok(0) => false,
                            // A greeting keeps it; a 421 or BYE means it is being closed.
                            Ok(n) => {
                                !(buf[..n].starts_with(b"421")
                                    || buf[..n].windows(3).any(|w| w == b"BYE"))
                            }
                            Err(e) => e.kind() == std::io::ErrorKind::WouldBlock,
                        }
                    });
                    while open.len() < per_address {
                        let Some(s) = connect_from(&rt, address, to) else { break };
                        if s.set_nonblocking(true).is_err() {
                            break;
                        }
                        open.push(s);
                        opened += 1;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                opened
            })
        })
        .collect()
}

#[test]
fn silent_sessions_make_room_for_real_smtp_and_imap_clients() {
    let env = [
        ("EDGEMAIL_SMTP_MAX_CONNECTIONS", "30"),
        ("EDGEMAIL_SMTP_MAX_CONNECTIONS_PER_IP", "10"),
        ("EDGEMAIL_IMAP_MAX_CONNECTIONS", "30"),
        ("EDGEMAIL_IMAP_MAX_CONNECTIONS_PER_IP", "10"),
    ];
    let w = MailWorld::start_with(&env, &["--imaps", "127.0.0.1:0", "--imap", "127.0.0.1:0"]);
    let mx = w.server.smtp;

    // 40 silent sessions from four addresses (10 each, within the per-address cap) against a
    // cap of 30: the cap is full and the rest wait in the accept queue, reconnecting when shed.
    let stop = Arc::new(AtomicBool::new(false));
    let holders = hold((2..=5).map(local).collect(), 10, mx, stop.clone());
    std::thread::sleep(Duration::from_millis(2500));
    let started = Instant::now();
    for i in 0..20 {
        let reply = deliver(HOME, mx, &format!("sales@{A}"), &message(&format!("real {i}"), 500));
        assert!(reply.starts_with("250"), "delivery {i} after {:?}: {reply:?}", started.elapsed());
    }
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let opened: usize = holders.into_iter().map(|h| h.join().expect("holder")).sum();
    eprintln!("smtp: 20 deliveries in {took:?} while {opened} silent sessions were opened");
    assert!(took < Duration::from_secs(10), "{took:?}");

    // IMAP: a logged-in client idles; 30 silent sessions on each listener that never log in.
    let imap = Imap::set_up(&w);
    let mut idle = imap
        .command(
            &w,
            "m = tls()\nm.select('INBOX')\nout('ready')\nsys.stdin.readline()\n\
             typ, _ = m.noop()\nout('alive', typ)\nm.logout()",
        )
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    let mut idle_out = std::io::BufReader::new(idle.stdout.take().expect("stdout"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut idle_out, &mut line).expect("ready");
    assert_eq!(line.trim(), "ready");
    let stop = Arc::new(AtomicBool::new(false));
    let plain = SocketAddr::from((HOME, port(&w, "imap")));
    let secure = SocketAddr::from((HOME, port(&w, "imaps")));
    let mut holders = hold((6..=9).map(local).collect(), 10, secure, stop.clone());
    holders.extend(hold((10..=13).map(local).collect(), 10, plain, stop.clone()));
    std::thread::sleep(Duration::from_millis(2500));
    let started = Instant::now();
    let seen = imap.py(
        &w,
        "for m in (tls(), starttls()):\n    m.select('INBOX')\n\
         \x20   typ, data = m.fetch('1', '(BODY.PEEK[HEADER.FIELDS (SUBJECT)])')\n\
         \x20   out(typ, data[0][1].decode().strip())\n    m.logout()",
    );
    let took = started.elapsed();
    stop.store(true, Ordering::Relaxed);
    let opened: usize = holders.into_iter().map(|h| h.join().expect("holder")).sum();
    eprintln!("imap: two logins, SELECT and FETCH in {took:?}; {opened} silent sessions opened");
    assert_eq!(seen, ["OK Subject: real 0", "OK Subject: real 0"], "{seen:?}");
    assert!(took < Duration::from_secs(10), "{took:?}");
    // The logged-in client was never shed.
    idle.stdin.as_mut().expect("stdin").write_all(b"go\n").expect("write");
    line.clear();
    std::io::BufRead::read_line(&mut idle_out, &mut line).expect("alive");
    assert_eq!(line.trim(), "alive OK", "{}", tail(&w.server.log()));
    let _ = idle.wait();
}

#[test]
fn recipient_probing_is_bounded_per_address_across_sessions() {
    let env = [("EDGEMAIL_SMTP_MAX_REFUSED_RECIPIENTS_PER_IP_PER_MINUTE", "30")];
    let w = MailWorld::start_with(&env, &[]);
    let mx = w.server.smtp;
    let prober = local(2);
    // Ten sessions at a time from one address, each asking about two unknown recipients (the
    // per-session slowdown starts at the third), for three seconds.
    let answers = Arc::new(AtomicUsize::new(0));
    let guesses = Arc::new(AtomicUsize::new(0));
    let started = Instant::now();
    let stop = started + Duration::from_secs(3);
    let threads: Vec<_> = (0..10)
        .map(|t| {
            let (answers, guesses) = (answers.clone(), guesses.clone());
            std::thread::spawn(move || {
                let mut n = 0;
                while Instant::now() < stop {
                    let Some(mut s) = Smtp::open(prober, mx) else { continue };
                    s.cmd("EHLO prober.example.org");
                    if !s.cmd("MAIL FROM:<p@example.org>").starts_with("250") {
                        continue;
                    }
                    for _ in 0..2 {
                        n += 1;
                        guesses.fetch_add(1, Ordering::Relaxed);
                        let reply = s.cmd(&format!("RCPT TO:<guess{t}x{n}@{A}>"));
                        // 250 or 550 says whether the mailbox exists.
                        if reply.starts_with("250") || reply.starts_with("550") {
                            answers.fetch_add(1, Ordering::Relaxed);
                        }
                        if !reply.starts_with("250") && !reply.starts_with("550") {
                            break;
                        }
                    }
                    s.cmd("QUIT");
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().expect("prober"));
    let elapsed = started.elapsed();
    let (answers, guesses) = (answers.load(Ordering::Relaxed), guesses.load(Ordering::Relaxed));
    eprintln!("probing: {answers} existence answers to {guesses} guesses in {elapsed:?}");
    // 30 at once, then one every two seconds.
    let bound = 30 + (elapsed.as_secs_f64() / 2.0).ceil() as usize;
    assert!(answers <= bound, "{answers} answers in {elapsed:?} (bound {bound})");
    // The prober learns nothing more, not even about a real mailbox...
    let mut s = Smtp::open(prober, mx).expect("greeting");
    s.cmd("EHLO prober.example.org");
    assert!(s.cmd("MAIL FROM:<p@example.org>").starts_with("250"));
    let real = s.cmd(&format!("RCPT TO:<sales@{A}>"));
    assert!(real.starts_with('4'), "{real}");
    // ...while another address is answered and delivers as ever.
    let mut s = Smtp::open(local(3), mx).expect("greeting");
    s.cmd("EHLO sender.example.org");
    assert!(s.cmd("MAIL FROM:<ann@example.org>").starts_with("250"));
    assert!(s.cmd(&format!("RCPT TO:<nobody@{A}>")).starts_with("550 5.1.1"));
    assert!(s.cmd(&format!("RCPT TO:<sales@{A}>")).starts_with("250"));
    let done = s.data(&message("hello", 100));
    assert!(done.starts_with("250"), "{done}");
}
