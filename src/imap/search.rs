//! SEARCH: the criteria evaluated message by message over the selected folder, read in chunks
//! (the bytes only when a criterion looks inside the message).

use std::num::NonZeroU32;

use imap_types::core::Tag;
use imap_types::response::{Data, Status};
use imap_types::search::SearchKey;
use mail_parser::Message;

use super::conn::{Conn, ConnError};
use super::message::{Loaded, load};
use super::reply::{failed, ok};
use super::section::header_block;
use super::session::Session;
use super::update::CHUNK;
use super::view::View;
use crate::store::Store;

/// What a criterion sees of one message.
struct Candidate<'a> {
    seq: u32,
    loaded: &'a Loaded,
    parsed: Option<Message<'a>>,
    view: &'a View,
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

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    needle.is_empty() || hay.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle))
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
            SequenceSet(set) => in_set(set, self.seq, self.view.uids.len() as u32),
            Uid(set) => {
                let last = self.view.uids.last().copied().unwrap_or(0);
                in_set(set, self.loaded.entry.uid, last)
            }
            Answered => self.flag("\\Answered"),
            Unanswered => !self.flag("\\Answered"),
            Deleted => self.flag("\\Deleted"),
            Undeleted => !self.flag("\\Deleted"),
            Draft => self.flag("\\Draft"),
            Undraft => !self.flag("\\Draft"),
            Flagged => self.flag("\\Flagged"),
            Unflagged => !self.flag("\\Flagged"),
            Seen => self.flag("\\Seen"),
            Old => !self.view.is_recent(self.loaded.entry.uid),
            Unseen => !self.flag("\\Seen"),
            Recent => self.view.is_recent(self.loaded.entry.uid),
            New => self.view.is_recent(self.loaded.entry.uid) && !self.flag("\\Seen"),
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
        let bytes = criteria.iter().any(looks_inside);
        let mut found = Vec::new();
        for (n, chunk) in view.uids.chunks(CHUNK).enumerate() {
            let loaded =
                match load(&self.deps.store, &view.mailbox, view.folder, chunk.to_vec(), bytes)
                    .await
                {
                    Ok(loaded) => loaded,
                    Err(e) => return Ok(failed(tag, &e)),
                };
            for l in &loaded {
                let Some(seq) = view.seq_of(l.entry.uid) else { continue };
                let bounded = bytes
                    .then(|| crate::mime::bound(l.raw.as_deref().map_or(&[][..], Vec::as_slice)));
                let parsed = bounded.as_ref().and_then(|b| b.parse());
                let c = Candidate { seq: seq.get(), loaded: l, parsed, view };
                if criteria.iter().all(|k| c.matches(k)) {
                    found.push(if uid { l.entry.uid } else { seq.get() });
                }
            }
            let _ = n;
        }
        let found: Vec<NonZeroU32> = found.into_iter().filter_map(NonZeroU32::new).collect();
        conn.enqueue_data(Data::Search(found));
        Ok(ok(tag, "SEARCH completed"))
    }
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
