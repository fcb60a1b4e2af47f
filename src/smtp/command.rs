//! The command phase: commands out of a byte stream as a network delivers it (smtp-proto's
//! parser, the rest of an overlong line skipped), the reply each syntax error gets, and what
//! each command does to the mail transaction.

use std::borrow::Cow;

use smtp_proto::request::receiver::RequestReceiver;
use smtp_proto::{Error as ProtoError, Request};

use super::auth::Sasl;
use super::replies::TOO_BIG;
use crate::config::Smtp;

/// Commands out of a byte stream: smtp-proto's parser, plus skipping the remainder of a line
/// that was too long (it must not be read as commands of its own).
#[derive(Default)]
pub struct CommandReader {
    receiver: RequestReceiver,
    skip_line: bool,
}

impl CommandReader {
    /// The next command or syntax error in `bytes`; `None` when more input is needed, all of
    /// `bytes` then being used up.
    pub fn next<'this, 'bytes, 'out>(
        &'this mut self,
        bytes: &mut std::slice::Iter<'bytes, u8>,
    ) -> Option<Result<Request<Cow<'out, str>>, ProtoError>>
    where
        'this: 'out,
        'bytes: 'out,
    {
        if self.skip_line {
            let rest = bytes.as_slice();
            let Some(at) = rest.iter().position(|b| *b == b'\n') else {
                *bytes = [].iter();
                return None;
            };
            *bytes = rest[at + 1..].iter();
            self.skip_line = false;
        }
        match self.receiver.ingest(bytes) {
            Err(ProtoError::NeedsMoreData { .. }) => None,
            Err(e) => {
                self.skip_line = matches!(e, ProtoError::ResponseTooLong);
                Some(Err(e))
            }
            Ok(request) => Some(Ok(request)),
        }
    }
}

pub fn syntax_reply(e: &ProtoError) -> String {
    match e {
        ProtoError::UnknownCommand => "500 5.5.2 command not recognized\r\n".into(),
        ProtoError::ResponseTooLong => "500 5.5.2 line too long\r\n".into(),
        ProtoError::InvalidSenderAddress => "501 5.1.7 invalid sender address\r\n".into(),
        ProtoError::InvalidRecipientAddress => "501 5.1.3 invalid recipient address\r\n".into(),
        ProtoError::SyntaxError { syntax } => format!("501 5.5.4 syntax: {syntax}\r\n"),
        ProtoError::InvalidParameter { param } => {
            format!("501 5.5.4 invalid parameter {param}\r\n")
        }
        ProtoError::UnsupportedParameter { param } => {
            format!(
                "504 5.5.4 unsupported parameter {}\r\n",
                param.chars().take(40).collect::<String>()
            )
        }
        _ => "500 5.5.2 syntax error\r\n".into(),
    }
}

/// The mail transaction being built, and the greeting it is built under.
#[derive(Default)]
pub(super) struct Transaction {
    pub(super) helo: Option<String>,
    pub(super) from: Option<String>,
    pub(super) recipients: Vec<String>,
    /// The message size the sender declared (SIZE=), 0 when it did not.
    pub(super) size: usize,
    /// The sender declared SMTPUTF8 (RFC 6531): UTF-8 addresses may follow.
    pub(super) utf8: bool,
}

impl Transaction {
    /// Ends the mail transaction; the greeting stays.
    pub(super) fn reset(&mut self) {
        self.from = None;
        self.recipients.clear();
        self.size = 0;
        self.utf8 = false;
    }
}

/// STARTTLS is offered only on a plain connection that can be upgraded, and only once.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Tls {
    Unavailable,
    Offered,
    Active,
}

/// Which rules a session follows: one protocol, two policies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// The MX: anyone may hand over mail for our mailboxes; there is no login.
    Mx,
    /// Submission (RFC 6409): a mailbox that logged in (over TLS only) sends as itself, to
    /// anyone.
    Submission,
}

/// What the session knows that a command's answer depends on.
pub(super) struct Who<'a> {
    pub(super) tls: Tls,
    pub(super) policy: Policy,
    /// The mailbox logged in as.
    pub(super) login: Option<&'a str>,
}

