//! `/v1/mailboxes`

use serde::{Deserialize, Serialize};

use crate::address;
use crate::error::{Error, Result};
use crate::http::request::parse_json_nullable;
use crate::http::{Ctx, Reply};
use crate::store::{Mailbox, MailboxPatch, Quota, SpamFilterPatch};

/// The largest `dailyLimit` and `minGapMs` taken: a day's worth of sends at one a second, and a day.
const MAX_DAILY_LIMIT: u32 = 86_400;
const MAX_GAP_MS: u64 = 86_400_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct CreateMailbox {
    address: String,
    #[serde(default)]
    display_name: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct UpdateMailbox {
    #[serde(default, deserialize_with = "super::input::nullable")]
    display_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "super::input::nullable")]
    daily_limit: Option<Option<u64>>,
    #[serde(default, deserialize_with = "super::input::nullable")]
    min_gap_ms: Option<Option<u64>>,
    #[serde(default, deserialize_with = "super::input::nullable")]
    quota_bytes: Option<Option<u64>>,
    #[serde(default)]
    spam_filter: Option<SpamFilterInput>,
    #[serde(default)]
    forward_to: Option<Vec<String>>,
    #[serde(default)]
    keep_copy: Option<bool>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SpamFilterInput {
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(default)]
    junk_threshold: Option<f64>,
    #[serde(default, deserialize_with = "super::input::nullable")]
    reject_threshold: Option<Option<f64>>,
}

/// Scores run from about -20 to 40; thresholds outside this range mean nothing.
const THRESHOLDS: std::ops::RangeInclusive<f64> = -50.0..=100.0;

fn spam_filter(input: SpamFilterInput) -> Result<SpamFilterPatch> {
    let bad = |field: &str| {
        Error::invalid(
            format!("`spamFilter.{field}` must be a number from -50 to 100"),
            "give a score threshold; 5.0 is the default for junk",
        )
    };
    if input.junk_threshold.is_some_and(|t| !THRESHOLDS.contains(&t)) {
        return Err(bad("junkThreshold"));
    }
    if let Some(Some(t)) = input.reject_threshold
        && !THRESHOLDS.contains(&t)
    {
        return Err(bad("rejectThreshold"));
    }
    Ok(SpamFilterPatch {
        enabled: input.enabled,
        junk_threshold: input.junk_threshold,
        reject_threshold: input.reject_threshold,
    })
}

/// A mailbox with its quota: what it holds and may hold.
#[derive(Serialize)]
struct WithQuota {
    #[serde(flatten)]
    mailbox: Mailbox,
    quota: Quota,
}

/// A validated change: the fields given, null or blank clearing one.
pub fn parse_update(body: &[u8]) -> Result<MailboxPatch> {
    let input: UpdateMailbox = parse_json_nullable(
        body,
        &["displayName", "dailyLimit", "minGapMs", "quotaBytes", "spamFilter.rejectThreshold"],
    )?;
    let display_name = match input.display_name {
        None => None,
        Some(None) => Some(None),
        Some(Some(name)) if name.trim().is_empty() => Some(None),
        Some(Some(name)) => Some(Some(super::input::name("displayName", &name, 200)?)),
    };
    let daily_limit = match input.daily_limit {
        Some(Some(n)) if !(1..=u64::from(MAX_DAILY_LIMIT)).contains(&n) => {
            return Err(Error::invalid(
                format!("`dailyLimit` must be between 1 and {MAX_DAILY_LIMIT}"),
                "give the most sends a day this mailbox may make, or null for no cap",
            ));
        }
        other => other.map(|n| n.map(|n| n as u32)),
    };
    if let Some(Some(gap)) = input.min_gap_ms
        && gap > MAX_GAP_MS
    {
        return Err(Error::invalid(
            format!("`minGapMs` must be between 0 and {MAX_GAP_MS} (one day)"),
            "give the least time between two sends in milliseconds, or null for none",
        ));
    }
    Ok(MailboxPatch {
        display_name,
        daily_limit,
        min_gap_ms: input.min_gap_ms,
        quota_bytes: input.quota_bytes,
        spam_filter: input.spam_filter.map(spam_filter).transpose()?,
        // An empty list stops forwarding.
        forward_to: input
            .forward_to
            .map(|list| super::input::targets("forwardTo", &list, 0))
            .transpose()?,
        keep_copy: input.keep_copy,
    })
}

