//! A small HTTP/1.1 client for posting events, on hyper and the rustls already in the tree. It
//! connects only to addresses the private-address guard allows, resolved at connection time;
//! follows no redirect; reads at most `MAX_RESPONSE` bytes of an answer; and keeps idle
//! connections per origin for the next post. Whatever an endpoint does (never answer, trickle,
//! redirect, send gigabytes) costs one attempt and its time limit, nothing more. MTA-STS policy
//! fetches (`get`) go through the same client, with their own trust roots.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;

use super::target::{self, Target};
use crate::dns::Dns;

/// Bytes of a response body read; the rest is dropped with the connection.
const MAX_RESPONSE: usize = 64 * 1024;
/// Idle connections kept per origin.
const MAX_IDLE: usize = 64;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// A connection: the handle requests go through, and its task, stopped when the handle is
/// dropped rather than kept in the pool (after a time-out, a capped body, an error), so an
/// endpoint that never answers cannot hold sockets open.
struct Sender {
    request: SendRequest<Full<Bytes>>,
    task: tokio::task::AbortHandle,
}

impl Drop for Sender {
    fn drop(&mut self) {
        self.task.abort();
    }
}

pub struct Client {
    dns: Arc<Dns>,
    allow_private: bool,
    tls: Option<TlsConnector>,
    idle: Mutex<HashMap<String, Vec<Sender>>>,
}

/// What a post got: the status code, or why there is none.
pub type Answer = Result<u16, String>;

/// What a GET got.
pub struct Fetched {
    pub status: u16,
    /// The Content-Type header as sent ("" when absent).
    pub content_type: String,
    pub body: Bytes,
}

impl Client {
    pub fn new(dns: Arc<Dns>, allow_private: bool) -> Client {
        let tls = mail_send::smtp::tls::build_tls_connector(false)
            .map_err(|e| tracing::warn!(error = %e, "no TLS for webhooks: https endpoints fail"))
            .ok();
        Client::with_tls(dns, allow_private, tls)
    }

    /// A client whose https connections verify servers with `tls`.
    pub fn with_tls(dns: Arc<Dns>, allow_private: bool, tls: Option<TlsConnector>) -> Client {
        Client { dns, allow_private, tls, idle: Mutex::new(HashMap::new()) }
    }

