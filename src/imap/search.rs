//! SEARCH: the criteria evaluated message by message over the selected folder, read in chunks
//! (the bytes only when a criterion looks inside the message). Matching is CPU work on messages
//! of up to tens of MB, so it runs on blocking threads, a few chunks at a time over all sessions
//! (`SEARCHING`), never on the async workers that serve every listener; strings are matched in
//! linear time and are at most `MAX_NEEDLE` long.

use std::num::NonZeroU32;
use std::sync::{Arc, LazyLock};

use imap_types::core::Tag;
use imap_types::response::{Data, Status};
use imap_types::search::SearchKey;
use mail_parser::Message;
use memchr::memmem::Finder;
use tokio::sync::Semaphore;

use super::conn::{Conn, ConnError};
use super::message::{Loaded, load};
use super::reply::{failed, limit, no, ok};
use super::section::header_block;
use super::session::Session;
use super::update::CHUNK;
use super::view::View;
use crate::store::Store;

/// The longest string a criterion may look for: longer ones are refused (`NO [LIMIT]`). Real
/// clients search for words and addresses; a long needle only multiplies the work.
pub const MAX_NEEDLE: usize = 1024;

/// Hay is lower-cased this much at a time for matching, so matching allocates no more.
const WINDOW: usize = 64 * 1024;

/// Chunks being matched at once over all sessions: half the cores, so searches, however many,
/// leave the other half to everything else.
static SEARCHING: LazyLock<Semaphore> = LazyLock::new(|| {
    let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
    Semaphore::new((cores / 2).max(1))
});

/// What a criterion needs of the selected folder.
#[derive(Clone, Copy)]
struct Folder {
    /// The largest sequence number and UID, which `*` stands for.
    last_seq: u32,
    last_uid: u32,
}

/// What a criterion sees of one message.
struct Candidate<'a> {
    seq: u32,
    recent: bool,
    loaded: &'a Loaded,
    parsed: Option<Message<'a>>,
    folder: Folder,
}

fn looks_inside(key: &SearchKey<'_>) -> bool {
    use SearchKey::*;
    match key {
        And(keys) => keys.as_ref().iter().any(looks_inside),
        Not(k) => looks_inside(k),
        Or(a, b) => looks_inside(a) || looks_inside(b),
        Bcc(_) | Body(_) | Cc(_) | From(_) | Header(..) | Subject(_) | Text(_) | To(_)
        | Larger(_) | Smaller(_) | SentBefore(_) | SentOn(_) | SentSince(_) => true,
        _ => false,
    }
}

/// The length of the longest string any criterion looks for.
fn longest_needle(key: &SearchKey<'_>) -> usize {
    use SearchKey::*;
    match key {
        And(keys) => keys.as_ref().iter().map(longest_needle).max().unwrap_or(0),
        Not(k) => longest_needle(k),
        Or(a, b) => longest_needle(a).max(longest_needle(b)),
        Bcc(s) | Body(s) | Cc(s) | From(s) | Subject(s) | Text(s) | To(s) => s.as_ref().len(),
        Header(name, s) => name.as_ref().len().max(s.as_ref().len()),
        _ => 0,
    }
}

/// Whether `hay` holds `needle`, ASCII letters in either case (as IMAP's SEARCH compares them).
/// Both are lower-cased, the hay a window at a time (windows overlap by the needle's length, so
/// a match across two is seen), and memmem finds the needle in time linear in the hay.
fn contains(hay: &[u8], needle: &[u8]) -> bool {
    if needle.is_empty() {
        return true;
    }
    let needle = needle.to_ascii_lowercase();
    let finder = Finder::new(&needle);
    let overlap = needle.len() - 1;
    let mut lowered = Vec::with_capacity(hay.len().min(WINDOW) + overlap);
    let mut start = 0;
    while start < hay.len() {
        let end = (start + WINDOW).min(hay.len());
        lowered.clear();
        lowered.extend(hay[start.saturating_sub(overlap)..end].iter().map(u8::to_ascii_lowercase));
        if finder.find(&lowered).is_some() {
            return true;
        }
        start = end;
    }
    false
}

/// Whether `n` is in `set`, where `*` stands for `largest`.
fn in_set(set: &imap_types::sequence::SequenceSet, n: u32, largest: u32) -> bool {
    use imap_types::sequence::{SeqOrUid, Sequence};
    let value = |v: &SeqOrUid| match v {
        SeqOrUid::Value(x) => x.get(),
        SeqOrUid::Asterisk => largest,
    };
    set.0.as_ref().iter().any(|seq| match seq {
        Sequence::Single(v) => value(v) == n,
        Sequence::Range(a, b) => (value(a).min(value(b))..=value(a).max(value(b))).contains(&n),
    })
}

