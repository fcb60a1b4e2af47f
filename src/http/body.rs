//! Reading request bodies into memory, within two bounds. A request that carries no valid key or
//! dashboard session may send `http.anonymous_body_limit` (32 KiB): anyone can send those (the
//! login form, the public tools, tracking links), and 500 of them buffering a full 1 MiB each
//! took half a gigabyte. And every buffered body, authenticated or not, holds its bytes of one
//! budget shared by all connections (`http.max_buffered_bytes`) until its request is answered:
//! a body that would pass it is refused with 503, so memory stays bounded however many clients
//! send at once.

use std::sync::{Arc, OnceLock};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::HeaderMap;
use hyper::Request;
use hyper::body::Incoming;
use hyper::header::{CONTENT_LENGTH, CONTENT_TYPE};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::{Error, Result};
use crate::state::App;

/// The body bytes all requests may hold at once.
#[derive(Clone)]
pub struct Budget {
    bytes: Arc<Semaphore>,
}

/// Bytes of the budget a request holds; they return when it is dropped.
pub struct Held(Option<OwnedSemaphorePermit>);

impl Budget {
    pub fn new(bytes: usize) -> Budget {
        Budget { bytes: Arc::new(Semaphore::new(bytes.min(Semaphore::MAX_PERMITS))) }
    }

    /// Adds `n` bytes to what `held` holds, or refuses with 503 when the budget has no room.
    fn take(&self, held: &mut Held, n: usize) -> Result<()> {
        let busy = || {
            Error::Unavailable(
                "the server is receiving too many request bodies at once; retry shortly".into(),
            )
        };
        let n = u32::try_from(n).map_err(|_| busy())?;
        let more = self.bytes.clone().try_acquire_many_owned(n).map_err(|_| busy())?;
        match &mut held.0 {
            Some(permit) => permit.merge(more),
            None => held.0 = Some(more),
        }
        Ok(())
    }
}

/// Whether a dashboard request carries a live session: the dashboard (`ui`, above this layer)
/// registers its check when it starts its first session, which is early enough, since no
/// request can carry a session before one exists.
static SESSION_CHECK: OnceLock<fn(&App, &HeaderMap) -> bool> = OnceLock::new();

/// Registers the dashboard's session check (once; later calls change nothing).
pub fn register_session_check(check: fn(&App, &HeaderMap) -> bool) {
    let _ = SESSION_CHECK.set(check);
}

/// Whether `headers` carry a live dashboard session.
pub fn has_session(app: &App, headers: &HeaderMap) -> bool {
    SESSION_CHECK.get().is_some_and(|check| check(app, headers))
}

/// Reads the whole body, refusing non-JSON content types (415) and bodies over `limit` (413)
/// before buffering them, and bodies the budget has no room for (503) as they arrive.
pub async fn read(
    req: Request<Incoming>,
    limit: usize,
    json_only: bool,
    budget: &Budget,
) -> Result<(Bytes, Held)> {
    if json_only && let Some(ct) = req.headers().get(CONTENT_TYPE) {
        let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
        let essence = ct.split(';').next().unwrap_or("").trim();
        let json = essence == "application/json" || essence.ends_with("+json");
        if !json && !essence.is_empty() {
            return Err(Error::UnsupportedMediaType("application/json"));
        }
    }
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(Error::PayloadTooLarge(limit));
    }
    let mut body = req.into_body();
    let mut held = Held(None);
    // Most bodies arrive in one piece, kept as it is; more are joined once at the end.
    let mut pieces: Vec<Bytes> = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            Error::invalid(
                format!("the request body could not be read: {e}"),
                "send the complete body with a correct Content-Length",
            )
        })?;
        let Ok(data) = frame.into_data() else { continue };
        total += data.len();
        if total > limit {
            return Err(Error::PayloadTooLarge(limit));
        }
        budget.take(&mut held, data.len())?;
        pieces.push(data);
    }
    let bytes = match pieces.len() {
        0 => Bytes::new(),
        1 => pieces.pop().unwrap_or_default(),
        _ => {
            let mut joined = BytesMut::with_capacity(total);
            for piece in pieces {
                joined.extend_from_slice(&piece);
            }
            joined.freeze()
        }
    };
    Ok((bytes, held))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_refuses_past_its_bytes_and_takes_back_what_is_dropped() {
        let budget = Budget::new(100);
        let mut first = Held(None);
        budget.take(&mut first, 60).expect("room"); // ok: test
        budget.take(&mut first, 30).expect("room"); // ok: test
        let mut second = Held(None);
        assert!(matches!(budget.take(&mut second, 20), Err(Error::Unavailable(_))));
        budget.take(&mut second, 10).expect("the last 10 bytes"); // ok: test
        drop(first);
        budget.take(&mut second, 90).expect("room again"); // ok: test
    }
}
