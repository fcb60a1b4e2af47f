//! Outbound SMTP sessions on mail-send: connect, greet, EHLO, opportunistic STARTTLS (falling back
//! to plain text when the handshake fails, as RFC 3207 allows), AUTH for a relay, and one mail
//! transaction at a time with per-recipient results. Idle sessions are pooled per address so a
//! busy destination does not pay a TCP and TLS handshake per message. A mail exchanger under an
//! MTA-STS policy gets `Need::VerifiedTls`: STARTTLS with a certificate valid for its name, or
//! no session at all.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use mail_send::{Credentials, SmtpClient};
use smtp_proto::{EXT_PIPELINING, EXT_SMTP_UTF8, EXT_START_TLS, Response};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

use crate::store::Outcome;

/// How long an idle session may wait in the pool (servers drop idle clients after a while).
const IDLE: Duration = Duration::from_secs(30);
const MAX_IDLE_PER_ADDR: usize = 16;

enum Stream {
    Plain(SmtpClient<TcpStream>),
    Tls(Box<SmtpClient<TlsStream<TcpStream>>>),
}

macro_rules! on_stream {
    ($stream:expr, $c:ident => $body:expr) => {
        match $stream {
            Stream::Plain($c) => $body,
            Stream::Tls($c) => $body,
        }
    };
}

pub struct Session {
    stream: Stream,
    pipelining: bool,
    /// The server offered SMTPUTF8 (RFC 6531).
    smtputf8: bool,
    idle_since: Instant,
    /// Whether the session came from the pool (a failure may just mean the peer closed it).
    pub reused: bool,
    /// The server said 421: it closes the channel, so the session is neither reset nor pooled.
    closing: bool,
    /// The host name the server's certificate was verified for, if it was.
    verified: Option<String>,
}

/// What a session must offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need {
    /// What the pool's `TlsPolicy` asks.
    Usual,
    /// STARTTLS with a certificate that verifies for the host name (MTA-STS); never plain text.
    VerifiedTls,
}

/// A transport failure: the connection is unusable and the transaction's fate unknown.
#[derive(Debug)]
pub struct Broken(pub String);

const GREETED: &str = " greeted with ";
const POLICY: &str = "MTA-STS: ";

impl Broken {
    /// The server's reply when it refused the session at its greeting (a 421 "too busy").
    pub fn greeting(&self) -> Option<&str> {
        self.0.split_once(GREETED).map(|(_, reply)| reply)
    }

    /// Why the server cannot have the session a policy asks for (`Need::VerifiedTls`).
    pub fn policy(&self) -> Option<&str> {
        self.0.strip_prefix(POLICY)
    }
}

fn text(r: &Response<String>) -> String {
    let esc = if r.esc[0] > 0 {
        format!(" {}.{}.{}", r.esc[0], r.esc[1], r.esc[2])
    } else {
        String::new()
    };
    format!("{}{esc} {}", r.code, r.message.replace(['\r', '\n'], " ").trim())
}

fn broken(e: mail_send::Error) -> Broken {
    Broken(e.to_string())
}

/// What a reply means for the recipients it concerns.
fn classify(r: &Response<String>) -> Outcome {
    match r.code {
        200..=299 => Outcome::Delivered(text(r)),
        500..=599 => Outcome::Bounced(text(r)),
        _ => Outcome::Deferred(text(r)),
    }
}

impl Session {
    /// Whether the server takes UTF-8 addresses and headers (SMTPUTF8).
    pub fn offers_smtputf8(&self) -> bool {
        self.smtputf8
    }

    async fn cmd(&mut self, line: String) -> Result<Response<String>, Broken> {
        on_stream!(&mut self.stream, c => c.cmd(line.as_bytes()).await).map_err(broken)
    }

    async fn cmds(&mut self, lines: &[String]) -> Result<Vec<Response<String>>, Broken> {
        on_stream!(&mut self.stream, c => c.cmds(lines.iter().map(String::as_bytes)).await)
            .map_err(broken)
    }

