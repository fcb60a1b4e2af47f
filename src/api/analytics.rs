//! Analytics endpoints: the ones an org-wide key may call. A domain-scoped key gets one object
//! for its own domain; an org-wide key gets an array with one entry per domain (only the one named
//! by `domain` when it is given).

use serde::Serialize;

use crate::error::{Error, Result};
use crate::http::request::int_param;
use crate::http::{Ctx, Reply};
use crate::store::{MessageCounters, Sequence, Step, Suppression};

/// The domains a request covers, and whether the answer is a single object.
pub(super) async fn scope(ctx: &Ctx) -> Result<(Vec<String>, bool)> {
    let wanted =
        ctx.query_value("domain").map(|d| d.trim().trim_end_matches('.').to_ascii_lowercase());
    let principal = ctx.principal.as_ref().ok_or(Error::Unauthorized("missing API key"))?;
    match principal.domain.as_deref() {
        Some(own) => match wanted {
            Some(d) if d != own => Err(Error::not_found("domain")),
            _ => Ok((vec![own.to_owned()], true)),
        },
        None => {
            let all: Vec<String> =
                ctx.app.store.read(|r| r.domains()).await?.into_iter().map(|d| d.name).collect();
            match wanted {
                Some(d) if all.contains(&d) => Ok((vec![d], false)),
                Some(_) => Err(Error::not_found("domain")),
                None => Ok((all, false)),
            }
        }
    }
}

