//! The accept loop and the per-request pipeline: route, authenticate, read the body, run the
//! handler, log one line. Connections are capped by a semaphore (back-pressure: at the cap we stop
//! accepting) and drained with a deadline on shutdown.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::{Body, Incoming};
use hyper::header::AUTHORIZATION;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use hyper_util::server::graceful::GracefulShutdown;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::body::{self, Budget, has_session};
use super::error::error_reply;
use super::idle::{self, Activity, Watched};
use super::request::Ctx;
use super::router::{Access, Router};
use crate::error::{Error, Result};
use crate::shutdown::Shutdown;
use crate::state::App;

pub async fn serve(listener: TcpListener, app: App, router: Arc<Router>, shutdown: Shutdown) {
    serve_on(listener, app, router, shutdown, None).await;
}

/// Serves the same routes over TLS (`--https`), with the certificates of `tls`.
pub async fn serve_tls(
    listener: TcpListener,
    app: App,
    router: Arc<Router>,
    shutdown: Shutdown,
    tls: Arc<rustls::ServerConfig>,
) {
    serve_on(listener, app, router, shutdown, Some(tokio_rustls::TlsAcceptor::from(tls))).await;
}

async fn serve_on(
    listener: TcpListener,
    app: App,
    router: Arc<Router>,
    mut shutdown: Shutdown,
    tls: Option<tokio_rustls::TlsAcceptor>,
) {
    let cfg = &app.config.http;
    let mut http = hyper::server::conn::http1::Builder::new();
    // The header timeout is kept per connection (`idle`), not by hyper per request.
    http.header_read_timeout(None).keep_alive(cfg.keep_alive).max_buf_size(64 * 1024);
    let limit = cfg.header_timeout;
    let auto = super::tls::builder(cfg.keep_alive);
    let mut refuse = http.clone();
    refuse.keep_alive(false);
    let connections = Arc::new(Semaphore::new(cfg.max_connections));
    let budget = Budget::new(cfg.max_buffered_bytes);
    let per_ip = Arc::new(crate::listener::PerIp::default());
    let graceful = GracefulShutdown::new();
    while let Some(crate::listener::Accepted { stream, peer, permit }) =
        crate::listener::next(&listener, &connections, &mut shutdown).await
    {
        let activity = Activity::new();
        let app = app.clone();
        let exempt = cfg.trusted_proxies.contains(&peer.ip());
        let slot =
            per_ip.enter(peer.ip(), if exempt { usize::MAX } else { cfg.max_connections_per_ip });
        let secure = tls.is_some();
        let Some(slot) = slot else {
            if secure {
                // No answer over TLS without a handshake: the connection just closes.
                continue;
            }
            let stream = TokioIo::new(Watched::new(stream, activity.clone()));
            // Over the per-address cap: one answer saying so, then the connection closes.
            let service = service_fn(move |_req| {
                let reply =
                    error_reply(&Error::RateLimited { retry_after: 1 }, &app.documentation_url);
                async move { Ok::<_, Infallible>(reply.into_response()) }
            });
            let conn = refuse.serve_connection(stream, service);
            tokio::spawn(async move {
                let _ = until_idle(conn, &activity, limit).await;
                drop(permit);
            });
            continue;
        };
        let (router, budget) = (router.clone(), budget.clone());
        let answering = activity.clone();
        let service = service_fn(move |req| {
            let on = Conn { peer, activity: answering.clone(), budget: budget.clone(), secure };
            handle(app.clone(), router.clone(), on, req)
        });
        if let Some(acceptor) = &tls {
            let conn = (acceptor.clone(), auto.clone());
            let watcher = graceful.watcher();
            tokio::spawn(async move {
                super::tls::connection(conn, stream, activity, service, (watcher, limit)).await;
                drop((permit, slot));
            });
            continue;
        }
        let stream = TokioIo::new(Watched::new(stream, activity.clone()));
        let conn = graceful.watch(http.serve_connection(stream, service));
        tokio::spawn(async move {
            if let Some(Err(e)) = until_idle(conn, &activity, limit).await {
                tracing::debug!(error = %e, %peer, "connection ended with an error");
            }
            drop((permit, slot));
        });
    }
    drop(listener);
    let grace = app.config.http.shutdown_grace;
    tokio::select! {
        _ = graceful.shutdown() => tracing::info!("http connections drained"),
        _ = tokio::time::sleep(grace) => tracing::warn!("http drain deadline passed; closing"),
    }
}