    async fn message(&mut self, bytes: &[u8]) -> Result<Response<String>, Broken> {
        on_stream!(&mut self.stream, c => {
            c.write_message(bytes).await.map_err(|e| Broken(e.to_string()))?;
            c.read().await.map_err(broken)
        })
    }

    /// One mail transaction: every recipient comes back with an outcome, or the connection broke.
    /// `utf8`: the transaction declares SMTPUTF8 (the caller checked the server offers it).
    /// Recipients go out with their domains in A-labels, which every server understands.
    pub async fn transaction(
        &mut self,
        from: &str,
        recipients: &[String],
        message: &[u8],
        utf8: bool,
    ) -> Result<Vec<(String, Outcome)>, Broken> {
        let mut commands = Vec::with_capacity(recipients.len() + 1);
        let declared = if utf8 { " SMTPUTF8" } else { "" };
        commands.push(format!("MAIL FROM:<{from}>{declared}\r\n"));
        commands.extend(
            recipients
                .iter()
                .map(|r| format!("RCPT TO:<{}>\r\n", crate::address::envelope_form(r))),
        );
        let replies = if self.pipelining {
            self.cmds(&commands).await?
        } else {
            let mut replies = Vec::with_capacity(commands.len());
            for command in commands {
                let reply = self.cmd(command).await?;
                let refused_sender = replies.is_empty() && reply.code >= 400;
                replies.push(reply);
                if refused_sender {
                    break;
                }
            }
            replies
        };
        let Some(mail) = replies.first() else {
            return Err(Broken("no reply to MAIL FROM".into()));
        };
        self.closing = replies.iter().any(|r| r.code == 421);
        if mail.code >= 400 {
            let outcome = classify(mail);
            self.reset().await?;
            return Ok(recipients.iter().map(|r| (r.clone(), outcome.clone())).collect());
        }
        let mut results = Vec::with_capacity(recipients.len());
        let mut accepted = Vec::new();
        for (i, recipient) in recipients.iter().enumerate() {
            match replies.get(i + 1) {
                Some(r) if r.code < 400 => accepted.push(recipient.clone()),
                Some(r) => results.push((recipient.clone(), classify(r))),
                None => return Err(Broken("missing RCPT reply".into())),
            }
        }
        if accepted.is_empty() {
            self.reset().await?;
            return Ok(results);
        }
        let go = self.cmd("DATA\r\n".into()).await?;
        let outcome = if go.code == 354 {
            let done = self.message(message).await?;
            self.closing = done.code == 421;
            classify(&done)
        } else {
            self.closing = go.code == 421;
            let outcome = classify(&go);
            self.reset().await?;
            outcome
        };
        results.extend(accepted.into_iter().map(|r| (r, outcome.clone())));
        Ok(results)
    }

    async fn reset(&mut self) -> Result<(), Broken> {
        if self.closing {
            return Ok(());
        }
        self.cmd("RSET\r\n".into()).await.map(|_| ())
    }
}

/// How the pool's sessions use TLS.
pub enum TlsPolicy {
    /// MX hosts: STARTTLS when offered, certificates unchecked, plain text when the handshake
    /// fails. Without DANE or MTA-STS an MX cannot be authenticated, and refusing would only
    /// send the mail in clear text elsewhere; this protects against passive eavesdropping.
    Opportunistic,
    /// A configured relay: the certificate is verified (against `ca`, a PEM file, or the
    /// system's trust store) and a failed handshake never falls back to plain text, since the
    /// session carries our credentials.
    Verified { ca: Option<std::path::PathBuf> },
}

/// A TLS client configuration that verifies certificates against `ca` or the system's roots.
fn verifying_connector(ca: Option<&std::path::Path>) -> Result<TlsConnector, String> {
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let Some(path) = ca else {
        return mail_send::smtp::tls::build_tls_connector(false);
    };
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("relay CA file {}: {e}", path.display()))?;
    for cert in certs {
        let cert = cert.map_err(|e| format!("relay CA file {}: {e}", path.display()))?;
        roots.add(cert).map_err(|e| format!("relay CA file {}: {e}", path.display()))?;
    }
    let config =
        rustls::ClientConfig::builder().with_root_certificates(roots).with_no_client_auth();
    Ok(TlsConnector::from(std::sync::Arc::new(config)))
}

