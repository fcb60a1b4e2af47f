//! Bounce classes: what a receiving server's refusal means for the address (extensions.md,
//! "Deliverability and outbound controls"), read from the enhanced status code (RFC 3463) and
//! the reply text.
//!
//! The text is read first because providers reuse codes: Microsoft answers an unknown recipient
//! with 5.4.1 or 5.1.10 and Gmail a rate limit with 4.2.1, and many servers send no enhanced code
//! at all. Only `invalid_recipient` suppresses an address, so where the evidence is thin the
//! class falls back to one that does not (`other`): wrongly suppressing a good address costs the
//! sender a customer, wrongly retrying a bad one costs one more refusal.

use serde::{Deserialize, Serialize};

/// Why a receiving server refused or delayed a recipient (extensions.md, "Deliverability"):
/// only `InvalidRecipient` suppresses the address; a `Policy` refusal (a block at one provider)
/// leaves it sendable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BounceClass {
    InvalidRecipient,
    MailboxFull,
    Policy,
    Dns,
    Tls,
    Protocol,
    Other,
}

impl BounceClass {
    pub const ALL: [BounceClass; 7] = [
        Self::InvalidRecipient,
        Self::MailboxFull,
        Self::Policy,
        Self::Dns,
        Self::Tls,
        Self::Protocol,
        Self::Other,
    ];

    /// Its position in `ALL`, for counters kept as arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvalidRecipient => "invalid_recipient",
            Self::MailboxFull => "mailbox_full",
            Self::Policy => "policy",
            Self::Dns => "dns",
            Self::Tls => "tls",
            Self::Protocol => "protocol",
            Self::Other => "other",
        }
    }

    /// Whether a permanent failure of this class suppresses the address.
    pub fn suppresses(self) -> bool {
        self == Self::InvalidRecipient
    }
}

/// Phrases, lower case, in the order they are tried; the first class with a match wins.
/// Blocks come first: a block notice often quotes the recipient ("mailbox unavailable").
const PHRASES: &[(BounceClass, &[&str])] = &[
    (
        BounceClass::Policy,
        &[
            "spamhaus",
            "blocked using",
            "block list",
            "blocklist",
            "blacklist",
            "reputation",
            "spam",
            "unsolicited",
            "user complaints",
            "rate limit",
            "at a rate",
            "unexpected volume",
            "[tss",
        ],
    ),
    (
        BounceClass::MailboxFull,
        &[
            "over quota",
            "overquota",
            "quota exceeded",
            "quotaexceeded",
            "exceeded storage",
            "insufficient storage",
            "mailbox full",
            "mailbox is full",
            "mailbox has exceeded",
        ],
    ),
    (
        BounceClass::InvalidRecipient,
        &[
            "user unknown",
            "unknown user",
            "no such user",
            "no such recipient",
            "no such mailbox",
            "user not found",
            "recipient not found",
            "recipientnotfound",
            "mailbox not found",
            "mailbox unavailable",
            "does not exist",
            "doesn't exist",
            "doesn't have a",
            "unrouteable address",
            "invalid recipient",
            "invalid mailbox",
            "account is disabled",
            "account has been disabled",
            "account that you tried to reach is disabled",
            "address rejected: access denied",
        ],
    ),
    (
        BounceClass::Dns,
        &[
            "null mx",
            "domain not found",
            "host not found",
            "host or domain name not found",
            "name service error",
            "nxdomain",
            "no mx",
        ],
    ),
    (
        BounceClass::Tls,
        &["starttls", "tls required", "tls handshake", "certificate", "encryption required"],
    ),
    (
        BounceClass::Protocol,
        &[
            "too many recipients",
            "syntax error",
            "command unrecognized",
            "command not implemented",
            "bad sequence",
            "synchronization error",
            "line too long",
            "helo command rejected",
        ],
    ),
];

/// Weaker signs of a policy refusal, tried after the enhanced code says nothing specific.
const POLICY_HINTS: &[&str] = &[
    "policy",
    "blocked",
    "too many",
    "greylist",
    "spf",
    "dkim",
    "dmarc",
    "relay access denied",
    "administrative prohibition",
    "sender verify",
    "access denied",
    "not accepted",
    "rejected",
];

