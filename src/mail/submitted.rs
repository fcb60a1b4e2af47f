//! A message a mail client submitted, made ready to send: its one From address, the Bcc fields
//! taken out (they name hidden recipients), a Message-ID and a Date added when the client left
//! them out (RFC 6409 section 8), and what the stored email shows of it. The client's bytes are
//! otherwise kept as they are, so its signature-relevant formatting is what goes out.

use mail_parser::{Message, MessageParser, PartType};

use crate::store::{Attachment, Email, Header};

/// A submitted message ready to store and send.
pub struct Prepared {
    /// The bytes to send (before DKIM signing).
    pub raw: Vec<u8>,
    /// The From header as the stored email shows it.
    pub from: String,
    pub subject: String,
    pub text: String,
    /// `None` when the client sent no HTML part.
    pub html: Option<String>,
    pub in_reply_to: Option<String>,
    message_id: String,
    cc: Vec<String>,
    reply_to: Option<String>,
    attachments: Vec<Attachment>,
    headers: Vec<Header>,
}

/// Why a submitted message may not leave as the mailbox that logged in.
#[derive(Debug, PartialEq, Eq)]
pub enum Impersonation {
    /// No From field, or more than one: receivers and filters may show either.
    FromFields(usize),
    /// A From, Sender or Resent-* field naming no address, several, or another one.
    Field(&'static str),
}

impl std::fmt::Display for Impersonation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Impersonation::FromFields(n) => write!(f, "exactly one From field is allowed; got {n}"),
            Impersonation::Field(name) => {
                write!(f, "the {name} field must name only the mailbox you logged in as")
            }
        }
    }
}

/// Fields that name who a message is from, each held to the logged-in mailbox: From (exactly
/// one field, one address), Sender (at most one), and those of a resent message. Mail-parser
/// keeps only the last of repeated fields, so the fields are counted here on the raw header:
/// `From: security@paypal.com` followed by `From: <login>` must not pass as the login.
const IDENTITY: [(&str, &str); 4] = [
    ("from", "From"),
    ("sender", "Sender"),
    ("resent-from", "Resent-From"),
    ("resent-sender", "Resent-Sender"),
];

/// Checks that the message claims to be from `login` and no one else.
pub fn check_sender(raw: &[u8], login: &str) -> Result<(), Impersonation> {
    let (head, _) = split(raw);
    let mut froms = 0;
    for field in fields(head) {
        let Some(&(lower, name)) = IDENTITY.iter().find(|(n, _)| is_named(field, n)) else {
            continue;
        };
        froms += usize::from(lower == "from");
        let only = only_address(field);
        if !only.is_some_and(|a| crate::address::same_address(&a, login)) {
            return Err(Impersonation::Field(name));
        }
    }
    if froms != 1 {
        return Err(Impersonation::FromFields(froms));
    }
    if fields(head).filter(|f| is_named(f, "sender")).count() > 1 {
        return Err(Impersonation::Field("Sender"));
    }
    Ok(())
}

/// The one address an address field names (a group of one included), read by mail-parser as a
/// From field.
fn only_address(field: &[u8]) -> Option<String> {
    let colon = field.iter().position(|b| *b == b':')?;
    let mut one = b"From:".to_vec();
    one.extend_from_slice(&field[colon + 1..]);
    one.extend_from_slice(b"\r\n\r\n");
    let message = MessageParser::default().parse_headers(&one)?;
    let mut addresses = message.from()?.iter();
    let first = addresses.next()?.address()?.to_owned();
    addresses.next().is_none().then_some(first)
}

/// The message made ready to send; `None` when it cannot be parsed.
pub fn prepare(submitted: &[u8], domain: &str, now: u64) -> Option<Prepared> {
    let (head, body) = split(submitted);
    let mut added = String::new();
    if !has_field(head, "message-id") {
        let id = super::build::message_id(&crate::ids::new_id("msg"), domain);
        added.push_str(&format!("Message-ID: <{id}>\r\n"));
    }
    if !has_field(head, "date") {
        let date = mail_builder::headers::date::Date::new((now / 1000) as i64).to_rfc822();
        added.push_str(&format!("Date: {date}\r\n"));
    }
    let mut raw = Vec::with_capacity(added.len() + submitted.len());
    raw.extend_from_slice(added.as_bytes());
    for field in fields(head).filter(|f| !is_named(f, "bcc")) {
        raw.extend_from_slice(field);
    }
    raw.extend_from_slice(body);
    let bounded = crate::mime::bound(&raw);
    let message = bounded.parse()?;
    Some(describe(&message, raw.clone()))
}

fn describe(message: &Message<'_>, raw: Vec<u8>) -> Prepared {
    use super::parsed::addresses;
    let from = message
        .from()
        .and_then(|a| a.first())
        .map(|a| crate::mail::build::from_header(a.name(), a.address().unwrap_or_default()))
        .unwrap_or_default();
    let sent_html = message.parts.iter().any(|p| matches!(p.body, PartType::Html(_)));
    let html = sent_html.then(|| message.body_html(0).map(|h| h.into_owned())).flatten();
    let text = message
        .body_text(0)
        .map(|t| t.into_owned())
        .or_else(|| html.as_deref().map(super::text::html_to_text))
        .unwrap_or_default();
    Prepared {
        from,
        subject: message.subject().unwrap_or("").to_owned(),
        text,
        html,
        in_reply_to: message.in_reply_to().as_text().map(|m| format!("<{m}>")),
        message_id: message.message_id().map(|m| format!("<{m}>")).unwrap_or_default(),
        cc: addresses(message.cc()),
        reply_to: super::parsed::reply_to(message),
        attachments: super::parsed::attachments(message),
        headers: super::parsed::headers(message),
        raw,
    }
}

