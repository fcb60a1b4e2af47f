//! `POST /v1/send`: validate, screen the recipients, and commit the message(s) with one delivery
//! record per recipient to the queue before answering. `queued` therefore means on disk.

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;
use std::sync::Arc;

use super::input::{OneOrMany, present};
use super::send_fields;
use crate::error::{Blocked, Error, Result};
use crate::http::request::parse_json;
use crate::http::{Ctx, Reply};
use crate::ids::{new_id, now_ms};
use crate::mail::outbound::{Extras, Outbound};
use crate::mail::text::html_to_text;
use crate::store::{Batch, Email, SendType, SentBody};

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
    #[serde(default, deserialize_with = "present")]
    cc: Option<OneOrMany>,
    #[serde(default, deserialize_with = "present")]
    bcc: Option<OneOrMany>,
    #[serde(default, deserialize_with = "present")]
    reply_to: Option<String>,
    #[serde(default, deserialize_with = "present")]
    headers: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "present")]
    attachments: Option<Vec<send_fields::AttachmentInput>>,
    #[serde(default, deserialize_with = "present")]
    tags: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    metadata: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "present")]
    tracking: Option<super::outreach_input::TrackingInput>,
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
    /// A campaign's tracking switched off in part (`None`: all of it).
    pub tracking: Option<crate::store::TrackingOptions>,
    pub scheduled_at: Option<u64>,
    /// Copies, headers, attachment metadata, tags and metadata (`cc` and `bcc` before screening).
    pub extras: Extras,
    /// The bytes of each attachment, in order.
    pub parts: Vec<Vec<u8>>,
}

/// A recipient list as written (entries trimmed, blanks dropped).
fn entries(list: Option<&OneOrMany>) -> Vec<String> {
    list.map(|l| l.entries().into_iter().map(str::to_owned).collect()).unwrap_or_default()
}

/// The optional fields, each checked; `cc` and `bcc` only for transactional mail.
fn extras(input: &mut SendRequest, campaign: bool) -> Result<(Extras, Vec<Vec<u8>>)> {
    for (field, list) in [("cc", &input.cc), ("bcc", &input.bcc)] {
        if campaign && list.is_some() {
            return Err(Error::invalid(
                format!("invalid field `{field}`: copies are for transactional mail only"),
                "a campaign sends one message per recipient: put every recipient in `to`",
            ));
        }
    }
    let reply_to = match input.reply_to.take() {
        Some(r) => Some(super::input::recipients("replyTo", &OneOrMany::Many(vec![r]))?)
            .and_then(|mut one| one.pop()),
        None => None,
    };
    let (attachments, parts) =
        send_fields::attachments(input.attachments.take().unwrap_or_default())?;
    let extras = Extras {
        cc: entries(input.cc.as_ref()),
        bcc: entries(input.bcc.as_ref()),
        reply_to,
        headers: send_fields::extra_headers(input.headers.take().unwrap_or_default())?,
        attachments,
        tags: send_fields::tags(input.tags.take().unwrap_or_default())?,
        metadata: send_fields::metadata(input.metadata.take().unwrap_or_default())?,
    };
    Ok((extras, parts))
}

