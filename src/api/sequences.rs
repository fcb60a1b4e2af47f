//! `/v1/sequences`: multi-step follow-ups. Bodies are checked in `sequence_input`; running the
//! steps is the engine's job (`crate::sequences`), which a change here wakes.

use std::collections::BTreeMap;

use serde::Serialize;

use super::enroll_input::parse_enroll;
use super::paging;
use super::sequence_input::{SenderChoice, parse_create, parse_update};
use super::sequence_view::{View, view};
use crate::error::{Error, Result};
use crate::http::request::int_param;
use crate::http::{Ctx, Reply};
use crate::ids::{new_id, now_ms};
use crate::store::{EnrollInput, Enrollment, EnrollmentStats, EnrollmentStatus, Sequence, Wtx};

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let sequences = ctx.app.store.read(move |r| r.sequences(&domain)).await?;
    let views: Vec<View<'_>> = sequences.iter().map(|s| view(s, true)).collect();
    Reply::ok(&views)
}

/// `GET /v1/sequences/{id}`: one sequence as the list shows it (steps and stats); 404 for an id
/// of another domain, as for one that does not exist.
pub async fn get(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let sequence = ctx.app.store.read(move |r| r.sequence(&id)).await?;
    let sequence =
        sequence.filter(|s| s.domain == domain).ok_or_else(|| Error::not_found("sequence"))?;
    Reply::ok(&view(&sequence, true))
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let input = parse_create(&ctx.body, &domain)?;
    let mut sequence = Sequence {
        id: new_id("seq"),
        domain: domain.clone(),
        name: input.name,
        from: String::new(),
        from_header: String::new(),
        sender_group_id: None,
        rotation: 0,
        sending_window: input.window,
        status: "active".into(),
        steps: input.steps,
        created_at: now_ms(),
        stats: EnrollmentStats::default(),
        counters: Default::default(),
        step_counters: Vec::new(),
        variants: Vec::new(),
        out_of_office: input.out_of_office,
        tracking: input.tracking,
    };
    let sender = input.sender;
    let sequence = ctx
        .app
        .store
        .write(move |w| -> Result<Sequence> {
            set_sender(w, &mut sequence, sender)?;
            w.create_sequence(&sequence)?;
            Ok(sequence)
        })
        .await?;
    Reply::created(&view(&sequence, false))
}

/// Points the sequence at one mailbox or a sender group, which must be the domain's (a group
/// with at least one mailbox). Enrollments that already have a mailbox keep it.
fn set_sender(w: &mut Wtx<'_>, sequence: &mut Sequence, sender: SenderChoice) -> Result<()> {
    match sender {
        SenderChoice::Mailbox(from) => {
            let (local, _) = from.rsplit_once('@').unwrap_or_default();
            let mailbox = w.mailbox_in_write(&sequence.domain, local)?.ok_or_else(|| {
                Error::invalid(
                    format!("`from` {from} is not a mailbox of your domain"),
                    "create it first with POST /v1/mailboxes",
                )
            })?;
            sequence.from_header =
                crate::mail::build::from_header(mailbox.display_name.as_deref(), &mailbox.address);
            sequence.from = mailbox.address;
            sequence.sender_group_id = None;
        }
        SenderChoice::Group(id) => {
            let group = w.group_in_write(&sequence.domain, &id)?.ok_or_else(|| {
                Error::invalid(
                    format!("`senderGroupId` {id} is not a sender group of your domain"),
                    "GET /v1/sender-groups lists them; POST /v1/sender-groups makes one",
                )
            })?;
            if group.mailboxes.is_empty() {
                return Err(Error::invalid(
                    format!("`senderGroupId` {id} names a group without mailboxes"),
                    "add mailboxes to the group with PATCH /v1/sender-groups/{id}",
                ));
            }
            sequence.from = String::new();
            sequence.from_header = String::new();
            sequence.sender_group_id = Some(group.id);
        }
    }
    Ok(())
}

pub async fn update(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let update = parse_update(&ctx.body, &domain)?;
    let resumed = update.status == Some("active");
    let sequence = ctx
        .app
        .store
        .write(move |w| -> Result<Sequence> {
            let now = now_ms();
            let mut sequence = match update.status {
                Some(status) => w.set_sequence_status(&domain, &id, status, now)?,
                None => w
                    .load_sequence(&id)?
                    .filter(|s| s.domain == domain)
                    .ok_or_else(|| Error::not_found("sequence"))?,
            };
            if !update.edits() {
                return Ok(sequence);
            }
            if sequence.status == "completed" {
                return Err(Error::invalid(
                    "the sequence is completed; it can no longer be changed",
                    "create a new sequence",
                ));
            }
            if let Some(sender) = update.sender {
                set_sender(w, &mut sequence, sender)?;
            }
            if let Some(window) = update.window {
                sequence.sending_window = window;
            }
            if let Some(ooo) = update.out_of_office {
                sequence.out_of_office = ooo;
            }
            if let Some(tracking) = update.tracking {
                sequence.tracking = tracking;
            }
            if let Some(name) = update.name {
                sequence.name = name;
            }
            // Enrollments keep their position: the next step each runs is the one now at that
            // index (one past the end completes it when it comes due, sending nothing).
            if let Some(steps) = update.steps {
                sequence.steps = steps;
            }
            w.save_sequence(&sequence)?;
            Ok(sequence)
        })
        .await?;
    // A resumed sequence, or a window that may now be open, has steps to look at.
    if resumed || sequence.sending_window.is_some() {
        ctx.app.sequences.wake();
    }
    Reply::ok(&serde_json::json!({ "id": sequence.id, "status": sequence.status }))
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let sid = id.clone();
    let cancelled =
        ctx.app.store.write(move |w| w.cancel_sequence(&domain, &sid, now_ms())).await?;
    Reply::ok(&serde_json::json!({
        "id": id,
        "status": "completed",
        "cancelledEnrollments": cancelled,
    }))
}

