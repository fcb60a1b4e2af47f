//! The criteria of a SEARCH, compiled once per command (search strings converted from the
//! command's charset and lower-cased, the flag and header names settled) and evaluated message
//! by message. The decoded text of a message is built on first need and shared by every
//! criterion; every byte scanned is paid for from the search's budget.

use std::cell::OnceCell;

use chrono::NaiveDate;
use imap_types::search::SearchKey;
use imap_types::sequence::SequenceSet;
use mail_parser::Message;

use super::budget::Budget;
use super::dates::{Cmp, internal_day, sent_day};
use super::needle::{Charset, Needle};
use super::text::{Field, body, fields};
use crate::imap::message::Loaded;
use crate::imap::section::header_block;

/// A criterion, ready to evaluate.
pub enum Key {
    All,
    And(Vec<Key>),
    Not(Box<Key>),
    Or(Box<Key>, Box<Key>),
    Seq(SequenceSet),
    Uid(SequenceSet),
    /// Whether the message carries the flag (or keyword).
    Flag(String),
    Recent,
    Internal(Cmp, NaiveDate),
    Sent(Cmp, NaiveDate),
    Larger(u32),
    Smaller(u32),
    /// A header field (any occurrence), by name.
    Header(String, Needle),
    Body(Needle),
    Text(Needle),
    /// MODSEQ (RFC 7162): the message's mod-sequence is at least this. The entry name (a
    /// flag's own mod-sequence) is ignored: one mod-sequence per message is kept, which the
    /// RFC allows ("all" metadata items).
    ModSeq(u64),
}

/// Compiles `key`, its strings written in `charset`. The parser bounds the nesting (imap-codec
/// stops at a few levels), so recursing here is safe.
pub fn compile(key: &SearchKey<'_>, charset: Charset) -> Key {
    use SearchKey as S;
    let needle = |s: &[u8]| Needle::new(s, charset);
    let header = |name: &str, s: &[u8]| Key::Header(name.to_owned(), needle(s));
    let flag = |name: &str| Key::Flag(name.to_owned());
    let not = |k: Key| Key::Not(Box::new(k));
    let day = |d: &imap_types::datetime::NaiveDate| *d.as_ref();
    match key {
        S::And(keys) => Key::And(keys.as_ref().iter().map(|k| compile(k, charset)).collect()),
        S::Not(k) => not(compile(k, charset)),
        S::Or(a, b) => Key::Or(Box::new(compile(a, charset)), Box::new(compile(b, charset))),
        S::All => Key::All,
        S::SequenceSet(set) => Key::Seq(set.clone()),
        S::Uid(set) => Key::Uid(set.clone()),
        S::Answered => flag("\\Answered"),
        S::Unanswered => not(flag("\\Answered")),
        S::Deleted => flag("\\Deleted"),
        S::Undeleted => not(flag("\\Deleted")),
        S::Draft => flag("\\Draft"),
        S::Undraft => not(flag("\\Draft")),
        S::Flagged => flag("\\Flagged"),
        S::Unflagged => not(flag("\\Flagged")),
        S::Seen => flag("\\Seen"),
        S::Unseen => not(flag("\\Seen")),
        S::Keyword(k) => flag(k.as_ref()),
        S::Unkeyword(k) => not(flag(k.as_ref())),
        S::Recent => Key::Recent,
        S::Old => not(Key::Recent),
        S::New => Key::And(vec![Key::Recent, not(flag("\\Seen"))]),
        S::Before(d) => Key::Internal(Cmp::Before, day(d)),
        S::On(d) => Key::Internal(Cmp::On, day(d)),
        S::Since(d) => Key::Internal(Cmp::Since, day(d)),
        S::SentBefore(d) => Key::Sent(Cmp::Before, day(d)),
        S::SentOn(d) => Key::Sent(Cmp::On, day(d)),
        S::SentSince(d) => Key::Sent(Cmp::Since, day(d)),
        S::Larger(n) => Key::Larger(*n),
        S::Smaller(n) => Key::Smaller(*n),
        S::From(s) => header("From", s.as_ref()),
        S::To(s) => header("To", s.as_ref()),
        S::Cc(s) => header("Cc", s.as_ref()),
        S::Bcc(s) => header("Bcc", s.as_ref()),
        S::Subject(s) => header("Subject", s.as_ref()),
        S::Header(name, s) => header(&String::from_utf8_lossy(name.as_ref()), s.as_ref()),
        S::Body(s) => Key::Body(needle(s.as_ref())),
        S::Text(s) => Key::Text(needle(s.as_ref())),
        S::ModSequence { modseq, .. } => Key::ModSeq(*modseq),
    }
}

