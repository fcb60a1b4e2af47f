//! Links followed from campaign messages: the open pixel, click redirects and unsubscribing.
//! They carry signed tokens (see `tracking`); a token that does not verify is a 404, so the
//! redirect never sends anyone to a URL we did not sign (no open redirect).
//!
//! Anyone holding a message can replay its links, so a hit costs no write of its own: the first
//! open (click) of a message is recorded at once, with its event; a later one is only added to a
//! counter in memory, written for all messages together once a second (`Hits`; a restart loses
//! at most that second's repeats, never a first open, click or its event). And the hits
//! of one client address are counted up to `tracking.rate_per_minute` (plus `tracking.burst`):
//! past it a pixel or a redirect is still answered, uncounted, and an unsubscribe gets 429.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use hyper::StatusCode;
use hyper::header::{CACHE_CONTROL, HeaderValue, LOCATION};

use crate::error::{Error, Result};
use crate::http::{Ctx, Reply};
use crate::ids::now_ms;
use crate::ratelimit::ToolLimits;
use crate::tracking::{Kind, PIXEL, html_escape};

/// How often the repeated hits gathered in memory are written.
const FLUSH_EVERY: Duration = Duration::from_secs(1);
/// Messages remembered as having their first open or click recorded; past it the memory starts
/// over (a forgotten message costs one read on its next hit, nothing more).
const MAX_SEEN: usize = 100_000;
/// Messages with repeated hits waiting for the next write; past it more are not counted.
const MAX_PENDING: usize = 100_000;

/// What the tracking routes keep in memory: one per process, as the sessions are.
struct Hits {
    limits: ToolLimits,
    /// `(is a click, message id)` whose first hit is recorded.
    seen: Mutex<HashSet<(bool, String)>>,
    /// Message id -> (opens, clicks) not written yet.
    pending: Mutex<HashMap<String, (u32, u32)>>,
    /// When the rate limiter last forgot idle clients (ms).
    tidied: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Hits {
    fn get(ctx: &Ctx) -> &'static Hits {
        static HITS: OnceLock<Hits> = OnceLock::new();
        HITS.get_or_init(|| {
            let c = &ctx.app.config;
            Hits {
                limits: ToolLimits::new(
                    c.tracking.rate_per_minute,
                    c.tracking.burst,
                    c.http.trusted_proxies.clone(),
                ),
                seen: Mutex::default(),
                pending: Mutex::default(),
                tidied: AtomicU64::new(now_ms()),
            }
        })
    }

    /// Takes a token of this client's rate: whether its hit counts, or 429 with the seconds
    /// until one would.
    fn counts(&self, ctx: &Ctx) -> Result<()> {
        let now = now_ms();
        let last = self.tidied.load(Ordering::Relaxed);
        if now.saturating_sub(last) > 60_000
            && self.tidied.compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
        {
            self.limits.tidy();
        }
        let ip: IpAddr = self.limits.client(ctx.peer, &ctx.headers);
        self.limits.check(ip)
    }

    fn seen(&self, click: bool, id: &str) -> bool {
        lock(&self.seen).contains(&(click, id.to_owned()))
    }

    fn remember(&self, click: bool, id: &str) {
        let mut seen = lock(&self.seen);
        if seen.len() >= MAX_SEEN {
            seen.clear();
        }
        seen.insert((click, id.to_owned()));
    }

    /// Adds a repeated hit; the first one after a write schedules the next write.
    fn repeat(&'static self, ctx: &Ctx, click: bool, id: &str) {
        let mut pending = lock(&self.pending);
        let first = pending.is_empty();
        if !pending.contains_key(id) && pending.len() >= MAX_PENDING {
            return;
        }
        let counts = pending.entry(id.to_owned()).or_default();
        if click {
            counts.1 = counts.1.saturating_add(1);
        } else {
            counts.0 = counts.0.saturating_add(1);
        }
        if first {
            let store = ctx.app.store.clone();
            tokio::spawn(async move {
                tokio::time::sleep(FLUSH_EVERY).await;
                let batch: Vec<(String, u32, u32)> = {
                    let mut pending = lock(&self.pending);
                    pending.drain().map(|(id, (o, c))| (id, o, c)).collect()
                };
                if let Err(e) = store.write_snapshot(move |w| w.add_engagement(&batch)).await {
                    tracing::warn!(error = %e, "repeated opens and clicks were not counted");
                }
            });
        }
    }
}

