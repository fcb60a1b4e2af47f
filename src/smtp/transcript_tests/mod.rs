//! Whole SMTP conversations, in process: the session and the server's I/O loop over an
//! in-memory wire that delivers the client's input read by read, with a fake mail system
//! behind it. Each test reads as the transcript it checks (C: client, S: server).

use std::collections::VecDeque;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::data::Budget;
use super::guard::Guard;
use super::intake::Intake;
use super::server::{End, drive};
use super::session::{Action, Envelope, Peer, Session};
use crate::config::{Config, Smtp};
use crate::credentials::Login;

mod conversation;
mod limits;
mod submission;

/// The mail system behind the session: the recipients it has, and the messages it took.
#[derive(Default)]
struct Fake {
    ours: Vec<String>,
    taken: Mutex<Vec<(Envelope, Vec<u8>)>>,
}

impl Fake {
    fn with(ours: &[&str]) -> Fake {
        Fake { ours: ours.iter().map(|s| (*s).to_owned()).collect(), ..Fake::default() }
    }

    fn taken(&self) -> Vec<(Envelope, Vec<u8>)> {
        self.taken.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }
}

impl Intake for Fake {
    async fn check_recipient(&self, _login: Option<&str>, address: &str) -> Result<(), String> {
        if self.ours.iter().any(|o| o.eq_ignore_ascii_case(address)) {
            Ok(())
        } else if address.ends_with("@busy.test") {
            Err("451 4.3.0 try again later\r\n".into())
        } else {
            Err(format!("550 5.1.1 no mailbox {address} here\r\n"))
        }
    }

    async fn log_in(&self, _ip: IpAddr, user: &str, password: &str) -> Login {
        match (user, password) {
            ("sales@alpha.test", "right") => Login::Accepted(user.to_owned()),
            ("throttled@alpha.test", _) => Login::Throttled,
            _ => Login::Refused,
        }
    }

    async fn take_message(&self, envelope: Envelope, message: Vec<u8>) -> String {
        let mut taken = self.taken.lock().unwrap_or_else(PoisonError::into_inner);
        taken.push((envelope, message));
        format!("250 2.0.0 queued as m{}\r\n", taken.len())
    }
}

enum Input {
    Say(Vec<u8>),
    /// The client says nothing more but keeps the connection open.
    Silence,
}

enum Event {
    Client(Vec<u8>),
    Server(Vec<u8>),
    Tls,
}

/// A stream that hands out one scripted read at a time (then end of input) and logs every
/// read and write.
struct Wire<'a> {
    reads: VecDeque<Input>,
    log: &'a mut Vec<Event>,
}

impl AsyncRead for Wire<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match this.reads.pop_front() {
            None => Poll::Ready(Ok(())),
            Some(Input::Silence) => {
                this.reads.push_front(Input::Silence);
                Poll::Pending
            }
            Some(Input::Say(mut bytes)) => {
                let rest = bytes.split_off(bytes.len().min(buf.remaining()));
                if !rest.is_empty() {
                    this.reads.push_front(Input::Say(rest));
                }
                buf.put_slice(&bytes);
                this.log.push(Event::Client(bytes));
                Poll::Ready(Ok(()))
            }
        }
    }
}

impl AsyncWrite for Wire<'_> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.log.push(Event::Server(buf.to_vec()));
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

const CLIENT: [u8; 4] = [192, 0, 2, 7];

fn cfg() -> Smtp {
    let mut cfg = Config::default().smtp;
    cfg.hostname = Some("mx.test".into());
    cfg.max_message_size = 10_000;
    cfg.max_recipients = 3;
    cfg.max_errors = 5;
    cfg.error_delay = Duration::ZERO;
    cfg
}

struct Conversation {
    session: Session,
    fake: Fake,
    log: Vec<Event>,
}

impl Conversation {
    fn new(cfg: Smtp, tls_available: bool, fake: Fake) -> Conversation {
        let budget = super::data::budget(cfg.max_inflight_bytes);
        Conversation::with_budget(cfg, tls_available, fake, budget)
    }

    fn with_budget(cfg: Smtp, tls_available: bool, fake: Fake, budget: Budget) -> Conversation {
        let peer = Peer { ip: IpAddr::from(CLIENT), tls_available };
        Conversation { session: Session::new(Arc::new(cfg), peer, budget), fake, log: Vec::new() }
    }

