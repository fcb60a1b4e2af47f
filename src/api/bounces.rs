//! `GET /v1/bounces`: delivery outcomes and engagement over the last `days` UTC days (today
//! included), from the per-day counters the store keeps as events are recorded. The counting rules
//! are in `store/stats.rs` and the OpenAPI document.

use std::collections::BTreeMap;

use serde::Serialize;

use super::analytics::scope;
use crate::bounce::BounceClass;
use crate::error::Result;
use crate::http::request::int_param;
use crate::http::{Ctx, Reply};
use crate::store::DayCounts;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct BounceStats {
    domain: String,
    days: u32,
    total_sent: u64,
    delivered: u64,
    bounced: u64,
    failed: u64,
    opened: u64,
    clicked: u64,
    replied: u64,
    bounce_rate: f64,
    /// Bounces by class; every class is present.
    by_class: BTreeMap<&'static str, u64>,
}

impl BounceStats {
    fn new(domain: String, days: u32, c: DayCounts) -> BounceStats {
        let bounce_rate =
            if c.sent == 0 { 0.0 } else { (c.bounced as f64 / c.sent as f64).min(1.0) };
        BounceStats {
            domain,
            days,
            total_sent: c.sent,
            delivered: c.delivered,
            bounced: c.bounced,
            failed: c.failed,
            opened: c.opened,
            clicked: c.clicked,
            replied: c.replied,
            bounce_rate,
            by_class: BounceClass::ALL
                .iter()
                .map(|class| (class.as_str(), c.bounce_classes[class.index()]))
                .collect(),
        }
    }
}

pub async fn stats(ctx: Ctx) -> Result<Reply> {
    let days = int_param(ctx.query_value("days"), "days", 1, 90, 30)? as u32;
    let (domains, single) = scope(&ctx).await?;
    let now = crate::ids::now_ms();
    let all = ctx
        .app
        .store
        .read_long(move |r| {
            domains
                .into_iter()
                .map(|domain| {
                    let counts = r.day_counts(&domain, days, now)?;
                    Ok(BounceStats::new(domain, days, counts))
                })
                .collect::<Result<Vec<BounceStats>>>()
        })
        .await?;
    super::analytics::one_or_all(all, single)
}
