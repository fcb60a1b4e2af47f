//! Dashboard sessions, kept in memory: the cookie holds only a random id, and the server maps it
//! to the digest of the key that logged in, a CSRF token and a one-shot notice.
//!
//! In memory rather than in a redb table: a session is worth less than a disk write per login
//! and page, a restart asking everyone to log in again is harmless, and nothing secret ever
//! reaches the disk. The digest (never the key) is resolved against the live key table on every
//! request, so revoking a key ends its sessions at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex, MutexGuard};

use hyper::header::{COOKIE, HeaderValue};

use super::fields::{Echo, Refill};
use crate::auth::Principal;
use crate::http::Ctx;

/// The cookie that carries the session id.
pub const COOKIE_NAME: &str = "em_session";
/// A session unused this long is gone.
const IDLE_MS: u64 = 2 * 3600 * 1000;
/// And none lives longer than this, used or not.
const MAX_AGE_MS: u64 = 12 * 3600 * 1000;

struct Entry {
    digest: [u8; 32],
    csrf: String,
    notice: Option<Notice>,
    created: u64,
    seen: u64,
    /// Order of creation: logins within one millisecond still have an oldest.
    serial: u64,
}

/// A message shown once on the next page: the outcome of a form.
#[derive(Clone, Debug)]
pub struct Notice {
    pub ok: bool,
    pub text: String,
    /// A value shown once and never again (a new password or webhook secret).
    pub secret: Option<String>,
    /// A refused form to show again, its message beside the field it names.
    pub echo: Option<Echo>,
}

/// A logged-in visitor.
pub struct User {
    pub id: String,
    pub principal: Principal,
    pub domain: String,
    pub csrf: String,
}

/// One table per process: sessions belong to the process that made them.
static SESSIONS: LazyLock<Mutex<HashMap<String, Entry>>> = LazyLock::new(Default::default);

fn table() -> MutexGuard<'static, HashMap<String, Entry>> {
    SESSIONS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts a session for the key with this digest; answers its id. Room is made within the key's
/// own sessions first (`ui.sessions_per_key`), so one tenant logging in again and again only
/// ends its own oldest sessions; should the whole table be full (`ui.max_sessions`, many keys
/// at their cap), the oldest session of the key holding the most goes.
pub fn start(digest: [u8; 32], limits: &crate::config::Ui) -> String {
    crate::http::body::register_session_check(known_visitor);
    let now = crate::ids::now_ms();
    let id = crate::ids::secret("");
    let mut sessions = table();
    sessions.retain(|_, e| live(e, now));
    while sessions.values().filter(|e| e.digest == digest).count() >= limits.sessions_per_key {
        let Some(oldest) = oldest_of(&sessions, &digest) else { break };
        sessions.remove(&oldest);
    }
    while sessions.len() >= limits.max_sessions {
        let Some(oldest) = busiest(&sessions).and_then(|key| oldest_of(&sessions, &key)) else {
            break;
        };
        sessions.remove(&oldest);
    }
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    let csrf = crate::ids::secret("");
    let entry = Entry { digest, csrf, notice: None, created: now, seen: now, serial };
    sessions.insert(id.clone(), entry);
    id
}

/// The id of the oldest session of the key with this digest.
fn oldest_of(sessions: &HashMap<String, Entry>, digest: &[u8; 32]) -> Option<String> {
    let mine = sessions.iter().filter(|(_, e)| e.digest == *digest);
    mine.min_by_key(|(_, e)| e.serial).map(|(id, _)| id.clone())
}

/// The digest of the key holding the most sessions.
fn busiest(sessions: &HashMap<String, Entry>) -> Option<[u8; 32]> {
    let mut counts: HashMap<[u8; 32], usize> = HashMap::new();
    for e in sessions.values() {
        *counts.entry(e.digest).or_default() += 1;
    }
    counts.into_iter().max_by_key(|(_, n)| *n).map(|(digest, _)| digest)
}

fn live(e: &Entry, now: u64) -> bool {
    now.saturating_sub(e.seen) < IDLE_MS && now.saturating_sub(e.created) < MAX_AGE_MS
}

/// Whether the request carries a live session of a key that is still valid: the HTTP layer asks
/// before it reads a dashboard form's body, to give strangers only the small anonymous limit.
fn known_visitor(app: &crate::state::App, headers: &hyper::HeaderMap) -> bool {
    let Some(id) = cookie(headers, COOKIE_NAME) else { return false };
    let digest = match table().get(id.as_str()) {
        Some(entry) if live(entry, crate::ids::now_ms()) => entry.digest,
        _ => return false,
    };
    app.keys.by_digest(&digest).is_some_and(|p| p.domain.is_some())
}