/// The answer for `scope`'s domains: the one object for a domain-scoped key, else the array.
pub(super) fn one_or_all<T: Serialize>(mut items: Vec<T>, single: bool) -> Result<Reply> {
    if !single {
        return Reply::ok(&items);
    }
    match items.pop() {
        Some(one) => Reply::ok(&one),
        None => Err(Error::not_found("domain")),
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    domain: String,
    total: u64,
    items: Vec<Suppression>,
    has_more: bool,
}

pub async fn suppressions(ctx: Ctx) -> Result<Reply> {
    let limit = int_param(ctx.query_value("limit"), "limit", 1, 500, 100)? as usize;
    let after = match ctx.query_value("after") {
        None => None,
        Some(raw) => Some(raw.trim().parse::<u64>().map_err(|_| {
            Error::invalid(
                format!("`after` must be a Unix time in milliseconds; got {raw:?}"),
                "pass the `unsubscribedAt` of the last item of the previous page",
            )
        })?),
    };
    let (domains, single) = scope(&ctx).await?;
    let pages = ctx
        .app
        .store
        .read_long(move |r| {
            domains
                .into_iter()
                .map(|domain| {
                    let (total, items, has_more) = r.suppressions_page(&domain, after, limit)?;
                    Ok(Page { domain, total, items, has_more })
                })
                .collect::<Result<Vec<Page>>>()
        })
        .await?;
    one_or_all(pages, single)
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct CampaignRow {
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batch_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    domain: String,
    sent: u64,
    delivered: u64,
    opened: u64,
    clicked: u64,
    replied: u64,
    bounced: u64,
    /// Automatic answers (out of office, auto-responders): not counted as replies.
    auto_replied: u64,
    open_rate: f64,
    click_rate: f64,
    reply_rate: f64,
    bounce_rate: f64,
    /// Sequences only: one row per variant of each A/B step.
    #[serde(skip_serializing_if = "Option::is_none")]
    variants: Option<Vec<VariantRow>>,
}

/// The counters of one variant of a sequence step, with the rates of a campaign row.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct VariantRow {
    step: u32,
    variant: u32,
    subject: String,
    sent: u64,
    delivered: u64,
    opened: u64,
    clicked: u64,
    replied: u64,
    bounced: u64,
    /// Automatic answers (out of office, auto-responders): not counted as replies.
    auto_replied: u64,
    open_rate: f64,
    click_rate: f64,
    reply_rate: f64,
    bounce_rate: f64,
}

/// Every variant of the sequence's A/B steps, in step order, counted or not yet.
fn variant_rows(s: &Sequence) -> Vec<VariantRow> {
    let mut rows = Vec::new();
    for (step, variants) in s.steps.iter().enumerate().filter_map(|(i, step)| match step {
        Step::SendEmail { variants, .. } if !variants.is_empty() => Some((i as u32, variants)),
        _ => None,
    }) {
        for (variant, v) in variants.iter().enumerate() {
            let variant = variant as u32;
            let found = s.variants.iter().find(|c| (c.step, c.variant) == (step, variant));
            let c =
                CampaignRow::new(&s.domain, &found.map(|c| c.counters.clone()).unwrap_or_default());
            rows.push(VariantRow {
                step,
                variant,
                subject: v.subject.clone(),
                sent: c.sent,
                delivered: c.delivered,
                opened: c.opened,
                clicked: c.clicked,
                replied: c.replied,
                bounced: c.bounced,
                auto_replied: c.auto_replied,
                open_rate: c.open_rate,
                click_rate: c.click_rate,
                reply_rate: c.reply_rate,
                bounce_rate: c.bounce_rate,
            });
        }
    }
    rows
}

/// `part / whole` as a fraction in 0..=1, 0 when nothing was sent (or nobody enrolled).
pub(super) fn rate(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { (part as f64 / whole as f64).min(1.0) }
}

impl CampaignRow {
    fn new(domain: &str, c: &MessageCounters) -> CampaignRow {
        CampaignRow {
            id: None,
            batch_id: None,
            name: None,
            domain: domain.to_owned(),
            sent: c.sent,
            delivered: c.delivered,
            opened: c.opened,
            clicked: c.clicked,
            replied: c.replied,
            bounced: c.bounced,
            auto_replied: c.auto_replied,
            // Engagement is measured against what arrived, bounces against what was sent.
            open_rate: rate(c.opened, c.delivered),
            click_rate: rate(c.clicked, c.delivered),
            reply_rate: rate(c.replied, c.delivered),
            bounce_rate: rate(c.bounced, c.sent),
            variants: None,
        }
    }
}

#[derive(Serialize, Default)]
struct CampaignStats {
    #[serde(skip_serializing_if = "Option::is_none")]
    sequences: Option<Vec<CampaignRow>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    batches: Option<Vec<CampaignRow>>,
}

pub async fn campaign_stats(ctx: Ctx) -> Result<Reply> {
    let kind = ctx.query_value("type").unwrap_or_else(|| "all".into());
    let (want_sequences, want_batches) = match kind.as_str() {
        "all" => (true, true),
        "sequence" => (true, false),
        "batch" => (false, true),
        other => {
            return Err(Error::invalid(
                format!("`type` must be all, sequence or batch; got {other:?}"),
                "leave `type` out for both sequences and batches",
            ));
        }
    };
    let sequence_id = ctx.query_value("sequenceId").filter(|s| !s.is_empty());
    let batch_id = ctx.query_value("batchId").filter(|s| !s.is_empty());
    let (domains, _) = scope(&ctx).await?;
    let stats = ctx
        .app
        .store
        .read_long(move |r| {
            let mut out = CampaignStats::default();
            if want_sequences {
                let mut rows = Vec::new();
                for domain in &domains {
                    for s in r.sequences(domain)? {
                        if sequence_id.as_ref().is_some_and(|id| *id != s.id) {
                            continue;
                        }
                        let mut row = CampaignRow::new(domain, &s.counters);
                        row.variants = Some(variant_rows(&s));
                        row.id = Some(s.id);
                        row.name = Some(s.name);
                        rows.push(row);
                    }
                }
                if sequence_id.is_some() && rows.is_empty() {
                    return Err(Error::not_found("sequence"));
                }
                out.sequences = Some(rows);
            }
            if want_batches {
                let mut rows = Vec::new();
                for domain in &domains {
                    for b in r.batches(domain)? {
                        if batch_id.as_ref().is_some_and(|id| *id != b.id) {
                            continue;
                        }
                        let counters = MessageCounters {
                            sent: u64::from(b.messages),
                            delivered: u64::from(b.delivered),
                            opened: u64::from(b.opened),
                            clicked: u64::from(b.clicked),
                            replied: u64::from(b.replied),
                            bounced: u64::from(b.bounced),
                            auto_replied: u64::from(b.auto_replied),
                        };
                        let mut row = CampaignRow::new(domain, &counters);
                        row.batch_id = Some(b.id);
                        rows.push(row);
                    }
                }
                if batch_id.is_some() && rows.is_empty() {
                    return Err(Error::not_found("batch"));
                }
                out.batches = Some(rows);
            }
            Ok(out)
        })
        .await?;
    Reply::ok(&stats)
}