/// Runs a connection until it ends (`Some`, with how) or has been idle for `limit` (`None`:
/// dropped, which closes it).
async fn until_idle<C: std::future::Future>(
    conn: C,
    activity: &Activity,
    limit: std::time::Duration,
) -> Option<C::Output> {
    tokio::select! {
        biased;
        ended = conn => Some(ended),
        () = idle::expired(activity, limit) => None,
    }
}

/// What a request knows of its connection.
struct Conn {
    peer: SocketAddr,
    activity: Arc<Activity>,
    budget: Budget,
    /// Over TLS: answers get HSTS and `Secure` cookies.
    secure: bool,
}

async fn handle(
    app: App,
    router: Arc<Router>,
    on: Conn,
    req: Request<Incoming>,
) -> std::result::Result<Response<Full<Bytes>>, Infallible> {
    let Conn { peer, activity, budget, secure } = on;
    let started = Instant::now();
    activity.request();
    let method = req.method().clone();
    // The URI shares hyper's buffer: keeping it for the log line copies nothing.
    let uri = req.uri().clone();
    let mut hidden = None;
    let mut key_id = None;
    let mut route = crate::metrics::UNMATCHED;
    let seen = Seen { key_id: &mut key_id, hidden_path: &mut hidden, route: &mut route };
    let reply = match dispatch(&app, &router, (peer, &budget), req, seen).await {
        Ok(reply) => reply,
        Err(error) => error_reply(&error, &app.documentation_url),
    };
    let answered = Instant::now();
    let took = answered.saturating_duration_since(started);
    activity.answered(answered);
    crate::logging::request(&crate::logging::Request {
        method: method.as_str(),
        path: hidden.unwrap_or(uri.path()),
        status: reply.status.as_u16(),
        micros: took.as_micros() as u64,
        key: key_id.as_deref().unwrap_or("-"),
    });
    crate::metrics::http_request(route, reply.status.as_u16(), took);
    let mut response = reply.into_response();
    if secure {
        super::tls::secure(&mut response);
    }
    Ok(response)
}

/// What the request's log line and metrics learn while it is dispatched.
struct Seen<'a> {
    key_id: &'a mut Option<Arc<str>>,
    /// What the log shows instead of a path that must not be logged.
    hidden_path: &'a mut Option<&'static str>,
    /// The route template, the only form of the path that metrics see.
    route: &'a mut &'static str,
}

async fn dispatch(
    app: &App,
    router: &Router,
    (peer, budget): (SocketAddr, &Budget),
    req: Request<Incoming>,
    seen: Seen<'_>,
) -> Result<super::reply::Reply> {
    let Seen { key_id, hidden_path, route } = seen;
    if let Some(template) = router.link_template(req.uri().path()) {
        // Link tokens name a recipient: the log shows the route, never the token, also when the
        // request is refused before any route matches.
        *hidden_path = Some(template);
        *route = template;
    }
    let matched = router.find(req.method(), req.uri().path())?;
    *route = matched.route.path;
    let access = matched.route.access;
    if access == Access::Tool {
        let ip = app.tool_limits.client(peer, req.headers());
        app.tool_limits.check(ip)?;
    }
    let principal = match access {
        Access::Public | Access::Link | Access::Tool | Access::Page => None,
        Access::Metrics => {
            let header = req.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
            metrics_token(app, header)?;
            None
        }
        access => {
            let header = req.headers().get(AUTHORIZATION).map(|v| v.as_bytes());
            let principal = app.keys.authenticate(header).inspect_err(|e| {
                tracing::warn!(
                    target: "edgemail::auth",
                    event = "auth_failure",
                    protocol = "http",
                    peer_ip = %peer.ip(),
                    route = matched.route.path,
                    reason = %e,
                    "API key refused"
                );
            })?;
            *key_id = Some(principal.key_id.clone());
            app.api_limits.check(&principal.key_id)?;
            if access == Access::Domain {
                principal.domain()?;
            }
            Some(principal)
        }
    };
    let idempotency = super::idempotency::requested(req.method(), req.uri(), req.headers())?;
    let handler = matched.route.handler;
    let params = matched.params;
    let query = req.uri().query().map(str::to_owned);
    // Pages read their cookies; links the forwarding header of a trusted proxy (their limit is
    // per client address).
    let headers = match access {
        Access::Page | Access::Link => req.headers().clone(),
        _ => hyper::HeaderMap::new(),
    };
    // Before a key or a session is known, anyone may be sending: a small limit then.
    let known = principal.is_some() || (access == Access::Page && has_session(app, &headers));
    let (body, _held) = read_body(app, req, (matched.route.path, access), known, budget).await?;
    let scope = principal.as_ref().map(|p| p.key_id.clone());
    let ctx = Ctx { app: app.clone(), principal, params, query, body, peer, headers };
    match (idempotency, scope) {
        (Some(requested), Some(key_id)) => {
            super::idempotency::once(app, &key_id, requested, ctx, handler).await
        }
        _ => handler(ctx).await,
    }
}

