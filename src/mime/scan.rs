//! The plan for one message: which Content-Type fields to make opaque so that no container lies
//! deeper than the depth limit and no more parts exist than the part limit. A quick survey
//! clears most mail; the rest is walked part by part, as a parser splits it, without building
//! anything; hard caps on the survey's counts hold even where the walk and the parser disagree.

use std::collections::BTreeSet;

use mail_parser::decoders::{base64::base64_decode, quoted_printable::quoted_printable_decode};

use super::fields::{self, Field, Kind, Line};
use super::survey::{Survey, survey};

#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Containers (multiparts and attached messages) inside one another.
    pub depth: usize,
    /// Parts in the whole message.
    pub parts: usize,
    /// Attached messages under base64 or quoted-printable inside one another (the parser
    /// decodes and parses those itself, up to 3 deep).
    pub decoded: usize,
}

/// Candidate fields beyond which every further one is made opaque, whatever the walk found: the
/// parser's nesting is at most twice their number (a digest's parts are messages by default).
const HARD_CANDIDATES: usize = 500;
/// `--` occurrences beyond which no multipart is split at all: each part needs one.
const HARD_DASHES: usize = 100_000;
/// Walks after which a message still over the part limit has every container made opaque.
const MAX_WALKS: usize = 4;

/// The line offsets of the Content-Type fields to make opaque, in order.
pub fn plan(raw: &[u8], limits: Limits) -> Vec<usize> {
    let s = survey(raw);
    if quick_ok(&s, limits) {
        return Vec::new();
    }
    let mut opaque = BTreeSet::new();
    if !walk_until_fits(raw, limits, &mut opaque) {
        opaque.extend(s.candidates.iter().map(|c| c.at));
    }
    let kept: Vec<_> = s.candidates.iter().filter(|c| !opaque.contains(&c.at)).collect();
    opaque.extend(kept.iter().skip(HARD_CANDIDATES).map(|c| c.at));
    if s.dashes > HARD_DASHES {
        opaque.extend(s.candidates.iter().filter(|c| c.multipart).map(|c| c.at));
    }
    opaque.into_iter().collect()
}

/// Whether the survey alone shows the message within the limits.
fn quick_ok(s: &Survey, limits: Limits) -> bool {
    let hidden = s.decoded_encoding && s.candidates.iter().any(|c| !c.multipart);
    s.candidates.len() * 2 <= limits.depth && s.dashes < limits.parts && !hidden
}

/// Walks again, each time making the outermost multipart of too many parts opaque; false when
/// the message still does not fit.
fn walk_until_fits(raw: &[u8], limits: Limits, opaque: &mut BTreeSet<usize>) -> bool {
    for _ in 0..MAX_WALKS {
        match Walk::new(raw, limits, opaque).run() {
            Ok(Settled::Yes) => return true,
            // A digest's part just made opaque is now read as a message: walk it as one.
            Ok(Settled::Rewalk) => {}
            Err(Some(at)) => opaque.extend(at),
            Err(None) => return false,
        }
    }
    false
}

/// Whether decoded content needs nothing made opaque within `limits`.
fn fits(raw: &[u8], limits: Limits) -> bool {
    let s = survey(raw);
    if quick_ok(&s, limits) {
        return true;
    }
    let mut opaque = BTreeSet::new();
    walk_until_fits(raw, limits, &mut opaque) && opaque.is_empty()
}

enum Frame {
    /// `at`: its Content-Type fields, made opaque when it holds too many parts.
    Multipart {
        boundary: Vec<u8>,
        digest: bool,
        at: Vec<usize>,
    },
    Message,
}

/// The structural fields of a header block being read. The parser takes the last of repeated
/// fields, so the last value counts and every Content-Type field is made opaque together.
#[derive(Default)]
struct Block {
    content_types: Vec<usize>,
    content_type: Option<Vec<u8>>,
    /// The Content-Transfer-Encoding fields: made opaque (their first 12 bytes renamed) with
    /// the Content-Type of a digest's part, which stays a message by default and would
    /// otherwise still be decoded and parsed.
    encodings: Vec<usize>,
    encoding: Vec<u8>,
    last: Option<Field>,
}

/// An attached message the parser will decode: its fields and where its body starts.
struct Encoded {
    at: Vec<usize>,
    body: usize,
    base64: bool,
    /// A digest's part: made opaque, it is still a message, whose text must then be walked.
    in_digest: bool,
}

/// How a walk that stayed within the part limit ended.
enum Settled {
    Yes,
    Rewalk,
}

struct Walk<'a> {
    raw: &'a [u8],
    limits: Limits,
    opaque: &'a mut BTreeSet<usize>,
    frames: Vec<Frame>,
    parts: usize,
    in_headers: bool,
    block: Block,
    encoded: Option<Encoded>,
    rewalk: bool,
}

/// A walk ends over the part limit with the fields of the outermost multipart to make opaque.
type Over = Option<Vec<usize>>;

