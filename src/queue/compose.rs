//! The bytes we send for a stored outbound email: MIME built from the stored parts, campaign
//! tracking and unsubscribe headers added per recipient, then DKIM-signed with the domain's keys.
//! A message a mail client submitted is sent as it came, only signed.

use crate::error::{Error, Result};
use crate::mail::build::{Outgoing, Part, build};
use crate::mail::headers::is_owned;
use crate::mail::sign::Signers;
use crate::store::{Email, Header, SendType};
use crate::tracking::{Links, Tokens};

/// What building and signing a message needs: delivery and downloads (`GET
/// /v1/emails/{id}/raw`) both render with it, so a download is the message that was sent.
pub struct Composer<'a> {
    /// The base of tracking and unsubscribe links.
    pub public_url: &'a str,
    pub tokens: &'a Tokens,
    pub signers: &'a Signers,
}

/// `"Name" <addr>` or `addr` into its parts.
pub fn split_display(from: &str) -> (Option<String>, String) {
    match (from.rfind('<'), from.ends_with('>')) {
        (Some(open), true) => {
            let name = from[..open].trim().trim_matches('"').trim();
            let addr = from[open + 1..from.len() - 1].trim().to_owned();
            ((!name.is_empty()).then(|| name.to_owned()), addr)
        }
        _ => (None, from.trim().to_owned()),
    }
}

/// The signed message of `email`; `parts` are its attachments' bytes (`Rtx::sent_parts`).
pub fn render(
    app: &Composer<'_>,
    email: &Email,
    domain: &crate::store::Domain,
    parts: &[Vec<u8>],
) -> Result<Vec<u8>> {
    let raw = unsigned(app, email, domain, parts)?;
    sign(app, email, domain, &raw)
}

/// `render`, signing on the signing threads (`Signers::sign`) rather than where it is awaited:
/// what delivery calls, since signing is most of the CPU a delivery costs.
// Called by `queue::attempt_inner` once the merge switches it over from `render`.
pub async fn render_pooled(
    app: &Composer<'_>,
    email: &Email,
    domain: &crate::store::Domain,
    parts: &[Vec<u8>],
) -> Result<Vec<u8>> {
    let raw = unsigned(app, email, domain, parts)?;
    sign_pooled(app, email, domain, raw).await
}

/// The message of `email` as `render` signs it.
fn unsigned(
    app: &Composer<'_>,
    email: &Email,
    domain: &crate::store::Domain,
    parts: &[Vec<u8>],
) -> Result<Vec<u8>> {
    let (from_name, from) = split_display(&email.summary.from);
    let text = email.text.clone().unwrap_or_default();
    let message_id = email.message_id.as_deref().unwrap_or("").trim_matches(['<', '>']).to_owned();
    let base_url = app.public_url.to_owned();
    let campaign = email.send_type.is_some_and(SendType::is_tracked);
    let recipient = email.summary.to.first().cloned().unwrap_or_default();
    let links = Links {
        base_url: &base_url,
        tokens: app.tokens,
        email_id: &email.summary.id,
        recipient: &recipient,
    };
    let (text, html, unsubscribe) = if campaign {
        let token_url = links.unsubscribe_url();
        let token = token_url.rsplit('/').next().unwrap_or("");
        let mailto = format!("mailto:unsubscribe@{}?subject=unsubscribe%20{token}", domain.name);
        // Switched-off parts are left out; the List-Unsubscribe headers always stay.
        let tracking = email.tracking.unwrap_or_default();
        (
            if tracking.unsubscribe_footer { links.text_footer(&text) } else { text },
            email.html.as_deref().map(|h| links.rewrite_html_with(h, &tracking)),
            Some((token_url.clone(), mailto)),
        )
    } else {
        (text, email.html.clone(), None)
    };
    let extra_headers: Vec<Header> =
        email.headers.iter().filter(|h| !is_owned(&h.name)).cloned().collect();
    let attachments: Vec<Part<'_>> = email
        .attachments
        .iter()
        .zip(parts)
        .map(|(a, bytes)| Part {
            filename: a.filename.as_deref().unwrap_or("attachment"),
            content_type: &a.content_type,
            bytes,
        })
        .collect();
    let raw = build(&Outgoing {
        from_name: from_name.as_deref(),
        from: &from,
        to: &email.summary.to,
        subject: &email.summary.subject,
        text: &text,
        html: html.as_deref(),
        message_id: &message_id,
        date_ms: email.scheduled_at.unwrap_or(email.summary.created_at),
        in_reply_to: email.in_reply_to.as_deref(),
        unsubscribe,
        cc: &email.cc,
        reply_to: email.reply_to.as_deref(),
        extra_headers: &extra_headers,
        attachments: &attachments,
    })?;
    Ok(mark_warmup(email, raw))
}

/// `raw` signed with the domain's DKIM keys: a rendered message, or one a mail client submitted
/// (sent as it came, its bytes untouched).
pub fn sign(
    app: &Composer<'_>,
    email: &Email,
    domain: &crate::store::Domain,
    raw: &[u8],
) -> Result<Vec<u8>> {
    let signer = app.signers.get(domain)?;
    signer.sign(raw).map_err(|e| Error::internal(format!("signing {}: {e}", email.summary.id)))
}

/// `sign` on the signing threads.
// Called by `queue::attempt_inner` once the merge switches it over from `sign`.
pub async fn sign_pooled(
    app: &Composer<'_>,
    email: &Email,
    domain: &crate::store::Domain,
    raw: Vec<u8>,
) -> Result<Vec<u8>> {
    let signed = app.signers.sign(domain, raw).await;
    signed.map_err(|e| Error::internal(format!("signing {}: {e}", email.summary.id)))
}

/// The header that marks warmup mail; its value is the id of the message at the sender.
pub const WARMUP_HEADER: &str = "X-Edgemail-Warmup";

/// The rendered message with the warmup header added, for warmup mail; other mail unchanged.
/// Added before DKIM signing, so receivers can tell warmup traffic apart.
fn mark_warmup(email: &Email, raw: Vec<u8>) -> Vec<u8> {
    if email.send_type != Some(SendType::Warmup) {
        return raw;
    }
    let header = format!("{WARMUP_HEADER}: {}\r\n", email.summary.id);
    let mut out = Vec::with_capacity(header.len() + raw.len());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&raw);
    out
}

#[cfg(test)]
mod tests {
    use super::split_display;

    #[test]
    fn splits_display_addresses() {
        assert_eq!(
            split_display("\"Sales Team\" <s@x.test>"),
            (Some("Sales Team".into()), "s@x.test".into())
        );
        assert_eq!(split_display("Sales <s@x.test>"), (Some("Sales".into()), "s@x.test".into()));
        assert_eq!(split_display("s@x.test"), (None, "s@x.test".into()));
        assert_eq!(split_display("<s@x.test>"), (None, "s@x.test".into()));
    }
}
