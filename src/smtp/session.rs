//! One SMTP session (RFC 5321) as a state machine without I/O: bytes go in with `feed`, and
//! `next_action` says what to do: write replies, read more, ask whether a recipient is ours or
//! whether a login is good, hand over a message, pause, start TLS or close. Answers to the
//! questions come back through `recipient_checked`, `logged_in` and `delivered`. The same session
//! serves the MX and submission: a `Policy` decides what differs (logins, who may send). The caller owns the socket, the clocks and the mail
//! system; the session owns the protocol, so it can be driven by a test as well as by a socket.
//!
//! Replies to pipelined commands are collected and handed out in one write when the input is
//! used up (RFC 2920).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::OwnedSemaphorePermit;

pub use super::actions::{Action, Envelope, Peer};
use super::auth::{self, Exchange, Next};
use super::command::{CommandReader, Policy, Step, Tls, Transaction, Who, command, syntax_reply};
use super::data::{Budget, DataReader};
pub use super::replies::TEMPORARY_FAILURE;
pub(super) use super::replies::TOO_BIG;
use super::replies::*;
use crate::config::Smtp;
use crate::credentials::Login;

enum Mode {
    Commands,
    Data {
        reader: DataReader,
        message: Vec<u8>,
        /// The share of the in-flight budget the message holds.
        held: Option<OwnedSemaphorePermit>,
    },
    /// The message cannot be taken: read it to its end, then answer `reply`.
    Discard {
        reader: DataReader,
        reply: &'static str,
    },
    /// An AUTH exchange waits for the client's next line.
    Auth(Exchange),
}

/// A question handed out by `next_action` and not answered yet.
enum Waiting {
    Recipient(String),
    /// The message keeps its share of the budget until the mail system has taken it.
    Delivery(Option<OwnedSemaphorePermit>),
    Login,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum End {
    Close,
    StartTls,
}

/// Refused recipients answered at once; later ones wait `smtp.error_delay` each.
const FREE_REFUSALS: usize = 2;

pub struct Session {
    cfg: Arc<Smtp>,
    peer: Peer,
    policy: Policy,
    tls: bool,
    login: Option<String>,
    budget: Budget,
    reader: CommandReader,
    transaction: Transaction,
    mode: Mode,
    /// Bad commands and refused recipients; at `smtp.max_errors` the session ends.
    errors: usize,
    refused: usize,
    /// Input not yet used, from `at`.
    input: Vec<u8>,
    at: usize,
    /// Replies not yet handed out; `sent` once `next_action` has handed them out.
    out: Vec<u8>,
    sent: bool,
    ask: Option<Action<'static>>,
    waiting: Option<Waiting>,
    pause: Option<Duration>,
    end: Option<End>,
}

impl Session {
    /// A session whose first action writes the greeting.
    pub fn new(cfg: Arc<Smtp>, peer: Peer, budget: Budget) -> Session {
        let greeting = format!("220 {} ESMTP edgemail\r\n", cfg.host());
        Session {
            cfg,
            peer,
            policy: Policy::Mx,
            tls: false,
            login: None,
            budget,
            reader: CommandReader::default(),
            transaction: Transaction::default(),
            mode: Mode::Commands,
            errors: 0,
            refused: 0,
            input: Vec::new(),
            at: 0,
            out: greeting.into_bytes(),
            sent: false,
            ask: None,
            waiting: None,
            pause: None,
            end: None,
        }
    }

    /// A submission session; `implicit_tls` when the connection was TLS from its first byte.
    pub fn submission(cfg: Arc<Smtp>, peer: Peer, budget: Budget, implicit_tls: bool) -> Session {
        let mut session = Session::new(cfg, peer, budget);
        session.policy = Policy::Submission;
        session.tls = implicit_tls;
        session
    }

    /// Starts over on the secured stream: RFC 3207 discards everything learnt before, including
    /// input pipelined after STARTTLS. No greeting; the client speaks first.
    pub fn secured(&mut self) {
        let (cfg, budget, policy) = (self.cfg.clone(), self.budget.clone(), self.policy);
        *self = Session::new(cfg, self.peer, budget);
        self.out.clear();
        self.tls = true;
        self.policy = policy;
    }

    pub fn peer(&self) -> Peer {
        self.peer
    }

    /// The mailbox the client logged in as.
    pub fn login(&self) -> Option<&str> {
        self.login.as_deref()
    }

    /// The answer to `LogIn`.
    pub fn logged_in(&mut self, answer: Login) {
        self.reclaim();
        match self.waiting.take() {
            Some(Waiting::Login) => {}
            other => {
                self.waiting = other;
                return;
            }
        }
        match answer {
            Login::Accepted(user) => {
                self.login = Some(user);
                self.out.extend_from_slice(b"235 2.7.0 authentication succeeded\r\n");
            }
            Login::Refused => self.error("535 5.7.8 authentication credentials invalid\r\n"),
            Login::Throttled => self.error("454 4.7.0 too many failed logins, try later\r\n"),
            Login::Unavailable => self.out.extend_from_slice(LOGIN_UNAVAILABLE.as_bytes()),
        }
    }

