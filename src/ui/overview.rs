//! Overview: the last 30 days of sent, delivered, bounced and opened mail as a chart drawn on
//! the server (SVG, no script), and the domain's health score.

use maud::{Markup, html};

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
const W: u64 = 600;
const H: u64 = 200;
const PAD: u64 = 24;

/// A series of the chart: name, CSS class, colour, value of a day.
type Series = (&'static str, &'static str, &'static str, fn(&DayCounts) -> u64);

const SERIES: [Series; 4] = [
    ("sent", "s-sent", "#1d4ed8", |c| c.sent),
    ("delivered", "s-delivered", "#15803d", |c| c.delivered),
    ("bounced", "s-bounced", "#b91c1c", |c| c.bounced),
    ("opened", "s-opened", "#a16207", |c| c.opened),
];

pub async fn page(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let domain = user.domain.clone();
    let now = crate::ids::now_ms();
    let days: Vec<DayCounts> = ctx
        .app
        .store
        .read(move |r| {
            (0..DAYS).rev().map(|back| r.day_counts(&domain, 1, now - back * DAY_MS)).collect()
        })
        .await?;
    let report = Call::new(&ctx, &user).run(handler!(health::domain_health)).await;
    let body = html! {
        h2 { "Last 30 days" }
        (chart(&days))
        ul.legend {
            @for (name, class, _, value) in SERIES {
                li { span class={ "sw " (class) } {} (name) ": " (days.iter().map(value).sum::<u64>()) }
            }
        }
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

/// One line per series over the days, scaled to the largest value.
fn chart(days: &[DayCounts]) -> Markup {
    let max =
        days.iter().flat_map(|d| SERIES.iter().map(move |s| (s.3)(d))).max().unwrap_or(0).max(1);
    let n = days.len().max(2) as u64 - 1;
    let x = |i: usize| PAD + (i as u64) * (W - 2 * PAD) / n;
    let y = |v: u64| H - PAD - v * (H - 2 * PAD) / max;
    let points = |f: fn(&DayCounts) -> u64| -> String {
        days.iter()
            .enumerate()
            .map(|(i, d)| format!("{},{}", x(i), y(f(d))))
            .collect::<Vec<_>>()
            .join(" ")
    };
    html! {
        svg.chart xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (W) " " (H) } role="img" aria-labelledby="chart-title" {
            title #chart-title { "Messages per day over the last 30 days: sent, delivered, bounced and opened" }
            line x1=(PAD) y1=(H - PAD) x2=(W - PAD) y2=(H - PAD) stroke="#9ca3af" {}
            line x1=(PAD) y1=(PAD) x2=(PAD) y2=(H - PAD) stroke="#9ca3af" {}
            text x=(PAD + 4) y=(PAD - 8) font-size="11" fill="#4b5563" { (max) }
            text x=(PAD) y=(H - 6) font-size="11" fill="#4b5563" { "30 days ago" }
            text x=(W - PAD) y=(H - 6) font-size="11" fill="#4b5563" text-anchor="end" { "today" }
            @for (_, _, colour, value) in SERIES {
                polyline points=(points(value)) fill="none" stroke=(colour) stroke-width="2" {}
            }
        }
    }
}
