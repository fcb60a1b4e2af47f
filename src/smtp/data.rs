//! The DATA phase of an inbound transaction: dot-unstuffing, the end of the message, and the
//! memory the message may use.
//!
//! The message ends only at `<CR><LF>.<CR><LF>`. A bare CR or a bare LF anywhere in the data is
//! noted and the message refused at its end: servers that end DATA at other sequences (such as
//! `<LF>.<LF>` or `<CR><LF>.<CR><CR><LF>`) disagree with us about where a message stops, which is
//! what SMTP smuggling exploits to slip a second, forged message past the first server's checks.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of a line (after CRLF).
    LineStart,
    /// Inside a line.
    Text,
    /// After a CR inside a line.
    Cr,
    /// After CRLF and a dot.
    Dot,
    /// After CRLF, a dot and a CR.
    DotCr,
}

/// Reads the data of one message.
#[derive(Debug)]
pub struct DataReader {
    state: State,
    bare_line_ending: bool,
}

impl Default for DataReader {
    fn default() -> Self {
        DataReader { state: State::LineStart, bare_line_ending: false }
    }
}

impl DataReader {
    /// Consumes `bytes` up to the end of the message, appending the unstuffed data to `out`
    /// when `keep` (a message being discarded is only read through). Returns `true` at the end;
    /// the iterator then starts at the byte after it.
    pub fn ingest(
        &mut self,
        bytes: &mut std::slice::Iter<'_, u8>,
        out: &mut Vec<u8>,
        keep: bool,
    ) -> bool {
        loop {
            if self.state == State::Text {
                // The common case: copy up to the next line-ending byte in one go.
                let rest = bytes.as_slice();
                let n = rest.iter().position(|b| *b == b'\r' || *b == b'\n').unwrap_or(rest.len());
                if keep {
                    out.extend_from_slice(&rest[..n]);
                }
                *bytes = rest[n..].iter();
            }
            let Some(&b) = bytes.next() else { return false };
            if self.step(b, out, keep) {
                return true;
            }
        }
    }

    fn step(&mut self, b: u8, out: &mut Vec<u8>, keep: bool) -> bool {
        let mut push = |bytes: &[u8]| {
            if keep {
                out.extend_from_slice(bytes);
            }
        };
        self.state = match (self.state, b) {
            (State::LineStart, b'.') => State::Dot,
            (State::LineStart | State::Text, b'\r') => State::Cr,
            (State::Cr, b'\n') => {
                push(b"\r\n");
                State::LineStart
            }
            (State::Dot, b'\r') => State::DotCr,
            (State::DotCr, b'\n') => return true,
            (State::Cr | State::DotCr, other) => {
                // A CR not followed by LF: kept as data, and the message will be refused.
                self.bare_line_ending = true;
                push(b"\r");
                self.state = State::Text;
                return self.step(other, out, keep);
            }
            (_, b'\n') => {
                self.bare_line_ending = true;
                push(b"\n");
                State::Text
            }
            (_, other) => {
                push(&[other]);
                State::Text
            }
        };
        false
    }

    /// Whether the data held a CR or LF that was not part of a CRLF pair.
    pub fn bare_line_ending(&self) -> bool {
        self.bare_line_ending
    }
}

/// Bytes of message data that every session together may hold, in units of `UNIT` bytes.
#[derive(Clone)]
pub struct Budget(Arc<Semaphore>);

const UNIT: usize = 1024;
/// Memory is reserved in steps of this many units, so a message costs a few semaphore calls.
const STEP: u32 = 64;

impl Budget {
    pub fn new(bytes: usize) -> Budget {
        Budget(Arc::new(Semaphore::new(
            (bytes / UNIT).clamp(STEP as usize, Semaphore::MAX_PERMITS),
        )))
    }

    /// Makes `held` cover `len` bytes; `false` when the budget cannot, now.
    pub fn cover(&self, held: &mut Option<OwnedSemaphorePermit>, len: usize) -> bool {
        let have = held.as_ref().map_or(0, |p| p.num_permits());
        let need = len.div_ceil(UNIT);
        if need <= have {
            return true;
        }
        let more = (need - have).div_ceil(STEP as usize) * STEP as usize;
        let Ok(more) = u32::try_from(more) else { return false };
        match self.0.clone().try_acquire_many_owned(more) {
            Ok(permit) => {
                match held {
                    Some(p) => p.merge(permit),
                    None => *held = Some(permit),
                }
                true
            }
            Err(_) => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(input: &[u8], chunk: usize) -> (Option<Vec<u8>>, bool, Vec<u8>) {
        let mut reader = DataReader::default();
        let mut out = Vec::new();
        let mut rest = Vec::new();
        let mut done = false;
        for piece in input.chunks(chunk) {
            let mut bytes = piece.iter();
            if !done && reader.ingest(&mut bytes, &mut out, true) {
                done = true;
            }
            if done {
                rest.extend(bytes);
            }
        }
        (done.then_some(out), reader.bare_line_ending(), rest)
    }

    #[test]
    fn ends_only_at_crlf_dot_crlf_and_unstuffs_dots() {
        for chunk in [1, 2, 3, 5, 64] {
            let (msg, bare, rest) = read(b"Subject: a\r\n\r\n..x\r\n.\r\nQUIT\r\n", chunk);
            assert_eq!(msg.as_deref(), Some(b"Subject: a\r\n\r\n.x\r\n".as_slice()), "{chunk}");
            assert!(!bare);
            assert_eq!(rest, b"QUIT\r\n");
        }
        let (msg, ..) = read(b".\r\n", 1);
        assert_eq!(msg.as_deref(), Some(b"".as_slice()), "an empty message");
    }

    #[test]
    fn smuggling_sequences_do_not_end_the_message() {
        for attempt in [
            b"a\r\n.\r\r\nMAIL FROM:<x@y>\r\n".as_slice(),
            b"a\n.\nMAIL FROM:<x@y>\r\n",
            b"a\r\n.\nMAIL FROM:<x@y>\r\n",
            b"a\n.\r\nMAIL FROM:<x@y>\r\n",
            b"a\r.\rMAIL FROM:<x@y>\r\n",
        ] {
            let (msg, bare, _) = read(attempt, 1);
            assert_eq!(msg, None, "{:?} ended the message", String::from_utf8_lossy(attempt));
            assert!(bare, "{:?}", String::from_utf8_lossy(attempt));
            let mut whole = attempt.to_vec();
            whole.extend_from_slice(b"\r\n.\r\n");
            let (msg, bare, _) = read(&whole, 7);
            assert!(msg.is_some() && bare, "the real end is found and the message refused");
        }
    }

    #[test]
    fn a_discarded_message_is_read_through_without_keeping_it() {
        let mut reader = DataReader::default();
        let mut out = Vec::new();
        let data = b"x\r\n..y\r\n.\r\nNOOP\r\n";
        let mut bytes = data.iter();
        assert!(reader.ingest(&mut bytes, &mut out, false));
        assert!(out.is_empty());
        assert_eq!(bytes.as_slice(), b"NOOP\r\n");
    }

    #[test]
    fn the_budget_is_shared_and_given_back() {
        let budget = Budget::new(256 * 1024);
        let (mut a, mut b) = (None, None);
        assert!(budget.cover(&mut a, 200 * 1024));
        assert!(!budget.cover(&mut b, 100 * 1024), "over the shared budget");
        drop(a.take());
        assert!(budget.cover(&mut b, 100 * 1024));
        assert!(budget.cover(&mut b, 120 * 1024), "growing within a step");
    }
}