/// Where a command leads.
pub(super) enum Step {
    Reply(String),
    /// Counts against `smtp.max_errors`.
    Error(String),
    /// RCPT TO passed the session's own checks; the mail system decides.
    Check(String),
    Data,
    StartTls,
    /// AUTH: start the exchange, with the initial response (empty when none).
    Auth(Sasl, String),
    Quit,
}

/// What one command does to the transaction; the recipient itself is judged by the caller's
/// mail system, through the session.
pub(super) fn command(
    cfg: &Smtp,
    who: &Who<'_>,
    t: &mut Transaction,
    request: Request<Cow<'_, str>>,
) -> Step {
    let host = cfg.host();
    match request {
        Request::Ehlo { host: client } => {
            *t = Transaction { helo: Some(client.into_owned()), ..Transaction::default() };
            Step::Reply(ehlo(cfg, who))
        }
        Request::Helo { host: client } => {
            *t = Transaction { helo: Some(client.into_owned()), ..Transaction::default() };
            Step::Reply(format!("250 {host}\r\n"))
        }
        Request::Lhlo { .. } => Step::Error("500 5.5.1 this is SMTP, not LMTP\r\n".into()),
        Request::Mail { from } => {
            if t.helo.is_none() {
                return Step::Error("503 5.5.1 say EHLO first\r\n".into());
            }
            if t.from.is_some() {
                return Step::Error("503 5.5.1 a transaction is already open\r\n".into());
            }
            if from.size > cfg.max_message_size {
                return Step::Reply(TOO_BIG.into());
            }
            let utf8 = from.flags & smtp_proto::MAIL_SMTPUTF8 != 0;
            if let Some(refusal) = utf8_refusal(&from.address, utf8) {
                return refusal;
            }
            if let Some(refusal) = sender_refusal(who, &from.address) {
                return refusal;
            }
            t.from = Some(from.address.into_owned());
            t.size = from.size;
            t.utf8 = utf8;
            Step::Reply("250 2.1.0 sender ok\r\n".into())
        }
        Request::Rcpt { to } => {
            if t.from.is_none() {
                return Step::Error("503 5.5.1 MAIL first\r\n".into());
            }
            if t.recipients.len() >= cfg.max_recipients {
                return Step::Reply("452 4.5.3 too many recipients\r\n".into());
            }
            if let Some(refusal) = utf8_refusal(&to.address, t.utf8) {
                return refusal;
            }
            Step::Check(to.address.into_owned())
        }
        Request::Data => {
            if t.from.is_none() {
                Step::Error("503 5.5.1 MAIL first\r\n".into())
            } else if t.recipients.is_empty() {
                Step::Error("554 5.5.1 no valid recipients\r\n".into())
            } else {
                Step::Data
            }
        }
        Request::Rset => {
            t.reset();
            Step::Reply("250 2.0.0 reset\r\n".into())
        }
        Request::Noop { .. } => Step::Reply("250 2.0.0 ok\r\n".into()),
        Request::Vrfy { .. } => {
            Step::Reply("252 2.5.0 cannot verify, but will accept and attempt delivery\r\n".into())
        }
        Request::Quit => Step::Quit,
        Request::StartTls => match who.tls {
            Tls::Active => Step::Error("503 5.5.1 TLS is already active\r\n".into()),
            Tls::Unavailable => Step::Error("502 5.5.1 STARTTLS not available\r\n".into()),
            Tls::Offered => Step::StartTls,
        },
        Request::Auth { mechanism, initial_response } => {
            auth(who, t, mechanism, initial_response.into_owned())
        }
        Request::Bdat { .. } => Step::Error("502 5.5.1 CHUNKING is not offered\r\n".into()),
        _ => Step::Error("502 5.5.2 command not implemented\r\n".into()),
    }
}

/// The EHLO reply: STARTTLS where it can be had, AUTH only once TLS is up (submission).
fn ehlo(cfg: &Smtp, who: &Who<'_>) -> String {
    let mut reply = format!(
        "250-{} greets you\r\n250-PIPELINING\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250-SIZE {}\r\n",
        cfg.host(),
        cfg.max_message_size
    );
    if who.tls == Tls::Offered {
        reply.push_str("250-STARTTLS\r\n");
    }
    if who.policy == Policy::Submission && who.tls == Tls::Active {
        reply.push_str("250-AUTH PLAIN LOGIN\r\n");
    }
    reply.push_str("250 ENHANCEDSTATUSCODES\r\n");
    reply
}