    /// Input from the client. Ignored once the session is ending.
    pub fn feed(&mut self, bytes: &[u8]) {
        self.reclaim();
        if self.end.is_some() {
            return;
        }
        self.input.extend_from_slice(bytes);
    }

    /// No input came in time: a last reply, then close.
    pub fn timed_out(&mut self) {
        self.close_with(TIMEOUT);
    }

    /// The listener needs this idle session's slot: a last reply, then close.
    pub fn shed(&mut self) {
        self.close_with(SHED);
    }

    fn close_with(&mut self, reply: &str) {
        self.reclaim();
        self.out.extend_from_slice(reply.as_bytes());
        self.end = Some(End::Close);
    }

    /// The message size the sender declared for the transaction (SIZE=), 0 when none.
    pub fn declared_size(&self) -> usize {
        self.transaction.size
    }

    /// The answer to `CheckRecipient`: `Err` carries the reply that refuses the recipient.
    pub fn recipient_checked(&mut self, answer: Result<(), String>) {
        self.reclaim();
        let address = match self.waiting.take() {
            Some(Waiting::Recipient(address)) => address,
            other => {
                self.waiting = other;
                return;
            }
        };
        match answer {
            Ok(()) => {
                let known = &mut self.transaction.recipients;
                if !known.iter().any(|r| r.eq_ignore_ascii_case(&address)) {
                    known.push(address);
                }
                self.out.extend_from_slice(b"250 2.1.5 recipient ok\r\n");
            }
            // Counted like bad commands and slowed down: refused recipients are how addresses
            // are harvested.
            Err(reply) if reply.starts_with('5') => {
                self.refused += 1;
                if self.refused > FREE_REFUSALS {
                    self.pause = Some(self.cfg.error_delay);
                }
                self.error(&reply);
            }
            // The mail system will answer nothing more on this connection.
            Err(reply) if reply.starts_with("421") => self.close_with(&reply),
            Err(reply) => self.out.extend_from_slice(reply.as_bytes()),
        }
    }

    /// The answer to `Deliver`: the reply to the end of the message.
    pub fn delivered(&mut self, reply: &str) {
        self.reclaim();
        match self.waiting.take() {
            Some(Waiting::Delivery(held)) => drop(held),
            other => {
                self.waiting = other;
                return;
            }
        }
        self.out.extend_from_slice(reply.as_bytes());
        self.transaction.reset();
    }

    /// What to do next. A question left unanswered gets a temporary failure.
    pub fn next_action(&mut self) -> Action<'_> {
        match self.advance() {
            Some(action) => action,
            None => Action::Write(&self.out),
        }
    }

