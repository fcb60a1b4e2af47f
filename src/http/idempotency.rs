//! `Idempotency-Key` on every POST under `/v1`: the first request with a key runs and its answer
//! is kept for 24 hours; the same key with the same request (method, path and body, hashed) gets
//! that answer again, with another request it is 409 `idempotency_conflict`. Keys are scoped to
//! the API key that sent them. Claiming a key is a store write, so of two concurrent requests
//! exactly one runs; the other waits for its answer (409 if it takes too long). The handler runs
//! in its own task, so a client that hangs up cannot leave a key claimed but never answered.
//! Answers that say "try again" (408, 429, 5xx) are not kept: a retry runs again.

use std::sync::OnceLock;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::{HeaderMap, Method, StatusCode, Uri};
use sha2::{Digest, Sha256};

use super::error::error_reply;
use super::reply::Reply;
use super::request::Ctx;
use super::router::Handler;
use crate::error::{Error, Result};
use crate::state::App;
use crate::store::{Claim, Claimant, StoredReply};

pub const HEADER: &str = "idempotency-key";
/// Set on a replayed answer.
pub const REPLAYED: &str = "idempotent-replayed";
const MAX_KEY: usize = 256;
const TTL_MS: u64 = 24 * 3600 * 1000;
/// How long a request waits for the first one with its key before giving up with 409.
const WAIT: Duration = Duration::from_secs(15);
const POLL: Duration = Duration::from_millis(20);

/// A request that asked for idempotency.
pub struct Requested {
    key: String,
    /// Path and query: with the body, what "the same request" means.
    target: String,
}

/// This process, in claims: a claim of another (stopped) process is never waited for.
fn boot() -> &'static str {
    static BOOT: OnceLock<String> = OnceLock::new();
    BOOT.get_or_init(|| crate::ids::new_id("boot"))
}

/// The Idempotency-Key of a POST under `/v1`, if it has one; 400 naming the header when it is
/// empty, longer than 256 characters or not printable ASCII.
pub fn requested(method: &Method, uri: &Uri, headers: &HeaderMap) -> Result<Option<Requested>> {
    if method != Method::POST || !uri.path().starts_with("/v1/") {
        return Ok(None);
    }
    let Some(value) = headers.get(HEADER) else {
        return Ok(None);
    };
    let key = value.to_str().unwrap_or("\u{0}");
    if key.is_empty() || key.len() > MAX_KEY || !key.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(Error::invalid(
            format!("invalid header `Idempotency-Key`: 1 to {MAX_KEY} printable ASCII characters"),
            "use a random string such as a UUID, one per distinct request",
        ));
    }
    let target = uri.path_and_query().map_or(uri.path(), |pq| pq.as_str()).to_owned();
    Ok(Some(Requested { key: key.to_owned(), target }))
}

/// Runs `handler` at most once per key; answers a replay, a conflict, or its answer.
pub async fn once(
    app: &App,
    key_id: &str,
    req: Requested,
    ctx: Ctx,
    handler: Handler,
) -> Result<Reply> {
    let mut hasher = Sha256::new();
    hasher.update(req.target.as_bytes());
    hasher.update([0]);
    hasher.update(&ctx.body);
    let hash = crate::store::encode_hex(&hasher.finalize());
    let (key_id, key) = (key_id.to_owned(), req.key);
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let (k, i, h) = (key.clone(), key_id.clone(), hash.clone());
        let claim = app.store.write(move |w| w.claim_idempotency(&claimant(&i, &k, &h))).await?;
        match claim {
            Claim::Fresh => return run(app, key_id, key, ctx, handler).await,
            Claim::Replay(stored) => return replay(stored),
            Claim::Conflict => {
                return Err(Error::IdempotencyConflict(
                    "this Idempotency-Key was used with a different request".into(),
                ));
            }
            Claim::InFlight => {
                if !wait(app, &key_id, &key, &hash, deadline).await? {
                    return Err(Error::IdempotencyConflict(
                        "the first request with this Idempotency-Key is still being processed"
                            .into(),
                    ));
                }
            }
        }
    }
}

fn claimant<'a>(key_id: &'a str, key: &'a str, hash: &'a str) -> Claimant<'a> {
    Claimant { key_id, key, hash, boot: boot(), now: crate::ids::now_ms(), ttl: TTL_MS }
}

/// Waits until the request holding the key is done; false at the deadline.
async fn wait(
    app: &App,
    key_id: &str,
    key: &str,
    hash: &str,
    deadline: tokio::time::Instant,
) -> Result<bool> {
    loop {
        if tokio::time::Instant::now() >= deadline {
            return Ok(false);
        }
        tokio::time::sleep(POLL).await;
        let (k, i, h) = (key.to_owned(), key_id.to_owned(), hash.to_owned());
        let still = app.store.read(move |r| r.idempotency_claim(&claimant(&i, &k, &h))).await?;
        if still != Some(Claim::InFlight) {
            return Ok(true);
        }
    }
}

/// Runs the handler in its own task and keeps its answer.
async fn run(app: &App, key_id: String, key: String, ctx: Ctx, handler: Handler) -> Result<Reply> {
    let doc = app.documentation_url.clone();
    let task = tokio::spawn(async move {
        match handler(ctx).await {
            Ok(reply) => reply,
            Err(e) => error_reply(&e, &doc),
        }
    });
    let reply = task.await;
    let kept = reply.as_ref().ok().filter(|r| keeps(r.status)).map(stored);
    let (i, k) = (key_id.clone(), key.clone());
    if let Err(e) = app.store.write(move |w| w.finish_idempotency(&i, &k, kept)).await {
        tracing::warn!(error = %e, key_id, "idempotency: the answer could not be kept");
    }
    reply.map_err(|e| Error::internal(format!("handler task: {e}")))
}

/// Whether an answer is final for its request (a retry would not be answered differently).
fn keeps(status: StatusCode) -> bool {
    !(status.is_server_error()
        || status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT)
}

fn stored(reply: &Reply) -> StoredReply {
    StoredReply {
        status: reply.status.as_u16(),
        content_type: reply.content_type.to_owned(),
        headers: reply
            .headers
            .iter()
            .filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned())))
            .collect(),
        body: B64.encode(&reply.body),
    }
}

fn replay(stored: StoredReply) -> Result<Reply> {
    let body = B64.decode(stored.body.as_bytes()).map_err(Error::internal)?;
    let status = StatusCode::from_u16(stored.status).map_err(Error::internal)?;
    let mut reply = Reply::json_bytes(status, Bytes::from(body));
    if stored.content_type != reply.content_type {
        reply.content_type = "application/octet-stream";
    }
    for (name, value) in &stored.headers {
        if let (Ok(n), Ok(v)) = (HeaderName::try_from(name.as_str()), HeaderValue::from_str(value))
        {
            reply.headers.push((n, v));
        }
    }
    reply.headers.push((HeaderName::from_static(REPLAYED), HeaderValue::from_static("true")));
    Ok(reply)
}
