//! A message's features as the tokenizer collects them: each distinct token hashed once, its
//! text kept in one buffer for the reasons a verdict names.

use super::super::hash::{TokenMap, token_hash};

/// Bytes of decoded text looked at per part (words, HTML).
pub const MAX_TEXT: usize = 64 * 1024;
/// Words shorter than this are mostly noise (articles, "is", "to").
const MIN_WORD: usize = 3;
/// Longer "words" are base64 leftovers, hashes, tracking ids: counted by length class instead.
const MAX_WORD: usize = 30;

/// A message's features, each once: hashes in ascending order, and their text for reasons.
#[derive(Debug, Default, Clone)]
pub struct Features {
    pub hashes: Vec<u64>,
    /// Where in `text` each token's text is (start, end).
    spans: TokenMap<(u32, u32)>,
    /// The texts of all tokens, one after the other: one allocation, not one per token.
    text: String,
}

impl Features {
    /// The text a token hash was made from, when it is one of this message's.
    pub fn name(&self, hash: u64) -> Option<&str> {
        let &(start, end) = self.spans.get(&hash)?;
        self.text.get(start as usize..end as usize)
    }

    pub fn len(&self) -> usize {
        self.hashes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hashes.is_empty()
    }
}

/// Collects distinct tokens; the text of each is kept once.
pub(super) struct Builder {
    spans: TokenMap<(u32, u32)>,
    text: String,
    scratch: String,
    lower: String,
}

impl Default for Builder {
    fn default() -> Builder {
        // Sized for a typical message's few hundred distinct tokens, so that the map seldom
        // grows while it fills.
        Builder {
            spans: TokenMap::with_capacity_and_hasher(512, Default::default()),
            text: String::with_capacity(8 * 1024),
            scratch: String::new(),
            lower: String::new(),
        }
    }
}

impl Builder {
    pub(super) fn add(&mut self, prefix: &str, text: &str) {
        self.scratch.clear();
        self.scratch.push_str(prefix);
        self.scratch.push_str(text);
        let hash = token_hash(self.scratch.as_bytes());
        if let std::collections::hash_map::Entry::Vacant(slot) = self.spans.entry(hash) {
            // The text is bounded (`MAX_TEXT` per part, `MAX_PARTS` parts), far below 4 GiB.
            let start = self.text.len() as u32;
            self.text.push_str(&self.scratch);
            slot.insert((start, self.text.len() as u32));
        }
    }

    /// Adds the words of `text` (already lower-cased or not) under `prefix`.
    pub(super) fn words(&mut self, prefix: &str, text: &str) {
        let text = &text[..floor(text, MAX_TEXT)];
        for raw in text.split_whitespace() {
            self.word(prefix, raw);
        }
    }

    fn word(&mut self, prefix: &str, raw: &str) {
        let word = raw.trim_matches(|c: char| !(c.is_alphanumeric() || c == '$' || c == '!'));
        if word.is_empty() {
            return;
        }
        // Lower-cased into a buffer the builder keeps: a word is the most frequent thing made
        // here, and an allocation per word was a tenth of the tokenizing time.
        let mut lower = std::mem::take(&mut self.lower);
        lower.clear();
        if word.is_ascii() {
            lower.push_str(word);
            lower.make_ascii_lowercase();
        } else {
            lower.extend(word.chars().flat_map(char::to_lowercase));
        }
        self.lowered(prefix, &lower);
        self.lower = lower;
    }

    fn lowered(&mut self, prefix: &str, lower: &str) {
        if (lower.contains(':') || lower.starts_with("www."))
            && let Some(host) = url_host(lower)
        {
            self.host("url:", host);
            return;
        }
        if let Some((_, domain)) =
            lower.rsplit_once('@').filter(|(l, d)| !l.is_empty() && d.contains('.'))
        {
            self.add("email:", domain);
            return;
        }
        let chars = if lower.is_ascii() { lower.len() } else { lower.chars().count() };
        if chars > MAX_WORD {
            // SpamBayes' "skip" tokens: the first character and the length class.
            let first = lower.chars().next().unwrap_or('?');
            self.add("skip:", &format!("{first}{}", chars / 10 * 10));
        } else if chars >= MIN_WORD {
            self.add(prefix, lower);
        }
    }

    /// A host, and its last two labels (the registered domain, mostly).
    pub(super) fn host(&mut self, prefix: &str, host: &str) {
        let host = host.trim_end_matches('.');
        if host.is_empty() {
            return;
        }
        self.add(prefix, host);
        let labels: Vec<&str> = host.rsplitn(3, '.').collect();
        if labels.len() == 3 {
            self.add(prefix, &format!("{}.{}", labels[1], labels[0]));
        }
        if host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            self.add(prefix, "numeric-ip");
        }
    }

    pub(super) fn finish(self) -> Features {
        let mut hashes: Vec<u64> = self.spans.keys().copied().collect();
        hashes.sort_unstable();
        Features { hashes, spans: self.spans, text: self.text }
    }
}

/// The largest char boundary of `s` at or below `at`.
pub(super) fn floor(s: &str, at: usize) -> usize {
    if at >= s.len() {
        return s.len();
    }
    (0..=at).rev().find(|&i| s.is_char_boundary(i)).unwrap_or(0)
}

/// The host of a link-looking word (`http://host/...`, `www.host...`).
pub(super) fn url_host(word: &str) -> Option<&str> {
    let rest = match word.find("://") {
        Some(at) => &word[at + 3..],
        None if word.starts_with("www.") => word,
        None => return None,
    };
    let end = rest.find(['/', '?', '#', ':', '"', '\'', '>', ')']).unwrap_or(rest.len());
    let host = &rest[..end];
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    (!host.is_empty() && host.len() <= 253).then_some(host)
}