/// A validated creation request: the lower-cased local part and the display name.
pub fn parse_create(body: &[u8], domain: &str) -> Result<(String, Option<String>)> {
    let input: CreateMailbox = parse_json_nullable(body, &["displayName"])?;
    let raw = input.address.trim();
    let local = match raw.rsplit_once('@') {
        Some((local, d)) if d.eq_ignore_ascii_case(domain) => local,
        Some(_) => {
            return Err(Error::invalid(
                format!("`address` {raw:?} is not on your domain {domain}"),
                "give the local part only (e.g. \"support\"); the domain is appended",
            ));
        }
        None => raw,
    };
    address::check_local_part(local).map_err(|why| {
        Error::invalid(
            format!("invalid `address`: {why}"),
            "give the local part only, such as \"support\" or \"jane.doe\"",
        )
    })?;
    let display_name = match input.display_name.as_deref().map(str::trim) {
        None | Some("") => None,
        Some(name) => Some(super::input::name("displayName", name, 200)?),
    };
    Ok((local.to_ascii_lowercase(), display_name))
}

/// The local part named by a path or query value (local part or full address). A full address
/// on another domain names nothing this key can see.
pub fn local_part_of(value: &str, domain: &str) -> Result<String> {
    let value = value.trim();
    let local = match value.rsplit_once('@') {
        Some((local, d)) if d.eq_ignore_ascii_case(domain) => local,
        Some(_) => return Err(Error::not_found("mailbox")),
        None => value,
    };
    if local.is_empty() {
        return Err(Error::not_found("mailbox"));
    }
    Ok(local.to_ascii_lowercase())
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?;
    let json = ctx.app.store.read(|r| r.mailboxes_json(domain)).await?;
    Ok(Reply::json_bytes(hyper::StatusCode::OK, json.into()))
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let (local, display_name) = parse_create(&ctx.body, &domain)?;
    let mailbox =
        ctx.app.store.write(move |w| w.create_mailbox(&domain, &local, display_name)).await?;
    Reply::created(&mailbox)
}

/// The mailbox with its quota.
pub async fn get(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?;
    let local = local_part_of(ctx.param("address"), domain)?;
    let default = ctx.app.config.mailbox.quota_bytes;
    let found = ctx.app.store.read(|r| r.mailbox_quota(domain, &local, default)).await?;
    let (mailbox, quota) = found.ok_or_else(|| Error::not_found("mailbox"))?;
    Reply::ok(&WithQuota { mailbox, quota })
}

pub async fn update(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let local = local_part_of(ctx.param("address"), &domain)?;
    let patch = parse_update(&ctx.body)?;
    let default = ctx.app.config.mailbox.quota_bytes;
    let (mailbox, quota) = ctx
        .app
        .store
        .write(move |w| -> crate::store::Result<_> {
            let mailbox = w.update_mailbox(&domain, &local, patch)?;
            let quota = w.quota_in_write(&domain, &local, default)?;
            Ok((mailbox, quota.unwrap_or(Quota::of(0, None, default))))
        })
        .await?;
    Reply::ok(&WithQuota { mailbox, quota })
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let local = local_part_of(ctx.param("address"), &domain)?;
    ctx.app.store.write(move |w| w.delete_mailbox(&domain, &local)).await?;
    Reply::ok(&serde_json::json!({ "deleted": true }))
}

/// The mailbox named by the path, lower-cased, if it exists on the key's domain.
pub async fn mailbox_address(ctx: &Ctx) -> Result<String> {
    let domain = ctx.domain()?.to_owned();
    let local = local_part_of(ctx.param("address"), &domain)?;
    let address = format!("{local}@{domain}");
    let found = ctx.app.store.read(move |r| r.mailbox(&domain, &local)).await?;
    found.map(|_| address).ok_or_else(|| Error::not_found("mailbox"))
}
