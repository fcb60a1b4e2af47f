//! What a parsed message shows the API, for received and submitted mail alike: its addresses,
//! attachments and header fields.

use mail_parser::{Address, Message, MimeHeaders};

use crate::store::{Attachment, Header};

/// The addresses of an address header, without display names.
pub fn addresses(a: Option<&Address<'_>>) -> Vec<String> {
    a.map(|a| a.iter().filter_map(|x| x.address().map(str::to_owned)).collect()).unwrap_or_default()
}

/// The first address of Reply-To.
pub fn reply_to(message: &Message<'_>) -> Option<String> {
    message.reply_to().and_then(|a| a.first()).and_then(|a| a.address()).map(str::to_owned)
}

pub fn attachments(message: &Message<'_>) -> Vec<Attachment> {
    message
        .attachments()
        .map(|p| Attachment {
            filename: p.attachment_name().map(str::to_owned),
            content_type: p
                .content_type()
                .map(|ct| match ct.subtype() {
                    Some(sub) => format!("{}/{sub}", ct.ctype()),
                    None => ct.ctype().to_owned(),
                })
                .unwrap_or_else(|| "application/octet-stream".into()),
            size: p.len() as u64,
        })
        .collect()
}

/// Every header field, its value trimmed.
pub fn headers(message: &Message<'_>) -> Vec<Header> {
    message
        .headers_raw()
        .map(|(name, value)| Header { name: name.to_owned(), value: value.trim().to_owned() })
        .collect()
}