impl Candidate<'_> {
    fn flag(&self, name: &str) -> bool {
        self.loaded.entry.meta.flags.iter().any(|f| f.eq_ignore_ascii_case(name))
    }

    fn raw(&self) -> &[u8] {
        self.loaded.raw.as_deref().map_or(&[], Vec::as_slice)
    }

    /// Whether header `name` (any occurrence) holds `needle`, raw or decoded.
    fn header_has(&self, name: &str, needle: &[u8]) -> bool {
        let Some(m) = &self.parsed else { return false };
        m.headers_raw().any(|(n, v)| n.eq_ignore_ascii_case(name) && contains(v.as_bytes(), needle))
            || m.header(name)
                .and_then(|h| h.as_text())
                .is_some_and(|t| contains(t.as_bytes(), needle))
            || (name.eq_ignore_ascii_case("subject")
                && m.subject().is_some_and(|s| contains(s.as_bytes(), needle)))
    }

    fn body_has(&self, needle: &[u8]) -> bool {
        let Some(m) = &self.parsed else { return false };
        let decoded = (0..m.text_body.len())
            .any(|i| m.body_text(i).is_some_and(|t| contains(t.as_bytes(), needle)));
        let raw = self.raw();
        let from = header_block(m).len().min(raw.len());
        decoded || contains(&raw[from..], needle)
    }

    fn internal_day(&self) -> Option<chrono::NaiveDate> {
        chrono::DateTime::from_timestamp_millis(self.loaded.entry.meta.internal as i64)
            .map(|d| d.date_naive())
    }

    fn sent_day(&self) -> Option<chrono::NaiveDate> {
        let date = self.parsed.as_ref()?.date()?;
        chrono::DateTime::from_timestamp(date.to_timestamp(), 0).map(|d| d.date_naive())
    }

    fn matches(&self, key: &SearchKey<'_>) -> bool {
        use SearchKey::*;
        let day = |d: &imap_types::datetime::NaiveDate| *d.as_ref();
        match key {
            And(keys) => keys.as_ref().iter().all(|k| self.matches(k)),
            Not(k) => !self.matches(k),
            Or(a, b) => self.matches(a) || self.matches(b),
            All => true,
            SequenceSet(set) => in_set(set, self.seq, self.folder.last_seq),
            Uid(set) => in_set(set, self.loaded.entry.uid, self.folder.last_uid),
            Answered => self.flag("\\Answered"),
            Unanswered => !self.flag("\\Answered"),
            Deleted => self.flag("\\Deleted"),
            Undeleted => !self.flag("\\Deleted"),
            Draft => self.flag("\\Draft"),
            Undraft => !self.flag("\\Draft"),
            Flagged => self.flag("\\Flagged"),
            Unflagged => !self.flag("\\Flagged"),
            Seen => self.flag("\\Seen"),
            Old => !self.recent,
            Unseen => !self.flag("\\Seen"),
            Recent => self.recent,
            New => self.recent && !self.flag("\\Seen"),
            Keyword(k) => self.flag(k.as_ref()),
            Unkeyword(k) => !self.flag(k.as_ref()),
            Before(d) => self.internal_day().is_some_and(|x| x < day(d)),
            On(d) => self.internal_day().is_some_and(|x| x == day(d)),
            Since(d) => self.internal_day().is_some_and(|x| x >= day(d)),
            SentBefore(d) => self.sent_day().is_some_and(|x| x < day(d)),
            SentOn(d) => self.sent_day().is_some_and(|x| x == day(d)),
            SentSince(d) => self.sent_day().is_some_and(|x| x >= day(d)),
            Larger(n) => self.raw().len() > *n as usize,
            Smaller(n) => self.raw().len() < *n as usize,
            From(s) => self.header_has("From", s.as_ref()),
            To(s) => self.header_has("To", s.as_ref()),
            Cc(s) => self.header_has("Cc", s.as_ref()),
            Bcc(s) => self.header_has("Bcc", s.as_ref()),
            Subject(s) => self.header_has("Subject", s.as_ref()),
            Header(name, s) => self.header_has(&String::from_utf8_lossy(name.as_ref()), s.as_ref()),
            Body(s) => self.body_has(s.as_ref()),
            Text(s) => {
                let header = self.parsed.as_ref().map_or(&[][..], |m| header_block(m));
                contains(header, s.as_ref()) || self.body_has(s.as_ref())
            }
        }
    }
}

