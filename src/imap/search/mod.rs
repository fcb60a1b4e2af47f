//! SEARCH: the criteria evaluated message by message over the selected folder, read in chunks
//! (the bytes only when a criterion looks inside the message). Matching is CPU work on messages
//! of up to tens of MB, so it runs on blocking threads, a few chunks at a time over all sessions
//! (`SEARCHING`), never on the async workers that serve every listener; strings are at most
//! `MAX_NEEDLE` long, matched in linear time, and the scanning a search does is bounded by
//! the mail it reads (`budget`).
//!
//! - `keys`    the criteria compiled and evaluated against one message
//! - `text`    what a message shows a search: decoded header fields, the text of its parts
//! - `needle`  a search string: its CHARSET, lower-casing, linear-time matching
//! - `dates`   the days ON/SINCE/BEFORE and SENTON/SENTSINCE/SENTBEFORE compare
//! - `budget`  the work one search may do, earned by the mail it reads

mod budget;
mod dates;
mod keys;
mod needle;
mod text;

use std::num::NonZeroU32;
use std::sync::{Arc, LazyLock};

use imap_types::core::{Charset, Tag};
use imap_types::response::{Code, Data, Status, StatusKind};
use imap_types::search::SearchKey;
use tokio::sync::Semaphore;

use super::conn::{Conn, ConnError};
use super::message::{Loaded, load};
use super::reply::{failed, limit, no, ok, status};
use super::session::Session;
use super::view::View;
use crate::store::Store;
use budget::Budget;
use keys::{At, Folder, Key, asks_modseq, compile, evaluate, longest_needle};

/// The longest string a criterion may look for: longer ones are refused (`NO [LIMIT]`). Real
/// clients search for words and addresses; a long needle only multiplies the work.
pub const MAX_NEEDLE: usize = 1024;

/// Messages per store read and per blocking batch: FETCH's chunk (`update::CHUNK`), repeated
/// rather than imported, since `update`'s imports lead back here (through `mailboxes`).
const CHUNK: usize = 256;

/// Chunks being matched at once over all sessions: half the cores, so searches, however many,
/// leave the other half to everything else.
static SEARCHING: LazyLock<Semaphore> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Semaphore::new((cores / 2).max(1))
});

/// How matching one chunk ended.
enum Matched<T> {
    Found(Vec<T>),
    /// The search's budget ran out.
    Exhausted,
    /// The blocking thread failed.
    Failed,
}

