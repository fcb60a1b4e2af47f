//! A test SMTP server (a subset of RFC 5321) on plain threads: it accepts mail on 127.0.0.1,
//! records every accepted message, and answers recipients and message data the way a test asks
//! it to, so that delivery code can be driven through deferrals and rejections.
//!
//! One thread per connection; commands are read line by line from a buffered reader, so pipelined
//! commands (RFC 2920) are answered in order, and replies are flushed whenever no complete command
//! is waiting. Connections stay open across transactions until QUIT, EOF or 30 s of silence.
//! With `offer_starttls` the sink offers STARTTLS (RFC 3207) with a given certificate.

#![allow(dead_code)]

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};

/// How long a connection may stay silent before the sink drops it.
const IDLE: Duration = Duration::from_secs(30);

const EHLO_REPLY: &str = "250-sink\r\n250-PIPELINING\r\n250-8BITMIME\r\n250-SIZE 52428800\r\n\
                          250-ENHANCEDSTATUSCODES\r\n250 SMTPUTF8\r\n";

/// One message the sink accepted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Received {
    /// The reverse path without its angle brackets ("" for the null sender).
    pub mail_from: String,
    /// The recipients accepted for this transaction, as the client wrote them.
    pub rcpt_to: Vec<String>,
    /// The message with dot-stuffing undone, without the final ".CRLF".
    pub data: Vec<u8>,
    /// Index (from 0, in accept order) of the connection that carried it.
    pub connection: usize,
}

#[derive(Default)]
struct State {
    messages: Vec<Received>,
    connections: usize,
    transactions: usize,
    /// Lowercased address -> replies still to give to its RCPT commands.
    rcpt_replies: HashMap<String, VecDeque<String>>,
    data_reply: Option<String>,
    /// A greeting other than 220 for every connection (the connection closes after it).
    greeting: Option<String>,
    /// While set, a new connection waits without a greeting (a stalled receiver).
    stall: bool,
    commands: Vec<(usize, String)>,
    /// The server side of STARTTLS, when offered.
    tls: Option<Arc<rustls::ServerConfig>>,
    /// SMTPUTF8 (RFC 6531) is left out of the EHLO reply.
    no_smtputf8: bool,
}

struct Shared {
    state: Mutex<State>,
    stop: AtomicBool,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        // A panicking test thread must not break the sink for the assertions that follow.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The running sink. Dropping it stops accepting; open connections end with their clients.
pub struct Sink {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Sink {
    /// Listens on 127.0.0.1:0 and serves in background threads.
    pub fn start() -> Sink {
        Sink::start_on(Ipv4Addr::LOCALHOST, 0)
    }

