//! `POST /v1/send`: validate, screen the recipients, and commit the message(s) with one delivery
//! record per recipient to the queue before answering. `queued` therefore means on disk.

use serde::{Deserialize, Serialize};

use super::input::OneOrMany;
use crate::error::{Blocked, Error, Result};
use crate::http::request::parse_json;
use crate::http::{Ctx, Reply};
use crate::ids::{new_id, now_ms};
use crate::mail::outbound::Outbound;
use crate::mail::text::html_to_text;
use crate::store::{Batch, Email, SendType};

/// Recipients of one transactional message (it is one message, visible to all of them).
pub const MAX_TRANSACTIONAL: usize = 50;
/// Messages of one campaign request.
pub const MAX_CAMPAIGN: usize = 500;
/// How far ahead a message may be scheduled.
const MAX_SCHEDULE_MS: u64 = 366 * 86_400_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SendRequest {
    from: String,
    to: OneOrMany,
    subject: String,
    #[serde(default)]
    html: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default, rename = "type")]
    send_type: Option<String>,
    #[serde(default)]
    scheduled_at: Option<u64>,
}

/// A validated request, before screening.
#[derive(Debug)]
pub struct Parsed {
    pub from: String,
    pub to: Vec<String>,
    pub subject: String,
    pub html: Option<String>,
    pub text: Option<String>,
    pub campaign: bool,
    pub scheduled_at: Option<u64>,
}

pub fn parse(body: &[u8], domain: &str, now: u64) -> Result<Parsed> {
    let input: SendRequest = parse_json(body)?;
    let campaign = match input.send_type.as_deref() {
        None | Some("transactional") => false,
        Some("campaign") => true,
        Some(other) => {
            return Err(Error::invalid(
                format!("`type` must be transactional or campaign; got {other:?}"),
                "leave `type` out for a transactional message",
            ));
        }
    };
    let from = super::input::sender(&input.from, domain)?;
    if input.subject.contains(['\r', '\n']) || input.subject.chars().count() > 998 {
        return Err(Error::invalid(
            "`subject` must be one line of at most 998 characters",
            "remove line breaks from `subject`",
        ));
    }
    let html = input.html.filter(|h| !h.trim().is_empty());
    let text = input.text.filter(|t| !t.trim().is_empty());
    if html.is_none() && text.is_none() {
        return Err(Error::invalid("give `html` or `text` (or both)", "a message needs a body"));
    }
    let to: Vec<String> = input.to.entries().into_iter().map(str::to_owned).collect();
    if to.is_empty() {
        return Err(Error::invalid("`to` names no recipient", "give at least one address in `to`"));
    }
    let max = if campaign { MAX_CAMPAIGN } else { MAX_TRANSACTIONAL };
    if to.len() > max {
        return Err(Error::invalid(
            format!("`to` has {} recipients; at most {max} are allowed for this type", to.len()),
            "split the recipients over several requests (or use type campaign for up to 500)",
        ));
    }
    if let Some(at) = input.scheduled_at
        && (at <= now || at > now + MAX_SCHEDULE_MS)
    {
        return Err(Error::invalid(
            "`scheduledAt` must be in the future (Unix milliseconds), at most a year ahead",
            "leave `scheduledAt` out to send now",
        ));
    }
    Ok(Parsed {
        from,
        to,
        subject: input.subject,
        html,
        text,
        campaign,
        scheduled_at: input.scheduled_at,
    })
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Transactional<'a> {
    message_id: &'a str,
    status: &'a str,
    #[serde(skip_serializing_if = "<[Blocked]>::is_empty")]
    blocked: &'a [Blocked],
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Campaign<'a> {
    message_ids: Vec<&'a str>,
    batch_id: &'a str,
    status: &'a str,
    #[serde(skip_serializing_if = "<[Blocked]>::is_empty")]
    blocked: &'a [Blocked],
}

/// The mailbox named by `from`, which must belong to the key's domain.
async fn sending_mailbox(ctx: &Ctx, domain: &str, from: &str) -> Result<crate::store::Mailbox> {
    let (local, _) = from.rsplit_once('@').unwrap_or_default();
    let (local, d) = (local.to_owned(), domain.to_owned());
    ctx.app.store.read(move |r| r.mailbox(&d, &local)).await?.ok_or_else(|| {
        Error::invalid(
            format!("`from` {from} is not a mailbox of your domain"),
            "create it first with POST /v1/mailboxes",
        )
    })
}

pub async fn send(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let now = now_ms();
    let req = parse(&ctx.body, &domain, now)?;
    let mailbox = sending_mailbox(&ctx, &domain, &req.from).await?;
    let screened = crate::screening::screen(&ctx.app.store, &ctx.app.dns, &domain, &req.to).await?;
    if screened.accepted.is_empty() {
        return Err(Error::Unprocessable {
            message: "every recipient was refused".into(),
            blocked: screened.blocked,
        });
    }
    let status = if req.scheduled_at.is_some() { "scheduled" } else { "queued" };
    let due = req.scheduled_at.unwrap_or(now);
    let from = crate::mail::build::from_header(mailbox.display_name.as_deref(), &mailbox.address);
    let text = req
        .text
        .clone()
        .unwrap_or_else(|| req.html.as_deref().map(html_to_text).unwrap_or_default());
    let kind = if req.campaign { SendType::Campaign } else { SendType::Transactional };
    let compose = |to: Vec<String>, batch: Option<&str>| -> Email {
        Outbound {
            kind,
            mailbox: mailbox.address.clone(),
            from: from.clone(),
            to,
            subject: req.subject.clone(),
            text: text.clone(),
            html: req.html.clone(),
            in_reply_to: None,
            batch_id: batch.map(str::to_owned),
            sequence: None,
            scheduled_at: req.scheduled_at,
            due,
            now,
        }
        .into_email()
    };
    let batch_id = req.campaign.then(|| new_id("batch"));
    let emails: Vec<Email> = if req.campaign {
        screened.accepted.iter().map(|r| compose(vec![r.clone()], batch_id.as_deref())).collect()
    } else {
        vec![compose(screened.accepted.clone(), None)]
    };
    let ids: Vec<String> = emails.iter().map(|e| e.summary.id.clone()).collect();
    let batch = batch_id.as_ref().map(|id| Batch::new(id, &domain, now, emails.len()));
    ctx.app
        .store
        .write(move |w| {
            if let Some(batch) = &batch {
                w.create_batch(batch)?;
            }
            emails.iter().try_for_each(|e| w.enqueue(e, due))
        })
        .await?;
    // Also for scheduled mail: the scheduler may be sleeping past the new due time.
    ctx.app.queue.wake();
    match batch_id {
        Some(batch_id) => Reply::ok(&Campaign {
            message_ids: ids.iter().map(String::as_str).collect(),
            batch_id: &batch_id,
            status,
            blocked: &screened.blocked,
        }),
        None => {
            Reply::ok(&Transactional { message_id: &ids[0], status, blocked: &screened.blocked })
        }
    }
}
