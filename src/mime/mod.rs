//! Bounded MIME: the depth and part limits of a message, enforced on its bytes before any parser
//! sees them, wherever a received or stored message is parsed (MX, submission, IMAP, the API).
//!
//! mail-parser follows attached messages (`message/rfc822` without a transfer encoding) with no
//! limit and builds a value nested as deep as the input; 50,000 levels (1.6 MB) overflowed the
//! stack when that value was dropped, and every reader walking it recursively is exposed the same
//! way. Here a container (a multipart or an attached message) deeper than [`MAX_DEPTH`], or past
//! [`MAX_PARTS`] parts, has the name of its Content-Type field rewritten in a private copy of the
//! bytes, to `X-Mime-Limit` (the same length, so every offset the parser reports is still an
//! offset into the stored message and IMAP sections serve the stored bytes). The parser then
//! reads that part as opaque text. The stored message itself is never changed.

mod fields;
mod scan;
mod survey;

use std::borrow::Cow;

use mail_parser::{Message, MessageParser};

/// Containers inside one another: Dovecot's default (`MESSAGE_PARSER_DEFAULT_MAX_NESTED_MIME_PARTS`
/// is 100), far beyond what mail clients write.
pub const MAX_DEPTH: usize = 100;
/// Parts in one message: Dovecot's default (`MESSAGE_PARSER_DEFAULT_MAX_TOTAL_MIME_PARTS`).
pub const MAX_PARTS: usize = 10_000;
/// Attached messages under a transfer encoding inside one another: what mail-parser decodes.
const MAX_DECODED: usize = 3;

/// What a Content-Type field is renamed to: 12 bytes, as "Content-Type".
const OPAQUE_NAME: &[u8; fields::CONTENT_TYPE_LEN] = b"X-Mime-Limit";

/// A message's bytes made safe to parse: the stored bytes themselves when within the limits.
pub struct Bounded<'a> {
    bytes: Cow<'a, [u8]>,
}

/// The bytes of `raw` within the limits.
pub fn bound(raw: &[u8]) -> Bounded<'_> {
    let limits = scan::Limits { depth: MAX_DEPTH, parts: MAX_PARTS, decoded: MAX_DECODED };
    let opaque = scan::plan(raw, limits);
    if opaque.is_empty() {
        return Bounded { bytes: Cow::Borrowed(raw) };
    }
    let mut copy = raw.to_vec();
    for at in opaque {
        if let Some(name) = copy.get_mut(at..at + OPAQUE_NAME.len()) {
            name.copy_from_slice(OPAQUE_NAME);
        }
    }
    Bounded { bytes: Cow::Owned(copy) }
}

/// Parses `raw` within the limits into an owned message (for callers that keep it apart from
/// the bytes).
pub fn parse_owned(raw: &[u8]) -> Option<Message<'static>> {
    bound(raw).parse().map(Message::into_owned)
}

impl Bounded<'_> {
    /// The whole message, parsed.
    pub fn parse(&self) -> Option<Message<'_>> {
        MessageParser::default().parse(self.bytes.as_ref())
    }

    /// Whether anything was made opaque.
    pub fn limited(&self) -> bool {
        matches!(self.bytes, Cow::Owned(_))
    }

    /// The bytes the parser reads (the stored bytes, or a copy of the same length).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// The deepest nesting of containers in a parsed message and its number of parts, found
/// without recursion: what the limits hold (the unit tests and the fuzz target check it).
pub fn shape(message: &Message<'_>) -> (usize, usize) {
    let (mut deepest, mut parts) = (0, 0);
    let mut stack = vec![(message, 0u32, 0usize)];
    while let Some((m, id, depth)) = stack.pop() {
        let Some(part) = m.parts.get(id as usize) else { continue };
        parts += 1;
        deepest = deepest.max(depth);
        match &part.body {
            mail_parser::PartType::Multipart(children) => {
                stack.extend(children.iter().map(|c| (m, *c, depth + 1)));
            }
            mail_parser::PartType::Message(inner) => stack.push((inner, 0, depth + 1)),
            _ => {}
        }
    }
    (deepest, parts)
}

#[cfg(test)]
mod tests;
