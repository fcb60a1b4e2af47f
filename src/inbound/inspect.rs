//! What a received message says, read without side effects (and fuzzed as such): the stored
//! form of the email, and the reports and references the inbound path acts on.

use mail_parser::Message;

use super::report;
use crate::store::{Email, Folder, MessageStatus, Summary, received_bodies};

/// What a received message says, read without side effects (and fuzzed as such).
pub struct Inspected {
    /// The stored form; the mailbox and id are filled in per copy.
    pub email: Email,
    /// Permanent failures, when the message is a DSN.
    pub failures: Vec<report::Failure>,
    /// The complained-about recipient, when it is an ARF report.
    pub complaint: Option<String>,
    /// Message-IDs a report refers to.
    pub referenced: Vec<String>,
    /// The token of a mailto: unsubscribe.
    pub unsubscribe_token: Option<String>,
    /// Message-IDs the message answers (In-Reply-To, then References, newest first).
    pub parents: Vec<String>,
    /// What it is as an answer to our mail: a reply, an automatic one, a bounce.
    pub answer: crate::autoreply::Finding,
}

/// Parses a received message (already carrying our trace headers) into what we act on.
pub fn inspect(raw: &[u8], now: u64) -> Option<Inspected> {
    let bounded = crate::mime::bound(raw);
    let message = bounded.parse()?;
    Some(inspect_parsed(&message, raw.len() as u64, now))
}

/// `inspect` of a message the caller parsed (within `crate::mime`'s bounds) of `size` bytes.
pub fn inspect_parsed(message: &Message<'_>, size: u64, now: u64) -> Inspected {
    Inspected {
        email: parse_email(message, size, now),
        failures: report::dsn_failures(message),
        complaint: report::complaint(message),
        referenced: report::referenced_message_ids(message),
        unsubscribe_token: unsubscribe_token(message),
        parents: references(message),
        answer: crate::autoreply::classify(message, crate::autoreply::utc_day(now)),
    }
}

/// The email as stored for a mailbox (the mailbox and id are filled in per copy).
fn parse_email(message: &Message<'_>, size: u64, now: u64) -> Email {
    let addresses = |a: Option<&mail_parser::Address<'_>>| -> Vec<String> {
        a.map(|a| a.iter().filter_map(|x| x.address().map(|addr| named(x.name(), addr))).collect())
            .unwrap_or_default()
    };
    let from = message
        .from()
        .and_then(|a| a.first())
        .map(|a| match (a.name(), a.address()) {
            (Some(name), Some(addr)) => format!("\"{name}\" <{addr}>"),
            (_, Some(addr)) => addr.to_owned(),
            (Some(name), None) => name.to_owned(),
            (None, None) => String::new(),
        })
        .unwrap_or_default();
    let (text, html) = received_bodies(message);
    let snippet_source = text
        .clone()
        .or_else(|| html.as_deref().map(crate::mail::text::html_to_text))
        .unwrap_or_default();
    let attachments = crate::mail::parsed::attachments(message);
    let headers = crate::mail::parsed::headers(message);
    // Folders list mail in the order it arrived; the sender's Date header is kept in `headers`.
    let created_at = now;
    Email {
        summary: Summary {
            id: String::new(),
            mailbox: String::new(),
            folder: Folder::Inbox,
            from,
            to: addresses(message.to()),
            subject: message.subject().unwrap_or("").to_owned(),
            snippet: crate::mail::text::snippet(&snippet_source),
            status: MessageStatus::Received,
            created_at,
            size,
            has_attachments: !attachments.is_empty(),
        },
        cc: addresses(message.cc()),
        reply_to: crate::mail::parsed::reply_to(message),
        message_id: message.message_id().map(|m| format!("<{m}>")),
        in_reply_to: message.in_reply_to().as_text().map(|m| format!("<{m}>")),
        headers,
        text,
        html,
        attachments,
        ..Email::default()
    }
}

/// A recipient as the API shows it: `Name <address>`, the name quoted only when it holds a
/// character that would make the pair ambiguous, or the bare address.
fn named(name: Option<&str>, addr: &str) -> String {
    match name.map(str::trim).filter(|n| !n.is_empty() && *n != addr) {
        None => addr.to_owned(),
        Some(name) if name.contains([',', ';', '<', '>', '"', '@', ':']) => {
            format!("\"{}\" <{addr}>", name.replace('"', "'"))
        }
        Some(name) => format!("{name} <{addr}>"),
    }
}

/// The Message-IDs a message answers: In-Reply-To, then References from the newest.
fn references(message: &Message<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |v: &mail_parser::HeaderValue<'_>| {
        if let Some(list) = v.as_text_list() {
            out.extend(list.iter().rev().map(|m| format!("<{m}>")));
        } else if let Some(one) = v.as_text() {
            out.push(format!("<{one}>"));
        }
    };
    push(message.in_reply_to());
    push(message.references());
    out
}

/// The token in a List-Unsubscribe mailto: subject (`unsubscribe <token>`).
fn unsubscribe_token(message: &Message<'_>) -> Option<String> {
    let subject = message.subject()?.trim();
    let token = subject.strip_prefix("unsubscribe").unwrap_or(subject).trim();
    (!token.is_empty()).then(|| token.to_owned())
}