    /// The next action; `None` for writing `out`.
    fn advance(&mut self) -> Option<Action<'static>> {
        self.reclaim();
        if let Some(ask) = self.ask.take() {
            return Some(ask);
        }
        match self.waiting {
            Some(Waiting::Recipient(_)) => self.recipient_checked(Err(TEMPORARY_FAILURE.into())),
            Some(Waiting::Delivery(_)) => self.delivered(TEMPORARY_FAILURE),
            Some(Waiting::Login) => self.logged_in(Login::Unavailable),
            None => {}
        }
        if let Some(pause) = self.pause.take() {
            return Some(Action::Pause(pause));
        }
        if self.end.is_none() {
            self.run();
            if let Some(ask) = self.ask.take() {
                return Some(ask);
            }
        }
        if !self.out.is_empty() {
            self.sent = true;
            return None;
        }
        Some(match self.end {
            Some(End::Close) => Action::Close,
            Some(End::StartTls) => Action::StartTls,
            None => Action::Read(match self.mode {
                Mode::Commands => self.cfg.command_timeout,
                _ => self.cfg.data_timeout,
            }),
        })
    }

    /// Forgets replies already handed out.
    fn reclaim(&mut self) {
        if self.sent {
            self.out.clear();
            self.sent = false;
        }
    }

    /// Uses input until it runs out, a question is asked or the session ends.
    fn run(&mut self) {
        let input = std::mem::take(&mut self.input);
        let mut bytes = input[self.at..].iter();
        while self.end.is_none() && self.ask.is_none() {
            if !self.step(&mut bytes) {
                // The readers keep what they need of an unfinished command or message.
                bytes = [].iter();
                break;
            }
        }
        self.at = input.len() - bytes.as_slice().len();
        self.input = input;
        if self.end.is_some() || self.at == self.input.len() {
            self.input.clear();
            self.at = 0;
        }
    }

    /// Uses input for one command or one piece of message data; `false` when more is needed.
    fn step(&mut self, bytes: &mut std::slice::Iter<'_, u8>) -> bool {
        match &mut self.mode {
            Mode::Data { reader, message, held } => {
                let done = reader.ingest(bytes, message, true);
                let refusal = if message.len() > self.cfg.max_message_size {
                    Some(TOO_BIG)
                } else if !self.budget.cover(held, message.len()) {
                    Some(NO_MEMORY)
                } else {
                    None
                };
                if let Some(reply) = refusal {
                    if done {
                        self.out.extend_from_slice(reply.as_bytes());
                        self.mode = Mode::Commands;
                        self.transaction.reset();
                    } else {
                        // Read the rest without keeping it, then refuse.
                        let reader = std::mem::take(reader);
                        self.mode = Mode::Discard { reader, reply };
                    }
                    return true;
                }
                if !done {
                    return false;
                }
                let bare_cr = reader.bare_cr();
                let message = std::mem::take(message);
                let held = held.take();
                self.mode = Mode::Commands;
                if bare_cr {
                    self.errors += 1;
                    self.out.extend_from_slice(BARE_CR.as_bytes());
                    self.transaction.reset();
                } else {
                    let envelope = Envelope {
                        ip: self.peer.ip,
                        helo: self.transaction.helo.clone().unwrap_or_default(),
                        from: self.transaction.from.take().unwrap_or_default(),
                        recipients: std::mem::take(&mut self.transaction.recipients),
                        tls: self.tls,
                        login: self.login.clone(),
                    };
                    self.ask = Some(Action::Deliver(envelope, message));
                    self.waiting = Some(Waiting::Delivery(held));
                }
                true
            }
            Mode::Discard { reader, reply } => {
                if !reader.ingest(bytes, &mut Vec::new(), false) {
                    return false;
                }
                self.out.extend_from_slice(reply.as_bytes());
                self.mode = Mode::Commands;
                self.transaction.reset();
                true
            }
            Mode::Auth(exchange) => {
                let Some(next) = exchange.feed(bytes) else { return false };
                self.mode = Mode::Commands;
                self.sasl(next);
                true
            }
            Mode::Commands => {
                let who = Who {
                    tls: self.offers_tls(),
                    policy: self.policy,
                    login: self.login.as_deref(),
                };
                let step = match self.reader.next(bytes) {
                    None => return false,
                    Some(Ok(request)) => command(&self.cfg, &who, &mut self.transaction, request),
                    Some(Err(e)) => Step::Error(syntax_reply(&e)),
                };
                self.apply(step);
                true
            }
        }
    }

    fn offers_tls(&self) -> Tls {
        match (self.tls, self.peer.tls_available) {
            (true, _) => Tls::Active,
            (false, true) => Tls::Offered,
            (false, false) => Tls::Unavailable,
        }
    }

    fn apply(&mut self, step: Step) {
        match step {
            Step::Reply(reply) => self.out.extend_from_slice(reply.as_bytes()),
            Step::Error(reply) => self.error(&reply),
            Step::Check(address) => {
                self.ask = Some(Action::CheckRecipient(address.clone()));
                self.waiting = Some(Waiting::Recipient(address));
            }
            Step::Data => {
                self.out.extend_from_slice(b"354 end data with <CR><LF>.<CR><LF>\r\n");
                self.mode = Mode::Data {
                    reader: DataReader::default(),
                    message: Vec::with_capacity(8192),
                    held: None,
                };
            }
            Step::StartTls => {
                self.out.extend_from_slice(b"220 2.0.0 ready to start TLS\r\n");
                self.end = Some(End::StartTls);
            }
            Step::Auth(sasl, initial) => self.sasl(auth::begin(sasl, &initial)),
            Step::Quit => {
                let bye = format!("221 2.0.0 {} closing connection\r\n", self.cfg.host());
                self.out.extend_from_slice(bye.as_bytes());
                self.end = Some(End::Close);
            }
        }
    }

    /// The next move of an AUTH exchange.
    fn sasl(&mut self, next: Next) {
        match next {
            Next::Ask(challenge, sasl) => {
                self.out.extend_from_slice(challenge.as_bytes());
                self.mode = Mode::Auth(Exchange::new(sasl));
            }
            Next::Check { user, password } => {
                self.ask = Some(Action::LogIn { user, password });
                self.waiting = Some(Waiting::Login);
            }
            Next::Fail(reply) => self.error(reply),
        }
    }

    /// A reply that counts against `smtp.max_errors`.
    fn error(&mut self, reply: &str) {
        self.errors += 1;
        self.out.extend_from_slice(reply.as_bytes());
        if self.errors >= self.cfg.max_errors {
            self.out.extend_from_slice(TOO_MANY_ERRORS.as_bytes());
            self.end = Some(End::Close);
        }
    }
}