pub struct Pool {
    idle: Mutex<HashMap<SocketAddr, Vec<Session>>>,
    tls: Option<TlsConnector>,
    /// The verifier of `Need::VerifiedTls` sessions (see `mta_sts::tls`).
    verifier: Option<TlsConnector>,
    /// Whether a failed TLS handshake may be retried in plain text.
    fallback: bool,
    helo: String,
    connect_timeout: Duration,
    command_timeout: Duration,
    credentials: Option<Credentials<String>>,
}

impl Pool {
    pub fn new(
        helo: String,
        connect_timeout: Duration,
        command_timeout: Duration,
        credentials: Option<Credentials<String>>,
        policy: TlsPolicy,
        verifier: Option<TlsConnector>,
    ) -> Pool {
        let (tls, fallback) = match &policy {
            TlsPolicy::Opportunistic => (mail_send::smtp::tls::build_tls_connector(true), true),
            TlsPolicy::Verified { ca } => (verifying_connector(ca.as_deref()), false),
        };
        let tls = tls.map_err(|e| tracing::error!(error = %e, "outbound TLS unavailable")).ok();
        Pool {
            idle: Mutex::new(HashMap::new()),
            tls,
            verifier,
            fallback,
            helo,
            connect_timeout,
            command_timeout,
            credentials,
        }
    }

    /// A pooled session to `addr` that meets `need`, or a new one.
    pub async fn session(
        &self,
        addr: SocketAddr,
        host: &str,
        need: Need,
    ) -> Result<Session, Broken> {
        if let Some(mut s) = self.take(addr, need, host) {
            s.reused = true;
            return Ok(s);
        }
        if need == Need::VerifiedTls {
            return self.connect_verified(addr, host).await;
        }
        match self.connect(addr, host, true).await {
            Err(Broken(why)) if self.fallback && why.starts_with("TLS") => {
                self.connect(addr, host, false).await
            }
            other => other,
        }
    }

    pub fn put_back(&self, addr: SocketAddr, mut session: Session) {
        if session.closing {
            return;
        }
        session.idle_since = Instant::now();
        session.reused = false;
        if let Ok(mut idle) = self.idle.lock() {
            let list = idle.entry(addr).or_default();
            if list.len() < MAX_IDLE_PER_ADDR {
                list.push(session);
            }
        }
    }

    /// Whether an idle session to `addr` waits in the pool.
    pub fn has_idle(&self, addr: SocketAddr) -> bool {
        let idle = self.idle.lock();
        idle.is_ok_and(|idle| idle.get(&addr).is_some_and(|list| !list.is_empty()))
    }

    fn take(&self, addr: SocketAddr, need: Need, host: &str) -> Option<Session> {
        let mut idle = self.idle.lock().ok()?;
        let list = idle.get_mut(&addr)?;
        list.retain(|s| s.idle_since.elapsed() < IDLE);
        let fits = |s: &Session| match need {
            Need::Usual => true,
            Need::VerifiedTls => {
                s.verified.as_deref().is_some_and(|v| v.eq_ignore_ascii_case(host))
            }
        };
        let at = list.iter().rposition(fits)?;
        Some(list.remove(at))
    }

    /// Greeting and EHLO on a new connection.
    async fn greet(
        &self,
        addr: SocketAddr,
    ) -> Result<(SmtpClient<TcpStream>, smtp_proto::EhloResponse<String>), Broken> {
        let mut client = SmtpClient::connect(addr, self.connect_timeout)
            .await
            .map_err(|e| Broken(format!("connect to {addr}: {e}")))?;
        client.timeout = self.command_timeout;
        // Commands are small writes answered by the peer: without this, Nagle's algorithm and
        // delayed ACKs add ~40 ms to every exchange.
        let _ = client.stream.set_nodelay(true);
        let greeting = client.read().await.map_err(broken)?;
        if greeting.code != 220 {
            return Err(Broken(format!("{addr}{GREETED}{}", text(&greeting))));
        }
        let ehlo = client.ehlo(&self.helo).await.map_err(broken)?;
        Ok((client, ehlo))
    }