impl Session {
    pub(super) async fn search(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        criteria: &[SearchKey<'static>],
        uid: bool,
    ) -> Result<Status<'static>, ConnError> {
        let Some(view) = self.view.as_ref() else {
            return Ok(super::reply::bad(tag, "select a folder first"));
        };
        if criteria.iter().map(longest_needle).max().unwrap_or(0) > MAX_NEEDLE {
            let text = format!("search strings are limited to {MAX_NEEDLE} bytes");
            return Ok(limit(tag, &text));
        }
        let bytes = criteria.iter().any(looks_inside);
        let criteria = Arc::new(criteria.to_vec());
        let last_uid = view.uids.last().copied().unwrap_or(0);
        let folder = Folder { last_seq: view.uids.len() as u32, last_uid };
        let mut found = Vec::new();
        for chunk in view.uids.chunks(CHUNK) {
            let loaded =
                match load(&self.deps.store, &view.mailbox, view.folder, chunk.to_vec(), bytes)
                    .await
                {
                    Ok(loaded) => loaded,
                    Err(e) => return Ok(failed(tag, &e)),
                };
            let batch: Vec<_> = loaded
                .into_iter()
                .filter_map(|l| {
                    let seq = view.seq_of(l.entry.uid)?;
                    Some((seq.get(), view.is_recent(l.entry.uid), l))
                })
                .collect();
            match matching(batch, criteria.clone(), folder, bytes, uid).await {
                Some(more) => found.extend(more),
                None => return Ok(no(tag, "[UNAVAILABLE] search failed, try again")),
            }
        }
        let found: Vec<NonZeroU32> = found.into_iter().filter_map(NonZeroU32::new).collect();
        conn.enqueue_data(Data::Search(found));
        Ok(ok(tag, "SEARCH completed"))
    }
}

/// The numbers (UIDs when `uid`) of the messages of `batch` (sequence number, recent, message)
/// that match every criterion, worked out on a blocking thread once a search slot is free;
/// `None` when that thread failed.
async fn matching(
    batch: Vec<(u32, bool, Loaded)>,
    criteria: Arc<Vec<SearchKey<'static>>>,
    folder: Folder,
    bytes: bool,
    uid: bool,
) -> Option<Vec<u32>> {
    let _slot = SEARCHING.acquire().await.ok()?;
    let work = move || {
        let mut found = Vec::new();
        for (seq, recent, l) in &batch {
            // Bounded before parsing (`mime`): a stored message may nest without end.
            let bounded =
                bytes.then(|| crate::mime::bound(l.raw.as_deref().map_or(&[][..], Vec::as_slice)));
            let parsed = bounded.as_ref().and_then(|b| b.parse());
            let c = Candidate { seq: *seq, recent: *recent, loaded: l, parsed, folder };
            if criteria.iter().all(|k| c.matches(k)) {
                found.push(if uid { l.entry.uid } else { *seq });
            }
        }
        found
    };
    tokio::task::spawn_blocking(work).await.ok()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition: some window of the hay equals the needle, ASCII case aside.
    fn naive(hay: &[u8], needle: &[u8]) -> bool {
        needle.is_empty() || hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
    }

    #[test]
    fn contains_agrees_with_the_definition_across_window_edges() {
        let mut hay = vec![b'a'; 3 * WINDOW + 17];
        for (at, byte) in [(WINDOW - 2, b'X'), (WINDOW, b'y'), (2 * WINDOW + 5, b'Z')] {
            hay[at] = byte;
        }
        let needles: [&[u8]; 8] =
            [b"", b"a", b"AAx", b"xAY", b"aaaaZ", b"zA", b"b", b"aaaaaaaaaaaaaaaaaaaaaaaaaab"];
        for needle in needles {
            assert_eq!(contains(&hay, needle), naive(&hay, needle), "{needle:?}");
        }
        assert!(!contains(b"ab", b"abc"));
        assert!(contains(b"Hello World", b"o wOR"));
        let long = vec![b'A'; MAX_NEEDLE];
        assert!(contains(&hay, &long) && !contains(&hay[..MAX_NEEDLE - 1], &long));
    }
}