impl Prepared {
    /// The queue entry of this message from `mailbox` to `to`, with its stored bytes: every
    /// sender of ready-made bytes (SMTP submission, Sieve answers) stores it the same way.
    pub fn into_email(self, mailbox: String, to: Vec<String>, now: u64) -> (Email, Vec<u8>) {
        let mut email = super::outbound::Outbound {
            kind: crate::store::SendType::Transactional,
            mailbox,
            from: self.from.clone(),
            to,
            subject: self.subject.clone(),
            text: self.text.clone(),
            html: self.html.clone(),
            in_reply_to: self.in_reply_to.clone(),
            batch_id: None,
            sequence: None,
            scheduled_at: None,
            due: now,
            now,
        }
        .into_email();
        self.complete(&mut email);
        (email, self.raw)
    }

    /// Fills in what the stored email shows beyond what `Outbound` derives: the client's
    /// Message-ID (replies thread on it), Cc, attachments, headers and the real size.
    fn complete(&self, email: &mut Email) {
        if !self.message_id.is_empty() {
            email.message_id = Some(self.message_id.clone());
        }
        email.cc = self.cc.clone();
        email.reply_to = self.reply_to.clone();
        email.attachments = self.attachments.clone();
        email.headers = self.headers.clone();
        email.summary.has_attachments = !self.attachments.is_empty();
        email.summary.size = self.raw.len() as u64;
    }
}

/// The header (with its final CRLF) and the rest (the blank line and the body).
fn split(raw: &[u8]) -> (&[u8], &[u8]) {
    match raw.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(at) => raw.split_at(at + 2),
        None => (raw, &[]),
    }
}

/// The header fields of `head`, each with its continuation lines and line ends.
fn fields(head: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut rest = head;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut end = 0;
        loop {
            end += rest[end..].iter().position(|b| *b == b'\n').map_or(rest.len() - end, |n| n + 1);
            if end >= rest.len() || !matches!(rest[end], b' ' | b'\t') {
                break;
            }
        }
        let (field, after) = rest.split_at(end);
        rest = after;
        Some(field)
    })
}

fn is_named(field: &[u8], name: &str) -> bool {
    field
        .split(|b| *b == b':')
        .next()
        .is_some_and(|n| n.trim_ascii().eq_ignore_ascii_case(name.as_bytes()))
        && field.contains(&b':')
}

fn has_field(head: &[u8], name: &str) -> bool {
    fields(head).any(|f| is_named(f, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    const MESSAGE: &[u8] = b"From: Sales <sales@alpha.test>\r\nTo: a@example.org\r\nBcc: hidden@example.net,\r\n  other@example.net\r\nSubject: Hi\r\n\r\nHello\r\n";

    #[test]
    fn bcc_goes_message_id_and_date_are_added_and_the_rest_is_kept() {
        let p = prepare(MESSAGE, "alpha.test", 1_795_305_600_000).expect("parses"); // ok: test
        let text = String::from_utf8_lossy(&p.raw).into_owned();
        assert!(!text.contains("hidden") && !text.contains("Bcc"), "{text}");
        assert!(text.starts_with("Message-ID: <msg_"), "{text}");
        assert!(text.contains("Date: Sun, 22 Nov 2026 00:00:00 +0000\r\n"), "{text}");
        assert!(text.ends_with("To: a@example.org\r\nSubject: Hi\r\n\r\nHello\r\n"), "{text}");
        assert_eq!(p.subject, "Hi");
        assert_eq!(p.from, "\"Sales\" <sales@alpha.test>");
        assert_eq!(p.text.trim(), "Hello");
        assert_eq!(p.html, None, "no HTML was sent");
        assert!(p.message_id.starts_with("<msg_"));
    }

    #[test]
    fn a_message_id_and_date_of_the_client_are_kept() {
        let m = b"Message-ID: <x@y>\r\nDate: Mon, 1 Jan 2024 00:00:00 +0000\r\nFrom: a@x.test\r\n\r\nb\r\n";
        let p = prepare(m, "x.test", 0).expect("parses"); // ok: test
        assert_eq!(p.raw, m.to_vec());
        assert_eq!(p.message_id, "<x@y>");
    }

    #[test]
    fn only_the_logged_in_mailbox_may_be_named_as_sender() {
        let login = "sales@alpha.test";
        assert_eq!(check_sender(MESSAGE, login), Ok(()));
        let two = b"From: security@paypal.com\r\nFrom: sales@alpha.test\r\n\r\nx\r\n";
        assert_eq!(check_sender(two, login), Err(Impersonation::Field("From")));
        let two_same = b"From: sales@alpha.test\r\nfrom : sales@alpha.test\r\n\r\nx\r\n";
        assert_eq!(check_sender(two_same, login), Err(Impersonation::FromFields(2)));
        let pair = b"From: a@x.test, sales@alpha.test\r\n\r\nx\r\n";
        assert_eq!(check_sender(pair, login), Err(Impersonation::Field("From")));
        assert_eq!(
            check_sender(b"To: a@x.test\r\n\r\nx\r\n", login),
            Err(Impersonation::FromFields(0))
        );
        let sender = b"From: sales@alpha.test\r\nSender: boss@alpha.test\r\n\r\nx\r\n";
        assert_eq!(check_sender(sender, login), Err(Impersonation::Field("Sender")));
        let resent = b"From: sales@alpha.test\r\nResent-From: ceo@alpha.test\r\n\r\nx\r\n";
        assert_eq!(check_sender(resent, login), Err(Impersonation::Field("Resent-From")));
        let own = b"From: \"S\" <SALES@alpha.test>\r\nSender: sales@alpha.test\r\n\
            Resent-Sender: sales@alpha.test\r\n\r\nx\r\n";
        assert_eq!(check_sender(own, login), Ok(()));
    }
}