/// `NO [BADCHARSET (UTF-8 US-ASCII)]` for a CHARSET we cannot convert from.
fn bad_charset(tag: &Tag<'static>, e: &needle::UnknownCharset) -> Status<'static> {
    let allowed = needle::ADVERTISED.iter().filter_map(|c| Charset::try_from(*c).ok()).collect();
    let text = format!("unknown charset {:?}: search in UTF-8", e.0);
    status(tag, StatusKind::No, Some(Code::BadCharset { allowed }), &text)
}

impl Session {
    pub(super) async fn search(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        charset: Option<&Charset<'static>>,
        criteria: &[SearchKey<'static>],
        uid: bool,
    ) -> Result<Status<'static>, ConnError> {
        // MODSEQ enables CONDSTORE (RFC 7162 3.1) and is answered with the highest one found.
        let modseq = criteria.iter().any(asks_modseq);
        self.condstore |= modseq;
        let number = move |seq: u32, l: &Loaded| {
            (if uid { l.entry.uid } else { seq }, super::condstore::modseq_of(&l.entry.meta))
        };
        let found = match self.matching(tag, charset, criteria, false, number).await {
            Ok(found) => found,
            Err(refused) => return Ok(refused),
        };
        let highest = found.iter().map(|(_, m)| *m).max().unwrap_or(0);
        let found: Vec<NonZeroU32> =
            found.into_iter().filter_map(|(n, _)| NonZeroU32::new(n)).collect();
        // RFC 7162 3.1.5: no MODSEQ part when nothing matched.
        let highest = std::num::NonZeroU64::new(highest).filter(|_| modseq && !found.is_empty());
        conn.enqueue_data(Data::Search(found, highest));
        Ok(ok(tag, "SEARCH completed"))
    }

    /// What `pick` makes of each message of the selected folder that matches every criterion
    /// (its sequence number and the message, with its bytes when `pick_bytes`), in folder
    /// order; or the completion that refuses the search. SEARCH picks numbers, SORT and THREAD
    /// the fields they order by: `pick` runs on the blocking thread that matched the message.
    pub(in crate::imap) async fn matching<T, F>(
        &self,
        tag: &Tag<'static>,
        charset: Option<&Charset<'static>>,
        criteria: &[SearchKey<'static>],
        pick_bytes: bool,
        pick: F,
    ) -> Result<Vec<T>, Status<'static>>
    where
        T: Send + 'static,
        F: Fn(u32, &Loaded) -> T + Send + Sync + 'static,
    {
        let Some(view) = self.view.as_ref() else {
            return Err(super::reply::bad(tag, "select a folder first"));
        };
        let charset = match needle::charset(charset.map(AsRef::as_ref)) {
            Ok(c) => c,
            Err(e) => return Err(bad_charset(tag, &e)),
        };
        if criteria.iter().map(longest_needle).max().unwrap_or(0) > MAX_NEEDLE {
            let text = format!("search strings are limited to {MAX_NEEDLE} bytes");
            return Err(limit(tag, &text));
        }
        let criteria: Arc<Vec<Key>> =
            Arc::new(criteria.iter().map(|k| compile(k, charset)).collect());
        let bytes = criteria.iter().any(Key::looks_inside);
        let last_uid = view.uids.last().copied().unwrap_or(0);
        let folder = Folder { last_seq: view.uids.len() as u32, last_uid };
        let pick = Arc::new(pick);
        let mut left = budget::BASE;
        let mut found = Vec::new();
        for chunk in view.uids.chunks(CHUNK) {
            let (store, mailbox) = (&self.deps.store, &view.mailbox);
            let loaded = match load(
                store,
                mailbox,
                view.folder,
                chunk.to_vec(),
                bytes || pick_bytes,
            )
            .await
            {
                Ok(loaded) => loaded,
                Err(e) => return Err(failed(tag, &e)),
            };
            let batch: Vec<_> = loaded
                .into_iter()
                .filter_map(|l| {
                    let seq = view.seq_of(l.entry.uid)?;
                    Some((seq.get(), view.is_recent(l.entry.uid), l))
                })
                .collect();
            let scope = Scope { criteria: criteria.clone(), folder, bytes };
            let (matched, rest) = matching(batch, scope, pick.clone(), left).await;
            left = rest;
            match matched {
                Matched::Found(more) => found.extend(more),
                Matched::Exhausted => {
                    let text = "search stopped: too many strings to look for in this much mail";
                    return Err(limit(tag, text));
                }
                Matched::Failed => return Err(no(tag, "[UNAVAILABLE] search failed, try again")),
            }
        }
        Ok(found)
    }
}

/// The compiled criteria of a search and what they are evaluated against.
struct Scope {
    criteria: Arc<Vec<Key>>,
    folder: Folder,
    /// Whether the criteria look inside the messages.
    bytes: bool,
}

/// What `pick` makes of the messages of `batch` (sequence number, recent, message) that match
/// every criterion, worked out on a blocking thread once a search slot is free, spending from
/// `left` bytes of the search's budget; and what is left of it.
async fn matching<T, F>(
    batch: Vec<(u32, bool, Loaded)>,
    scope: Scope,
    pick: Arc<F>,
    left: u64,
) -> (Matched<T>, u64)
where
    T: Send + 'static,
    F: Fn(u32, &Loaded) -> T + Send + Sync + 'static,
{
    let Ok(_slot) = SEARCHING.acquire().await else { return (Matched::Failed, left) };
    let work = move || {
        let budget = Budget::new(left);
        let mut found = Vec::new();
        for (seq, recent, l) in &batch {
            let at = At { seq: *seq, recent: *recent, folder: scope.folder };
            let matched = evaluate(&scope.criteria, l, at, scope.bytes, &budget);
            if budget.exhausted() {
                return (Matched::Exhausted, 0);
            }
            if matched {
                found.push(pick(*seq, l));
            }
        }
        (Matched::Found(found), budget.left())
    };
    tokio::task::spawn_blocking(work).await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "imap: search thread failed");
        (Matched::Failed, left)
    })
}

/// Unseen messages of a folder, counted chunk by chunk.
pub async fn count_unseen(store: &Store, view: &View) -> crate::store::Result<u32> {
    let mut unseen = 0;
    for chunk in view.uids.chunks(CHUNK) {
        let loaded = load(store, &view.mailbox, view.folder, chunk.to_vec(), false).await?;
        unseen += loaded
            .iter()
            .filter(|l| !l.entry.meta.flags.iter().any(|f| f.eq_ignore_ascii_case("\\Seen")))
            .count() as u32;
    }
    Ok(unseen)
}