    /// Listens on `ip:port` (another loopback address, on the port of a first sink: the
    /// server delivers to one MX port, so a second destination needs its own address).
    pub fn start_on(ip: Ipv4Addr, port: u16) -> Sink {
        let listener = TcpListener::bind((ip, port)).expect("smtp sink: bind");
        let addr = listener.local_addr().expect("smtp sink: local address");
        let shared =
            Arc::new(Shared { state: Mutex::new(State::default()), stop: AtomicBool::new(false) });
        let accept_shared = Arc::clone(&shared);
        thread::Builder::new()
            .name("smtp-sink".into())
            .spawn(move || accept_loop(&listener, &accept_shared))
            .expect("smtp sink: spawn the accept thread");
        Sink { addr, shared }
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The messages accepted so far, in order.
    pub fn messages(&self) -> Vec<Received> {
        self.shared.state().messages.clone()
    }

    /// Waits until at least `n` messages were accepted and returns them all; panics after
    /// `timeout` with what the sink saw instead.
    pub fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Received> {
        let deadline = Instant::now() + timeout;
        loop {
            {
                let state = self.shared.state();
                if state.messages.len() >= n {
                    return state.messages.clone();
                }
                if Instant::now() >= deadline {
                    let recent: Vec<String> = state
                        .commands
                        .iter()
                        .rev()
                        .take(30)
                        .rev()
                        .map(|(connection, line)| format!("  #{connection}: {line}"))
                        .collect();
                    panic!(
                        "smtp sink: waited {timeout:?} for {n} message(s) but got {} \
                         ({} connection(s), {} DATA transaction(s)); last commands:\n{}",
                        state.messages.len(),
                        state.connections,
                        state.transactions,
                        if recent.is_empty() { "  (none)".to_owned() } else { recent.join("\n") }
                    );
                }
            }
            thread::sleep(Duration::from_millis(10));
        }
    }

    /// TCP connections accepted so far.
    pub fn connections(&self) -> usize {
        self.shared.state().connections
    }

    /// DATA transactions whose message was received in full, whether accepted or rejected.
    pub fn transactions(&self) -> usize {
        self.shared.state().transactions
    }

    /// Every command line received so far, with the index of its connection (message data
    /// excluded).
    pub fn commands(&self) -> Vec<(usize, String)> {
        self.shared.state().commands.clone()
    }

    /// Replies for the next RCPT commands naming `address` (compared case-insensitively), one per
    /// command; once they are used up the address is accepted with "250 2.1.5 OK". Replaces any
    /// replies still queued for it. A recipient counts as accepted when its reply starts with 2.
    pub fn set_rcpt_reply(&self, address: &str, replies: Vec<&str>) {
        let queue = replies.into_iter().map(str::to_owned).collect();
        self.shared.state().rcpt_replies.insert(address.to_lowercase(), queue);
    }

    /// Offers STARTTLS from now on, with `config`'s certificate.
    pub fn offer_starttls(&self, config: Arc<rustls::ServerConfig>) {
        self.shared.state().tls = Some(config);
    }

    /// Whether EHLO offers SMTPUTF8 (it does unless told otherwise).
    pub fn offer_smtputf8(&self, on: bool) {
        self.shared.state().no_smtputf8 = !on;
    }

    /// Holds every new connection without a greeting until `stall(false)`.
    pub fn stall(&self, on: bool) {
        self.shared.state().stall = on;
    }

    /// Greets every new connection with `reply` (such as "421 4.7.0 busy") and closes it.
    pub fn set_greeting(&self, reply: &str) {
        self.shared.state().greeting = Some(reply.to_owned());
    }

    /// The final reply to the next message data (once), e.g. "554 5.6.0 rejected"; the message is
    /// recorded only if that reply starts with 2.
    pub fn set_data_reply(&self, reply: &str) {
        self.shared.state().data_reply = Some(reply.to_owned());
    }
}

impl Drop for Sink {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so that it sees the flag and closes the listener.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

fn accept_loop(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            continue;
        };
        let index = {
            let mut state = shared.state();
            state.connections += 1;
            state.connections - 1
        };
        let shared = Arc::clone(shared);
        let _ = thread::Builder::new().name(format!("smtp-sink-{index}")).spawn(move || {
            let _ = serve(stream, index, &shared);
        });
    }
}

/// The state of one SMTP session.
struct Session {
    connection: usize,
    greeted: bool,
    mail_from: Option<String>,
    rcpt_to: Vec<String>,
}

impl Session {
    fn reset(&mut self) {
        self.mail_from = None;
        self.rcpt_to.clear();
    }
}

/// A connection in plain text or TLS.
trait Io: Read + Write + Send {}
impl<T: Read + Write + Send> Io for T {}

/// Reads lines and queues replies; queued replies go out before any read that would block.
struct Conn {
    reader: BufReader<Box<dyn Io>>,
    /// The TCP socket under it all, for STARTTLS.
    raw: TcpStream,
    pending: Vec<u8>,
    tls: bool,
}

impl Conn {
    fn reply(&mut self, text: &str) {
        self.pending.extend_from_slice(text.as_bytes());
        if !text.ends_with('\n') {
            self.pending.extend_from_slice(b"\r\n");
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        if !self.pending.is_empty() {
            let stream = self.reader.get_mut();
            stream.write_all(&self.pending)?;
            stream.flush()?;
            self.pending.clear();
        }
        Ok(())
    }

    /// Answers STARTTLS and continues in TLS; false when TLS is not offered (or already on).
    fn start_tls(&mut self, shared: &Shared) -> std::io::Result<bool> {
        let config = shared.state().tls.clone();
        let Some(config) = config.filter(|_| !self.tls) else {
            return Ok(false);
        };
        self.reply("220 2.0.0 ready to start TLS");
        self.flush()?;
        let server = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
        let tls = rustls::StreamOwned::new(server, self.raw.try_clone()?);
        self.reader = BufReader::new(Box::new(tls));
        self.tls = true;
        Ok(true)
    }

    /// The next line including its line ending, or None at EOF.
    fn line(&mut self, buf: &mut Vec<u8>) -> std::io::Result<Option<()>> {
        if !self.reader.buffer().contains(&b'\n') {
            self.flush()?;
        }
        buf.clear();
        if self.reader.read_until(b'\n', buf)? == 0 || !buf.ends_with(b"\n") {
            return Ok(None);
        }
        Ok(Some(()))
    }
}

fn serve(stream: TcpStream, connection: usize, shared: &Shared) -> std::io::Result<()> {
    stream.set_read_timeout(Some(IDLE))?;
    stream.set_nodelay(true)?;
    let mut conn = Conn {
        raw: stream.try_clone()?,
        reader: BufReader::new(Box::new(stream)),
        pending: Vec::new(),
        tls: false,
    };
    let mut session = Session { connection, greeted: false, mail_from: None, rcpt_to: Vec::new() };
    while shared.state().stall {
        thread::sleep(Duration::from_millis(20));
    }
    let refusal = shared.state().greeting.clone();
    if let Some(refusal) = refusal {
        conn.reply(&refusal);
        return conn.flush();
    }
    conn.reply("220 sink ESMTP");

    let mut buf = Vec::new();
    while conn.line(&mut buf)?.is_some() {
        let line = String::from_utf8_lossy(trim_line_end(&buf)).into_owned();
        shared.state().commands.push((connection, line.clone()));
        let (verb, argument) = match line.split_once(' ') {
            Some((verb, argument)) => (verb, argument),
            None => (line.as_str(), ""),
        };
        match verb.to_ascii_uppercase().as_str() {
            "EHLO" => {
                session.greeted = true;
                session.reset();
                let mut reply = EHLO_REPLY.to_owned();
                if shared.state().no_smtputf8 {
                    reply = reply.replace(
                        "250-ENHANCEDSTATUSCODES\r\n250 SMTPUTF8\r\n",
                        "250 ENHANCEDSTATUSCODES\r\n",
                    );
                }
                if shared.state().tls.is_some() && !conn.tls {
                    reply = reply.replacen("250-sink\r\n", "250-sink\r\n250-STARTTLS\r\n", 1);
                }
                conn.reply(&reply);
            }
            "STARTTLS" => {
                if conn.start_tls(shared)? {
                    session.greeted = false;
                    session.reset();
                } else {
                    conn.reply("500 5.5.2 command not recognized");
                }
            }
            "HELO" => {
                session.greeted = true;
                session.reset();
                conn.reply("250 sink");
            }
            "MAIL" => mail(&mut conn, &mut session, argument),
            "RCPT" => rcpt(&mut conn, &mut session, argument, shared),
            "DATA" => {
                if session.mail_from.is_none() {
                    conn.reply("503 5.5.1 MAIL first");
                } else if session.rcpt_to.is_empty() {
                    conn.reply("554 5.5.1 no valid recipients");
                } else {
                    conn.reply("354 end data with <CR><LF>.<CR><LF>");
                    let Some(data) = read_data(&mut conn, &mut buf)? else {
                        return Ok(());
                    };
                    finish_data(&mut conn, &mut session, data, shared);
                }
            }
            "RSET" => {
                session.reset();
                conn.reply("250 2.0.0 OK");
            }
            "NOOP" => conn.reply("250 2.0.0 OK"),
            "QUIT" => {
                conn.reply("221 2.0.0 bye");
                return conn.flush();
            }
            _ => conn.reply("500 5.5.2 command not recognized"),
        }
    }
    Ok(())
}

fn mail(conn: &mut Conn, session: &mut Session, argument: &str) {
    if !session.greeted {
        conn.reply("503 5.5.1 EHLO or HELO first");
    } else if session.mail_from.is_some() {
        conn.reply("503 5.5.1 nested MAIL command");
    } else if let Some(path) = path_argument(argument, "FROM:") {
        session.mail_from = Some(path);
        conn.reply("250 2.1.0 OK");
    } else {
        conn.reply("501 5.5.4 syntax: MAIL FROM:<address>");
    }
}

fn rcpt(conn: &mut Conn, session: &mut Session, argument: &str, shared: &Shared) {
    if session.mail_from.is_none() {
        conn.reply("503 5.5.1 MAIL first");
        return;
    }
    let Some(address) = path_argument(argument, "TO:") else {
        conn.reply("501 5.5.4 syntax: RCPT TO:<address>");
        return;
    };
    let scripted =
        shared.state().rcpt_replies.get_mut(&address.to_lowercase()).and_then(VecDeque::pop_front);
    let reply = scripted.unwrap_or_else(|| "250 2.1.5 OK".to_owned());
    if reply.starts_with('2') {
        session.rcpt_to.push(address);
    }
    conn.reply(&reply);
}

/// The message after a 354, dot-stuffing undone; None when the client went away first.
fn read_data(conn: &mut Conn, buf: &mut Vec<u8>) -> std::io::Result<Option<Vec<u8>>> {
    let mut data = Vec::new();
    loop {
        if conn.line(buf)?.is_none() {
            return Ok(None);
        }
        if buf.as_slice() == b".\r\n" || buf.as_slice() == b".\n" {
            return Ok(Some(data));
        }
        let content = buf.strip_prefix(b".").unwrap_or(buf.as_slice());
        data.extend_from_slice(content);
    }
}

fn finish_data(conn: &mut Conn, session: &mut Session, data: Vec<u8>, shared: &Shared) {
    let reply = {
        let mut state = shared.state();
        state.transactions += 1;
        let reply = state
            .data_reply
            .take()
            .unwrap_or_else(|| format!("250 2.0.0 OK queued as {}", state.transactions));
        if reply.starts_with('2') {
            let received = Received {
                mail_from: session.mail_from.take().unwrap_or_default(),
                rcpt_to: std::mem::take(&mut session.rcpt_to),
                data,
                connection: session.connection,
            };
            state.messages.push(received);
        }
        reply
    };
    session.reset();
    conn.reply(&reply);
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The address in `FROM:<address> PARAMS` / `TO:<address> PARAMS` (keyword matched without
/// regard to case, parameters ignored), without the angle brackets.
fn path_argument(argument: &str, keyword: &str) -> Option<String> {
    let head = argument.get(..keyword.len())?;
    if !head.eq_ignore_ascii_case(keyword) {
        return None;
    }
    let rest = argument[keyword.len()..].trim_start().strip_prefix('<')?;
    let end = rest.find('>')?;
    Some(rest[..end].to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A raw SMTP client for poking at the sink.
    struct Client {
        reader: BufReader<TcpStream>,
        writer: TcpStream,
    }

    impl Client {
        fn connect(sink: &Sink) -> Client {
            let stream = TcpStream::connect(sink.addr()).expect("connect to the sink");
            stream.set_read_timeout(Some(Duration::from_secs(10))).expect("read timeout");
            let mut client = Client {
                writer: stream.try_clone().expect("clone stream"),
                reader: BufReader::new(stream),
            };
            assert_eq!(client.reply(), "220 sink ESMTP");
            client
        }

        fn send(&mut self, text: &str) {
            self.writer.write_all(text.as_bytes()).expect("write");
        }

        /// One reply, its lines joined with "\n".
        fn reply(&mut self) -> String {
            let mut lines = Vec::new();
            loop {
                let mut line = String::new();
                let n = self.reader.read_line(&mut line).expect("read reply");
                assert!(n > 0, "connection closed; reply so far {lines:?}");
                let line = line.trim_end_matches(['\r', '\n']).to_owned();
                let last = line.as_bytes().get(3) != Some(&b'-');
                lines.push(line);
                if last {
                    return lines.join("\n");
                }
            }
        }

        fn command(&mut self, line: &str) -> String {
            self.send(&format!("{line}\r\n"));
            self.reply()
        }

        fn code(&mut self, line: &str) -> String {
            self.command(line)[..3].to_owned()
        }

        fn ehlo(&mut self) {
            let reply = self.command("EHLO client.test");
            let lines: Vec<&str> = reply.lines().collect();
            assert_eq!(
                lines,
                vec![
                    "250-sink",
                    "250-PIPELINING",
                    "250-8BITMIME",
                    "250-SIZE 52428800",
                    "250-ENHANCEDSTATUSCODES",
                    "250 SMTPUTF8"
                ]
            );
        }
    }

    #[test]
    fn pipelined_transaction_with_a_refused_recipient() {
        let sink = Sink::start();
        sink.set_rcpt_reply("Bad@Example.TEST", vec!["550 5.1.1 no such user"]);
        let mut client = Client::connect(&sink);
        client.ehlo();

        client.send(
            "MAIL FROM:<sender@origin.test> BODY=8BITMIME SIZE=100\r\n\
             RCPT TO:<good@example.test>\r\n\
             RCPT TO:<bad@example.test>\r\n\
             DATA\r\n",
        );
        assert_eq!(client.reply(), "250 2.1.0 OK");
        assert_eq!(client.reply(), "250 2.1.5 OK");
        assert_eq!(client.reply(), "550 5.1.1 no such user");
        assert!(client.reply().starts_with("354 "));
        client.send("Subject: hi\r\n\r\n..leading dot\r\nbody\r\n.\r\n");
        assert!(client.reply().starts_with("250 "));

        let messages = sink.wait_for(1, Duration::from_secs(5));
        assert_eq!(
            messages,
            vec![Received {
                mail_from: "sender@origin.test".into(),
                rcpt_to: vec!["good@example.test".into()],
                data: b"Subject: hi\r\n\r\n.leading dot\r\nbody\r\n".to_vec(),
                connection: 0,
            }]
        );
        assert_eq!(client.command("QUIT"), "221 2.0.0 bye");
        let mut rest = String::new();
        assert_eq!(client.reader.read_line(&mut rest).expect("EOF"), 0);
        assert_eq!(sink.connections(), 1);
        assert_eq!(sink.transactions(), 1);
    }

    #[test]
    fn deferred_recipient_is_accepted_on_the_next_transaction_of_the_same_connection() {
        let sink = Sink::start();
        sink.set_rcpt_reply("later@example.test", vec!["451 4.3.0 try again later"]);
        let mut client = Client::connect(&sink);
        client.ehlo();

        assert_eq!(client.code("MAIL FROM:<>"), "250");
        assert_eq!(client.command("RCPT TO:<LATER@example.test>"), "451 4.3.0 try again later");
        assert_eq!(client.code("RCPT TO:<now@example.test>"), "250");
        assert_eq!(client.code("DATA"), "354");
        assert_eq!(client.code("first\r\n."), "250");

        assert_eq!(client.code("MAIL FROM:<bounce@origin.test>"), "250");
        assert_eq!(client.code("RCPT TO:<later@example.test>"), "250");
        assert_eq!(client.code("DATA"), "354");
        assert_eq!(client.code("second\r\n."), "250");

        let messages = sink.wait_for(2, Duration::from_secs(5));
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[0].mail_from, "");
        assert_eq!(messages[0].rcpt_to, vec!["now@example.test"]);
        assert_eq!(messages[0].data, b"first\r\n");
        assert_eq!(messages[1].mail_from, "bounce@origin.test");
        assert_eq!(messages[1].rcpt_to, vec!["later@example.test"]);
        assert_eq!(messages[1].data, b"second\r\n");
        assert!(messages.iter().all(|m| m.connection == 0));
        assert_eq!(sink.connections(), 1);
        assert_eq!(sink.transactions(), 2);

        let mut other = Client::connect(&sink);
        other.ehlo();
        assert_eq!(other.code("MAIL FROM:<a@origin.test>"), "250");
        assert_eq!(other.code("RCPT TO:<later@example.test>"), "250");
        assert_eq!(other.code("DATA"), "354");
        assert_eq!(other.code("third\r\n."), "250");
        let messages = sink.wait_for(3, Duration::from_secs(5));
        assert_eq!(messages[2].connection, 1);
        assert_eq!(sink.connections(), 2);
    }

    #[test]
    fn protocol_errors_and_data_rejection() {
        let sink = Sink::start();
        let mut client = Client::connect(&sink);

        assert_eq!(client.code("MAIL FROM:<a@origin.test>"), "503");
        assert_eq!(client.command("HELO client.test"), "250 sink");
        assert_eq!(client.code("RCPT TO:<b@example.test>"), "503");
        assert_eq!(client.code("DATA"), "503");
        assert_eq!(client.code("MAIL FROM:a@origin.test"), "501");
        assert_eq!(client.code("mail from:<a@origin.test>"), "250");
        assert_eq!(client.code("MAIL FROM:<a@origin.test>"), "503");
        assert_eq!(
            client.command("DATA"),
            "554 5.5.1 no valid recipients",
            "no accepted recipient yet"
        );
        assert_eq!(client.code("RCPT TO:b@example.test"), "501");
        assert_eq!(client.code("NOOP"), "250");
        assert_eq!(client.code("STARTTLS"), "500");
        assert_eq!(client.code("XYZZY"), "500");
        assert_eq!(client.code(""), "500");
        assert_eq!(client.code("RSET"), "250");
        assert_eq!(client.code("RCPT TO:<b@example.test>"), "503");

        sink.set_data_reply("554 5.6.0 rejected");
        assert_eq!(client.code("MAIL FROM:<a@origin.test>"), "250");
        assert_eq!(client.code("rcpt to:<b@example.test>"), "250");
        assert_eq!(client.code("DATA"), "354");
        assert_eq!(client.command("refused\r\n."), "554 5.6.0 rejected");
        assert_eq!(sink.transactions(), 1);
        assert!(sink.messages().is_empty());

        // The rejection applied once; the transaction state was reset by it.
        assert_eq!(client.code("RCPT TO:<b@example.test>"), "503");
        assert_eq!(client.code("MAIL FROM:<a@origin.test>"), "250");
        assert_eq!(client.code("RCPT TO:<b@example.test>"), "250");
        assert_eq!(client.code("DATA"), "354");
        assert_eq!(client.code("accepted\r\n."), "250");
        let messages = sink.wait_for(1, Duration::from_secs(5));
        assert_eq!(messages[0].data, b"accepted\r\n");
        assert_eq!(sink.transactions(), 2);
        assert!(
            sink.commands().iter().any(|(connection, line)| *connection == 0 && line == "XYZZY")
        );
    }

    #[test]
    #[should_panic(expected = "waited")]
    fn wait_for_panics_on_timeout() {
        let sink = Sink::start();
        sink.wait_for(1, Duration::from_millis(50));
    }
}
