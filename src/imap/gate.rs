//! The gate between a connection's bytes and imap-next's flow. The flow's limits are fixed when
//! it is made (the largest literal a logged-in client may APPEND), and it buffers every command
//! whole; so before login anyone could make it hold 40 MiB per connection. The gate frames the
//! bytes itself first (imap-codec's fragmentizer, which keeps no bytes: the framing is the
//! flow's own) and hands them on a line or a literal at a time, each command only once the one
//! before it was answered. So it knows what the flow is about to take in and can refuse it:
//!
//! - before login a command takes `BEFORE_LOGIN` bytes at most, literals included;
//! - after login a line takes `MAX_LINE`, a literal `MAX_LITERAL`, and the bytes of a command
//!   beyond `FREE` are covered by one budget shared by every session (`imap.max_inflight_bytes`)
//!   from the announcement of its literal until the session is done with it;
//! - a synchronizing literal refused at the start of a command gets a tagged NO: the client
//!   waits for our go-ahead and so sends nothing of it, and the flow never saw the command;
//!   anything else refused (a LITERAL+ literal already on its way, a refusal in the middle of a
//!   command the flow has begun taking, a line too long) ends the session with a BYE, since the
//!   bytes that follow could no longer be told apart from commands without taking them in.

use std::collections::VecDeque;

use imap_codec::fragmentizer::{FragmentInfo, Fragmentizer, LiteralAnnouncement};
use imap_next::State;
use imap_next::server::Server;
use imap_types::core::{LiteralMode, Tag};
use imap_types::response::{Code, Status};
use tokio::sync::OwnedSemaphorePermit;

use super::reply::limit_code;

/// The whole of a command before login, literals included: a LOGIN or an AUTHENTICATE fits
/// many times over, and so does the largest ID RFC 2971 allows (30 fields of 30 and 1024
/// octets, quoted: about 32 KiB, which imaptest's `id` file sends).
pub const BEFORE_LOGIN: usize = 40 * 1024;
/// The largest literal after login (an APPEND of a large message fits).
pub const MAX_LITERAL: u32 = 40 * 1024 * 1024;
/// The longest line of a command after login (Dovecot's default too); literals come on top.
pub const MAX_LINE: usize = 64 * 1024;
/// The largest command: the largest literal and a line.
pub const MAX_COMMAND: u32 = MAX_LITERAL + MAX_LINE as u32;
/// What a command may hold without taking from the budget: every session may hold a line this
/// long anyway (bounded by the connection caps), so only what lies beyond is counted.
const FREE: usize = 64 * 1024;
/// The budget's unit, in bytes.
/// The longest tag looked for in a refused command.
const LONGEST_TAG: usize = 64;

/// The budget literals past `FREE` draw on, one for every session (`imap.max_inflight_bytes`).
pub use crate::budget::Budget;

/// The budget of `bytes` IMAP sessions share: taken 1 KiB at a time (a literal is announced
/// whole, so there is nothing to round up to).
pub fn budget(bytes: usize) -> Budget {
    Budget::new(bytes, 1)
}

