//! The bytes of one connection around imap-next's server flow: input fed to the flow through
//! the gate (`gate.rs`: what it may take, and when), the flow's output written out, over a
//! plain or a TLS stream alike. Reads are the only await that may be cancelled (IDLE waits on
//! mail at the same time), and a cancelled read loses nothing.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use imap_next::server::{Error as FlowError, Event, Options, Server};
use imap_next::{Interrupt, Io, State};
use imap_types::response::{Greeting, Status};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::server::TlsStream;

use super::gate::{Budget, Gate, MAX_COMMAND, MAX_LITERAL, Pumped, tag_of};
use crate::listener::{Presence, Waited};

/// Malformed commands in a row before the connection is dropped.
const MAX_BAD: u32 = 20;
/// The read buffer of a session in IDLE. An idling session waits for one word (DONE), often
/// for many minutes, and ten thousand of them each holding a buffer sized for commands and
/// literals would hold 160 MB doing nothing.
const READ_IDLE: usize = 1024;
/// The read buffer otherwise: an APPEND's literal read 1 KiB at a time would take sixteen
/// times the reads.
const READ_BUSY: usize = 16 * 1024;

#[derive(Debug)]
pub enum ConnError {
    Closed,
    TimedOut,
    TooManyErrors,
    /// A command past a limit that could only be refused by closing (`gate.rs`).
    Limit,
    /// The listener needed the slot of this idle session (not logged in).
    Shed,
}

impl From<std::io::Error> for ConnError {
    fn from(_: std::io::Error) -> Self {
        ConnError::Closed
    }
}

/// A client's stream, before or after TLS.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

pub struct Conn {
    pub io: Stream,
    server: Server,
    input: Vec<u8>,
    /// Events the flow gave while only output was wanted (pipelined commands).
    pending: VecDeque<Event>,
    bad_in_a_row: u32,
    gate: Gate,
    /// The flow's last event was a plain command, so it is back to waiting for commands.
    renewable: bool,
    /// The session's entry in its listener's registry, and the wait allowed under pressure.
    presence: Option<(Arc<Presence>, Duration)>,
}

/// The flow's own limits are the gate's largest after login: the gate keeps it within them.
pub(super) fn options() -> Options {
    let mut options = Options::default();
    options.max_literal_size = MAX_LITERAL;
    options.max_command_size = MAX_COMMAND;
    // Clients that end lines with a bare LF are common enough to accept.
    options.crlf_relaxed = true;
    options
}

impl Conn {
    /// A connection that starts by greeting the client.
    pub fn new(io: Stream, greeting: Greeting<'static>, budget: Budget) -> Self {
        Conn {
            io,
            server: Server::new(options(), greeting),
            input: vec![0; READ_BUSY],
            pending: VecDeque::new(),
            bad_in_a_row: 0,
            gate: Gate::new(budget),
            renewable: false,
            presence: None,
        }
    }

    /// A connection after STARTTLS: there is no second greeting, so the flow's is dropped.
    pub fn resumed(io: Stream, budget: Budget) -> Self {
        let mut conn = Conn::new(io, silent_greeting(), budget);
        while let Err(Interrupt::Io(Io::Output(_))) = conn.server.next() {}
        conn
    }

    /// Waits for the client through the listener's registry: shortened to `stressed` under
    /// pressure and shed to make room, while the session has not logged in.
    pub fn watch(&mut self, presence: Arc<Presence>, stressed: Duration) {
        self.presence = Some((presence, stressed));
    }

    /// Whether the session has logged in: from then on the gate lets large commands through,
    /// and the listener may no longer shed it.
    pub fn logged_in(&mut self, yes: bool) {
        if yes {
            self.gate.logged_in();
        }
        if let Some((presence, _)) = &self.presence {
            presence.set_sheddable(!yes);
        }
    }

    pub fn enqueue(&mut self, status: Status<'static>) {
        self.server.enqueue_status(status);
    }

    pub fn enqueue_data(&mut self, data: imap_types::response::Data<'static>) {
        self.server.enqueue_data(data);
    }

    pub fn flow(&mut self) -> &mut Server {
        &mut self.server
    }

    /// Writes out everything enqueued.
    pub async fn flush(&mut self) -> Result<(), ConnError> {
        loop {
            match self.server.next() {
                Ok(Event::GreetingSent { .. } | Event::ResponseSent { .. }) => {}
                Ok(event) => {
                    self.renewable = matches!(event, Event::CommandReceived { .. });
                    self.pending.push_back(event);
                }
                Err(Interrupt::Io(Io::Output(bytes))) => {
                    self.gate.settle();
                    self.io.write_all(&bytes).await?;
                }
                Err(Interrupt::Io(Io::NeedMoreInput)) => break,
                Err(Interrupt::Error(e)) => self.refuse(e)?,
            }
        }
        self.io.flush().await?;
        Ok(())
    }

