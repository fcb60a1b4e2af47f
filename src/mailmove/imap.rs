//! The IMAP source of an import: where it is (`imaps://user@host:port/` or `imap://` with
//! STARTTLS), how its certificate is trusted, and a client session on imap-next's client over
//! tokio-rustls: one command at a time, or several in flight (`send` then `next`).

use std::path::PathBuf;
use std::time::Duration;

use imap_next::client::{Client, Event, Options};
use imap_next::imap_types::command::{Command, CommandBody};
use imap_next::imap_types::response::{Code, Data, Status, StatusBody, StatusKind};
use imap_next::stream::Stream;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long the server may stay silent while we wait for it.
const SILENCE: Duration = Duration::from_secs(120);
/// The longest line before TLS (the greeting and the STARTTLS answer).
const MAX_PLAIN_LINE: usize = 8192;

/// A password that never shows in a log line or a debug print.
#[derive(Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Password(pub String);

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("\"***\"")
    }
}

/// A running IMAP server to import from.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImapSource {
    /// `imaps://user@host:port/` or `imap://user@host:port/` (STARTTLS).
    pub url: String,
    pub password: Password,
    /// Accept any certificate (a test server's).
    #[serde(default)]
    pub insecure: bool,
    /// A PEM file of root certificates to trust besides the web's.
    #[serde(default)]
    pub ca: Option<PathBuf>,
    /// The most messages per second to fetch (`None`: as fast as one connection goes).
    #[serde(default)]
    pub rate: Option<u32>,
}

/// What went wrong talking to the source.
#[derive(Debug)]
pub enum ImapError {
    /// The URL is not one we take.
    Url(String),
    Connect(std::io::Error),
    Tls(String),
    /// The server broke the protocol or the connection.
    Protocol(String),
    /// The server said NO or BAD (or BYE) to a command.
    Refused(String),
    Timeout,
}

impl std::fmt::Display for ImapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ImapError::Url(m) => write!(f, "IMAP URL: {m}"),
            ImapError::Connect(e) => write!(f, "cannot reach the IMAP server: {e}"),
            ImapError::Tls(m) => write!(f, "TLS with the IMAP server: {m}"),
            ImapError::Protocol(m) => write!(f, "IMAP server: {m}"),
            ImapError::Refused(m) => write!(f, "the IMAP server refused: {m}"),
            ImapError::Timeout => write!(f, "the IMAP server did not answer for {SILENCE:?}"),
        }
    }
}

impl std::error::Error for ImapError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ImapError::Connect(e) => Some(e),
            _ => None,
        }
    }
}

/// The parts of a source URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    pub tls: bool,
    pub user: String,
    pub host: String,
    pub port: u16,
}