    /// GETs `target` on a connection of its own; the whole answer, body included, must arrive
    /// within `limit`, and a body over `max_body` bytes is an error. A redirect is an answer
    /// like any other: it is never followed.
    pub async fn get(
        &self,
        target: &Target,
        limit: Duration,
        max_body: usize,
    ) -> Result<Fetched, String> {
        let exchange = async {
            let mut sender = self.connect(target).await?;
            let req = hyper::Request::get(target.path.as_str())
                .header(hyper::header::HOST, target.authority.as_str())
                .header(hyper::header::USER_AGENT, concat!("edgemail/", env!("CARGO_PKG_VERSION")))
                .body(Full::new(Bytes::new()))
                .map_err(|e| format!("cannot build the request: {e}"))?;
            let res = sender
                .request
                .send_request(req)
                .await
                .map_err(|e| format!("request failed: {e}"))?;
            let content_type = res
                .headers()
                .get(hyper::header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            let status = res.status().as_u16();
            let body = read_capped(res.into_body(), max_body).await?;
            Ok(Fetched { status, content_type, body })
        };
        match tokio::time::timeout(limit, exchange).await {
            Ok(result) => result,
            Err(_) => Err(format!("no complete answer within {}s", limit.as_secs())),
        }
    }

    /// Posts `body` with `headers` to `target`; the answer must begin within `limit`.
    pub async fn post(
        &self,
        target: &Target,
        headers: &[(&'static str, String)],
        body: Bytes,
        limit: Duration,
    ) -> Answer {
        let deadline = Instant::now() + limit;
        let request = tokio::time::timeout_at(deadline, self.exchange(target, headers, body));
        let (status, response, sender) = match request.await {
            Ok(result) => result?,
            Err(_) => return Err(format!("no answer within {}s", limit.as_secs())),
        };
        // The answer counts as given; the body is read (up to the cap, within what is left of
        // the time) only so the connection can serve the next post.
        let drained = tokio::time::timeout_at(deadline, drain(response)).await;
        if matches!(drained, Ok(true)) {
            self.put_back(target, sender);
        }
        Ok(status)
    }

    async fn exchange(
        &self,
        target: &Target,
        headers: &[(&'static str, String)],
        body: Bytes,
    ) -> Result<(u16, hyper::body::Incoming, Sender), String> {
        // A pooled connection may have been closed by the peer meanwhile: one fresh retry.
        if let Some(mut sender) = self.take_idle(target)
            && sender.request.ready().await.is_ok()
        {
            let req = request(target, headers, body.clone())?;
            if let Ok(res) = sender.request.send_request(req).await {
                return Ok((res.status().as_u16(), res.into_body(), sender));
            }
        }
        let mut sender = self.connect(target).await?;
        let req = request(target, headers, body)?;
        let res =
            sender.request.send_request(req).await.map_err(|e| format!("request failed: {e}"))?;
        Ok((res.status().as_u16(), res.into_body(), sender))
    }

    fn take_idle(&self, target: &Target) -> Option<Sender> {
        let mut idle = self.idle.lock().ok()?;
        let list = idle.get_mut(&target.origin())?;
        while let Some(sender) = list.pop() {
            if !sender.request.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    fn put_back(&self, target: &Target, sender: Sender) {
        if sender.request.is_closed() {
            return;
        }
        if let Ok(mut idle) = self.idle.lock() {
            let list = idle.entry(target.origin()).or_default();
            if list.len() < MAX_IDLE {
                list.push(sender);
            }
        }
    }

    /// A new connection, to an address the guard allows as DNS answers now.
    async fn connect(&self, target: &Target) -> Result<Sender, String> {
        let ips = target::addresses(&self.dns, target, self.allow_private).await?;
        let mut last = String::from("no address");
        for ip in ips.into_iter().take(2) {
            let addr = SocketAddr::new(ip, target.port);
            let tcp = match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
                Ok(Ok(tcp)) => tcp,
                Ok(Err(e)) => {
                    last = format!("cannot connect to {addr}: {e}");
                    continue;
                }
                Err(_) => {
                    last = format!("cannot connect to {addr}: timed out");
                    continue;
                }
            };
            let _ = tcp.set_nodelay(true);
            if !target.https {
                return handshake(tcp).await;
            }
            let tls = self.tls.as_ref().ok_or("TLS is not available")?;
            let name = rustls::pki_types::ServerName::try_from(target.host.clone())
                .map_err(|_| format!("{} is not a valid TLS server name", target.host))?;
            let stream = tls
                .connect(name, tcp)
                .await
                .map_err(|e| format!("TLS handshake with {addr} failed: {e}"))?;
            return handshake(stream).await;
        }
        Err(last)
    }
}

async fn handshake<I>(io: I) -> Result<Sender, String>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (request, connection) = http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| format!("HTTP handshake failed: {e}"))?;
    let task = tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(Sender { request, task: task.abort_handle() })
}

fn request(
    target: &Target,
    headers: &[(&'static str, String)],
    body: Bytes,
) -> Result<hyper::Request<Full<Bytes>>, String> {
    let mut builder = hyper::Request::post(target.path.as_str())
        .header(hyper::header::HOST, target.authority.as_str())
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(hyper::header::USER_AGENT, concat!("edgemail/", env!("CARGO_PKG_VERSION")));
    for (name, value) in headers {
        builder = builder.header(*name, value.as_str());
    }
    builder.body(Full::new(body)).map_err(|e| format!("cannot build the request: {e}"))
}

/// Reads the body up to the cap; whether it ended there (the connection can be reused).
async fn drain(mut body: hyper::body::Incoming) -> bool {
    let mut read = 0usize;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else { return false };
        if let Some(data) = frame.data_ref() {
            read += data.len();
            if read > MAX_RESPONSE {
                return false;
            }
        }
    }
    true
}

/// The whole body, or an error once it passes `max` bytes.
async fn read_capped(mut body: hyper::body::Incoming, max: usize) -> Result<Bytes, String> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("reading the body failed: {e}"))?;
        if let Some(data) = frame.data_ref() {
            if out.len() + data.len() > max {
                return Err(format!("the body is larger than {max} bytes"));
            }
            out.extend_from_slice(data);
        }
    }
    Ok(Bytes::from(out))
}