/// Whether `key` holds a MODSEQ criterion (the answer then tells the highest mod-sequence).
pub fn asks_modseq(key: &SearchKey<'_>) -> bool {
    use SearchKey::*;
    match key {
        And(keys) => keys.as_ref().iter().any(asks_modseq),
        Not(k) => asks_modseq(k),
        Or(a, b) => asks_modseq(a) || asks_modseq(b),
        ModSequence { .. } => true,
        _ => false,
    }
}

/// The length of the longest string `key` looks for, as the client sent it.
pub fn longest_needle(key: &SearchKey<'_>) -> usize {
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

impl Key {
    /// Whether evaluating needs the message's bytes.
    pub fn looks_inside(&self) -> bool {
        match self {
            Key::And(keys) => keys.iter().any(Key::looks_inside),
            Key::Not(k) => k.looks_inside(),
            Key::Or(a, b) => a.looks_inside() || b.looks_inside(),
            Key::Sent(..)
            | Key::Larger(_)
            | Key::Smaller(_)
            | Key::Header(..)
            | Key::Body(_)
            | Key::Text(_) => true,
            _ => false,
        }
    }
}

/// What a criterion needs of the selected folder.
#[derive(Clone, Copy)]
pub struct Folder {
    /// The largest sequence number and UID, which `*` stands for.
    pub last_seq: u32,
    pub last_uid: u32,
}

/// Whether `n` is in `set`, where `*` stands for `largest`.
fn in_set(set: &SequenceSet, n: u32, largest: u32) -> bool {
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

/// Where a message is in the selected folder, as this session sees it.
#[derive(Clone, Copy)]
pub struct At {
    pub seq: u32,
    /// Whether the message is \Recent for this session.
    pub recent: bool,
    pub folder: Folder,
}

/// Whether `loaded` matches every criterion. When `bytes`, the message is parsed within the
/// MIME limits (`mime::bound`: a stored message may nest without end), and reading it earns
/// the search budget (`budget`).
pub fn evaluate(criteria: &[Key], loaded: &Loaded, at: At, bytes: bool, budget: &Budget) -> bool {
    let raw = loaded.raw.as_deref().map_or(&[][..], Vec::as_slice);
    let bounded = bytes.then(|| {
        budget.earn(raw.len());
        crate::mime::bound(raw)
    });
    let parsed = bounded.as_ref().and_then(|b| b.parse());
    let c = Candidate {
        at,
        loaded,
        parsed: parsed.as_ref(),
        budget,
        fields: OnceCell::new(),
        body: OnceCell::new(),
    };
    criteria.iter().all(|k| c.matches(k))
}

/// What the criteria see of one message.
struct Candidate<'a> {
    at: At,
    loaded: &'a Loaded,
    /// The message parsed (within the MIME limits), when the criteria look inside.
    parsed: Option<&'a Message<'a>>,
    budget: &'a Budget,
    /// The decoded header fields and body text, built on first need.
    fields: OnceCell<Vec<Field<'a>>>,
    body: OnceCell<Vec<String>>,
}

impl<'a> Candidate<'a> {
    fn flag(&self, name: &str) -> bool {
        self.loaded.entry.meta.flags.iter().any(|f| f.eq_ignore_ascii_case(name))
    }

    fn size(&self) -> usize {
        self.loaded.raw.as_deref().map_or(0, Vec::len)
    }

    fn fields(&self) -> &[Field<'a>] {
        self.fields.get_or_init(|| {
            let Some(m) = self.parsed else { return Vec::new() };
            let built = fields(m);
            // Decoding costs about what the fields weigh.
            self.budget.spend(built.iter().map(Field::size).sum());
            built
        })
    }

    fn body(&self) -> &[String] {
        self.body.get_or_init(|| self.parsed.map(|m| body(m, self.budget)).unwrap_or_default())
    }

    /// Whether a field named `name` holds `needle`.
    fn header_has(&self, name: &str, needle: &Needle) -> bool {
        self.fields()
            .iter()
            .filter(|f| f.named(name))
            .any(|f| self.budget.spend(f.size()) && f.holds(needle))
    }

    fn body_has(&self, needle: &Needle) -> bool {
        self.body().iter().any(|t| self.budget.spend(t.len()) && needle.in_text(t))
    }

    /// TEXT: the header as stored (field names included), decoded field values, the body.
    fn text_has(&self, needle: &Needle) -> bool {
        let header = self.parsed.map_or(&[][..], |m| header_block(m));
        (self.budget.spend(header.len()) && needle.in_raw(header))
            || self.fields().iter().any(|f| self.budget.spend(f.size()) && f.holds(needle))
            || self.body_has(needle)
    }

    fn matches(&self, key: &Key) -> bool {
        match key {
            Key::All => true,
            Key::And(keys) => keys.iter().all(|k| self.matches(k)),
            Key::Not(k) => !self.matches(k),
            Key::Or(a, b) => self.matches(a) || self.matches(b),
            Key::Seq(set) => in_set(set, self.at.seq, self.at.folder.last_seq),
            Key::Uid(set) => in_set(set, self.loaded.entry.uid, self.at.folder.last_uid),
            Key::Flag(name) => self.flag(name),
            Key::Recent => self.at.recent,
            Key::Internal(cmp, day) => {
                internal_day(self.loaded.entry.meta.internal).is_some_and(|d| cmp.holds(d, *day))
            }
            Key::Sent(cmp, day) => {
                self.parsed.and_then(sent_day).is_some_and(|d| cmp.holds(d, *day))
            }
            Key::Larger(n) => self.size() > *n as usize,
            Key::Smaller(n) => self.size() < *n as usize,
            Key::Header(name, needle) => self.header_has(name, needle),
            Key::Body(needle) => self.body_has(needle),
            Key::Text(needle) => self.text_has(needle),
            Key::ModSeq(n) => crate::imap::condstore::modseq_of(&self.loaded.entry.meta) >= *n,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use imap_codec::CommandCodec;
    use imap_codec::decode::Decoder;
    use imap_types::command::CommandBody;

    use super::*;
    use crate::imap::search::needle::charset;
    use crate::store::{ImapEntry, ImapMeta};

    /// The criteria of a SEARCH command line, compiled.
    fn criteria(line: &[u8]) -> Vec<Key> {
        let (_, command) = CommandCodec::default().decode(line).expect("a command"); // ok: test
        let CommandBody::Search { charset: c, criteria, .. } = command.body else {
            panic!("not a SEARCH: {line:?}");
        };
        let c = charset(c.as_ref().map(AsRef::as_ref)).expect("a known charset"); // ok: test
        criteria.as_ref().iter().map(|k| compile(k, c)).collect()
    }

    /// A literal: how clients send strings beyond ASCII (the codec's quoted strings are ASCII).
    fn lit(s: &[u8]) -> Vec<u8> {
        [format!("{{{}}}\r\n", s.len()).as_bytes(), s].concat()
    }

    /// 2020-01-01T00:00:00Z
    const JAN_2020: u64 = 1_577_836_800_000;

    const MESSAGE: &str = "Date: Mon, 23 Nov 2026 23:30:00 -0800\r\n\
        From: =?UTF-8?B?QsOpYSBNw7xsbGVy?= <bea@example.net>\r\n\
        Subject: =?ISO-8859-1?Q?Caf=E9?= ideas\r\n\
        Content-Type: text/html; charset=utf-8\r\n\r\n<p>Only in <i>HTML</i></p>\r\n";

    fn loaded(raw: &str, flags: &[&str]) -> Loaded {
        let flags = flags.iter().map(|f| f.to_string()).collect();
        let meta = ImapMeta { uid: 7, flags, internal: JAN_2020, modseq: 0 };
        let entry = ImapEntry { uid: 7, id: "em_1".into(), meta };
        Loaded { entry, raw: Some(Arc::new(raw.as_bytes().to_vec())) }
    }

    /// Whether the message matches every criterion (`SEARCH` and what follows), with `base`
    /// bytes of budget before reading it; `None` when the budget ran out.
    fn matches(l: &Loaded, search: &[u8], base: u64) -> Option<bool> {
        let keys = criteria(&[b"A SEARCH ", search, b"\r\n"].concat());
        let budget = Budget::new(base);
        let at = At { seq: 1, recent: false, folder: Folder { last_seq: 1, last_uid: 7 } };
        let bytes = keys.iter().any(Key::looks_inside);
        let matched = evaluate(&keys, l, at, bytes, &budget);
        (!budget.exhausted()).then_some(matched)
    }

    #[test]
    fn sent_dates_are_the_date_fields_and_the_others_internaldate() {
        let l = loaded(MESSAGE, &[]);
        let yes = |line: &str| matches(&l, line.as_bytes(), u64::MAX) == Some(true);
        assert!(yes("SENTON 23-Nov-2026") && !yes("SENTON 24-Nov-2026"));
        assert!(yes("SENTSINCE 23-Nov-2026") && !yes("SENTSINCE 24-Nov-2026"));
        assert!(yes("SENTBEFORE 24-Nov-2026") && !yes("SENTBEFORE 23-Nov-2026"));
        assert!(yes("ON 1-Jan-2020") && !yes("ON 23-Nov-2026"));
        assert!(yes("SINCE 1-Jan-2020") && !yes("SINCE 2-Jan-2020") && yes("BEFORE 2-Jan-2020"));
        let undated = loaded("Subject: no date\r\n\r\nbody\r\n", &[]);
        assert_eq!(matches(&undated, b"SENTBEFORE 1-Jan-2100", u64::MAX), Some(false));
        assert_eq!(matches(&undated, b"NOT SENTSINCE 1-Jan-1970", u64::MAX), Some(true));
    }

    #[test]
    fn strings_match_decoded_text_and_combine_with_flags() {
        let l = loaded(MESSAGE, &["\\Seen", "$Work"]);
        let yes = |line: &[u8]| matches(&l, line, u64::MAX) == Some(true);
        let utf8 = |key: &str, s: &str| {
            [b"CHARSET UTF-8 ", key.as_bytes(), b" ", &lit(s.as_bytes())].concat()
        };
        assert!(yes(&utf8("SUBJECT", "café IDEAS")) && yes(&utf8("FROM", "béa MÜLLER")));
        assert!(yes(&[b"CHARSET ISO-8859-1 SUBJECT ", &lit(b"CAF\xc9")[..]].concat()));
        assert!(yes(b"FROM BEA@") && yes(b"HEADER subject =?iso-8859-1?q?caf=e9?="), "raw too");
        assert!(
            yes(b"BODY \"only in html\"") && yes(b"TEXT \"only in html\"") && !yes(b"BODY <i>")
        );
        assert!(yes(&utf8("TEXT", "béa")) && !yes(&utf8("BODY", "béa")), "TEXT reads the header");
        assert!(yes(b"TEXT content-type:"), "the header as stored");
        assert!(yes(b"OR SUBJECT nothing KEYWORD $work") && yes(b"SEEN NOT UNKEYWORD $Work"));
        assert!(!yes(b"OR UNSEEN SUBJECT nothing") && yes(b"NOT NEW UID 7 1"));
        assert!(yes(b"LARGER 10 SMALLER 1000") && !yes(b"HEADER X-Missing \"\""));
    }

    #[test]
    fn the_budget_stops_a_search_that_would_read_too_much() {
        let l = loaded(MESSAGE, &[]);
        let size = MESSAGE.len();
        // A TEXT criterion reads the header about three times (raw, fields raw and decoded).
        assert_eq!(matches(&l, b"TEXT nowhere", 0), Some(false), "one is paid for by reading");
        let many = (0..12).map(|i| format!("NOT TEXT a{i}")).collect::<Vec<_>>().join(" ");
        assert_eq!(matches(&l, many.as_bytes(), 0), None, "each criterion scans again");
        let afforded = 12 * 3 * size as u64;
        assert_eq!(matches(&l, many.as_bytes(), afforded), Some(true));
        assert_eq!(matches(&l, b"SEEN", 0), Some(false), "flags cost nothing");
    }
}
