//! One inbound SMTP session (RFC 5321), generic over the stream so the same code runs before and
//! after STARTTLS. Commands are parsed by smtp-proto; replies to pipelined commands are collected
//! and written together when the client's input is used up (RFC 2920).

use std::borrow::Cow;
use std::net::IpAddr;

use smtp_proto::request::receiver::RequestReceiver;
use smtp_proto::{Error as ProtoError, Request};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::OwnedSemaphorePermit;

use super::data::{Budget, DataReader};

use crate::state::App;

/// How a session ended.
pub enum End {
    Closed,
    /// The client asked for TLS; the caller upgrades the stream and calls `run` again.
    StartTls,
}

/// What survives a STARTTLS upgrade: only the peer. RFC 3207 discards all other state.
pub struct Peer {
    pub ip: IpAddr,
    pub tls: bool,
    pub tls_available: bool,
}

#[derive(Default)]
struct Envelope {
    helo: Option<String>,
    from: Option<String>,
    recipients: Vec<String>,
}

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
}

const TOO_BIG: &str = "552 5.3.4 message exceeds the size limit\r\n";
const NO_MEMORY: &str = "452 4.3.1 insufficient system resources, try again later\r\n";
const BARE_LINE_ENDING: &str =
    "550 5.6.11 bare CR or LF in the message; lines must end with CRLF\r\n";
/// Refused recipients answered at once; later ones wait `smtp.error_delay` each.
const FREE_REFUSALS: usize = 2;