/// Counts a hit of `id` (`url` for a click), the first one recorded at once.
async fn count(ctx: &Ctx, id: &str, url: Option<&str>) {
    let hits = Hits::get(ctx);
    let click = url.is_some();
    if hits.counts(ctx).is_err() {
        return;
    }
    if hits.seen(click, id) {
        return hits.repeat(ctx, click, id);
    }
    let owned = id.to_owned();
    let recorded = ctx.app.store.read(move |r| r.tracking(&owned)).await;
    let first_at = |t: &crate::store::Tracking| {
        if click { t.first_clicked_at } else { t.first_opened_at }
    };
    if let Ok(Some(t)) = &recorded
        && first_at(t).is_some()
    {
        hits.remember(click, id);
        return hits.repeat(ctx, click, id);
    }
    let (owned, url) = (id.to_owned(), url.map(str::to_owned));
    let at = now_ms();
    match ctx
        .app
        .store
        .write_snapshot(move |w| w.record_engagement(&owned, url.as_deref(), at))
        .await
    {
        // A message deleted since it was sent still gets its pixel; the count is simply lost.
        Ok(()) | Err(crate::store::Error::NotFound(_)) => hits.remember(click, id),
        Err(e) => tracing::warn!(error = %e, "an open or click was not counted"),
    }
}

fn fields(ctx: &Ctx, kind: Kind, count: usize) -> Result<Vec<String>> {
    ctx.app
        .tokens
        .open(kind, ctx.param("token"))
        .filter(|f| f.len() == count)
        .ok_or_else(|| Error::not_found("link"))
}

fn no_store(mut reply: Reply) -> Reply {
    reply.headers.push((CACHE_CONTROL, HeaderValue::from_static("no-store, private")));
    reply
}

pub async fn open(ctx: Ctx) -> Result<Reply> {
    let f = fields(&ctx, Kind::Open, 1)?;
    count(&ctx, &f[0], None).await;
    Ok(no_store(Reply::raw("image/gif", Bytes::from_static(PIXEL))))
}

pub async fn click(ctx: Ctx) -> Result<Reply> {
    let f = fields(&ctx, Kind::Click, 2)?;
    let location = HeaderValue::from_str(&f[1]).map_err(|_| Error::not_found("link"))?;
    count(&ctx, &f[0], Some(&f[1])).await;
    let mut reply =
        no_store(Reply::raw("text/plain; charset=utf-8", Bytes::from_static(b"Redirecting\n")));
    reply.status = StatusCode::FOUND;
    reply.headers.push((LOCATION, location));
    Ok(reply)
}

/// The confirmation page: a GET never unsubscribes, so link scanners cannot do it by accident.
pub async fn unsubscribe_page(ctx: Ctx) -> Result<Reply> {
    let f = fields(&ctx, Kind::Unsubscribe, 2)?;
    let action = format!("/t/u/{}", ctx.param("token"));
    let page = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><meta name=\"viewport\" \
         content=\"width=device-width\"><title>Unsubscribe</title></head><body \
         style=\"font-family:sans-serif;max-width:32em;margin:3em auto\"><h1>Unsubscribe</h1>\
         <p>Stop emails to <b>{}</b>?</p><form method=\"post\" action=\"{}\"><input type=\"hidden\" \
         name=\"List-Unsubscribe\" value=\"One-Click\"><button type=\"submit\">Unsubscribe</button>\
         </form></body></html>",
        html_escape(&f[1]),
        html_escape(&action)
    );
    Ok(no_store(Reply::raw("text/html; charset=utf-8", Bytes::from(page))))
}

/// RFC 8058 one-click (and the confirmation form): unsubscribes at once.
pub async fn unsubscribe(ctx: Ctx) -> Result<Reply> {
    let f = fields(&ctx, Kind::Unsubscribe, 2)?;
    // A write per post: a client past its rate waits (the page and the link stay valid).
    Hits::get(&ctx).counts(&ctx)?;
    let (id, recipient) = (f[0].clone(), f[1].clone());
    let source =
        if ctx.body.starts_with(b"List-Unsubscribe=One-Click") { "one-click" } else { "link" };
    ctx.app.store.write(move |w| w.record_unsubscribe(&id, &recipient, source, now_ms())).await?;
    let page = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>Unsubscribed</title></head><body \
         style=\"font-family:sans-serif;max-width:32em;margin:3em auto\"><h1>Unsubscribed</h1>\
         <p><b>{}</b> will get no more of these emails.</p></body></html>",
        html_escape(&f[1])
    );
    Ok(no_store(Reply::raw("text/html; charset=utf-8", Bytes::from(page))))
}