impl Endpoint {
    /// Reads `imaps://user@host[:port][/]` or `imap://...`; the user may be percent-encoded
    /// (`me%40example.com`). A password in the URL is refused: it would be in the shell's
    /// history and the process list.
    pub fn parse(url: &str) -> Result<Endpoint, ImapError> {
        let bad = |m: &str| ImapError::Url(format!("{m} (expected imaps://user@host:port/)"));
        let (tls, rest) = if let Some(rest) = url.strip_prefix("imaps://") {
            (true, rest)
        } else if let Some(rest) = url.strip_prefix("imap://") {
            (false, rest)
        } else {
            return Err(bad("the scheme must be imaps or imap"));
        };
        let authority = rest.strip_suffix('/').unwrap_or(rest);
        let (user, hostport) = authority.rsplit_once('@').ok_or_else(|| bad("no user"))?;
        if user.contains(':') {
            return Err(bad("a password does not go in the URL"));
        }
        let user = percent_decode(user).ok_or_else(|| bad("bad %-escape in the user"))?;
        let default = if tls { 993 } else { 143 };
        let (host, port) = match hostport.rsplit_once(':') {
            Some((host, port)) if !port.contains(']') => {
                (host, port.parse::<u16>().map_err(|_| bad("bad port"))?)
            }
            _ => (hostport, default),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        if user.is_empty() || host.is_empty() || host.contains(['/', '?', '#']) {
            return Err(bad("no user or host"));
        }
        Ok(Endpoint { tls, user, host: host.to_owned(), port })
    }
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// A logged-in session with the source.
pub struct Session {
    stream: Stream,
    client: Client,
    tags: u64,
}

impl Session {
    /// Connects, secures the connection and logs in.
    pub async fn open(source: &ImapSource) -> Result<Session, ImapError> {
        let at = Endpoint::parse(&source.url)?;
        let connector = connector(source)?;
        let tcp = tokio::time::timeout(SILENCE, TcpStream::connect((at.host.as_str(), at.port)))
            .await
            .map_err(|_| ImapError::Timeout)?
            .map_err(ImapError::Connect)?;
        let _ = tcp.set_nodelay(true);
        let mut tcp = tcp;
        if !at.tls {
            starttls(&mut tcp).await?;
        }
        let name = rustls::pki_types::ServerName::try_from(at.host.clone())
            .map_err(|e| ImapError::Url(format!("host {}: {e}", at.host)))?;
        let tls = tokio::time::timeout(SILENCE, connector.connect(name, tcp))
            .await
            .map_err(|_| ImapError::Timeout)?
            .map_err(|e| ImapError::Tls(e.to_string()))?;
        let mut options = Options::default();
        // A message is one literal: the largest an import takes, and room for its FETCH line.
        options.max_response_size =
            u32::try_from(super::MAX_MESSAGE + 64 * 1024).unwrap_or(u32::MAX);
        options.crlf_relaxed = true;
        // After STARTTLS there is no second greeting.
        options.discard_greeting = !at.tls;
        let mut session = Session {
            stream: Stream::tls(tokio_rustls::TlsStream::Client(tls)),
            client: Client::new(options),
            tags: 0,
        };
        if at.tls {
            match session.next().await? {
                Event::GreetingReceived { .. } => {}
                other => return Err(ImapError::Protocol(format!("no greeting but {other:?}"))),
            }
        }
        let login = CommandBody::login(at.user.clone(), source.password.0.clone())
            .map_err(|e| ImapError::Url(format!("user or password not sendable: {e:?}")))?;
        session.run(login).await?;
        Ok(session)
    }

    /// Queues a command; the tag it goes with.
    pub fn send(&mut self, body: CommandBody<'static>) -> Result<String, ImapError> {
        self.tags += 1;
        let tag = format!("e{}", self.tags);
        let command = Command::new(tag.clone(), body)
            .map_err(|e| ImapError::Protocol(format!("tag: {e:?}")))?;
        self.client.enqueue_command(command);
        Ok(tag)
    }

    /// The next thing the server says (or a command sent), bounded by `SILENCE`.
    pub async fn next(&mut self) -> Result<Event, ImapError> {
        match tokio::time::timeout(SILENCE, self.stream.next(&mut self.client)).await {
            Err(_) => Err(ImapError::Timeout),
            Ok(Ok(event)) => Ok(event),
            Ok(Err(e)) => Err(ImapError::Protocol(e.to_string())),
        }
    }

    /// Runs one command to its end: the untagged data it brought and its tagged OK.
    pub async fn run(
        &mut self,
        body: CommandBody<'static>,
    ) -> Result<(Vec<Data<'static>>, StatusBody<'static>), ImapError> {
        let (data, _, status) = self.run_all(body).await?;
        Ok((data, status))
    }

    /// `run`, with the codes of the untagged statuses too (EXAMINE's UIDVALIDITY).
    pub async fn run_with_codes(
        &mut self,
        body: CommandBody<'static>,
    ) -> Result<(Vec<Data<'static>>, Vec<Code<'static>>), ImapError> {
        let (data, mut codes, status) = self.run_all(body).await?;
        codes.extend(status.code);
        Ok((data, codes))
    }

    async fn run_all(
        &mut self,
        body: CommandBody<'static>,
    ) -> Result<(Vec<Data<'static>>, Vec<Code<'static>>, StatusBody<'static>), ImapError> {
        let tag = self.send(body)?;
        let (mut data, mut codes) = (Vec::new(), Vec::new());
        loop {
            match self.next().await? {
                Event::DataReceived { data: d } => data.push(d),
                Event::StatusReceived { status: Status::Untagged(body) } => codes.extend(body.code),
                Event::StatusReceived { status } => {
                    if let Some(body) = tagged(status, &tag)? {
                        return Ok((data, codes, body));
                    }
                }
                Event::CommandRejected { status, .. } => {
                    return Err(ImapError::Refused(format!("{status:?}")));
                }
                _ => {}
            }
        }
    }

    /// Says goodbye; the answer does not matter.
    pub async fn logout(mut self) {
        if self.send(CommandBody::Logout).is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(5), self.run_logout()).await;
        }
    }