pub fn end(id: &str) {
    table().remove(id);
}

/// The visitor of a request, when it carries a live session of a key still valid for a domain.
pub fn user(ctx: &Ctx) -> Option<User> {
    let id = cookie(&ctx.headers, COOKIE_NAME)?;
    let now = crate::ids::now_ms();
    let (digest, csrf) = {
        let mut sessions = table();
        let entry = sessions.get_mut(id.as_str())?;
        if !live(entry, now) {
            sessions.remove(id.as_str());
            return None;
        }
        entry.seen = now;
        (entry.digest, entry.csrf.clone())
    };
    let principal = ctx.app.keys.by_digest(&digest)?;
    let domain = principal.domain.as_deref()?.to_owned();
    Some(User { id, principal, domain, csrf })
}

/// Leaves a notice for the session's next page.
pub fn notify(id: &str, notice: Notice) {
    if let Some(entry) = table().get_mut(id) {
        entry.notice = Some(notice);
    }
}

/// Takes the notice left for this page, if any.
pub fn take_notice(id: &str) -> Option<Notice> {
    table().get_mut(id).and_then(|e| e.notice.take())
}

/// The form posted to `action` as the page shows it: given back when the API refused it, with
/// the message beside the first of `fields` it names. The page's alert then leaves it out.
pub fn refill(id: &str, action: &str, fields: &[&str]) -> Refill {
    let mut sessions = table();
    let Some(notice) = sessions.get_mut(id).and_then(|e| e.notice.as_mut()) else {
        return Refill::default();
    };
    let Some(echo) = notice.echo.as_mut().filter(|e| e.action == action) else {
        return Refill::default();
    };
    let field = echo.named.iter().find(|n| fields.contains(&n.as_str())).cloned();
    echo.beside_field |= field.is_some();
    Refill::new(echo.values.clone(), field, notice.text.clone())
}

/// The value of a cookie in the request.
pub fn cookie(headers: &hyper::HeaderMap, name: &str) -> Option<String> {
    headers.get_all(COOKIE).iter().filter_map(|v| v.to_str().ok()).find_map(|line| {
        line.split(';').find_map(|pair| {
            let (k, v) = pair.trim().split_once('=')?;
            (k == name).then(|| v.to_owned())
        })
    })
}

/// Whether the visitor reached us over TLS: through a trusted proxy that says so.
pub fn behind_tls(ctx: &Ctx) -> bool {
    ctx.app.config.http.trusted_proxies.contains(&ctx.peer.ip())
        && ctx
            .headers
            .get("x-forwarded-proto")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|p| p.trim().eq_ignore_ascii_case("https"))
}

/// A `Set-Cookie` value: never readable by scripts, never sent from another site.
pub fn set_cookie(ctx: &Ctx, name: &str, value: &str, max_age_s: u64) -> Option<HeaderValue> {
    let secure = if behind_tls(ctx) { "; Secure" } else { "" };
    let line =
        format!("{name}={value}; Path=/; Max-Age={max_age_s}; HttpOnly; SameSite=Strict{secure}");
    HeaderValue::from_str(&line).ok()
}

/// The lifetime of the session cookie, in seconds.
pub const COOKIE_MAX_AGE_S: u64 = MAX_AGE_MS / 1000;

#[cfg(test)]
mod tests {
    use super::*;

    fn alive(id: &str) -> bool {
        table().contains_key(id)
    }

    #[test]
    fn a_key_at_its_cap_ends_its_own_oldest_session_and_a_full_table_the_busiest_keys() {
        let (a, b, c) = ([0xa1; 32], [0xb2; 32], [0xc3; 32]);
        let limits = crate::config::Ui { max_sessions: 10_000, sessions_per_key: 3 };
        let other = start(b, &limits);
        let first = start(a, &limits);
        let later: Vec<String> = (0..5).map(|_| start(a, &limits)).collect();
        assert!(alive(&other), "another key's session stays");
        assert!(!alive(&first) && !alive(&later[0]) && !alive(&later[1]));
        assert!(later[2..].iter().all(|id| alive(id)));
        // A full table: the key with the most sessions gives up its oldest, not the newcomer.
        let full = crate::config::Ui { max_sessions: table().len(), sessions_per_key: 3 };
        let newcomer = start(c, &full);
        assert!(alive(&newcomer) && alive(&other));
        assert!(!alive(&later[2]) && alive(&later[3]) && alive(&later[4]));
        for id in [other, newcomer].iter().chain(&later) {
            end(id);
        }
    }
}
