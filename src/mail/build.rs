//! MIME messages as we send them: multipart/alternative when there is HTML (with the text part
//! given or derived), Date, a Message-ID on the sending domain, MIME-Version, the mailbox's
//! display name in From, threading and RFC 8058 unsubscribe headers when asked; Cc, Reply-To,
//! the sender's own headers and attachments (multipart/mixed) when the send API gives them. Bcc
//! recipients are never written into the message.

use mail_builder::MessageBuilder;
use mail_builder::headers::address::Address;
use mail_builder::headers::content_type::ContentType;
use mail_builder::headers::raw::Raw;
use mail_builder::headers::text::Text;

use crate::error::{Error, Result};
use crate::store::Header;

/// One attachment: its stored metadata and bytes.
pub struct Part<'a> {
    pub filename: &'a str,
    /// A media type, possibly with parameters (`text/plain; charset=utf-8`).
    pub content_type: &'a str,
    pub bytes: &'a [u8],
}

pub struct Outgoing<'a> {
    pub from_name: Option<&'a str>,
    pub from: &'a str,
    pub to: &'a [String],
    pub subject: &'a str,
    pub text: &'a str,
    pub html: Option<&'a str>,
    /// Without angle brackets.
    pub message_id: &'a str,
    pub date_ms: u64,
    pub in_reply_to: Option<&'a str>,
    /// `(https URL, mailto URL)` for List-Unsubscribe with one-click POST.
    pub unsubscribe: Option<(String, String)>,
    pub cc: &'a [String],
    pub reply_to: Option<&'a str>,
    /// The sender's own headers (validated by the send API: none the service writes).
    pub extra_headers: &'a [Header],
    pub attachments: &'a [Part<'a>],
}

pub fn build(m: &Outgoing<'_>) -> Result<Vec<u8>> {
    let from = match m.from_name {
        Some(name) => mail_builder::headers::address::Address::new_address(Some(name), m.from),
        None => mail_builder::headers::address::Address::new_address(None::<&str>, m.from),
    };
    let to: Vec<&str> = m.to.iter().map(String::as_str).collect();
    let mut builder = MessageBuilder::new().from(from);
    if !to.is_empty() {
        builder = builder.to(to);
    }
    builder = builder
        .subject(m.subject)
        .date((m.date_ms / 1000) as i64)
        .message_id(m.message_id)
        .text_body(m.text);
    if let Some(html) = m.html {
        builder = builder.html_body(html);
    }
    if let Some(parent) = m.in_reply_to {
        let parent = parent.trim_matches(['<', '>']);
        builder = builder.in_reply_to(parent).references(parent);
    }
    if let Some((url, mailto)) = &m.unsubscribe {
        builder = builder
            .header("List-Unsubscribe", Raw::new(format!("<{url}>, <{mailto}>")))
            .header("List-Unsubscribe-Post", Raw::new("List-Unsubscribe=One-Click"));
    }
    if !m.cc.is_empty() {
        builder = builder.cc(m.cc.iter().map(String::as_str).collect::<Vec<&str>>());
    }
    if let Some(reply_to) = m.reply_to {
        builder = builder.reply_to(Address::from(reply_to));
    }
    for h in m.extra_headers {
        builder = builder.header(h.name.as_str(), Text::new(h.value.as_str()));
    }
    for part in m.attachments {
        builder = builder.attachment(content_type(part.content_type), part.filename, part.bytes);
    }
    builder.write_to_vec().map_err(Error::internal)
}

/// `type/subtype; name=value` into mail-builder's form, parameters kept.
fn content_type(value: &str) -> ContentType<'_> {
    let mut pieces = value.split(';');
    let mut ct = ContentType::new(pieces.next().unwrap_or("application/octet-stream").trim());
    for param in pieces {
        if let Some((name, v)) = param.split_once('=') {
            ct = ct.attribute(name.trim(), v.trim().trim_matches('"'));
        }
    }
    ct
}

/// A Message-ID local part that is unique and says nothing about the sender's data.
pub fn message_id(email_id: &str, domain: &str) -> String {
    format!("{email_id}.{}@{domain}", crate::ids::secret("").get(..10).unwrap_or("x"))
}

/// The From header of a mailbox: `"Name" <address>`, or the bare address. Quotes and
/// backslashes are dropped from the name so it cannot end the quoted string.
pub fn from_header(display_name: Option<&str>, address: &str) -> String {
    match display_name {
        Some(name) => format!("\"{}\" <{address}>", name.replace(['"', '\\'], "")),
        None => address.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builds_alternative_with_headers() {
        let to = vec!["jane@example.com".to_owned(), "joe@example.org".to_owned()];
        let raw = build(&Outgoing {
            from_name: Some("Sales Team"),
            from: "sales@demo.test",
            to: &to,
            subject: "Hello",
            text: "Hi there",
            html: Some("<p>Hi <b>there</b></p>"),
            message_id: "abc@demo.test",
            date_ms: 1_795_305_600_000,
            in_reply_to: Some("<parent@demo.test>"),
            unsubscribe: Some((
                "https://x.test/t/u/T".into(),
                "mailto:unsubscribe@demo.test".into(),
            )),
            cc: &[],
            reply_to: None,
            extra_headers: &[],
            attachments: &[],
        })
        .expect("build"); // ok: test
        let text = String::from_utf8(raw).expect("utf-8"); // ok: test
        for needle in [
            "From: \"Sales Team\" <sales@demo.test>",
            "To: <jane@example.com>, <joe@example.org>",
            "Message-ID: <abc@demo.test>",
            "In-Reply-To: <parent@demo.test>",
            "References: <parent@demo.test>",
            "MIME-Version: 1.0",
            "Date: Sun, 22 Nov 2026 00:00:00 +0000",
            "multipart/alternative",
            "List-Unsubscribe: <https://x.test/t/u/T>, <mailto:unsubscribe@demo.test>",
            "List-Unsubscribe-Post: List-Unsubscribe=One-Click",
        ] {
            assert!(text.contains(needle), "missing {needle:?} in\n{text}");
        }
    }
}