/// RFC 6531: a UTF-8 address only in a transaction whose MAIL FROM declared SMTPUTF8 (553
/// 5.6.7 otherwise, section 3.5). smtp-proto passes bytes over 0x7F through and turns invalid
/// UTF-8 into U+FFFD: such an address, or one with control characters, is no address at all.
fn utf8_refusal(address: &str, declared: bool) -> Option<Step> {
    if address.is_ascii() {
        return None;
    }
    if address.chars().any(|c| c == '\u{FFFD}' || c.is_control()) {
        return Some(Step::Error("501 5.6.7 the address is not valid UTF-8\r\n".into()));
    }
    (!declared).then(|| {
        Step::Reply(
            "553 5.6.7 a non-ASCII address needs the SMTPUTF8 parameter on MAIL FROM\r\n".into(),
        )
    })
}

/// Submission: only the mailbox logged in as may be the sender (its domain written either way,
/// U-label or A-label).
fn sender_refusal(who: &Who<'_>, from: &str) -> Option<Step> {
    if who.policy != Policy::Submission {
        return None;
    }
    match who.login {
        None => Some(Step::Error("530 5.7.0 authentication required\r\n".into())),
        Some(login) if !crate::address::same_address(from, login) => Some(Step::Reply(format!(
            "553 5.7.1 sender must be {login}, the mailbox you logged in as\r\n"
        ))),
        Some(_) => None,
    }
}

/// AUTH: offered by submission only, and never before TLS, not even to loopback clients.
fn auth(who: &Who<'_>, t: &Transaction, mechanism: u64, initial: String) -> Step {
    if who.policy != Policy::Submission {
        return Step::Error("502 5.5.1 AUTH is not offered on this port\r\n".into());
    }
    if who.tls != Tls::Active {
        return Step::Error("538 5.7.11 encryption required: use STARTTLS first\r\n".into());
    }
    if who.login.is_some() {
        return Step::Error("503 5.5.1 already authenticated\r\n".into());
    }
    if t.from.is_some() {
        return Step::Error("503 5.5.1 not during a mail transaction\r\n".into());
    }
    match mechanism {
        smtp_proto::AUTH_PLAIN => Step::Auth(Sasl::Plain, initial),
        smtp_proto::AUTH_LOGIN => Step::Auth(Sasl::LoginUser, initial),
        _ => Step::Error("504 5.5.4 unsupported mechanism; use PLAIN or LOGIN\r\n".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `data` in pieces of `chunk` bytes; the name of each command, or the reply each
    /// syntax error gets.
    fn replies_to(data: &[u8], chunk: usize) -> Vec<String> {
        let mut reader = CommandReader::default();
        let mut out = Vec::new();
        for piece in data.chunks(chunk.max(1)) {
            let mut bytes = piece.iter();
            loop {
                match reader.next(&mut bytes) {
                    None => break,
                    Some(Ok(request)) => out.push(request.name().to_owned()),
                    Some(Err(e)) => out.push(syntax_reply(&e)),
                }
                if bytes.as_slice().is_empty() {
                    break;
                }
            }
        }
        out
    }

    #[test]
    fn commands_split_anywhere_parse_the_same() {
        let input = b"EHLO a.example\r\nMAIL FROM:<x@y.example>\r\nRCPT TO:<z@w.example>\r\nDATA\r\nQUIT\r\n";
        let whole = replies_to(input, input.len());
        assert_eq!(whole, ["EHLO", "MAIL", "RCPT", "DATA", "QUIT"]);
        for chunk in [1, 2, 3, 7, 13] {
            assert_eq!(replies_to(input, chunk), whole, "chunk size {chunk}");
        }
    }

    #[test]
    fn the_rest_of_an_overlong_line_is_not_read_as_commands() {
        let mut input = b"NOOP\r\n".to_vec();
        input.extend(std::iter::repeat_n(b'a', 9000));
        input.extend_from_slice(b" QUIT\r\nNOOP\r\n");
        let replies = replies_to(&input, 1024);
        assert_eq!(replies.len(), 3, "{replies:?}");
        assert_eq!(replies[0], "NOOP");
        assert!(replies[1].starts_with("500 5.5.2 line too long"));
        assert_eq!(replies[2], "NOOP");
    }
}
