//! `GET /v1/replies`: one inbox of the answers to sequence and campaign mail across every
//! mailbox of the domain, newest first, each with its classification and its lead's label; and
//! `PATCH /v1/sequences/{id}/enrollments/{enrollmentId}` `{label}`, which sets that label
//! (extensions.md, "Outreach").

use serde::Deserialize;

use super::paging;
use crate::error::{Error, Result};
use crate::http::request::{int_param, parse_json_nullable};
use crate::http::{Ctx, Reply};
use crate::store::MAX_LABEL;

/// The labels every client knows; any other text up to `MAX_LABEL` characters is a custom one.
pub const LABELS: [&str; 4] = ["interested", "meeting_booked", "not_interested", "wrong_person"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct LabelBody {
    /// A string, or `null` to remove the label (required either way).
    label: serde_json::Value,
}

/// The label of a `PATCH` body: trimmed, 1 to 40 characters, one line; `None` to remove it.
pub fn parse_label(body: &[u8]) -> Result<Option<String>> {
    let input: LabelBody = parse_json_nullable(body, &["label"])?;
    let label = match &input.label {
        serde_json::Value::Null => return Ok(None),
        serde_json::Value::String(label) => label.trim(),
        _ => return Err(Error::invalid("`label` must be a string or null", "e.g. \"interested\"")),
    };
    let count = label.chars().count();
    if count == 0 || count > MAX_LABEL || label.chars().any(char::is_control) {
        return Err(Error::invalid(
            format!("`label` must be 1 to {MAX_LABEL} characters on one line; got {count}"),
            format!("use one of {} or a short text of your own", LABELS.join(", ")),
        ));
    }
    Ok(Some(label.to_owned()))
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let limit = int_param(ctx.query_value("limit"), "limit", 1, 500, 100)? as usize;
    let before = ctx.query_value("cursor").map(|c| paging::parse_contact_cursor(&c)).transpose()?;
    let (page, more) =
        ctx.app.store.read(move |r| r.replies_page(&domain, before.as_deref(), limit)).await?;
    let mut reply = Reply::ok(&page)?;
    if let Some(last) = page.last().filter(|_| more) {
        let cursor = paging::contact_cursor(&last.email_id);
        paging::link_next(&mut reply, "/v1/replies", ctx.query.as_deref(), &cursor);
    }
    Ok(reply)
}

pub async fn label(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let sequence = ctx.param("id").to_owned();
    let id = ctx.param("enrollmentId").to_owned();
    let label = parse_label(&ctx.body)?;
    let e = ctx
        .app
        .store
        .write(move |w| w.set_enrollment_label(&domain, (&sequence, &id), label))
        .await?;
    Reply::ok(&serde_json::json!({
        "id": e.id,
        "sequenceId": e.sequence_id,
        "email": e.email,
        "status": e.status,
        "label": e.label,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels() {
        let label = |body: &str| parse_label(body.as_bytes()).ok();
        assert_eq!(label(r#"{"label": " interested "}"#), Some(Some("interested".into())));
        assert_eq!(label(r#"{"label": null}"#), Some(None));
        let forty = "é".repeat(40);
        assert_eq!(label(&format!(r#"{{"label": "{forty}"}}"#)), Some(Some(forty.clone())));
        for bad in
            [r#"{"label": ""}"#, r#"{"label": "a\nb"}"#, r#"{"x": 1}"#, "{}", r#"{"label": 1}"#]
        {
            assert_eq!(label(bad), None, "{bad}");
        }
        assert_eq!(label(&format!(r#"{{"label": "{forty}x"}}"#)), None);
    }
}
