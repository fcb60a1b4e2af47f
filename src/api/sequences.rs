//! `/v1/sequences`: multi-step follow-ups. Steps are validated here; running them is the
//! engine's job (`crate::sequences`), which a change here wakes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::http::request::parse_json;
use crate::http::{Ctx, Reply};
use crate::ids::{new_id, now_ms};
use crate::store::{EnrollmentStats, Sequence, Step};

pub const MAX_STEPS: usize = 50;
pub const MAX_ENROLL: usize = 100;
const MAX_DELAY_MS: u64 = 366 * 86_400_000;
const MAX_MERGE_FIELDS: usize = 50;
const MAX_MERGE_VALUE: usize = 2000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateSequence {
    name: String,
    from: String,
    steps: Vec<StepInput>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StepInput {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    subject: Option<String>,
    #[serde(default)]
    html: Option<String>,
    #[serde(default, rename = "delayMs")]
    delay_ms: Option<u64>,
}

/// A validated create request: `(name, from address, steps)`.
pub fn parse_create(body: &[u8], domain: &str) -> Result<(String, String, Vec<Step>)> {
    let input: CreateSequence = parse_json(body)?;
    let name = super::input::name("name", &input.name, 200)?;
    let from = super::input::sender(&input.from, domain)?;
    if input.steps.is_empty() || input.steps.len() > MAX_STEPS {
        return Err(Error::invalid(
            format!("`steps` must hold 1 to {MAX_STEPS} steps; got {}", input.steps.len()),
            "start with a send_email step",
        ));
    }
    let steps = input
        .steps
        .into_iter()
        .enumerate()
        .map(|(i, s)| parse_step(i, s))
        .collect::<Result<Vec<Step>>>()?;
    match &steps[0] {
        Step::SendEmail { subject, .. } if !subject.trim().is_empty() => {}
        Step::SendEmail { .. } => {
            return Err(Error::invalid(
                "`steps[0].subject` must not be empty",
                "the first message needs a subject; later ones may leave it empty to reply as \
                 \"Re: <first subject>\"",
            ));
        }
        Step::Delay { .. } => {
            return Err(Error::invalid(
                "the first step must be a send_email step",
                "move the delay after the first send_email step",
            ));
        }
    }
    Ok((name, from, steps))
}

fn parse_step(i: usize, s: StepInput) -> Result<Step> {
    let field = |f: &str| format!("steps[{i}].{f}");
    match s.kind.as_str() {
        "send_email" => {
            if s.delay_ms.is_some() {
                return Err(Error::invalid(
                    format!("`{}` is not a field of a send_email step", field("delayMs")),
                    "put the wait in a separate delay step",
                ));
            }
            let (Some(subject), Some(html)) = (s.subject, s.html) else {
                return Err(Error::invalid(
                    format!("`{}` and `{}` are required", field("subject"), field("html")),
                    "a send_email step has a subject and an html body",
                ));
            };
            if subject.contains(['\r', '\n']) || subject.chars().count() > 998 {
                return Err(Error::invalid(
                    format!("`{}` must be one line of at most 998 characters", field("subject")),
                    "remove line breaks from the subject",
                ));
            }
            if html.trim().is_empty() {
                return Err(Error::invalid(
                    format!("`{}` must not be empty", field("html")),
                    "give the message body as HTML",
                ));
            }
            Ok(Step::SendEmail { subject, html })
        }
        "delay" => {
            if s.subject.is_some() || s.html.is_some() {
                return Err(Error::invalid(
                    format!("a delay step (`steps[{i}]`) has only `type` and `delayMs`"),
                    "put the message in a send_email step",
                ));
            }
            match s.delay_ms {
                Some(ms) if (1..=MAX_DELAY_MS).contains(&ms) => Ok(Step::Delay { delay_ms: ms }),
                _ => Err(Error::invalid(
                    format!(
                        "`{}` must be an integer from 1 to {MAX_DELAY_MS} (milliseconds)",
                        field("delayMs")
                    ),
                    "for three days use 259200000",
                )),
            }
        }
        other => Err(Error::invalid(
            format!("`{}` must be send_email or delay; got {other:?}", field("type")),
            "each step is {\"type\": \"send_email\", ...} or {\"type\": \"delay\", ...}",
        )),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct View<'a> {
    id: &'a str,
    name: &'a str,
    from: &'a str,
    status: &'a str,
    steps: &'a [Step],
    created_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    step_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<&'a EnrollmentStats>,
}

fn view(s: &Sequence, listed: bool) -> View<'_> {
    View {
        id: &s.id,
        name: &s.name,
        from: &s.from,
        status: &s.status,
        steps: &s.steps,
        created_at: s.created_at,
        step_count: listed.then_some(s.steps.len()),
        stats: listed.then_some(&s.stats),
    }
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let sequences = ctx.app.store.read(move |r| r.sequences(&domain)).await?;
    let views: Vec<View<'_>> = sequences.iter().map(|s| view(s, true)).collect();
    Reply::ok(&views)
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let (name, from, steps) = parse_create(&ctx.body, &domain)?;
    let (local, _) = from.rsplit_once('@').unwrap_or_default();
    let (local, d) = (local.to_owned(), domain.clone());
    let mailbox = ctx.app.store.read(move |r| r.mailbox(&d, &local)).await?.ok_or_else(|| {
        Error::invalid(
            format!("`from` {from} is not a mailbox of your domain"),
            "create it first with POST /v1/mailboxes",
        )
    })?;
    let from_header =
        crate::mail::build::from_header(mailbox.display_name.as_deref(), &mailbox.address);
    let sequence = Sequence {
        id: new_id("seq"),
        domain,
        name,
        from: mailbox.address,
        from_header,
        status: "active".into(),
        steps,
        created_at: now_ms(),
        stats: EnrollmentStats::default(),
        counters: Default::default(),
    };
    let stored = sequence.clone();
    ctx.app.store.write(move |w| w.create_sequence(&stored)).await?;
    Reply::created(&view(&sequence, false))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StatusChange {
    status: String,
}

pub fn parse_status(body: &[u8]) -> Result<&'static str> {
    let input: StatusChange = parse_json(body)?;
    match input.status.as_str() {
        "paused" => Ok("paused"),
        "active" => Ok("active"),
        other => Err(Error::invalid(
            format!("`status` must be paused or active; got {other:?}"),
            "to end a sequence, DELETE it",
        )),
    }
}

pub async fn update(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let status = parse_status(&ctx.body)?;
    let sequence =
        ctx.app.store.write(move |w| w.set_sequence_status(&domain, &id, status, now_ms())).await?;
    if status == "active" {
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnrollRequest {
    contacts: Vec<EnrollContact>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnrollContact {
    email: String,
    #[serde(default, rename = "mergeFields")]
    merge_fields: BTreeMap<String, String>,
}

/// The contacts of an enroll request, checked for count and merge-field sizes (addresses are
/// screened afterwards, like recipients of a send).
pub fn parse_enroll(body: &[u8]) -> Result<Vec<(String, BTreeMap<String, String>)>> {
    let input: EnrollRequest = parse_json(body)?;
    let n = input.contacts.len();
    if n == 0 || n > MAX_ENROLL {
        return Err(Error::invalid(
            format!("`contacts` must hold 1 to {MAX_ENROLL} entries; got {n}"),
            "split larger lists over several requests",
        ));
    }
    for (i, c) in input.contacts.iter().enumerate() {
        if c.merge_fields.len() > MAX_MERGE_FIELDS {
            return Err(Error::invalid(
                format!("`contacts[{i}].mergeFields` has more than {MAX_MERGE_FIELDS} fields"),
                "keep only the fields the steps use",
            ));
        }
        if let Some((k, _)) =
            c.merge_fields.iter().find(|(k, v)| k.len() > 64 || v.chars().count() > MAX_MERGE_VALUE)
        {
            return Err(Error::invalid(
                format!(
                    "`contacts[{i}].mergeFields.{}` is too long (names up to 64 bytes, values \
                     up to {MAX_MERGE_VALUE} characters)",
                    k.chars().take(64).collect::<String>()
                ),
                "shorten the field",
            ));
        }
    }
    Ok(input.contacts.into_iter().map(|c| (c.email, c.merge_fields)).collect())
}

pub async fn enroll(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let id = ctx.param("id").to_owned();
    let contacts = parse_enroll(&ctx.body)?;
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
    let addresses: Vec<String> = contacts.iter().map(|(e, _)| e.clone()).collect();
    let screened =
        crate::screening::screen(&ctx.app.store, &ctx.app.dns, &domain, &addresses).await?;
    // Screening normalizes and de-duplicates; the first entry of an address gives its fields.
    let mut accepted = Vec::with_capacity(screened.accepted.len());
    for address in screened.accepted {
        let fields = contacts
            .iter()
            .find(|(e, _)| e.trim().eq_ignore_ascii_case(&address))
            .map(|(_, f)| f.clone())
            .unwrap_or_default();
        accepted.push((address, fields));
    }
    let ids = ctx.app.store.write(move |w| w.enroll(&domain, &id, accepted, now_ms())).await?;
    ctx.app.sequences.wake();
    Reply::ok(&serde_json::json!({
        "enrolled": ids.len(),
        "skipped": contacts.len() - ids.len(),
        "enrollmentIds": ids,
    }))
}