pub async fn run<S>(stream: &mut S, app: &App, peer: &Peer, budget: &Budget) -> std::io::Result<End>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let cfg = &app.config.smtp;
    let host = cfg.host().to_owned();
    if !peer.tls {
        stream.write_all(format!("220 {host} ESMTP edgemail\r\n").as_bytes()).await?;
    }
    let mut env = Envelope::default();
    let mut mode = Mode::Commands;
    let mut reader = CommandReader::default();
    let mut errors = 0usize;
    let mut refused = 0usize;
    let mut input = vec![0u8; 16 * 1024];
    let mut out = Vec::with_capacity(1024);
    loop {
        let timeout = match mode {
            Mode::Commands => cfg.command_timeout,
            _ => cfg.data_timeout,
        };
        let n = match tokio::time::timeout(timeout, stream.read(&mut input)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Ok(End::Closed),
            Ok(Ok(n)) => n,
            Err(_) => {
                let _ = stream.write_all(b"421 4.4.2 timeout, closing connection\r\n").await;
                return Ok(End::Closed);
            }
        };
        let mut bytes = input[..n].iter();
        loop {
            match &mut mode {
                Mode::Data { reader, message, held } => {
                    let done = reader.ingest(&mut bytes, message, true);
                    let refusal = if message.len() > cfg.max_message_size {
                        Some(TOO_BIG)
                    } else if !budget.cover(held, message.len()) {
                        Some(NO_MEMORY)
                    } else {
                        None
                    };
                    if let Some(reply) = refusal {
                        if done {
                            out.extend_from_slice(reply.as_bytes());
                            mode = Mode::Commands;
                            env.from = None;
                            env.recipients.clear();
                        } else {
                            // Read the rest without keeping it, then refuse.
                            let reader = std::mem::take(reader);
                            mode = Mode::Discard { reader, reply };
                        }
                        continue;
                    }
                    if !done {
                        break;
                    }
                    let bare = reader.bare_line_ending();
                    let message = std::mem::take(message);
                    let held = held.take();
                    mode = Mode::Commands;
                    if bare {
                        errors += 1;
                        out.extend_from_slice(BARE_LINE_ENDING.as_bytes());
                    } else {
                        let reply = deliver(app, peer, &env, message).await;
                        out.extend_from_slice(reply.as_bytes());
                    }
                    drop(held);
                    env.from = None;
                    env.recipients.clear();
                }
                Mode::Discard { reader, reply } => {
                    if !reader.ingest(&mut bytes, &mut Vec::new(), false) {
                        break;
                    }
                    out.extend_from_slice(reply.as_bytes());
                    mode = Mode::Commands;
                    env.from = None;
                    env.recipients.clear();
                }
                Mode::Commands => {
                    let request = match reader.next(&mut bytes) {
                        None => break,
                        Some(Ok(request)) => request,
                        Some(Err(e)) => {
                            errors += 1;
                            out.extend_from_slice(syntax_reply(&e).as_bytes());
                            if errors >= cfg.max_errors {
                                out.extend_from_slice(
                                    b"421 4.7.0 too many errors, closing connection\r\n",
                                );
                                stream.write_all(&out).await?;
                                return Ok(End::Closed);
                            }
                            continue;
                        }
                    };
                    match command(app, peer, &host, &mut env, request).await {
                        Step::Reply(reply) => out.extend_from_slice(reply.as_bytes()),
                        Step::Refused(reply) => {
                            // Counted like bad commands and slowed down: refused recipients are
                            // how addresses are harvested.
                            refused += 1;
                            errors += 1;
                            if refused > FREE_REFUSALS {
                                tokio::time::sleep(cfg.error_delay).await;
                            }
                            out.extend_from_slice(reply.as_bytes());
                            if errors >= cfg.max_errors {
                                out.extend_from_slice(
                                    b"421 4.7.0 too many errors, closing connection\r\n",
                                );
                                stream.write_all(&out).await?;
                                return Ok(End::Closed);
                            }
                        }
                        Step::Error(reply) => {
                            errors += 1;
                            out.extend_from_slice(reply.as_bytes());
                            if errors >= cfg.max_errors {
                                out.extend_from_slice(
                                    b"421 4.7.0 too many errors, closing connection\r\n",
                                );
                                stream.write_all(&out).await?;
                                return Ok(End::Closed);
                            }
                        }
                        Step::Data => {
                            out.extend_from_slice(b"354 end data with <CR><LF>.<CR><LF>\r\n");
                            mode = Mode::Data {
                                reader: DataReader::default(),
                                message: Vec::with_capacity(8192),
                                held: None,
                            };
                        }
                        Step::StartTls => {
                            out.extend_from_slice(b"220 2.0.0 ready to start TLS\r\n");
                            stream.write_all(&out).await?;
                            // Anything pipelined after STARTTLS is discarded (RFC 3207 section 6).
                            return Ok(End::StartTls);
                        }
                        Step::Quit => {
                            out.extend_from_slice(
                                format!("221 2.0.0 {host} closing connection\r\n").as_bytes(),
                            );
                            stream.write_all(&out).await?;
                            return Ok(End::Closed);
                        }
                    }
                }
            }
        }
        if !out.is_empty() {
            stream.write_all(&out).await?;
            stream.flush().await?;
            out.clear();
        }
    }
}

/// Commands out of a byte stream: smtp-proto's parser, plus skipping the remainder of a line
/// that was too long (it must not be read as commands of its own).
#[derive(Default)]
pub struct CommandReader {
    receiver: RequestReceiver,
    skip_line: bool,
}

