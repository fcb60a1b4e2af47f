//! AUTH (RFC 4954) as submission offers it: the PLAIN (RFC 4616) and LOGIN exchanges as bytes,
//! the challenges, the client's base64 lines, and the credentials they carry. Whether the
//! credentials are good is the mail system's question, asked by the session.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

/// Where an exchange stands: the answer the next client line gives.
#[derive(Debug)]
pub(super) enum Sasl {
    Plain,
    LoginUser,
    LoginPassword(String),
}

/// What to do after a client line (or the AUTH command itself).
pub(super) enum Next {
    /// Write this 334 challenge, then read the client's line for the exchange.
    Ask(&'static str, Sasl),
    /// Ask the mail system about these credentials.
    Check { user: String, password: String },
    /// End the exchange with this reply.
    Fail(&'static str),
}

const CANCELLED: &str = "501 5.7.0 authentication cancelled\r\n";
const UNDECODABLE: &str = "501 5.5.2 cannot decode the response\r\n";
const MALFORMED: &str = "501 5.5.2 malformed PLAIN response\r\n";
const TOO_LONG: &str = "500 5.5.6 authentication line too long\r\n";
/// Longest client line of an exchange: base64 of a long address and password, with room.
const MAX_LINE: usize = 12 * 1024;

/// The AUTH command with its initial response (empty when none was given).
pub(super) fn begin(sasl: Sasl, initial: &str) -> Next {
    if initial.is_empty() { ask(sasl) } else { answer(sasl, initial) }
}

fn ask(sasl: Sasl) -> Next {
    match sasl {
        Sasl::Plain => Next::Ask("334 \r\n", Sasl::Plain),
        Sasl::LoginUser => Next::Ask("334 VXNlcm5hbWU6\r\n", Sasl::LoginUser),
        Sasl::LoginPassword(user) => Next::Ask("334 UGFzc3dvcmQ6\r\n", Sasl::LoginPassword(user)),
    }
}

/// The client's line (CRLF removed) in the exchange `sasl`.
pub(super) fn answer(sasl: Sasl, line: &str) -> Next {
    let line = line.trim();
    if line == "*" {
        return Next::Fail(CANCELLED);
    }
    // "=" is an empty initial response (RFC 4954 section 4).
    let decoded = if line == "=" { Ok(Vec::new()) } else { B64.decode(line) };
    let Some(text) = decoded.ok().and_then(|d| String::from_utf8(d).ok()) else {
        return Next::Fail(UNDECODABLE);
    };
    match sasl {
        Sasl::Plain => plain(&text),
        Sasl::LoginUser => ask(Sasl::LoginPassword(text)),
        Sasl::LoginPassword(user) => Next::Check { user, password: text },
    }
}

/// `authzid NUL authcid NUL password`; acting for someone else (an authzid of another name) is
/// not offered.
fn plain(text: &str) -> Next {
    let mut parts = text.split('\0');
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(authz), Some(user), Some(password), None)
            if !user.is_empty() && (authz.is_empty() || authz.eq_ignore_ascii_case(user)) =>
        {
            Next::Check { user: user.to_owned(), password: password.to_owned() }
        }
        _ => Next::Fail(MALFORMED),
    }
}

/// An exchange waiting for the client's next line, which may arrive in pieces.
#[derive(Debug)]
pub(super) struct Exchange {
    sasl: Option<Sasl>,
    line: Vec<u8>,
}

impl Exchange {
    pub(super) fn new(sasl: Sasl) -> Exchange {
        Exchange { sasl: Some(sasl), line: Vec::new() }
    }

    /// Uses `bytes` up to the end of the client's line; `None` while the line is not whole.
    pub(super) fn feed(&mut self, bytes: &mut std::slice::Iter<'_, u8>) -> Option<Next> {
        let rest = bytes.as_slice();
        let (take, done) = match rest.iter().position(|b| *b == b'\n') {
            Some(at) => (at + 1, true),
            None => (rest.len(), false),
        };
        self.line.extend_from_slice(&rest[..take]);
        *bytes = rest[take..].iter();
        if self.line.len() > MAX_LINE {
            return Some(Next::Fail(TOO_LONG));
        }
        if !done {
            return None;
        }
        let text = String::from_utf8_lossy(&self.line).into_owned();
        Some(match self.sasl.take() {
            Some(sasl) => answer(sasl, text.trim_end_matches(['\r', '\n'])),
            None => Next::Fail(CANCELLED),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b64(s: &str) -> String {
        B64.encode(s)
    }

    fn check(next: Next) -> Option<(String, String)> {
        match next {
            Next::Check { user, password } => Some((user, password)),
            _ => None,
        }
    }

    #[test]
    fn plain_and_login_yield_the_credentials() {
        let creds = Some(("a@x.test".to_owned(), "pw".to_owned()));
        assert_eq!(check(begin(Sasl::Plain, &b64("\0a@x.test\0pw"))), creds);
        assert_eq!(check(begin(Sasl::Plain, &b64("a@x.test\0a@x.test\0pw"))), creds);
        let Next::Ask(_, sasl) = begin(Sasl::LoginUser, "") else { panic!("a challenge") };
        let Next::Ask(challenge, sasl) = answer(sasl, &b64("a@x.test")) else {
            panic!("a password challenge")
        };
        assert_eq!(challenge, "334 UGFzc3dvcmQ6\r\n");
        assert_eq!(check(answer(sasl, &b64("pw"))), creds);
    }

    #[test]
    fn bad_responses_fail_the_exchange() {
        for bad in ["not base64!", "*", "="] {
            assert!(matches!(answer(Sasl::Plain, bad), Next::Fail(_)), "{bad}");
        }
        assert!(matches!(begin(Sasl::Plain, &b64("other@x.test\0a@x.test\0pw")), Next::Fail(_)));
        assert!(matches!(begin(Sasl::Plain, &b64("\0\0pw")), Next::Fail(_)));
    }

    #[test]
    fn lines_arrive_in_pieces() {
        let mut exchange = Exchange::new(Sasl::LoginPassword("a@x.test".into()));
        assert!(exchange.feed(&mut b"cH".iter()).is_none());
        let mut rest = b"c=\r\nNOOP\r\n".iter();
        let got = exchange.feed(&mut rest).and_then(check);
        assert_eq!(got, Some(("a@x.test".to_owned(), "pw".to_owned())));
        assert_eq!(rest.as_slice(), b"NOOP\r\n");
        let long = vec![b'a'; MAX_LINE + 1];
        let mut exchange = Exchange::new(Sasl::Plain);
        assert!(matches!(exchange.feed(&mut long.iter()), Some(Next::Fail(TOO_LONG))));
    }
}
