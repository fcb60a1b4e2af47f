//! The DATA phase of an inbound transaction: dot-unstuffing, the end of the message, and the
//! memory the message may use.
//!
//! The message ends only at `<CR><LF>.<CR><LF>`: servers that end DATA at other sequences (such
//! as `<LF>.<LF>` or `<CR><LF>.<CR><CR><LF>`) disagree with us about where a message stops, which
//! is what SMTP smuggling exploits to slip a second, forged message past the first server's
//! checks. A bare LF is still taken as the end of a line and stored as CRLF (Postfix 3.9's
//! `smtpd_forbid_bare_newline = normalize`): scripts that write `\n` line endings (Python's
//! `sendmail(msg.as_bytes())`, PHP's `mail()`, `sendmail -t`) are common and honest, and a line
//! begun after a bare LF can never end the message, so it smuggles nothing. A bare CR is noted
//! and the message refused at its end: no sender writes one on purpose and no reading of it is
//! safe.

/// Whether the line being read began after a CRLF (only such a line can end the message) or
/// after a bare LF.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum After {
    Crlf,
    BareLf,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// At the start of a line.
    LineStart(After),
    /// Inside a line.
    Text,
    /// After a CR inside a line.
    Cr,
    /// After a dot at the start of a line.
    Dot(After),
    /// After a dot at the start of a line and a CR.
    DotCr(After),
}

/// Reads the data of one message.
#[derive(Debug)]
pub struct DataReader {
    state: State,
    bare_cr: bool,
}

impl Default for DataReader {
    fn default() -> Self {
        DataReader { state: State::LineStart(After::Crlf), bare_cr: false }
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
            (State::LineStart(after), b'.') => State::Dot(after),
            (State::LineStart(_) | State::Text, b'\r') => State::Cr,
            (State::Cr, b'\n') => {
                push(b"\r\n");
                State::LineStart(After::Crlf)
            }
            (State::LineStart(_) | State::Text, b'\n') => {
                push(b"\r\n");
                State::LineStart(After::BareLf)
            }
            (State::Dot(after), b'\r') => State::DotCr(after),
            (State::DotCr(After::Crlf), b'\n') => return true,
            // A line of one dot that cannot be the end, because the line before it ended in a
            // bare LF (or it ends in one itself): kept as a line of one dot.
            (State::DotCr(After::BareLf), b'\n') => {
                push(b".\r\n");
                State::LineStart(After::Crlf)
            }
            (State::Dot(_), b'\n') => {
                push(b".\r\n");
                State::LineStart(After::BareLf)
            }
            (State::Cr | State::DotCr(_), other) => {
                // A CR not followed by LF: kept as data, and the message will be refused.
                self.bare_cr = true;
                push(b"\r");
                self.state = State::Text;
                return self.step(other, out, keep);
            }
            // A dot that starts a line with more on it is a stuffed dot: it goes.
            (_, other) => {
                push(&[other]);
                State::Text
            }
        };
        false
    }

    /// Whether the data held a CR that was not part of a CRLF pair (the message is refused).
    pub fn bare_cr(&self) -> bool {
        self.bare_cr
    }
}

/// The budget DATA draws on, one for every SMTP session (`smtp.max_inflight_bytes`): taken
/// 64 KiB at a time, so a message costs a few semaphore calls.
pub use crate::budget::Budget;

pub fn budget(bytes: usize) -> Budget {
    Budget::new(bytes, 64)
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
        (done.then_some(out), reader.bare_cr(), rest)
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
        // With a bare CR: the message is refused at its real end.
        for attempt in [b"a\r\n.\r\r\nMAIL FROM:<x@y>\r\n".as_slice(), b"a\r.\rMAIL FROM:<x@y>\r\n"]
        {
            let (msg, bare_cr, _) = read(attempt, 1);
            assert_eq!(msg, None, "{:?} ended the message", String::from_utf8_lossy(attempt));
            assert!(bare_cr, "{:?}", String::from_utf8_lossy(attempt));
            let mut whole = attempt.to_vec();
            whole.extend_from_slice(b"\r\n.\r\n");
            let (msg, bare_cr, _) = read(&whole, 7);
            assert!(msg.is_some() && bare_cr, "the real end is found and the message refused");
        }
        // With bare LFs only: the would-be end is a line of one dot inside the message, and the
        // would-be commands after it are text of the same message.
        for (attempt, kept) in [
            (b"a\n.\nMAIL FROM:<x@y>\r\n".as_slice(), b"a\r\n.\r\nMAIL FROM:<x@y>\r\n".as_slice()),
            (b"a\r\n.\nMAIL FROM:<x@y>\r\n", b"a\r\n.\r\nMAIL FROM:<x@y>\r\n"),
            (b"a\n.\r\nMAIL FROM:<x@y>\r\n", b"a\r\n.\r\nMAIL FROM:<x@y>\r\n"),
        ] {
            for chunk in [1, 2, 7] {
                let (msg, _, _) = read(attempt, chunk);
                assert_eq!(msg, None, "{:?} ended the message", String::from_utf8_lossy(attempt));
                let mut whole = attempt.to_vec();
                whole.extend_from_slice(b".\r\nNOOP\r\n");
                let (msg, bare_cr, rest) = read(&whole, chunk);
                assert_eq!(msg.as_deref(), Some(kept), "{:?}", String::from_utf8_lossy(attempt));
                assert!(!bare_cr);
                assert_eq!(rest, b"NOOP\r\n");
            }
        }
    }

    #[test]
    fn bare_lf_lines_are_stored_with_crlf_and_still_unstuffed() {
        for chunk in [1, 3, 64] {
            let data = b"Subject: a\n\nline\n..dot\n\nend\r\n.\r\n";
            let (msg, bare_cr, rest) = read(data, chunk);
            assert_eq!(
                msg.as_deref(),
                Some(b"Subject: a\r\n\r\nline\r\n.dot\r\n\r\nend\r\n".as_slice()),
                "{chunk}"
            );
            assert!(!bare_cr);
            assert!(rest.is_empty());
        }
        // Python's smtplib ends a bytes message that lacks a final CRLF with CRLF . CRLF.
        let (msg, ..) = read(b"Subject: a\n\nbody\n\r\n.\r\n", 4);
        assert_eq!(msg.as_deref(), Some(b"Subject: a\r\n\r\nbody\r\n\r\n".as_slice()));
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
        let budget = budget(256 * 1024);
        let (mut a, mut b) = (None, None);
        assert!(budget.cover(&mut a, 200 * 1024));
        assert!(!budget.cover(&mut b, 100 * 1024), "over the shared budget");
        drop(a.take());
        assert!(budget.cover(&mut b, 100 * 1024));
        assert!(budget.cover(&mut b, 120 * 1024), "growing within a step");
    }
}