    async fn run_logout(&mut self) {
        while let Ok(event) = self.next().await {
            if matches!(event, Event::StatusReceived { .. }) {
                break;
            }
        }
    }
}

/// A status for `tag`: its body when OK, an error when NO or BAD; `None` for another status
/// (untagged ones). A BYE is an error whatever we waited for.
pub fn tagged(
    status: Status<'static>,
    tag: &str,
) -> Result<Option<StatusBody<'static>>, ImapError> {
    match status {
        Status::Tagged(t) if t.tag.as_ref() == tag => match t.body.kind {
            StatusKind::Ok => Ok(Some(t.body)),
            _ => Err(ImapError::Refused(t.body.text.to_string())),
        },
        Status::Bye(bye) => Err(ImapError::Refused(format!("BYE {}", bye.text))),
        _ => Ok(None),
    }
}

/// How the source's certificate is checked: not at all (`--insecure`), or against the web's
/// roots and the roots in `--ca`.
fn connector(source: &ImapSource) -> Result<tokio_rustls::TlsConnector, ImapError> {
    if source.insecure {
        return mail_send::smtp::tls::build_tls_connector(true)
            .map_err(|e| ImapError::Tls(e.to_string()));
    }
    crate::mta_sts::tls::connector(source.ca.as_deref()).map_err(ImapError::Tls)
}

/// Reads the plain greeting and asks for STARTTLS, one byte at a time so that nothing past the
/// answer is read off the socket before the handshake.
async fn starttls(tcp: &mut TcpStream) -> Result<(), ImapError> {
    let greeting = plain_line(tcp).await?;
    if !greeting.starts_with("* OK") {
        return Err(ImapError::Refused(greeting));
    }
    tcp.write_all(b"s0 STARTTLS\r\n").await.map_err(ImapError::Connect)?;
    loop {
        let line = plain_line(tcp).await?;
        if let Some(answer) = line.strip_prefix("s0 ") {
            return if answer.starts_with("OK") {
                Ok(())
            } else {
                Err(ImapError::Refused(format!("STARTTLS: {answer}")))
            };
        }
    }
}

async fn plain_line(tcp: &mut TcpStream) -> Result<String, ImapError> {
    let mut line = Vec::new();
    let read = async {
        loop {
            let byte = tcp.read_u8().await.map_err(ImapError::Connect)?;
            if byte == b'\n' {
                return Ok(String::from_utf8_lossy(&line).trim_end().to_owned());
            }
            if line.len() >= MAX_PLAIN_LINE {
                return Err(ImapError::Protocol("a line over 8 KiB before TLS".into()));
            }
            line.push(byte);
        }
    };
    tokio::time::timeout(SILENCE, read).await.map_err(|_| ImapError::Timeout)?
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_give_scheme_user_host_and_port() {
        let at = Endpoint::parse("imaps://me%40example.com@imap.example.com/").expect("url"); // ok: test
        assert_eq!(
            at,
            Endpoint {
                tls: true,
                user: "me@example.com".into(),
                host: "imap.example.com".into(),
                port: 993
            }
        );
        let at = Endpoint::parse("imap://bob@127.0.0.1:1143").expect("url"); // ok: test
        assert_eq!((at.tls, at.port, at.host.as_str()), (false, 1143, "127.0.0.1"));
        let at = Endpoint::parse("imaps://a@[::1]:994/").expect("url"); // ok: test
        assert_eq!((at.host.as_str(), at.port), ("::1", 994));
        for bad in [
            "http://a@b/",
            "imaps://host/",
            "imaps://a:secret@host/",
            "imaps://a@host:99999/",
            "imaps://a%zz@host/",
        ] {
            assert!(Endpoint::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_password_never_prints() {
        let source = ImapSource {
            url: "imaps://a@b/".into(),
            password: Password("hunter2".into()),
            insecure: false,
            ca: None,
            rate: None,
        };
        assert!(!format!("{source:?}").contains("hunter2"));
    }
}
