//! ENVELOPE (RFC 9051 7.5.2): the header fields as the message has them, never decoded (an
//! RFC 2047 word stays encoded: the client decodes it and knows its charset), and the address
//! fields parsed for their structure only: each mailbox as (name adl mailbox host), a group as
//! (NIL NIL "group" NIL), its members, then (NIL NIL NIL NIL). Every field is read in one pass,
//! without recursion, whatever it holds.

use imap_types::core::{IString, NString};
use imap_types::envelope::{Address, Envelope};
use mail_parser::{Header, Message};

use super::section::buffer;

/// What a mailbox without a local part or without a domain shows in their place: a NIL host
/// would make it look like the start of a group.
const MISSING_MAILBOX: &[u8] = b"MISSING_MAILBOX";
const MISSING_DOMAIN: &[u8] = b"MISSING_DOMAIN";

pub fn envelope(m: &Message<'_>) -> Envelope<'static> {
    let headers = m.part(0).map_or(&[][..], |p| p.headers.as_slice());
    let field = |name: &str| raw_field(m, headers, name);
    let list = |name: &str| field(name).map(|v| addresses(&v)).unwrap_or_default();
    let from = list("From");
    // An absent or empty Sender or Reply-To is the From (RFC 9051 7.5.2).
    let or_from = |l: Vec<Address<'static>>| if l.is_empty() { from.clone() } else { l };
    let sender = or_from(list("Sender"));
    let reply_to = or_from(list("Reply-To"));
    Envelope {
        date: nstring(field("Date")),
        subject: nstring(field("Subject")),
        from,
        sender,
        reply_to,
        to: list("To"),
        cc: list("Cc"),
        bcc: list("Bcc"),
        in_reply_to: nstring(field("In-Reply-To")),
        message_id: nstring(field("Message-ID")),
    }
}

/// The value of the first field `name` among `headers` (of `m` or one of its parts) as the
/// message has it: unfolded (the line ends taken out, the whitespace after them kept) and
/// trimmed.
pub fn raw_field(m: &Message<'_>, headers: &[Header<'_>], name: &str) -> Option<Vec<u8>> {
    let h = headers.iter().find(|h| h.name.as_str().eq_ignore_ascii_case(name))?;
    let raw = buffer(m).get(h.offset_start as usize..h.offset_end as usize)?;
    let unfolded: Vec<u8> = raw.iter().copied().filter(|b| *b != b'\r' && *b != b'\n').collect();
    Some(unfolded.trim_ascii().to_vec())
}

/// Bytes as a response string (quoted, or a literal when they need one), NIL when absent or
/// when they cannot be one (a NUL).
pub fn nstring(bytes: Option<Vec<u8>>) -> NString<'static> {
    NString(bytes.and_then(|b| IString::try_from(b).ok()))
}

/// A word of an address field: an atom (dots included), a quoted string (`text` unquoted,
/// `raw` as written) or a domain literal.
struct Word {
    text: Vec<u8>,
    raw: Vec<u8>,
}

enum Token {
    Word(Word),
    Comment(Vec<u8>),
    /// One of `< > @ , : ;`.
    Special(u8),
}

const SPECIALS: &[u8] = b"<>@,:;";

fn tokens(v: &[u8]) -> Vec<Token> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < v.len() {
        let start = i;
        match v[i] {
            b' ' | b'\t' => i += 1,
            b'"' => {
                let mut text = Vec::new();
                i += 1;
                while i < v.len() && v[i] != b'"' {
                    if v[i] == b'\\' && i + 1 < v.len() {
                        i += 1;
                    }
                    text.push(v[i]);
                    i += 1;
                }
                i = (i + 1).min(v.len());
                out.push(Token::Word(Word { text, raw: v[start..i].to_vec() }));
            }
            b'(' => {
                // Comments nest; only their depth is counted.
                let (mut depth, mut text) = (0usize, Vec::new());
                while i < v.len() {
                    match v[i] {
                        b'\\' if i + 1 < v.len() => {
                            i += 1;
                            text.push(v[i]);
                        }
                        b'(' => {
                            if depth > 0 {
                                text.push(b'(');
                            }
                            depth += 1;
                        }
                        b')' => {
                            depth -= 1;
                            if depth == 0 {
                                i += 1;
                                break;
                            }
                            text.push(b')');
                        }
                        b => text.push(b),
                    }
                    i += 1;
                }
                out.push(Token::Comment(text.trim_ascii().to_vec()));
            }
            b'[' => {
                while i < v.len() && v[i] != b']' {
                    i += 1;
                }
                i = (i + 1).min(v.len());
                let raw = v[start..i].to_vec();
                out.push(Token::Word(Word { text: raw.clone(), raw }));
            }
            c if SPECIALS.contains(&c) => {
                out.push(Token::Special(c));
                i += 1;
            }
            _ => {
                while i < v.len() && !b" \t\"([".contains(&v[i]) && !SPECIALS.contains(&v[i]) {
                    i += 1;
                }
                let raw = v[start..i].to_vec();
                out.push(Token::Word(Word { text: raw.clone(), raw }));
            }
        }
    }
    out
}