/// What a call of `Gate::pump` did.
pub enum Pumped {
    /// Bytes went to the flow.
    Fed,
    /// Nothing more until the client sends more.
    Starved,
    /// The command starting here is refused with this answer; the flow never saw any of it.
    Refused(Status<'static>),
    /// The session ends with this BYE.
    Close(Status<'static>),
}

pub struct Gate {
    /// Frames the bytes as the flow will; keeps none of them (its size limit is 0).
    frame: Fragmentizer,
    /// Bytes read and neither handed on nor dropped; `frame` has parsed the first `framed`.
    raw: VecDeque<u8>,
    framed: usize,
    /// Where `frame` is in the current command (its fragments count from the command's start).
    at: usize,
    /// Bytes of the current command handed to the flow.
    message: usize,
    /// The flow is taking a literal.
    literal: bool,
    logged_in: bool,
    budget: Budget,
    /// The budget the current command holds.
    held: Option<OwnedSemaphorePermit>,
    /// The largest command handed on since the flow was last renewed.
    largest: usize,
    /// The BYE once given: nothing more goes to the flow, even when the session's closing was
    /// interrupted (IDLE waits on other things at the same time).
    closed: Option<Status<'static>>,
}

impl Gate {
    pub fn new(budget: Budget) -> Gate {
        Gate {
            frame: Fragmentizer::new(0),
            raw: VecDeque::new(),
            framed: 0,
            at: 0,
            message: 0,
            literal: false,
            logged_in: false,
            budget,
            held: None,
            largest: 0,
            closed: None,
        }
    }

    /// The session logged in: commands may be large from the next one on.
    pub fn logged_in(&mut self) {
        self.logged_in = true;
    }

    /// Bytes from the client.
    pub fn take(&mut self, bytes: &[u8]) {
        self.raw.extend(bytes);
        self.frame.enqueue_bytes(bytes);
    }

    /// Whether a large command went through the flow since it was last renewed, and the gate
    /// is between commands, so a fresh flow can take over (the old one keeps the memory of its
    /// largest command until dropped). Answers `true` once per such command.
    pub fn renew_due(&mut self) -> bool {
        let due = self.between_commands() && self.largest > FREE;
        if due {
            self.largest = 0;
        }
        due
    }

    /// Output is about to reach the client: when no command is being taken in, the last one's
    /// share of the budget comes back now, before the client can read its answer and send the
    /// next (otherwise another session could be refused for budget this one no longer needs).
    pub fn settle(&mut self) {
        if self.between_commands() {
            self.held = None;
        }
    }

    fn between_commands(&self) -> bool {
        self.message == 0 && !self.literal && self.at == 0
    }

    /// Hands the flow its next bytes, once it has taken all it was given before (and so the
    /// session answered the command before: called when the flow needs input).
    pub fn pump(&mut self, flow: &mut Server) -> Pumped {
        let pumped = match &self.closed {
            Some(bye) => Pumped::Close(bye.clone()),
            None => self.next(flow),
        };
        if let Pumped::Close(bye) = &pumped {
            self.closed = Some(bye.clone());
        }
        pumped
    }

    fn next(&mut self, flow: &mut Server) -> Pumped {
        if self.between_commands() {
            // The session is done with the last command: its share of the budget comes back.
            self.held = None;
        }
        let Some(fragment) = self.frame.progress() else { return self.starved(flow) };
        let end = fragment.range().end;
        self.framed += end - self.at;
        self.at = end;
        match fragment {
            FragmentInfo::Literal { .. } => {
                self.literal = false;
                self.pass(flow);
                Pumped::Fed
            }
            FragmentInfo::Line { announcement, .. } => self.line(flow, announcement),
        }
    }

    /// `frame` has parsed everything there is: the bytes of a literal go on at once, those of a
    /// line wait for its end (up to the longest line).
    fn starved(&mut self, flow: &mut Server) -> Pumped {
        self.at += self.raw.len() - self.framed;
        self.framed = self.raw.len();
        if self.literal && self.framed > 0 {
            self.pass(flow);
            return Pumped::Fed;
        }
        if !self.literal && self.framed > self.line_cap() {
            return Pumped::Close(bye(Code::TooBig, self.too_long()));
        }
        Pumped::Starved
    }

    /// A whole line: the end of a command, or the announcement of a literal.
    fn line(&mut self, flow: &mut Server, announcement: Option<LiteralAnnouncement>) -> Pumped {
        let len = self.framed;
        if len > self.line_cap() {
            return Pumped::Close(bye(Code::TooBig, self.too_long()));
        }
        let Some(literal) = announcement else {
            self.pass(flow);
            self.largest = self.largest.max(self.message);
            (self.message, self.at) = (0, 0);
            return Pumped::Fed;
        };
        let total = self.message + len + literal.length as usize;
        let Some((code, text)) = self.refusal(literal.length, total) else {
            self.pass(flow);
            self.literal = true;
            return Pumped::Fed;
        };
        if self.message > 0 || literal.mode == LiteralMode::NonSync {
            return Pumped::Close(bye(code, text));
        }
        let head: Vec<u8> = self.raw.iter().take(len.min(LONGEST_TAG)).copied().collect();
        let tag = tag_of(&head);
        self.raw.drain(..len);
        (self.framed, self.at) = (0, 0);
        self.frame.skip_message();
        let refused = Status::no(tag, Some(code), text).unwrap_or_else(|_| unreachable!()); // ok: constant text
        Pumped::Refused(refused)
    }

    /// Why a literal of `length` making its command `total` bytes cannot be taken, if so;
    /// when it can, the budget now covers the command.
    fn refusal(&mut self, length: u32, total: usize) -> Option<(Code<'static>, &'static str)> {
        if !self.logged_in {
            let text = "log in first: commands before login take 40 KiB at most";
            return (total > BEFORE_LOGIN).then(|| (limit_code(), text));
        }
        if length > MAX_LITERAL || total > MAX_COMMAND as usize {
            return Some((Code::TooBig, "literals are limited to 40 MiB"));
        }
        if !self.budget.can_ever_cover(total.saturating_sub(FREE)) {
            return Some((Code::TooBig, "larger than this server takes in at once"));
        }
        if !self.budget.cover(&mut self.held, total.saturating_sub(FREE)) {
            return Some((limit_code(), "too much is being received now, try again later"));
        }
        None
    }

    /// The longest the line being read may grow.
    fn line_cap(&self) -> usize {
        match self.logged_in {
            true => MAX_LINE,
            false => BEFORE_LOGIN.saturating_sub(self.message),
        }
    }

    fn too_long(&self) -> &'static str {
        match self.logged_in {
            true => "command line too long (64 KiB at most)",
            false => "log in first: commands before login take 40 KiB at most",
        }
    }

    /// Hands what `frame` has parsed on to the flow.
    fn pass(&mut self, flow: &mut Server) {
        let n = self.framed;
        let (front, back) = self.raw.as_slices();
        let first = &front[..n.min(front.len())];
        flow.enqueue_input(first);
        if n > first.len() {
            flow.enqueue_input(&back[..n - first.len()]);
        }
        self.raw.drain(..n);
        self.message += n;
        self.framed = 0;
    }
}

fn bye(code: Code<'static>, text: &'static str) -> Status<'static> {
    Status::bye(Some(code), text).unwrap_or_else(|_| unreachable!()) // ok: constant text
}

