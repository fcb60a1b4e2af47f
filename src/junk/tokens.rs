//! The features of a raw message: words of its subject and bodies, facts about its header
//! fields, address domains, link hosts and HTML tricks, each a short text with a prefix naming
//! where it was found (`s:` subject, `f:` From name, `url:` a link host...) and hashed to a
//! stable 64-bit number, which is all the model and the store keep.
//!
//! Everything is bounded, whatever the message: at most [`MAX_RAW`] bytes are parsed (after
//! `mime::bound` has made deep nesting opaque), at most [`MAX_PARTS`] parts are read, at most
//! [`MAX_TEXT`] bytes of each part's decoded text, at most [`MAX_HEADERS`] header fields.

use mail_parser::{Address, Message, MessagePart, MimeHeaders, PartType};

mod features;

use features::{Builder, floor, url_host};
pub use features::{Features, MAX_TEXT};

/// Bytes of a message that are parsed: text worth reading comes first, and a large attachment
/// beyond it would cost parse time for nothing.
pub const MAX_RAW: usize = 1 << 20;
/// Parts looked at, nested messages' parts included.
pub const MAX_PARTS: usize = 64;
/// Header fields looked at.
pub const MAX_HEADERS: usize = 128;
/// Received fields whose hosts and addresses are read (the newest first: the older ones are
/// what the sender wrote, and cheap to forge, but still telling).
const MAX_RECEIVED: usize = 8;
/// Nested messages followed inside one another.
const MAX_NESTING: usize = 2;

/// The features of a raw RFC 5322 message. Never fails: bytes that do not parse still give the
/// fact that they did not.
pub fn features(raw: &[u8]) -> Features {
    let raw = &raw[..cut(raw)];
    let bounded = crate::mime::bound(raw);
    match bounded.parse() {
        Some(message) => features_of(&message),
        None => {
            let mut out = Builder::default();
            out.add("h:", "unparsable");
            out.finish()
        }
    }
}

/// The features of a message already parsed (within `crate::mime`'s bounds) by the caller:
/// received mail is parsed once for what it is and what the filter makes of it.
pub fn features_of(message: &mail_parser::Message<'_>) -> Features {
    let mut out = Builder::default();
    headers(message, &mut out);
    bodies(message, &mut out);
    out.finish()
}

/// Where to stop reading `raw`: [`MAX_RAW`] bytes, backed up to the end of a line.
fn cut(raw: &[u8]) -> usize {
    if raw.len() <= MAX_RAW {
        return raw.len();
    }
    memchr::memrchr(b'\n', &raw[..MAX_RAW]).map_or(MAX_RAW, |at| at + 1)
}

/// Facts of the header fields, the addresses' names and domains, and the subject.
fn headers(message: &Message<'_>, out: &mut Builder) {
    let mut received = 0usize;
    for header in message.headers().iter().take(MAX_HEADERS) {
        let name = header.name().to_ascii_lowercase();
        // Our own verdict (and other filters') must not teach the model: a message trained
        // after delivery carries it.
        if name.starts_with("x-spam") {
            continue;
        }
        if name == "received" {
            received += 1;
            if received <= MAX_RECEIVED {
                received_hosts(header_text(message, header), out);
            }
        }
        out.add("hn:", &name);
    }
    out.add("h:received:", &received.min(10).to_string());
    if message.date().is_none() {
        out.add("h:", "no-date");
    }
    match message.message_id() {
        Some(id) => {
            let (local, domain) = id.rsplit_once('@').unwrap_or((id, "none"));
            out.add("mid:", domain.trim_end_matches('>'));
            out.add("mid:", &shape(local));
        }
        None => out.add("h:", "no-message-id"),
    }
    if let Some(subject) = message.subject() {
        subject_facts(subject, out);
        out.words("s:", subject);
    }
    let from = address_facts(message.from(), "f:", "fd:", out);
    address_facts(message.to(), "t:", "td:", out);
    if let Some(reply) = address_facts(message.reply_to(), "r:", "rd:", out) {
        let same = from.as_deref() == Some(reply.as_str());
        out.add("h:reply-to:", if same { "same-domain" } else { "other-domain" });
    }
    let recipients =
        message.to().map_or(0, |a| a.iter().count()) + message.cc().map_or(0, |a| a.iter().count());
    out.add("h:recipients:", &recipients.min(10).to_string());
    for (name, prefix) in [("X-Mailer", "xm:"), ("User-Agent", "ua:")] {
        if let Some(value) = message.header_raw(name) {
            let first = value.split_whitespace().next().unwrap_or("");
            out.add(prefix, &first.to_lowercase());
        }
    }
    if let Some(ct) = message.root_part().content_type() {
        out.add("ct:", &content_type(ct.ctype(), ct.subtype()));
    }
}

