//! `/v1/warmup`: enroll a mailbox in warmup, change its settings, stop it, and report the status
//! of every mailbox the key can see.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::http::request::parse_json;
use crate::http::{Ctx, Reply};
use crate::ids::now_ms;
use crate::store::Warmup;
use crate::warmup::{Status, status, utc_day};

pub const DEFAULT_START: u32 = 2;
pub const DEFAULT_TARGET: u32 = 40;
pub const DEFAULT_RAMP_DAYS: u32 = 30;
pub const DEFAULT_REPLY_RATE: f64 = 0.3;
const MAX_START: u64 = 200;
const MAX_TARGET: u64 = 500;
const MAX_RAMP_DAYS: u64 = 365;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct EnrollRequest {
    mailbox: String,
    #[serde(default)]
    start_limit: Option<u64>,
    #[serde(default)]
    target_limit: Option<u64>,
    #[serde(default)]
    ramp_days: Option<u64>,
    #[serde(default)]
    reply_rate: Option<f64>,
}

/// A validated enrollment request; settings left out keep their current (or default) value.
#[derive(Debug, Clone)]
pub struct Enroll {
    pub local: String,
    pub start_limit: Option<u32>,
    pub target_limit: Option<u32>,
    pub ramp_days: Option<u32>,
    pub reply_rate: Option<f64>,
}

fn bounded(field: &str, value: Option<u64>, max: u64) -> Result<Option<u32>> {
    match value {
        None => Ok(None),
        Some(n) if (1..=max).contains(&n) => Ok(Some(n as u32)),
        Some(n) => Err(Error::invalid(
            format!("`{field}` must be an integer from 1 to {max}; got {n}"),
            format!("pass `{field}` between 1 and {max}, or leave it out"),
        )),
    }
}

pub fn parse_enroll(body: &[u8], domain: &str) -> Result<Enroll> {
    let input: EnrollRequest = parse_json(body)?;
    let raw = input.mailbox.trim();
    let local = match raw.rsplit_once('@') {
        Some((local, d)) if d.eq_ignore_ascii_case(domain) => local,
        Some(_) => {
            return Err(Error::invalid(
                format!("`mailbox` {raw:?} is not on your domain {domain}"),
                "name a mailbox of your domain (GET /v1/mailboxes lists them)",
            ));
        }
        None => raw,
    };
    crate::address::check_local_part(local).map_err(|why| {
        Error::invalid(
            format!("invalid `mailbox`: {why}"),
            "give the mailbox's full address or its local part",
        )
    })?;
    let reply_rate = match input.reply_rate {
        Some(r) if !(0.0..=1.0).contains(&r) => {
            return Err(Error::invalid(
                format!("`replyRate` must be a number from 0 to 1; got {r}"),
                "pass the fraction of received warmup messages to answer, such as 0.3",
            ));
        }
        other => other,
    };
    let enroll = Enroll {
        local: local.to_ascii_lowercase(),
        start_limit: bounded("startLimit", input.start_limit, MAX_START)?,
        target_limit: bounded("targetLimit", input.target_limit, MAX_TARGET)?,
        ramp_days: bounded("rampDays", input.ramp_days, MAX_RAMP_DAYS)?,
        reply_rate,
    };
    if let (Some(start), Some(target)) = (enroll.start_limit, enroll.target_limit)
        && start > target
    {
        return Err(start_above_target(start, target));
    }
    Ok(enroll)
}

fn start_above_target(start: u32, target: u32) -> Error {
    Error::invalid(
        format!("`startLimit` ({start}) is greater than `targetLimit` ({target})"),
        "the daily limit ramps up from `startLimit` to `targetLimit`; give start <= target",
    )
}

/// Applies an enrollment to the current record (or a new one).
fn merge(current: Option<Warmup>, e: &Enroll, address: String, now: u64) -> Result<Warmup> {
    let mut rec = current.unwrap_or_else(|| Warmup {
        mailbox: address,
        start_limit: DEFAULT_START,
        target_limit: DEFAULT_TARGET,
        ramp_days: DEFAULT_RAMP_DAYS,
        reply_rate: DEFAULT_REPLY_RATE,
        enrolled_at: now,
        today: utc_day(now),
        ..Warmup::default()
    });
    rec.start_limit = e.start_limit.unwrap_or(rec.start_limit);
    rec.target_limit = e.target_limit.unwrap_or(rec.target_limit);
    rec.ramp_days = e.ramp_days.unwrap_or(rec.ramp_days);
    rec.reply_rate = e.reply_rate.unwrap_or(rec.reply_rate);
    if rec.start_limit > rec.target_limit {
        return Err(start_above_target(rec.start_limit, rec.target_limit));
    }
    rec.enabled = true;
    Ok(rec)
}

pub async fn enroll(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let e = parse_enroll(&ctx.body, &domain)?;
    let now = now_ms();
    let rec = ctx
        .app
        .store
        .write(move |w| -> Result<_> {
            let mailbox = w
                .mailbox_in_write(&domain, &e.local)?
                .ok_or_else(|| Error::not_found("mailbox"))?;
            let rec = merge(w.warmup(&domain, &e.local)?, &e, mailbox.address, now)?;
            w.put_warmup(&rec)?;
            Ok(rec)
        })
        .await?;
    Reply::ok(&status(&rec.mailbox, Some(&rec), now))
}