/// Whether a reply (or the greeting that refused a session) is the receiver slowing the sender
/// down: any 421 (RFC 5321: closing the channel, which providers send when they throttle), or
/// another 4xx that names a rate, too many of something, or a busy server. The queue's shaper
/// pauses a provider group on exactly these, and `classify` calls them all `Policy`: the
/// receiver limits the sender (its volume, connections or reputation), never the address, so
/// the class must not suppress, and a 4xx that ends a message as `failed` never does anyway.
pub fn is_throttle(reply: &str) -> bool {
    let reply = reply.trim_start();
    if reply.starts_with("421") {
        return true;
    }
    if !reply.starts_with('4') {
        return false;
    }
    let lower = reply.to_ascii_lowercase();
    // A per-transaction recipient limit: the rest go in the next transaction, nothing to pause.
    if lower.contains("too many recipients") {
        return false;
    }
    let word = |w: &str| {
        lower.match_indices(w).any(|(at, _)| {
            let before = lower[..at].chars().next_back();
            let after = lower[at + w.len()..].chars().next();
            !before.is_some_and(|c| c.is_ascii_alphabetic())
                && !after.is_some_and(|c| c.is_ascii_alphabetic())
        })
    };
    THROTTLE_PHRASES.iter().any(|p| lower.contains(p)) || word("rate") || word("rates")
}

/// Lower-case phrases of a 4xx that throttles (besides the words "rate" and "rates").
const THROTTLE_PHRASES: &[&str] =
    &["too many", "throttl", "ratelimit", "server busy", "unexpected volume"];

/// The class of an SMTP reply (`550-5.1.1 The email account ... does not exist`), whole or as
/// the text after the basic code; lines of a multi-line reply may be joined.
pub fn classify(reply: &str) -> BounceClass {
    if is_throttle(reply) {
        return BounceClass::Policy;
    }
    let (basic, enhanced, text) = split(reply);
    let lower = text.to_ascii_lowercase();
    for (class, phrases) in PHRASES {
        if phrases.iter().any(|p| lower.contains(p)) {
            return *class;
        }
    }
    if let Some(class) = enhanced.and_then(by_enhanced_code) {
        return class;
    }
    if POLICY_HINTS.iter().any(|p| lower.contains(p)) {
        return BounceClass::Policy;
    }
    match basic {
        Some(552) => BounceClass::MailboxFull,
        Some(500..=504) => BounceClass::Protocol,
        _ => BounceClass::Other,
    }
}

/// The class an enhanced status code gives on its own, when it names one (RFC 3463, and the
/// registry's later security codes).
fn by_enhanced_code((_, subject, detail): (u8, u16, u16)) -> Option<BounceClass> {
    use BounceClass::*;
    Some(match (subject, detail) {
        (1, 1 | 3 | 6) | (2, 1) => InvalidRecipient,
        (1, 2 | 10) | (4, 3 | 4) => Dns,
        (2, 2) => MailboxFull,
        (5, _) | (4, 6) => Protocol,
        (7, 4 | 5 | 10 | 11) => Tls,
        (7, _) => Policy,
        // Too big for the server or the mailbox's limit: no fault of the address.
        (2, 3) | (3, 4) => Other,
        _ => return None,
    })
}

/// The basic code, the enhanced code and the text of a reply. Each line of a multi-line reply
/// repeats the codes; only the first line's are read, and every line's text is kept.
fn split(reply: &str) -> (Option<u16>, Option<(u8, u16, u16)>, String) {
    let mut basic = None;
    let mut enhanced = None;
    let mut text = String::with_capacity(reply.len());
    for (n, line) in reply.lines().enumerate() {
        let mut rest = line.trim();
        if let Some(code) = rest.get(..3).and_then(|c| c.parse::<u16>().ok()) {
            basic = basic.or(Some(code));
            rest = rest[3..].trim_start_matches(['-', ' ']);
        }
        let (code, after) = match rest.split_once(' ') {
            Some((word, after)) => (parse_enhanced(word), after),
            None => (parse_enhanced(rest), ""),
        };
        if code.is_some() {
            rest = after;
            if n == 0 || enhanced.is_none() {
                enhanced = enhanced.or(code);
            }
        }
        text.push_str(rest);
        text.push(' ');
    }
    (basic, enhanced, text)
}

fn parse_enhanced(word: &str) -> Option<(u8, u16, u16)> {
    let mut parts = word.split('.');
    let class = parts.next()?.parse::<u8>().ok().filter(|c| matches!(c, 2 | 4 | 5))?;
    let subject = parts.next()?.parse().ok()?;
    let detail = parts.next()?.parse().ok()?;
    parts.next().is_none().then_some((class, subject, detail))
}

#[cfg(test)]
mod tests;
