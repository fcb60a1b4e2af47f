//! `/v1/mailboxes/{address}/sieve` and `/vacation`: a mailbox's active Sieve filter (checked by
//! the compiler before it is stored, so an upload with an error is refused with its line and
//! column, never found broken at delivery) and its vacation auto-reply settings.

use serde::{Deserialize, Serialize};

use super::mailboxes::mailbox_address;
use crate::error::{Error, Result};
use crate::http::request::parse_json;
use crate::http::{Ctx, Reply};
use crate::ids::now_ms;
use crate::store::Vacation;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PutSieve {
    script: String,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Shown<'a> {
    script: &'a str,
    updated_at: u64,
}

/// A validated upload: the script, compiled once to find its errors.
pub fn parse_sieve(body: &[u8]) -> Result<String> {
    let input: PutSieve = parse_json(body)?;
    check_script(&input.script)?;
    Ok(input.script)
}

/// Refuses a script the compiler refuses, naming where.
pub fn check_script(script: &str) -> Result<()> {
    if script.len() > crate::filters::MAX_SCRIPT_BYTES {
        return Err(Error::invalid(
            format!("script of {} bytes", script.len()),
            format!("a script is at most {} bytes", crate::filters::MAX_SCRIPT_BYTES),
        ));
    }
    crate::filters::compile(script).map(|_| ()).map_err(|e| {
        Error::invalid(format!("script error: {e}"), "fix the script at that line and column")
    })
}

pub async fn put(ctx: Ctx) -> Result<Reply> {
    let script = parse_sieve(&ctx.body)?;
    let address = mailbox_address(&ctx).await?;
    let now = now_ms();
    let stored = ctx.app.store.write(move |w| w.put_active_sieve(&address, &script, now)).await?;
    Reply::ok(&Shown { script: &stored.script, updated_at: stored.updated_at })
}

pub async fn get(ctx: Ctx) -> Result<Reply> {
    let address = mailbox_address(&ctx).await?;
    let found = ctx.app.store.read(move |r| r.active_sieve(&address)).await?;
    let s = found.ok_or_else(|| Error::not_found("Sieve script"))?;
    Reply::ok(&Shown { script: &s.script, updated_at: s.updated_at })
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let address = mailbox_address(&ctx).await?;
    ctx.app.store.write(move |w| w.delete_active_sieve(&address)).await?;
    Reply::ok(&serde_json::json!({ "deleted": true }))
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PutVacation {
    enabled: bool,
    subject: String,
    text: String,
    #[serde(default)]
    start_at: Option<u64>,
    #[serde(default)]
    end_at: Option<u64>,
    #[serde(default)]
    days: Option<u32>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VacationShown<'a> {
    enabled: bool,
    subject: &'a str,
    text: &'a str,
    start_at: Option<u64>,
    end_at: Option<u64>,
    days: u32,
    updated_at: u64,
}

impl<'a> From<&'a Vacation> for VacationShown<'a> {
    fn from(v: &'a Vacation) -> Self {
        VacationShown {
            enabled: v.enabled,
            subject: &v.subject,
            text: &v.text,
            start_at: v.start_at,
            end_at: v.end_at,
            days: v.days,
            updated_at: v.updated_at,
        }
    }
}

/// Days between two replies to one sender when the request names none (RFC 5230 4.1).
const DEFAULT_DAYS: u32 = 7;

/// A validated vacation request, stamped `now`.
pub fn parse_vacation(body: &[u8], now: u64) -> Result<Vacation> {
    let v: PutVacation = parse_json(body)?;
    let subject = super::input::name("subject", &v.subject, 200)?;
    if v.text.trim().is_empty() || v.text.len() > 16 * 1024 {
        return Err(Error::invalid("text must be 1 to 16384 bytes", "give the reply's text"));
    }
    let days = v.days.unwrap_or(DEFAULT_DAYS);
    if !(1..=365).contains(&days) {
        return Err(Error::invalid(format!("days {days}"), "days is between 1 and 365"));
    }
    if let (Some(start), Some(end)) = (v.start_at, v.end_at)
        && end <= start
    {
        return Err(Error::invalid(
            "endAt is not after startAt",
            "end the vacation after it starts",
        ));
    }
    let vacation = Vacation {
        enabled: v.enabled,
        subject,
        text: v.text,
        start_at: v.start_at,
        end_at: v.end_at,
        days,
        updated_at: now,
    };
    // Whatever the text holds, the script made of it must compile.
    check_script(&crate::filters::vacation_script(&vacation.subject, &vacation.text, days))?;
    Ok(vacation)
}

pub async fn put_vacation(ctx: Ctx) -> Result<Reply> {
    let vacation = parse_vacation(&ctx.body, now_ms())?;
    let address = mailbox_address(&ctx).await?;
    let stored = vacation.clone();
    ctx.app.store.write(move |w| w.put_vacation(&address, &stored)).await?;
    Reply::ok(&VacationShown::from(&vacation))
}

pub async fn get_vacation(ctx: Ctx) -> Result<Reply> {
    let address = mailbox_address(&ctx).await?;
    let found = ctx.app.store.read(move |r| r.vacation(&address)).await?;
    let v = found.ok_or_else(|| Error::not_found("vacation"))?;
    Reply::ok(&VacationShown::from(&v))
}

pub async fn delete_vacation(ctx: Ctx) -> Result<Reply> {
    let address = mailbox_address(&ctx).await?;
    ctx.app.store.write(move |w| w.delete_vacation(&address)).await?;
    Reply::ok(&serde_json::json!({ "deleted": true }))
}
