//! Overview: the last 30 days of sent, delivered, bounced and opened mail as a chart drawn on
//! the server (SVG, no script), and the domain's health score.

use maud::html;

use super::chart::{Day, SERIES, chart};

use super::call::{Call, field};
use super::layout;
use super::{gate, visitor};
use crate::api::health;
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};
use crate::store::DayCounts;

const DAYS: u64 = 30;
const DAY_MS: u64 = 86_400_000;

pub async fn page(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let domain = user.domain.clone();
    let now = crate::ids::now_ms();
    let counts: Vec<DayCounts> = ctx
        .app
        .store
        .read_long(move |r| {
            (0..DAYS).rev().map(|back| r.day_counts(&domain, 1, now - back * DAY_MS)).collect()
        })
        .await?;
    let report = Call::new(&ctx, &user).run(handler!(health::domain_health)).await;
    let body = html! {
        h2 { "Last 30 days" }
        @let days = labelled(now, counts);
        ul.legend aria-label="Totals over 30 days" {
            @for s in &SERIES {
                li {
                    svg class={ "swatch " (s.class) } viewBox="0 0 28 10" width="28" height="10" aria-hidden="true" {
                        line x1="0" y1="5" x2="28" y2="5" stroke-width="2" stroke-dasharray=(s.dash) {}
                    }
                    (s.name) ": " (days.iter().map(|d| (s.value)(&d.counts)).sum::<u64>())
                }
            }
        }
        (chart(&days))
        h2 { "Health" }
        @match &report {
            Ok(r) => {
                p { span.score { (field(r, "score")) } " / 100 " a href="/ui/domain" { "See the checks and their hints" } }
            }
            Err(e) => { p.fail { (super::call::failure(e).text) } }
        }
    };
    Ok(layout::page(&user, "/ui/overview", "Overview", body))
}

/// The days, oldest first, with their labels ("24 Nov").
fn labelled(now: u64, counts: Vec<DayCounts>) -> Vec<Day> {
    let n = counts.len() as u64;
    let label = |back: u64| {
        let when = super::call::when(now - back * DAY_MS);
        when.split_whitespace().skip(1).take(2).collect::<Vec<_>>().join(" ")
    };
    counts
        .into_iter()
        .zip((0..n).rev())
        .map(|(counts, back)| Day { label: label(back), counts })
        .collect()
}