/// The addresses of an address field, groups marked as RFC 9051 has them.
pub fn addresses(value: &[u8]) -> Vec<Address<'static>> {
    let mut out = Vec::new();
    let mut in_group = false;
    // The tokens of the element being read: outside angle brackets, and inside them.
    let mut outside: Vec<Token> = Vec::new();
    let mut angle: Option<Vec<Token>> = None;
    let mut closed = false;
    for token in tokens(value) {
        if let Some(inside) = angle.as_mut().filter(|_| !closed) {
            match token {
                Token::Special(b'>') => closed = true,
                t => inside.push(t),
            }
            continue;
        }
        match token {
            Token::Special(b'<') if angle.is_none() => angle = Some(Vec::new()),
            Token::Special(b':') if angle.is_none() && !has_at(&outside) => {
                if in_group {
                    out.push(group_end());
                }
                let name = phrase(&outside);
                out.push(Address {
                    name: NString(None),
                    adl: NString(None),
                    mailbox: nstring(Some(name)),
                    host: NString(None),
                });
                outside.clear();
                in_group = true;
            }
            Token::Special(c @ (b',' | b';')) => {
                out.extend(mailbox(&outside, angle.as_deref()));
                (outside, angle, closed) = (Vec::new(), None, false);
                if c == b';' && in_group {
                    out.push(group_end());
                    in_group = false;
                }
            }
            t => outside.push(t),
        }
    }
    out.extend(mailbox(&outside, angle.as_deref()));
    if in_group {
        out.push(group_end());
    }
    out
}

fn group_end() -> Address<'static> {
    let nil = || NString(None);
    Address { name: nil(), adl: nil(), mailbox: nil(), host: nil() }
}

fn has_at(tokens: &[Token]) -> bool {
    tokens.iter().any(|t| matches!(t, Token::Special(b'@')))
}

/// A display name: its words, unquoted, one space between them.
fn phrase(tokens: &[Token]) -> Vec<u8> {
    let mut out = Vec::new();
    for t in tokens {
        if let Token::Word(w) = t {
            if !out.is_empty() {
                out.push(b' ');
            }
            out.extend_from_slice(&w.text);
        }
    }
    out
}

/// One mailbox from the tokens before and inside its angle brackets; none when there is
/// nothing (an empty element of the list).
fn mailbox(outside: &[Token], angle: Option<&[Token]>) -> Option<Address<'static>> {
    let comment = || {
        outside.iter().chain(angle.unwrap_or_default()).find_map(|t| match t {
            Token::Comment(c) if !c.is_empty() => Some(c.clone()),
            _ => None,
        })
    };
    let (name, spec) = match angle {
        Some(inside) => {
            let name = phrase(outside);
            (if name.is_empty() { comment() } else { Some(name) }, inside)
        }
        None => (comment(), outside),
    };
    // A route (`@a,@b:`) before the address, as written.
    let (adl, spec) = match spec.first() {
        Some(Token::Special(b'@')) => {
            let end = spec.iter().position(|t| matches!(t, Token::Special(b':')));
            let end = end.unwrap_or(spec.len());
            let route = spec[..end].iter().map(raw).collect::<Vec<_>>().concat();
            (Some(route), spec.get(end + 1..).unwrap_or_default())
        }
        _ => (None, spec),
    };
    let at = spec.iter().rposition(|t| matches!(t, Token::Special(b'@')));
    let (local, domain) = match at {
        Some(at) => (&spec[..at], Some(&spec[at + 1..])),
        None => (spec, None),
    };
    let joined = |ts: &[Token]| ts.iter().map(raw).collect::<Vec<_>>().concat();
    let (local, domain) = (joined(local), domain.map(joined).unwrap_or_default());
    if local.is_empty() && domain.is_empty() && adl.is_none() && angle.is_none() {
        return None;
    }
    let or = |v: Vec<u8>, missing: &[u8]| if v.is_empty() { missing.to_vec() } else { v };
    Some(Address {
        name: nstring(name),
        adl: nstring(adl),
        mailbox: nstring(Some(or(local, MISSING_MAILBOX))),
        host: nstring(Some(or(domain, MISSING_DOMAIN))),
    })
}

/// A token as written (comments left out: they are no part of an address).
fn raw(t: &Token) -> Vec<u8> {
    match t {
        Token::Word(w) => w.raw.clone(),
        Token::Special(c) => vec![*c],
        Token::Comment(_) => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(value: &str) -> String {
        let one = |n: &NString<'_>| match &n.0 {
            Some(s) => format!("{:?}", String::from_utf8_lossy(s.as_ref())),
            None => "NIL".to_owned(),
        };
        addresses(value.as_bytes())
            .iter()
            .map(|a| {
                format!("({} {} {} {})", one(&a.name), one(&a.adl), one(&a.mailbox), one(&a.host))
            })
            .collect()
    }

    #[test]
    fn address_fields_keep_their_shape_and_their_words() {
        assert_eq!(shown("ann@x.test"), r#"(NIL NIL "ann" "x.test")"#);
        assert_eq!(shown("ann@x.test (Ann (A.) B)"), r#"("Ann (A.) B" NIL "ann" "x.test")"#);
        assert_eq!(
            shown(r#""Doe, John" <"j d"@[1.2.3.4]>"#),
            r#"("Doe, John" NIL "\"j d\"" "[1.2.3.4]")"#
        );
        assert_eq!(
            shown("John Q. Public <jqp@x.test>,, "),
            r#"("John Q. Public" NIL "jqp" "x.test")"#
        );
        assert_eq!(shown("a@x.test, b"), r#"(NIL NIL "a" "x.test")(NIL NIL "b" "MISSING_DOMAIN")"#);
        assert_eq!(
            shown("g: a@x.test"),
            r#"(NIL NIL "g" NIL)(NIL NIL "a" "x.test")(NIL NIL NIL NIL)"#
        );
        assert_eq!(shown(""), "");
        assert_eq!(shown("<unclosed@x.test"), r#"(NIL NIL "unclosed" "x.test")"#);
        assert_eq!(shown("((((("), "");
    }
}