pub async fn disable(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let local = super::mailboxes::local_part_of(ctx.param("address"), &domain)?;
    let now = now_ms();
    let rec = ctx
        .app
        .store
        .write(move |w| -> Result<_> {
            w.mailbox_in_write(&domain, &local)?.ok_or_else(|| Error::not_found("mailbox"))?;
            let mut rec = w
                .warmup(&domain, &local)?
                .ok_or_else(|| Error::NotFound("this mailbox is not enrolled in warmup".into()))?;
            rec.enabled = false;
            w.put_warmup(&rec)?;
            Ok(rec)
        })
        .await?;
    Reply::ok(&status(&rec.mailbox, Some(&rec), now))
}

/// Every mailbox the key can see, enrolled or not; only `mailbox` when the query names one.
pub async fn list(ctx: Ctx) -> Result<Reply> {
    let principal = ctx.principal.as_ref().ok_or(Error::Unauthorized("missing API key"))?;
    let own: Option<String> = principal.domain.as_deref().map(str::to_owned);
    // (domain, local part) of the one mailbox asked for.
    let wanted = match ctx.query_value("mailbox") {
        None => None,
        Some(value) => Some(match &own {
            Some(d) => (d.clone(), super::mailboxes::local_part_of(&value, d)?),
            None => {
                let value = value.trim().to_ascii_lowercase();
                match value.rsplit_once('@') {
                    Some((local, d)) if !local.is_empty() => (d.to_owned(), local.to_owned()),
                    _ => {
                        return Err(Error::invalid(
                            format!("`mailbox` must be a full address; got {value:?}"),
                            "an org-wide key names a mailbox by its full address",
                        ));
                    }
                }
            }
        }),
    };
    let now = now_ms();
    let statuses = ctx
        .app
        .store
        .read(move |r| -> Result<_> {
            if let Some((domain, local)) = &wanted {
                let mailbox =
                    r.mailbox(domain, local)?.ok_or_else(|| Error::not_found("mailbox"))?;
                return Ok(vec![status(&mailbox.address, r.warmup(domain, local)?.as_ref(), now)]);
            }
            let domains = match own {
                Some(d) => vec![d],
                None => r.domains()?.into_iter().map(|d| d.name).collect(),
            };
            let mut out: Vec<Status> = Vec::new();
            for domain in domains {
                let records = r.warmups(&domain)?;
                for mailbox in r.mailboxes(&domain)? {
                    let record = records.iter().find(|w| w.mailbox == mailbox.address);
                    out.push(status(&mailbox.address, record, now));
                }
            }
            Ok(out)
        })
        .await?;
    Reply::ok(&statuses)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(body: &str) -> String {
        match parse_enroll(body.as_bytes(), "x.test") {
            Err(Error::Invalid { message, .. }) => message,
            other => panic!("expected 400 for {body}, got {other:?}"),
        }
    }

    #[test]
    fn enrollment_input_is_validated_field_by_field() {
        assert!(message(r#"{}"#).contains("`mailbox`"));
        assert!(message(r#"{"mailbox": "a", "startLimit": 0}"#).contains("`startLimit`"));
        assert!(message(r#"{"mailbox": "a", "targetLimit": 501}"#).contains("`targetLimit`"));
        assert!(message(r#"{"mailbox": "a", "rampDays": -1}"#).contains("`rampDays`"));
        assert!(message(r#"{"mailbox": "a", "replyRate": 1.5}"#).contains("`replyRate`"));
        assert!(
            message(r#"{"mailbox": "a", "startLimit": 9, "targetLimit": 3}"#)
                .contains("greater than")
        );
        assert!(message(r#"{"mailbox": "a", "speed": 1}"#).contains("unknown field `speed`"));
        assert!(message(r#"{"mailbox": "a@other.test"}"#).contains("not on your domain"));
        assert!(message(r#"{"mailbox": "a b"}"#).contains("`mailbox`"));
        let ok = parse_enroll(br#"{"mailbox": "Sales@X.test", "replyRate": 1}"#, "x.test")
            .expect("valid"); // ok: test
        assert_eq!(ok.local, "sales");
        assert_eq!(ok.reply_rate, Some(1.0));
    }

    #[test]
    fn omitted_settings_keep_their_values() {
        let e = |start, target| Enroll {
            local: "a".into(),
            start_limit: start,
            target_limit: target,
            ramp_days: None,
            reply_rate: None,
        };
        let first = merge(None, &e(None, None), "a@x.test".into(), 5).expect("new"); // ok: test
        assert_eq!((first.start_limit, first.target_limit, first.ramp_days), (2, 40, 30));
        let mut counted = first.clone();
        counted.sent_total = 7;
        counted.enabled = false;
        let again = merge(Some(counted), &e(Some(5), None), "a@x.test".into(), 9).expect("update"); // ok: test
        assert_eq!((again.start_limit, again.target_limit, again.sent_total), (5, 40, 7));
        assert!(again.enabled);
        assert_eq!(again.enrolled_at, 5, "the ramp day is kept");
        assert!(merge(Some(again), &e(Some(50), None), "a@x.test".into(), 9).is_err());
    }
}
