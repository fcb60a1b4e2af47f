//! Downloads of a stored email: the whole message (`/v1/emails/{id}/raw`) and one attachment
//! (`/v1/emails/{id}/attachments/{index}`), scoped to the key's domain like `GET /v1/emails/{id}`.
//!
//! Received and submitted mail is answered from the bytes stored as they arrived. Mail sent
//! through the API never existed as bytes in the store: it is rendered again from its document
//! and attachments by the code delivery renders with, so the download is the message that was
//! sent.

use bytes::Bytes;
use hyper::header::{CONTENT_DISPOSITION, CONTENT_TYPE, HeaderName, HeaderValue};

use crate::error::{Error, Result};
use crate::http::{Ctx, Reply};
use crate::queue::compose::{Composer, render};
use crate::store::{Domain, Email};

/// What a download is made from.
enum Source {
    /// The stored bytes of received or submitted mail.
    Raw(Vec<u8>),
    /// Mail sent through the API: its document, its domain (for signing) and attachments.
    Sent(Box<Email>, Option<Domain>, Vec<Vec<u8>>),
}

/// The email of the key's domain and what its bytes come from; 404 when there is none.
async fn load(ctx: &Ctx) -> Result<(Email, Source)> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let found = ctx
        .app
        .store
        .read_long(move |r| -> Result<_> {
            let Some(email) = r.email(&domain, &id)? else {
                return Ok(None);
            };
            let source = match r.raw_message(&id)? {
                Some(raw) => Source::Raw(raw),
                None => {
                    let sender = r.domain(email.domain())?;
                    Source::Sent(Box::new(email.clone()), sender, r.sent_parts(&id)?)
                }
            };
            Ok(Some((email, source)))
        })
        .await?;
    found.ok_or_else(|| Error::not_found("email"))
}

pub async fn raw(ctx: Ctx) -> Result<Reply> {
    let (_, source) = load(&ctx).await?;
    let bytes = match source {
        Source::Raw(raw) => raw,
        Source::Sent(email, domain, parts) => {
            let domain = domain.ok_or_else(|| Error::not_found("email"))?;
            let app = &ctx.app;
            let public_url = app.config.public_url();
            let composer =
                Composer { public_url: &public_url, tokens: &app.tokens, signers: &app.signers };
            render(&composer, &email, &domain, &parts)?
        }
    };
    let mut reply = Reply::raw("message/rfc822", Bytes::from(bytes));
    let name = format!("{}.eml", ctx.param("id"));
    reply.headers.push((CONTENT_DISPOSITION, disposition(&name)));
    Ok(reply)
}

pub async fn attachment(ctx: Ctx) -> Result<Reply> {
    let index: usize = ctx.param("index").parse().map_err(|_| {
        Error::invalid(
            format!("`index` must be a whole number from 0; got {:?}", ctx.param("index")),
            "attachments are numbered from 0 in the order `attachments` lists them",
        )
    })?;
    let (email, source) = load(&ctx).await?;
    let missing = || Error::not_found("attachment");
    let meta = email.attachments.get(index).ok_or_else(missing)?;
    let bytes = match source {
        Source::Raw(raw) => {
            let bounded = crate::mime::bound(&raw);
            let message = bounded.parse().ok_or_else(missing)?;
            let part = message.attachments().nth(index).ok_or_else(missing)?;
            part.contents().to_vec()
        }
        Source::Sent(_, _, parts) => parts.into_iter().nth(index).ok_or_else(missing)?,
    };
    let mut reply = Reply::raw("application/octet-stream", Bytes::from(bytes));
    // The type comes from the sender: a value that is not a valid header stays the generic one.
    if let Ok(value) = HeaderValue::from_str(&meta.content_type) {
        reply.headers.push((CONTENT_TYPE, value));
    }
    let name = meta.filename.as_deref().unwrap_or("attachment");
    reply.headers.push((CONTENT_DISPOSITION, disposition(name)));
    // Sender-chosen bytes and types: a browser must save them, never render them as ours.
    let nosniff = HeaderName::from_static("x-content-type-options");
    reply.headers.push((nosniff, HeaderValue::from_static("nosniff")));
    Ok(reply)
}

/// `attachment; filename="..."`, with `filename*` (RFC 5987, UTF-8) beside an ASCII fallback
/// when the name is not plain ASCII (RFC 6266 section 4.3).
pub fn disposition(name: &str) -> HeaderValue {
    let plain = |c: char| c.is_ascii_graphic() || c == ' ';
    let fallback: String =
        name.chars().map(|c| if plain(c) && c != '"' && c != '\\' { c } else { '_' }).collect();
    let mut value = format!("attachment; filename=\"{}\"", fallback.trim());
    if name.chars().any(|c| !plain(c) || c == '"' || c == '\\') {
        value.push_str("; filename*=UTF-8''");
        for b in name.bytes() {
            if b.is_ascii_alphanumeric() || b"!#$&+-.^_`|~".contains(&b) {
                value.push(b as char);
            } else {
                value.push_str(&format!("%{b:02X}"));
            }
        }
    }
    // Every byte is printable ASCII by construction.
    HeaderValue::from_str(&value).unwrap_or(HeaderValue::from_static("attachment"))
}

#[cfg(test)]
mod tests {
    use super::disposition;

    #[test]
    fn names_ascii_and_non_ascii_files() {
        assert_eq!(disposition("report.pdf"), "attachment; filename=\"report.pdf\"");
        assert_eq!(
            disposition("a \"b\".txt"),
            "attachment; filename=\"a _b_.txt\"; filename*=UTF-8''a%20%22b%22.txt"
        );
        assert_eq!(
            disposition("Übersicht €.pdf"),
            "attachment; filename=\"_bersicht _.pdf\"; filename*=UTF-8''%C3%9Cbersicht%20%E2%82%AC.pdf"
        );
        assert_eq!(
            disposition("a\r\nb"),
            "attachment; filename=\"a__b\"; filename*=UTF-8''a%0D%0Ab"
        );
    }
}