/// The raw text of a header field, as the message holds it.
fn header_text<'m>(message: &'m Message<'_>, header: &mail_parser::Header<'_>) -> &'m str {
    let raw = message.raw_message();
    let (start, end) = (header.offset_start() as usize, header.offset_end() as usize);
    raw.get(start..end).and_then(|b| std::str::from_utf8(b).ok()).unwrap_or("")
}

/// The host names and IPv4 networks a Received field names (relays, dial-up pools, the
/// sender's claimed name): SpamBayes found them among the strongest clues.
fn received_hosts(text: &str, out: &mut Builder) {
    let text = &text[..floor(text, 1024)];
    for word in text.split(|c: char| c.is_whitespace() || "()[]<>;=".contains(c)) {
        let word = word.trim_matches(|c: char| c == '.' || c == ',').to_ascii_lowercase();
        if word.len() < 4 || !word.contains('.') || word.contains('@') {
            continue;
        }
        if word.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            let mut octets = word.split('.');
            if let (Some(a), Some(b)) = (octets.next(), octets.next()) {
                out.add("rcvip:", &format!("{a}.{b}"));
            }
        } else if word.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-') {
            out.host("rcv:", &word);
        }
    }
}

fn content_type(ctype: &str, subtype: Option<&str>) -> String {
    match subtype {
        Some(sub) => format!("{}/{}", ctype, sub).to_ascii_lowercase(),
        None => ctype.to_ascii_lowercase(),
    }
}

/// The shape of an identifier: how long, and whether it mixes digits in (random local parts
/// and Message-IDs of bulk mailers look alike).
fn shape(id: &str) -> String {
    let digits = id.bytes().filter(u8::is_ascii_digit).count();
    let other = id.bytes().filter(|b| !b.is_ascii_alphanumeric()).count();
    format!("len{}-digits{}-other{}", id.len().min(30) / 5 * 5, digits.min(5), other.min(3))
}

fn subject_facts(subject: &str, out: &mut Builder) {
    let letters = subject.chars().filter(|c| c.is_alphabetic()).count();
    let upper = subject.chars().filter(|c| c.is_uppercase()).count();
    if letters >= 8 && upper * 10 >= letters * 7 {
        out.add("s:", "<mostly-caps>");
    }
    if subject.contains("!!") {
        out.add("s:", "<exclamations>");
    }
    if subject.contains('$') {
        out.add("s:", "<dollar>");
    }
    if !subject.is_ascii() {
        out.add("s:", "<non-ascii>");
    }
}

/// Tokens of an address field: display name words and each address's domain. Answers the
/// first address's domain.
fn address_facts(
    field: Option<&Address<'_>>,
    name_prefix: &str,
    domain_prefix: &str,
    out: &mut Builder,
) -> Option<String> {
    let mut first = None;
    for addr in field?.iter().take(10) {
        if let Some(name) = addr.name() {
            out.words(name_prefix, name);
        }
        let parts = addr.address().and_then(|a| a.rsplit_once('@'));
        if let Some((local, _)) = parts {
            out.add(name_prefix, &format!("<local:{}>", shape(local)));
        }
        let domain = parts.map(|(_, d)| d.to_lowercase());
        if let Some(domain) = domain {
            out.add(domain_prefix, &domain);
            first.get_or_insert(domain);
        }
    }
    first
}