    /// The next event from the client, writing output on the way; `limit` bounds the silence.
    pub async fn next(&mut self, limit: Duration) -> Result<Event, ConnError> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(event);
            }
            match self.server.next() {
                Ok(Event::GreetingSent { .. } | Event::ResponseSent { .. }) => {}
                Ok(event) => {
                    self.bad_in_a_row = 0;
                    self.renewable = matches!(event, Event::CommandReceived { .. });
                    return Ok(event);
                }
                Err(Interrupt::Io(Io::Output(bytes))) => {
                    self.gate.settle();
                    self.io.write_all(&bytes).await?;
                }
                Err(Interrupt::Io(Io::NeedMoreInput)) => self.more_input(limit).await?,
                Err(Interrupt::Error(e)) => self.refuse(e)?,
            }
        }
    }

    /// The flow took all it was given: the gate hands it more, or refuses, or the client is
    /// read from.
    async fn more_input(&mut self, limit: Duration) -> Result<(), ConnError> {
        if self.renewable && self.gate.renew_due() {
            // A fresh flow, so the old one's buffer, as large as the largest command, is freed.
            self.server = Server::new(options(), silent_greeting());
            while let Err(Interrupt::Io(Io::Output(_))) = self.server.next() {}
        }
        match self.gate.pump(&mut self.server) {
            Pumped::Fed => {}
            Pumped::Refused(answer) => {
                self.server.enqueue_status(answer);
                self.count_bad()?;
            }
            Pumped::Close(bye) => {
                self.server.enqueue_status(bye);
                self.flush().await?;
                return Err(ConnError::Limit);
            }
            Pumped::Starved => {
                self.io.flush().await?;
                self.read(limit).await?;
            }
        }
        Ok(())
    }

    /// One read into the flow. Cancel-safe: the bytes are fed only once read.
    pub async fn read(&mut self, limit: Duration) -> Result<(), ConnError> {
        let read = self.io.read(&mut self.input);
        let waited = match &self.presence {
            Some((presence, stressed)) => presence.wait(read, limit, *stressed).await,
            None => tokio::time::timeout(limit, read).await.map_or(Waited::TimedOut, Waited::Done),
        };
        let n = match waited {
            Waited::TimedOut => return Err(ConnError::TimedOut),
            Waited::Shed => {
                let _ =
                    self.io.write_all(b"* BYE too many connections, closing an idle one\r\n").await;
                return Err(ConnError::Shed);
            }
            Waited::Done(Err(_) | Ok(0)) => return Err(ConnError::Closed),
            Waited::Done(Ok(n)) => n,
        };
        self.gate.take(&self.input[..n]);
        Ok(())
    }

    /// Sizes the read buffer for IDLE (`true`: the client is to send only DONE) or for commands.
    /// Bytes already read are with the gate, so the buffer can be swapped at any time.
    pub fn idling(&mut self, yes: bool) {
        let size = if yes { READ_IDLE } else { READ_BUSY };
        if self.input.len() != size {
            self.input = vec![0; size];
        }
    }

    /// Answers input the flow could not take with a BAD, keeping the session.
    fn refuse(&mut self, e: FlowError) -> Result<(), ConnError> {
        self.count_bad()?;
        refuse(&mut self.server, e);
        Ok(())
    }

    fn count_bad(&mut self) -> Result<(), ConnError> {
        self.bad_in_a_row += 1;
        match self.bad_in_a_row > MAX_BAD {
            true => Err(ConnError::TooManyErrors),
            false => Ok(()),
        }
    }
}

/// The greeting of a flow whose greeting is never sent (after STARTTLS, or a renewed flow).
fn silent_greeting() -> Greeting<'static> {
    Greeting::ok(None, "resumed").unwrap_or_else(|_| unreachable!()) // ok: constant text
}

/// Enqueues the BAD for input the flow could not take.
pub(super) fn refuse(server: &mut Server, e: FlowError) {
    let (text, bytes) = match &e {
        FlowError::ExpectedCrlfGotLf { discarded_bytes } => {
            ("line must end with CRLF", discarded_bytes)
        }
        FlowError::MalformedMessage { discarded_bytes } => {
            ("unknown command or bad syntax", discarded_bytes)
        }
        // The flow has already answered the literal with a tagged BAD.
        FlowError::LiteralTooLong { .. } => return,
        FlowError::CommandTooLong { discarded_bytes } => ("command too long", discarded_bytes),
    };
    let tag = tag_of(bytes.declassify());
    if let Ok(status) = Status::bad(tag, None, text) {
        server.enqueue_status(status);
    }
}