pub fn parse(body: &[u8], domain: &str, now: u64) -> Result<Parsed> {
    let mut input: SendRequest = parse_json(body)?;
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
    if input.tracking.is_some() && !campaign {
        return Err(Error::invalid(
            "`tracking` applies to campaign mail only",
            "transactional mail carries no tracking; leave `tracking` out",
        ));
    }
    let tracking = input.tracking.take().and_then(super::outreach_input::tracking);
    let from = super::input::sender(&input.from, domain)?;
    let (extras, parts) = extras(&mut input, campaign)?;
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
    let count = to.len() + extras.cc.len() + extras.bcc.len();
    if count > max {
        return Err(Error::invalid(
            format!(
                "`to`, `cc` and `bcc` have {count} recipients; at most {max} are allowed for this type"
            ),
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
        tracking,
        scheduled_at: input.scheduled_at,
        extras,
        parts,
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

/// The mailbox named by `from` (which must belong to the key's domain), and the recipients,
/// `to`, `cc` and `bcc` screened together (one address is sent once, under the first list naming
/// it): the accepted ones of each list are left in `req`, every refusal is answered. Both are
/// read in one snapshot.
async fn screen(
    ctx: &Ctx,
    domain: &str,
    req: &mut Parsed,
) -> Result<(crate::store::Mailbox, Vec<Blocked>)> {
    let (cc, bcc) = (std::mem::take(&mut req.extras.cc), std::mem::take(&mut req.extras.bcc));
    let all: Vec<String> = req.to.iter().chain(&cc).chain(&bcc).cloned().collect();
    let (local, _) = req.from.rsplit_once('@').unwrap_or_default();
    let (local, d) = (local.to_owned(), domain.to_owned());
    let sender = move |r: &crate::store::Rtx| r.mailbox(&d, &local);
    let (screened, mailbox) =
        crate::screening::screen_with(&ctx.app.store, &ctx.app.dns, domain, &all, sender).await?;
    let Some(mailbox) = mailbox else {
        return Err(Error::invalid(
            format!("`from` {} is not a mailbox of your domain", req.from),
            "create it first with POST /v1/mailboxes",
        ));
    };
    if screened.accepted.is_empty() {
        return Err(Error::Unprocessable {
            message: "every recipient was refused".into(),
            blocked: screened.blocked,
        });
    }
    let normalized = |list: &[String]| -> Vec<String> {
        list.iter()
            .filter_map(|r| {
                crate::address::parse(r).ok().map(|a| format!("{}@{}", a.local, a.domain))
            })
            .collect()
    };
    let (to_n, cc_n) = (normalized(&req.to), normalized(&cc));
    let within = |list: &[String], a: &str| list.iter().any(|x| x.eq_ignore_ascii_case(a));
    let (mut to, mut kept_cc, mut kept_bcc) = (Vec::new(), Vec::new(), Vec::new());
    for a in screened.accepted {
        match (within(&to_n, &a), within(&cc_n, &a)) {
            (true, _) => to.push(a),
            (false, true) => kept_cc.push(a),
            (false, false) => kept_bcc.push(a),
        }
    }
    (req.to, req.extras.cc, req.extras.bcc) = (to, kept_cc, kept_bcc);
    Ok((mailbox, screened.blocked))
}

pub async fn send(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let now = now_ms();
    let mut req = parse(&ctx.body, &domain, now)?;
    let (mailbox, blocked) = screen(&ctx, &domain, &mut req).await?;
    let status = if req.scheduled_at.is_some() { "scheduled" } else { "queued" };
    let due = req.scheduled_at.unwrap_or(now);
    let batch_id = req.campaign.then(|| new_id("batch"));
    let (emails, body) = messages(&mut req, &mailbox, batch_id.as_deref(), (due, now));
    let ids: Vec<String> = emails.iter().map(|e| e.summary.id.clone()).collect();
    let batch = batch_id.as_ref().map(|id| Batch::new(id, &domain, now, emails.len()));
    let queued = Queued { batch, emails, parts: std::mem::take(&mut req.parts), body };
    commit(&ctx, queued, due).await?;
    // Also for scheduled mail: the scheduler may be sleeping past the new due time.
    ctx.app.queue.wake();
    match batch_id {
        Some(batch_id) => Reply::ok(&Campaign {
            message_ids: ids.iter().map(String::as_str).collect(),
            batch_id: &batch_id,
            status,
            blocked: &blocked,
        }),
        None => Reply::ok(&Transactional { message_id: &ids[0], status, blocked: &blocked }),
    }
}

/// The messages of a request: one for transactional mail, one per recipient for a campaign.
/// A campaign's copies are stored without their text and HTML, which are stored once for all of
/// them (the `SentBody` answered): a large body to 500 recipients is not 500 copies of it, in
/// memory here nor in the file. Their snippet and size are the body's all the same.
fn messages(
    req: &mut Parsed,
    mailbox: &crate::store::Mailbox,
    batch_id: Option<&str>,
    (due, now): (u64, u64),
) -> (Vec<Email>, Option<SentBody>) {
    let html = req.html.take();
    let text =
        req.text.take().unwrap_or_else(|| html.as_deref().map(html_to_text).unwrap_or_default());
    let kind = if req.campaign { SendType::Campaign } else { SendType::Transactional };
    let from = crate::mail::build::from_header(mailbox.display_name.as_deref(), &mailbox.address);
    let outbound = |to: Vec<String>, text: String, html: Option<String>| Outbound {
        kind,
        mailbox: mailbox.address.clone(),
        from: from.clone(),
        to,
        subject: req.subject.clone(),
        text,
        html,
        in_reply_to: None,
        batch_id: batch_id.map(str::to_owned),
        sequence: None,
        scheduled_at: req.scheduled_at,
        due,
        now,
    };
    if !req.campaign {
        let email = outbound(req.to.clone(), text, html).into_email_with(req.extras.clone());
        return (vec![email], None);
    }
    let snippet = crate::mail::text::snippet(&text);
    let size = (text.len() + html.as_ref().map_or(0, String::len)) as u64;
    let copy = |to: &String| {
        let mut email =
            outbound(vec![to.clone()], String::new(), None).into_email_with(req.extras.clone());
        email.text = None;
        email.tracking = req.tracking;
        email.summary.snippet.clone_from(&snippet);
        email.summary.size += size;
        email
    };
    let emails = req.to.iter().map(copy).collect();
    (emails, Some(SentBody { text: Some(text), html }))
}

/// What one send request stores.
struct Queued {
    batch: Option<Batch>,
    emails: Vec<Email>,
    /// The attachments' bytes, stored once for all the messages.
    parts: Vec<Vec<u8>>,
    /// A campaign's text and HTML, stored once for all its messages.
    body: Option<SentBody>,
}

/// Queues the messages (and their batch) with their attachments and campaign body, each stored
/// once for all of them.
async fn commit(ctx: &Ctx, queued: Queued, due: u64) -> Result<()> {
    let Queued { batch, emails, parts, body } = queued;
    let blob = (!parts.is_empty()).then(|| new_id("att"));
    let body = body.map(|b| (new_id("body"), b));
    let emails = Arc::new(emails);
    let named = emails.clone();
    let ahead = move |w: &crate::store::Wtx<'_>| named.iter().try_for_each(|e| w.enqueue_ahead(e));
    ctx.app
        .store
        .write_snapshot_ahead(ahead, move |w| -> Result<()> {
            if let Some(batch) = &batch {
                w.create_batch(batch)?;
            }
            if let Some(blob) = &blob {
                w.put_sent_parts(blob, &parts)?;
            }
            if let Some((id, body)) = &body {
                w.put_sent_body(id, body)?;
            }
            for e in emails.iter() {
                w.enqueue(e, due)?;
                if let Some(blob) = &blob {
                    w.share_sent_parts(&e.summary.id, blob)?;
                }
                if let Some((id, _)) = &body {
                    w.share_sent_body(&e.summary.id, id)?;
                }
            }
            Ok(())
        })
        .await
}