impl<'a> Walk<'a> {
    fn new(raw: &'a [u8], limits: Limits, opaque: &'a mut BTreeSet<usize>) -> Walk<'a> {
        let (frames, block, encoded) = (Vec::new(), Block::default(), None);
        let rewalk = false;
        Walk { raw, limits, opaque, frames, parts: 1, in_headers: true, block, encoded, rewalk }
    }

    fn run(mut self) -> Result<Settled, Over> {
        for line in fields::lines(self.raw) {
            if self.in_headers && !line.text.starts_with(b"--") {
                self.header_line(line);
                continue;
            }
            match self.delimiter(line.text) {
                Some((frame, close)) => {
                    if self.in_headers {
                        self.end_block(line.at);
                    }
                    self.finish_encoded(line.at);
                    self.frames.truncate(frame + 1);
                    if close {
                        self.frames.pop();
                        self.in_headers = false;
                    } else {
                        self.parts += 1;
                        if self.parts > self.limits.parts {
                            return Err(self.outermost_multipart());
                        }
                        self.in_headers = true;
                    }
                }
                None if self.in_headers => self.header_line(line),
                None => {}
            }
        }
        if self.in_headers {
            self.end_block(self.raw.len());
        }
        self.finish_encoded(self.raw.len());
        Ok(if self.rewalk { Settled::Rewalk } else { Settled::Yes })
    }

    fn header_line(&mut self, line: Line<'_>) {
        if line.text.is_empty() {
            self.end_block(line.next);
            return;
        }
        if fields::is_continuation(line.text) {
            match self.block.last {
                Some(Field::ContentType) => {
                    if let Some(v) = self.block.content_type.as_mut() {
                        v.extend_from_slice(line.text);
                    }
                }
                Some(Field::TransferEncoding) => self.block.encoding.extend_from_slice(line.text),
                _ => {}
            }
            return;
        }
        let Some((field, value, name)) = fields::field(line.text) else { return };
        // Fields are known by where their name starts: what is renamed to make them opaque.
        let at = line.at + name;
        match field {
            // An opaque field is no Content-Type to the parser.
            Field::ContentType if self.opaque.contains(&at) => {
                self.block.last = None;
                return;
            }
            Field::ContentType => {
                self.block.content_types.push(at);
                self.block.content_type = Some(value.to_vec());
            }
            Field::TransferEncoding if self.opaque.contains(&at) => {
                self.block.last = None;
                return;
            }
            Field::TransferEncoding => {
                self.block.encodings.push(at);
                self.block.encoding = value.to_vec();
            }
            Field::Other => {}
        }
        self.block.last = Some(field);
    }

    /// The end of a header block: the part it heads opens a container, or is a leaf whose body
    /// follows from `body`.
    fn end_block(&mut self, body: usize) {
        let block = std::mem::take(&mut self.block);
        self.in_headers = false;
        let in_digest = matches!(self.frames.last(), Some(Frame::Multipart { digest: true, .. }));
        let kind = match &block.content_type {
            Some(value) => fields::kind(value),
            None if in_digest => Kind::Message,
            None => Kind::Leaf,
        };
        let depth = self.frames.len();
        let decoded = fields::is_decoded(&block.encoding);
        match kind {
            Kind::Multipart { boundary, digest } => {
                // A digest's parts are messages without a field of their own to make opaque:
                // it needs room for them too.
                let room = if digest { 2 } else { 1 };
                if depth + room <= self.limits.depth {
                    let at = block.content_types;
                    self.frames.push(Frame::Multipart { boundary, digest, at });
                    return;
                }
            }
            Kind::Message if decoded => {
                if depth < self.limits.depth && self.limits.decoded > 0 {
                    let base64 = fields::is_base64(&block.encoding);
                    // In a digest, the part stays a message when its Content-Type goes: its
                    // encoding must go with it.
                    let mut at = block.content_types;
                    if in_digest {
                        at.extend(&block.encodings);
                    }
                    self.encoded = Some(Encoded { at, body, base64, in_digest });
                    return;
                }
            }
            Kind::Message => {
                if depth < self.limits.depth {
                    self.open_message();
                    return;
                }
            }
            Kind::Leaf => return,
        }
        // Too deep: the part is made opaque.
        self.opaque.extend(block.content_types);
        if in_digest {
            // Without a Content-Type a digest's part is still a message (the digest left room
            // for it), read as it stands once its encoding is opaque too.
            self.opaque.extend(block.encodings);
            if depth < self.limits.depth {
                self.open_message();
            }
        }
    }

    /// An attached message begins: its header block follows.
    fn open_message(&mut self) {
        self.frames.push(Frame::Message);
        self.parts += 1;
        self.in_headers = true;
    }

    /// An attached message under a transfer encoding ends at `end`: its decoded bytes must fit
    /// in what is left of the limits, or it is opaque.
    fn finish_encoded(&mut self, end: usize) {
        let Some(e) = self.encoded.take() else { return };
        let body = self.raw.get(e.body..end).unwrap_or_default();
        let decoded = if e.base64 { base64_decode(body) } else { quoted_printable_decode(body) };
        let left = Limits {
            depth: self.limits.depth.saturating_sub(self.frames.len() + 1),
            parts: self.limits.parts.saturating_sub(self.parts),
            decoded: self.limits.decoded - 1,
        };
        // Bytes that do not decode here are opaque too: the parser might still read them.
        if !decoded.is_some_and(|d| fits(&d, left)) {
            self.opaque.extend(e.at);
            self.rewalk |= e.in_digest;
        }
    }

    /// Whether a `--` line delimits the innermost open multipart (its index), and whether it
    /// closes it. Only the innermost counts, by prefix, as the parser seeks only the boundary of
    /// the part it is in: `--b99` inside `b98` does not end an outer `b9`.
    fn delimiter(&self, text: &[u8]) -> Option<(usize, bool)> {
        let rest = text.strip_prefix(b"--")?;
        let (i, boundary) = self.frames.iter().enumerate().rev().find_map(|(i, f)| match f {
            Frame::Multipart { boundary, .. } => Some((i, boundary)),
            Frame::Message => None,
        })?;
        let after = rest.strip_prefix(boundary.as_slice())?;
        Some((i, after.starts_with(b"--")))
    }

    fn outermost_multipart(&self) -> Over {
        self.frames.iter().find_map(|f| match f {
            Frame::Multipart { at, .. } if !at.is_empty() => Some(at.clone()),
            _ => None,
        })
    }
}