/// The tag a malformed command started with, when it has a valid one.
pub(super) fn tag_of(bytes: &[u8]) -> Option<Tag<'static>> {
    let end = bytes.iter().position(|b| *b == b' ' || *b == b'\r' || *b == b'\n')?;
    let text = std::str::from_utf8(&bytes[..end]).ok()?;
    Tag::try_from(text.to_owned()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use imap_next::server::Event;
    use imap_next::{Interrupt, Io};
    use imap_types::response::Greeting;

    /// A flow behind a gate, driven as `Conn` drives it: every command answered OK.
    struct Wire {
        gate: Gate,
        flow: Server,
        /// The commands the flow gave, by name.
        commands: Vec<String>,
        closed: bool,
    }

    impl Wire {
        fn new(budget: &Budget) -> Wire {
            let greeting = Greeting::ok(None, "hi").unwrap_or_else(|_| unreachable!()); // ok: constant text
            let flow = Server::new(super::super::conn::options(), greeting);
            Wire { gate: Gate::new(budget.clone()), flow, commands: Vec::new(), closed: false }
        }

        /// Sends `input` in pieces of `chunk` bytes; the server's output meanwhile.
        fn send(&mut self, input: &[u8], chunk: usize) -> String {
            let mut out = String::new();
            let mut pieces = input.chunks(chunk);
            while !self.closed {
                match self.flow.next() {
                    Ok(Event::CommandReceived { command }) => {
                        self.commands.push(command.body.name().to_owned());
                        let done = Status::ok(Some(command.tag), None, "done");
                        self.flow.enqueue_status(done.unwrap_or_else(|_| unreachable!())); // ok: constant text
                    }
                    Ok(_) => {}
                    Err(Interrupt::Io(Io::Output(bytes))) => {
                        out.push_str(&String::from_utf8_lossy(&bytes));
                    }
                    Err(Interrupt::Io(Io::NeedMoreInput)) => match self.gate.pump(&mut self.flow) {
                        Pumped::Fed => {}
                        Pumped::Refused(refusal) => {
                            self.flow.enqueue_status(refusal);
                        }
                        Pumped::Close(bye) => {
                            self.flow.enqueue_status(bye);
                            while let Err(Interrupt::Io(Io::Output(b))) = self.flow.next() {
                                out.push_str(&String::from_utf8_lossy(&b));
                            }
                            self.closed = true;
                        }
                        Pumped::Starved => match pieces.next() {
                            Some(piece) => self.gate.take(piece),
                            None => break,
                        },
                    },
                    Err(Interrupt::Error(e)) => panic!("the flow refused {e:?}"),
                }
            }
            out
        }
    }

    #[test]
    fn commands_reach_the_flow_whole_however_the_bytes_arrive() {
        let budget = budget(1 << 20);
        let input = b"a1 LOGIN {5}\r\nalice {6+}\r\nsecret\r\na2 NOOP\r\na3 CAPABILITY\r\n";
        for chunk in [1, 2, 3, 7, 64] {
            let mut wire = Wire::new(&budget);
            let out = wire.send(input, chunk);
            assert_eq!(wire.commands, ["LOGIN", "NOOP", "CAPABILITY"], "{chunk}: {out}");
            assert!(out.contains("a3 OK done") && !wire.closed, "{chunk}: {out}");
        }
    }

    #[test]
    fn before_login_a_command_takes_40_kib_at_most() {
        let budget = budget(1 << 20);
        // A synchronizing literal past it: refused before the client sends it; the session
        // goes on.
        let mut wire = Wire::new(&budget);
        let out = wire.send(b"a1 LOGIN {425000}\r\na2 NOOP\r\n", 5);
        assert!(out.contains("a1 NO [LIMIT] log in first") && !out.contains("+ "), "{out}");
        assert_eq!(wire.commands, ["NOOP"]);
        // Within it, across two literals: taken.
        let mut wire = Wire::new(&budget);
        let ok = format!(
            "a1 LOGIN {{20000}}\r\n{} {{20000}}\r\n{}\r\n",
            "u".repeat(20000),
            "p".repeat(20000)
        );
        let out = wire.send(ok.as_bytes(), 512);
        assert_eq!(wire.commands, ["LOGIN"], "{out}");
        // Past it with the second literal, or with LITERAL+, or with a long line: BYE.
        for bad in [
            format!("a1 LOGIN {{20000}}\r\n{} {{25000}}\r\n", "u".repeat(20000)),
            "a1 LOGIN {425000+}\r\n".to_owned(),
            format!("a1 LOGIN {}", "u".repeat(425000)),
        ] {
            let mut wire = Wire::new(&budget);
            let out = wire.send(bad.as_bytes(), 1000);
            assert!(wire.closed && out.contains("* BYE ["), "{out}");
            assert!(wire.commands.is_empty());
            wire.gate.take(b"\r\na2 NOOP\r\n");
            let again = wire.gate.pump(&mut wire.flow);
            assert!(matches!(again, Pumped::Close(_)), "nothing passes once closed");
        }
    }

    #[test]
    fn after_login_large_literals_share_one_budget() {
        let budget = budget(300 * 1024);
        let (mut a, mut b) = (Wire::new(&budget), Wire::new(&budget));
        a.gate.logged_in();
        b.gate.logged_in();
        // A's 200 KiB literal takes 136 KiB of the 300, and A sends only half of it.
        let big = vec![b'x'; 200 * 1024];
        let out = a.send(b"a1 APPEND INBOX {204800}\r\n", 1024);
        assert!(out.contains("+ "), "{out}");
        a.send(&big[..100 * 1024], 4096);
        // B's 250 KiB would pass the budget: refused; 150 KiB fits.
        let out = b.send(b"b1 APPEND INBOX {256000}\r\nb2 NOOP\r\n", 1024);
        assert!(out.contains("b1 NO [LIMIT]") && out.contains("b2 OK"), "{out}");
        let out = b.send(b"b3 APPEND INBOX {153600}\r\n", 1024);
        assert!(out.contains("+ "), "{out}");
        b.send(&big[..150 * 1024], 4096);
        b.send(b"\r\n", 2);
        // A finishes; once its command is answered its share is back.
        a.send(&big[100 * 1024..], 4096);
        let out = a.send(b"\r\na2 NOOP\r\n", 64);
        assert!(out.contains("a1 OK") && out.contains("a2 OK"), "{out}");
        let out = b.send(b"b4 APPEND INBOX {256000}\r\n", 1024);
        assert!(out.contains("+ "), "{out}");
        // More than the whole budget can never go through.
        let mut c = Wire::new(&budget);
        c.gate.logged_in();
        let out = c.send(b"c1 APPEND INBOX {400000}\r\n", 1024);
        assert!(out.contains("c1 NO [TOOBIG]"), "{out}");
        let out = c.send(b"c2 APPEND INBOX {400000+}\r\n", 1024);
        assert!(c.closed && out.contains("* BYE [TOOBIG]"), "{out}");
    }
}