impl CommandReader {
    /// The next command or syntax error in `bytes`; `None` when more input is needed.
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
            let at = rest.iter().position(|b| *b == b'\n')?;
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

/// Feeds `data` to a command reader in pieces of `chunk` bytes, as a network would deliver it,
/// and returns the reply each syntax error gets (the fuzz target checks this never panics).
pub fn replies_to(data: &[u8], chunk: usize) -> Vec<String> {
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

enum Step {
    Reply(String),
    /// A recipient refused for good (5xx): counted and slowed down.
    Refused(String),
    Error(String),
    Data,
    StartTls,
    Quit,
}

fn syntax_reply(e: &ProtoError) -> String {
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

async fn command(
    app: &App,
    peer: &Peer,
    host: &str,
    env: &mut Envelope,
    request: Request<Cow<'_, str>>,
) -> Step {
    let cfg = &app.config.smtp;
    match request {
        Request::Ehlo { host: client } => {
            *env = Envelope { helo: Some(client.into_owned()), ..Envelope::default() };
            let mut reply = format!(
                "250-{host} greets you\r\n250-PIPELINING\r\n250-8BITMIME\r\n250-SMTPUTF8\r\n250-SIZE {}\r\n",
                cfg.max_message_size
            );
            if peer.tls_available && !peer.tls {
                reply.push_str("250-STARTTLS\r\n");
            }
            reply.push_str("250 ENHANCEDSTATUSCODES\r\n");
            Step::Reply(reply)
        }
        Request::Helo { host: client } => {
            *env = Envelope { helo: Some(client.into_owned()), ..Envelope::default() };
            Step::Reply(format!("250 {host}\r\n"))
        }
        Request::Lhlo { .. } => Step::Error("500 5.5.1 this is SMTP, not LMTP\r\n".into()),
        Request::Mail { from } => {
            if env.helo.is_none() {
                return Step::Error("503 5.5.1 say EHLO first\r\n".into());
            }
            if env.from.is_some() {
                return Step::Error("503 5.5.1 a transaction is already open\r\n".into());
            }
            if from.size > cfg.max_message_size {
                return Step::Reply("552 5.3.4 message exceeds the size limit\r\n".into());
            }
            env.from = Some(from.address.into_owned());
            Step::Reply("250 2.1.0 sender ok\r\n".into())
        }
        Request::Rcpt { to } => {
            if env.from.is_none() {
                return Step::Error("503 5.5.1 MAIL first\r\n".into());
            }
            if env.recipients.len() >= cfg.max_recipients {
                return Step::Reply("452 4.5.3 too many recipients\r\n".into());
            }
            let address = to.address.into_owned();
            match crate::inbound::check_recipient(app, &address).await {
                Ok(()) => {
                    if !env.recipients.iter().any(|r| r.eq_ignore_ascii_case(&address)) {
                        env.recipients.push(address);
                    }
                    Step::Reply("250 2.1.5 recipient ok\r\n".into())
                }
                Err(reply) if reply.starts_with('5') => Step::Refused(reply),
                Err(reply) => Step::Reply(reply),
            }
        }
        Request::Data => {
            if env.from.is_none() {
                Step::Error("503 5.5.1 MAIL first\r\n".into())
            } else if env.recipients.is_empty() {
                Step::Error("554 5.5.1 no valid recipients\r\n".into())
            } else {
                Step::Data
            }
        }
        Request::Rset => {
            env.from = None;
            env.recipients.clear();
            Step::Reply("250 2.0.0 reset\r\n".into())
        }
        Request::Noop { .. } => Step::Reply("250 2.0.0 ok\r\n".into()),
        Request::Vrfy { .. } => {
            Step::Reply("252 2.5.0 cannot verify, but will accept and attempt delivery\r\n".into())
        }
        Request::Quit => Step::Quit,
        Request::StartTls if peer.tls => Step::Error("503 5.5.1 TLS is already active\r\n".into()),
        Request::StartTls if !peer.tls_available => {
            Step::Error("502 5.5.1 STARTTLS not available\r\n".into())
        }
        Request::StartTls => Step::StartTls,
        Request::Auth { .. } => {
            Step::Error("502 5.5.1 AUTH is not offered on this port\r\n".into())
        }
        Request::Bdat { .. } => Step::Error("502 5.5.1 CHUNKING is not offered\r\n".into()),
        _ => Step::Error("502 5.5.2 command not implemented\r\n".into()),
    }
}

async fn deliver(app: &App, peer: &Peer, env: &Envelope, message: Vec<u8>) -> String {
    let envelope = crate::inbound::Envelope {
        ip: peer.ip,
        helo: env.helo.clone().unwrap_or_default(),
        from: env.from.clone().unwrap_or_default(),
        recipients: env.recipients.clone(),
        tls: peer.tls,
    };
    match crate::inbound::accept(app, envelope, message).await {
        Ok(id) => format!("250 2.0.0 queued as {id}\r\n"),
        Err(e) => {
            tracing::error!(error = %e, "inbound message not stored");
            "451 4.3.0 temporary failure, try again later\r\n".into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::replies_to;

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