pub async fn enroll(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let request =
        super::enroll_contacts::resolve(&ctx.app.store, &domain, parse_enroll(&ctx.body)?).await?;
    let (d, sid) = (domain.clone(), id.clone());
    let sequence = ctx.app.store.read(move |r| r.sequence(&sid)).await?;
    let sequence =
        sequence.filter(|s| s.domain == d).ok_or_else(|| Error::not_found("sequence"))?;
    if sequence.status != "active" {
        return Err(Error::invalid(
            format!(
                "the sequence is {}; only an active sequence takes enrollments",
                sequence.status
            ),
            "resume a paused sequence with PATCH {\"status\": \"active\"}",
        ));
    }
    let total = request.contacts.len();
    let (contacts, mut skipped) = super::enroll_skips::missing_fields(&sequence, request.contacts);
    let addresses: Vec<String> = contacts.iter().map(|c| c.email.clone()).collect();
    let screened =
        crate::screening::screen(&ctx.app.store, &ctx.app.dns, &domain, &addresses).await?;
    skipped.extend(screened.blocked.iter().map(super::enroll_skips::blocked));
    // Screening normalizes and de-duplicates; the first entry of an address gives its fields.
    let mut accepted = Vec::with_capacity(screened.accepted.len());
    for address in screened.accepted {
        if let Some(c) = contacts.iter().find(|c| c.email.trim().eq_ignore_ascii_case(&address)) {
            accepted.push(EnrollInput { email: address, ..c.clone() });
        }
    }
    skipped.extend(super::enroll_skips::repeated(&contacts));
    let input = (accepted, request.skip_contacted);
    let done = ctx.app.store.write(move |w| w.enroll(&domain, &id, input, now_ms())).await?;
    ctx.app.sequences.wake();
    skipped.extend(done.skipped);
    Reply::ok(&serde_json::json!({
        "enrolled": done.ids.len(),
        "skipped": total - done.ids.len(),
        "skippedDetails": super::enroll_skips::details(&skipped),
        "enrollmentIds": done.ids,
    }))
}

/// An enrollment as listed: where it stands and when its next step is due.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EnrollmentView<'a> {
    id: &'a str,
    email: &'a str,
    status: EnrollmentStatus,
    /// Index of the next step to run.
    step: u32,
    merge_fields: &'a BTreeMap<String, String>,
    timezone: Option<&'a str>,
    /// The mailbox it sends from, once its first step has run.
    mailbox: Option<&'a str>,
    /// When its next step runs (a step waiting for the sending window shows when it opens).
    next_send_at: Option<u64>,
    /// The lead label (`PATCH .../enrollments/{enrollmentId}`), when one was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    label: Option<&'a str>,
    created_at: u64,
    updated_at: u64,
}

fn enrollment_view(e: &Enrollment) -> EnrollmentView<'_> {
    EnrollmentView {
        id: &e.id,
        email: &e.email,
        status: e.status,
        step: e.step,
        merge_fields: &e.merge_fields,
        timezone: e.timezone.as_deref(),
        mailbox: e.mailbox.as_deref(),
        next_send_at: e.due.filter(|_| e.status.is_active()),
        label: e.label.as_deref(),
        created_at: e.created_at,
        updated_at: e.updated_at,
    }
}

/// `GET /v1/sequences/{id}/enrollments`: the sequence's enrollments in enrollment order, paged
/// like the contact list (`limit`, and a `Link` to the next page).
pub async fn enrollments(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let path = format!("/v1/sequences/{id}/enrollments");
    let limit = int_param(ctx.query_value("limit"), "limit", 1, 500, 100)? as usize;
    let after = ctx.query_value("cursor").map(|c| paging::parse_contact_cursor(&c)).transpose()?;
    let (page, more) = ctx
        .app
        .store
        .read(move |r| -> Result<_> {
            r.sequence(&id)?
                .filter(|s| s.domain == domain)
                .ok_or_else(|| Error::not_found("sequence"))?;
            Ok(r.enrollments(&id, after.as_deref().unwrap_or(""), limit)?)
        })
        .await?;
    let views: Vec<EnrollmentView<'_>> = page.iter().map(enrollment_view).collect();
    let mut reply = Reply::ok(&views)?;
    if let Some(last) = page.last().filter(|_| more) {
        let cursor = paging::contact_cursor(&last.id);
        paging::link_next(&mut reply, &path, ctx.query.as_deref(), &cursor);
    }
    Ok(reply)
}