/// The body of a request to `route`, within the limit that applies to it, and the bytes of the
/// budget it holds (to keep until the request is answered).
async fn read_body(
    app: &App,
    req: Request<Incoming>,
    (route, access): (&str, Access),
    known: bool,
    budget: &Budget,
) -> Result<(Bytes, body::Held)> {
    let cfg = &app.config.http;
    let limit = body_limit(route, cfg.body_limit);
    let limit = if known { limit } else { limit.min(cfg.anonymous_body_limit) };
    let json_only = !matches!(access, Access::Link | Access::Page)
        && !RAW_BODIES.contains(&route)
        && !csv_body(&req, route)?;
    // A request without a body (most GETs) needs no timer: arming one per request costs about
    // a tenth of the read path's throughput.
    if req.body().is_end_stream() {
        return body::read(req, limit, json_only, budget).await;
    }
    tokio::time::timeout(cfg.body_timeout, body::read(req, limit, json_only, budget))
        .await
        .map_err(|_| Error::RequestTimeout(cfg.body_timeout))?
}

/// Routes whose bodies may be larger than `http.body_limit`: the send API takes up to 10 MiB of
/// attachments, which base64 in JSON makes about 14 MB.
/// A CSV import takes up to 50,000 rows; an mbox upload to import up to 100 MB.
/// The dashboard's import form carries the same file in a multipart form (a few parts more).
const LARGE_BODIES: [(&str, usize); 4] = [
    ("/v1/send", 16 * 1024 * 1024),
    ("/v1/contacts/import", 16 * 1024 * 1024),
    ("/ui/contacts/import", 16 * 1024 * 1024 + 64 * 1024),
    ("/v1/mailboxes/{address}/import", 100 * 1000 * 1000),
];

/// Routes whose bodies are not JSON (an mbox upload).
const RAW_BODIES: [&str; 1] = ["/v1/mailboxes/{address}/import"];

/// Routes that take CSV (`text/csv`) instead of JSON: any other declared type is a 415.
const CSV_ROUTES: [&str; 1] = ["/v1/contacts/import"];

/// Whether `route` takes a CSV body; a CSV route refuses other declared types here.
fn csv_body(req: &Request<Incoming>, route: &str) -> Result<bool> {
    if !CSV_ROUTES.contains(&route) {
        return Ok(false);
    }
    let ct = req.headers().get(hyper::header::CONTENT_TYPE).and_then(|v| v.to_str().ok());
    let essence = ct.unwrap_or("").split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    match essence.as_str() {
        "text/csv" | "application/csv" | "" => Ok(true),
        _ => Err(Error::UnsupportedMediaType("text/csv")),
    }
}

fn body_limit(route: &str, configured: usize) -> usize {
    LARGE_BODIES
        .iter()
        .find(|(path, _)| *path == route)
        .map_or(configured, |(_, n)| (*n).max(configured))
}

/// With `metrics.token` set, the request must carry it as a bearer token.
fn metrics_token(app: &App, header: Option<&[u8]>) -> Result<()> {
    let Some(token) = &app.config.metrics.token else { return Ok(()) };
    let sent = header.and_then(|h| h.strip_prefix(b"Bearer ")).map(<[u8]>::trim_ascii);
    // Time that depends on the length only, so the token cannot be found byte by byte.
    let same = |s: &[u8]| {
        s.len() == token.len()
            && s.iter().zip(token.as_bytes()).fold(0, |acc, (x, y)| acc | (x ^ y)) == 0
    };
    if sent.is_some_and(same) {
        Ok(())
    } else {
        Err(Error::Unauthorized("the metrics need `Authorization: Bearer <metrics.token>`"))
    }
}