    /// A submission session; `implicit_tls` when TLS came before the first byte.
    fn submission(implicit_tls: bool, fake: Fake) -> Conversation {
        let cfg = cfg();
        let budget = super::data::budget(cfg.max_inflight_bytes);
        let peer = Peer { ip: IpAddr::from(CLIENT), tls_available: !implicit_tls };
        let session = Session::submission(Arc::new(cfg), peer, budget, implicit_tls);
        Conversation { session, fake, log: Vec::new() }
    }

    /// Runs the session over `reads`, one network read each, until it ends or the input does.
    async fn run(&mut self, reads: &[&str]) -> End {
        self.run_bytes(reads.iter().map(|r| Input::Say(r.as_bytes().to_vec())).collect()).await
    }

    async fn run_bytes(&mut self, reads: VecDeque<Input>) -> End {
        let mut wire = Wire { reads, log: &mut self.log };
        match drive(&mut wire, &mut self.session, &self.fake, &Guard::default()).await {
            Ok(end) => end,
            Err(e) => panic!("an in-memory wire does not fail: {e}"),
        }
    }

    /// The STARTTLS handshake, as far as the session sees it.
    fn secured(&mut self) {
        self.session.secured();
        self.log.push(Event::Tls);
    }

    /// Every line both ways. A line that is not plain text ending in CRLF is shown escaped,
    /// with `…` when it goes on in the next read.
    fn transcript(&self) -> Vec<String> {
        let mut out = Vec::new();
        for event in &self.log {
            let (who, bytes) = match event {
                Event::Client(b) => ("C", b),
                Event::Server(b) => ("S", b),
                Event::Tls => {
                    out.push("-- TLS --".to_owned());
                    continue;
                }
            };
            let text = String::from_utf8_lossy(bytes);
            for line in text.split_inclusive('\n') {
                let shown = match line.strip_suffix("\r\n") {
                    Some(plain) if !plain.contains(['\r', '\n']) => plain.to_owned(),
                    _ if line.ends_with('\n') => line.escape_debug().to_string(),
                    _ => format!("{}…", line.escape_debug()),
                };
                out.push(format!("{who}: {shown}"));
            }
        }
        out
    }

    /// The server's lines only.
    fn replies(&self) -> Vec<String> {
        self.transcript().into_iter().filter(|l| l.starts_with("S: ")).collect()
    }

    /// How many writes answered each read (the greeting is not counted).
    fn writes_per_read(&self) -> Vec<usize> {
        let mut counts = Vec::new();
        for event in &self.log {
            match event {
                Event::Client(_) => counts.push(0),
                Event::Server(_) => {
                    if let Some(last) = counts.last_mut() {
                        *last += 1;
                    }
                }
                Event::Tls => {}
            }
        }
        counts
    }
}

const NO_TLS: bool = false;
const TLS: bool = true;

fn ehlo_reply(starttls: bool) -> Vec<&'static str> {
    let mut lines = vec![
        "S: 250-mx.test greets you",
        "S: 250-PIPELINING",
        "S: 250-8BITMIME",
        "S: 250-SMTPUTF8",
        "S: 250-SIZE 10000",
    ];
    if starttls {
        lines.push("S: 250-STARTTLS");
    }
    lines.push("S: 250 ENHANCEDSTATUSCODES");
    lines
}

fn codes(replies: &[String]) -> Vec<&str> {
    replies.iter().map(|r| r.get(3..6).unwrap_or("")).collect()
}

fn say(text: &str) -> Input {
    Input::Say(text.as_bytes().to_vec())
}

/// The session alone, its actions written down as they come, questions answered by `answer`.
fn actions(cfg: Smtp, input: &str, answer: impl Fn(&str) -> Result<(), String>) -> Vec<String> {
    let peer = Peer { ip: IpAddr::from(CLIENT), tls_available: false };
    let mut session = Session::new(Arc::new(cfg), peer, super::data::budget(1 << 20));
    let mut seen = Vec::new();
    if let Action::Write(greeting) = session.next_action() {
        seen.push(format!("write {}", String::from_utf8_lossy(greeting).trim_end()));
    }
    session.feed(input.as_bytes());
    loop {
        match session.next_action() {
            Action::Write(bytes) => {
                seen.push(format!("write {}", String::from_utf8_lossy(bytes).trim_end()))
            }
            Action::CheckRecipient(address) => {
                seen.push(format!("check {address}"));
                session.recipient_checked(answer(&address));
            }
            Action::Pause(pause) => seen.push(format!("pause {pause:?}")),
            Action::Deliver(envelope, _) => {
                seen.push(format!("deliver to {:?}", envelope.recipients));
                session.delivered("250 ok\r\n");
            }
            Action::Read(_) => return seen,
            other => {
                seen.push(format!("{other:?}"));
                return seen;
            }
        }
    }
}