    /// A session that an MTA-STS policy accepts: STARTTLS offered, and a certificate that
    /// verifies for `host`. Anything less is refused before any mail command is sent.
    async fn connect_verified(&self, addr: SocketAddr, host: &str) -> Result<Session, Broken> {
        let refuse = |why: String| Broken(format!("{POLICY}{why}"));
        let (client, ehlo) = self.greet(addr).await?;
        if !ehlo.has_capability(EXT_START_TLS) {
            return Err(refuse(format!("{host} does not offer STARTTLS")));
        }
        let Some(verifier) = &self.verifier else {
            return Err(refuse("no certificate verifier is available".into()));
        };
        let mut tls = client
            .start_tls(verifier, host)
            .await
            .map_err(|e| refuse(format!("no verified TLS with {host}: {e}")))?;
        let ehlo = tls.ehlo(&self.helo).await.map_err(broken)?;
        if let Some(credentials) = &self.credentials {
            tls.authenticate(credentials, &ehlo).await.map_err(broken)?;
        }
        Ok(Session {
            stream: Stream::Tls(Box::new(tls)),
            pipelining: ehlo.has_capability(EXT_PIPELINING),
            smtputf8: ehlo.has_capability(EXT_SMTP_UTF8),
            idle_since: Instant::now(),
            reused: false,
            closing: false,
            verified: Some(host.to_ascii_lowercase()),
        })
    }

    async fn connect(
        &self,
        addr: SocketAddr,
        host: &str,
        try_tls: bool,
    ) -> Result<Session, Broken> {
        let (mut client, ehlo) = self.greet(addr).await?;
        let offered = try_tls && ehlo.has_capability(EXT_START_TLS);
        if offered && self.tls.is_none() && !self.fallback {
            // No verifier could be built (the error is logged at startup): going on in plain text
            // is the downgrade that verifying the relay exists to prevent.
            return Err(Broken(format!("TLS with {addr}: no certificate verifier available")));
        }
        let tls = self.tls.as_ref().filter(|_| offered);
        let (stream, ehlo) = match tls {
            Some(connector) => {
                let mut tls = client
                    .start_tls(connector, host)
                    .await
                    .map_err(|e| Broken(format!("TLS with {addr}: {e}")))?;
                let ehlo = tls.ehlo(&self.helo).await.map_err(broken)?;
                if let Some(credentials) = &self.credentials {
                    tls.authenticate(credentials, &ehlo).await.map_err(broken)?;
                }
                (Stream::Tls(Box::new(tls)), ehlo)
            }
            None => {
                // A relay outside this machine that offers no STARTTLS may be one whose offer was
                // stripped on the way: mail for it waits rather than crossing in clear text.
                if !self.fallback && !addr.ip().is_loopback() {
                    return Err(Broken(format!("{addr} offers no STARTTLS; the relay needs TLS")));
                }
                if let Some(credentials) = &self.credentials {
                    if !addr.ip().is_loopback() {
                        return Err(Broken(format!(
                            "{addr} offers no STARTTLS; credentials are never sent in clear text"
                        )));
                    }
                    client.authenticate(credentials, &ehlo).await.map_err(broken)?;
                }
                (Stream::Plain(client), ehlo)
            }
        };
        Ok(Session {
            stream,
            pipelining: ehlo.has_capability(EXT_PIPELINING),
            smtputf8: ehlo.has_capability(EXT_SMTP_UTF8),
            idle_since: Instant::now(),
            reused: false,
            closing: false,
            verified: None,
        })
    }
}