/// Words of the text parts, HTML facts and words of the HTML parts, attachment types; nested
/// messages are followed [`MAX_NESTING`] deep, all within [`MAX_PARTS`] parts.
fn bodies(message: &Message<'_>, out: &mut Builder) {
    let mut budget = MAX_PARTS;
    let mut stack: Vec<(&Message<'_>, usize)> = vec![(message, 0)];
    let (mut plain, mut html) = (false, false);
    while let Some((m, depth)) = stack.pop() {
        for part in &m.parts {
            if budget == 0 {
                out.add("h:", "many-parts");
                return;
            }
            budget -= 1;
            match &part.body {
                PartType::Text(text) => {
                    plain |= !text.trim().is_empty();
                    part_facts(part, out);
                    out.words("", text);
                }
                PartType::Html(source) => {
                    html = true;
                    part_facts(part, out);
                    html_facts(source, out);
                }
                PartType::Binary(_) | PartType::InlineBinary(_) => {
                    let ct = part.content_type().map(|c| content_type(c.ctype(), c.subtype()));
                    out.add("at:", ct.as_deref().unwrap_or("unknown"));
                }
                PartType::Message(inner) if depth < MAX_NESTING => stack.push((inner, depth + 1)),
                PartType::Message(_) | PartType::Multipart(_) => {}
            }
        }
    }
    if html && !plain {
        out.add("html:", "no-text-alternative");
    }
}

/// The charset and transfer encoding of a text part.
fn part_facts(part: &MessagePart<'_>, out: &mut Builder) {
    if let Some(charset) = part.content_type().and_then(|c| c.attribute("charset")) {
        out.add("cs:", &charset.to_ascii_lowercase());
    }
    if let Some(cte) = part.content_transfer_encoding() {
        out.add("cte:", &cte.to_ascii_lowercase());
    }
}

/// Tricks of HTML mail (text hidden from the reader, an image instead of text, scripts and
/// forms), link and image hosts, and the words a reader sees.
fn html_facts(source: &str, out: &mut Builder) {
    let source = &source[..floor(source, MAX_TEXT)];
    let lower = source.to_ascii_lowercase();
    let squeezed: String = lower.chars().filter(|c| !c.is_ascii_whitespace()).collect();
    for (needle, fact) in [
        ("display:none", "hidden"),
        ("visibility:hidden", "hidden"),
        ("font-size:0", "tiny-font"),
        ("font-size:1px", "tiny-font"),
        ("size=\"1\"", "tiny-font"),
        ("size=1", "tiny-font"),
        ("color=\"#ffffff\"", "white-text"),
        ("color=#ffffff", "white-text"),
        ("color:#ffffff", "white-text"),
        ("color:#fff;", "white-text"),
        ("<script", "script"),
        ("<form", "form"),
        ("<iframe", "iframe"),
        ("<map", "image-map"),
    ] {
        if squeezed.contains(needle) {
            out.add("html:", fact);
        }
    }
    let comments = memchr::memmem::find_iter(lower.as_bytes(), b"<!--").count();
    if comments > 10 {
        out.add("html:", "many-comments");
    }
    let mut images = 0usize;
    for (at, _) in lower.match_indices("src=").take(100) {
        images += 1;
        let value = lower[at + 4..].trim_start_matches(['"', '\'']);
        if let Some(host) = url_host(value.split(['"', '\'', ' ', '>']).next().unwrap_or("")) {
            out.host("img:", host);
        }
    }
    for (at, _) in lower.match_indices("href=").take(200) {
        let value = lower[at + 5..].trim_start_matches(['"', '\'']);
        if let Some(host) = url_host(value.split(['"', '\'', ' ', '>']).next().unwrap_or("")) {
            out.host("url:", host);
        }
    }
    let text = crate::mail::text::html_to_text(source);
    let visible = text.split_whitespace().map(str::len).sum::<usize>();
    if images > 0 && visible < 200 {
        out.add("html:", "image-only");
    }
    out.words("", &text);
}

#[cfg(test)]
mod tests;
