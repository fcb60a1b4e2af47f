//! The overview's chart: daily counters as an inline SVG drawn on the server. Each series is
//! told apart without colour (its own dash pattern and marker shape, and its name written at the
//! end of its line), every point names its value in a `<title>` tooltip, and a table of the same
//! figures follows for screen readers.

use maud::{Markup, html};

use crate::store::DayCounts;

const W: u64 = 640;
const H: u64 = 240;
const LEFT: u64 = 40;
const RIGHT: u64 = 96;
const TOP: u64 = 16;
const BOTTOM: u64 = 28;
/// The least vertical distance between two line-end labels.
const LABEL_GAP: u64 = 13;

/// A series: its name, CSS class (colour), dash pattern and marker shape.
pub struct Series {
    pub name: &'static str,
    pub class: &'static str,
    pub dash: &'static str,
    marker: Marker,
    pub value: fn(&DayCounts) -> u64,
}

#[derive(Clone, Copy)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
}

pub const SERIES: [Series; 4] = [
    Series {
        name: "sent",
        class: "s-sent",
        dash: "none",
        marker: Marker::Circle,
        value: |c| c.sent,
    },
    Series {
        name: "delivered",
        class: "s-delivered",
        dash: "9 4",
        marker: Marker::Square,
        value: |c| c.delivered,
    },
    Series {
        name: "bounced",
        class: "s-bounced",
        dash: "2 3",
        marker: Marker::Triangle,
        value: |c| c.bounced,
    },
    Series {
        name: "opened",
        class: "s-opened",
        dash: "12 3 2 3",
        marker: Marker::Diamond,
        value: |c| c.opened,
    },
];

/// One day of the chart: its label ("24 Nov") and counters.
pub struct Day {
    pub label: String,
    pub counts: DayCounts,
}

/// The scale of the chart: where a day and a value are drawn.
struct Scale {
    n: u64,
    max: u64,
}

impl Scale {
    fn x(&self, i: usize) -> u64 {
        LEFT + (i as u64) * (W - LEFT - RIGHT) / self.n
    }
    fn y(&self, v: u64) -> u64 {
        H - BOTTOM - v * (H - TOP - BOTTOM) / self.max
    }
}

/// The chart of `days` (oldest first), with `id` naming its title and table.
pub fn chart(days: &[Day]) -> Markup {
    let max = days.iter().flat_map(|d| SERIES.iter().map(|s| (s.value)(&d.counts))).max();
    let scale = Scale { n: days.len().max(2) as u64 - 1, max: max.unwrap_or(0).max(1) };
    let ends = end_labels(days, &scale);
    html! {
        svg.chart xmlns="http://www.w3.org/2000/svg" viewBox={ "0 0 " (W) " " (H) } role="img"
            aria-labelledby="chart-title" aria-describedby="chart-table" {
            title #chart-title { "Messages per day over the last 30 days: sent, delivered, bounced and opened" }
            (axes(days, &scale))
            @for (s, label_y) in SERIES.iter().zip(ends) {
                g class={ "series " (s.class) } {
                    polyline points=(points(days, &scale, s)) fill="none" stroke-width="2"
                        stroke-dasharray=(s.dash) {}
                    @for (i, d) in days.iter().enumerate() {
                        (marker(s.marker, scale.x(i), scale.y((s.value)(&d.counts)), &tooltip(s, d)))
                    }
                    text.end x=(W - RIGHT + 8) y=(label_y + 4) { (s.name) }
                }
            }
        }
        (table(days))
    }
}

fn axes(days: &[Day], scale: &Scale) -> Markup {
    let (first, last) = (days.first().map(|d| d.label.as_str()), days.last());
    html! {
        g.axis {
            line x1=(LEFT) y1=(H - BOTTOM) x2=(W - RIGHT) y2=(H - BOTTOM) {}
            line x1=(LEFT) y1=(TOP) x2=(LEFT) y2=(H - BOTTOM) {}
            line.grid x1=(LEFT) y1=(scale.y(scale.max)) x2=(W - RIGHT) y2=(scale.y(scale.max)) {}
            text x=(LEFT - 6) y=(scale.y(scale.max) + 4) text-anchor="end" { (scale.max) }
            text x=(LEFT - 6) y=(H - BOTTOM + 4) text-anchor="end" { "0" }
            text x=(LEFT) y=(H - 8) { (first.unwrap_or_default()) }
            text x=(W - RIGHT) y=(H - 8) text-anchor="end" {
                (last.map(|d| d.label.as_str()).unwrap_or_default()) " (today)"
            }
        }
    }
}

fn points(days: &[Day], scale: &Scale, s: &Series) -> String {
    let mut out = String::with_capacity(days.len() * 8);
    for (i, d) in days.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(&format!("{},{}", scale.x(i), scale.y((s.value)(&d.counts))));
    }
    out
}

fn tooltip(s: &Series, d: &Day) -> String {
    format!("{}: {} {}", d.label, (s.value)(&d.counts), s.name)
}

fn marker(shape: Marker, x: u64, y: u64, tip: &str) -> Markup {
    let (x, y) = (x as i64, y as i64);
    html! {
        @match shape {
            Marker::Circle => circle cx=(x) cy=(y) r="3.5" { title { (tip) } },
            Marker::Square => rect x=(x - 3) y=(y - 3) width="6" height="6" { title { (tip) } },
            Marker::Triangle => path d=(format!("M{x} {} l4 7 h-8 z", y - 4)) { title { (tip) } },
            Marker::Diamond => path d=(format!("M{x} {} l4 4 l-4 4 l-4 -4 z", y - 4)) { title { (tip) } },
        }
    }
}

/// The heights of the line-end labels: at each line's last value, pushed apart so that none
/// overlaps another (lines often end at the same value, zero most of all).
fn end_labels(days: &[Day], scale: &Scale) -> [u64; 4] {
    let last = days.last().map(|d| d.counts).unwrap_or_default();
    let mut order: Vec<(usize, u64)> =
        SERIES.iter().enumerate().map(|(i, s)| (i, scale.y((s.value)(&last)))).collect();
    order.sort_by_key(|&(i, y)| (y, i));
    let mut placed = [0u64; 4];
    let mut floor = 0;
    for (i, y) in order {
        let y = y.max(floor);
        placed[i] = y;
        floor = y + LABEL_GAP;
    }
    // Pushed below the chart: shift everything up by the overflow.
    let over = placed.iter().max().map_or(0, |&m| m.saturating_sub(H - 8));
    placed.map(|y| y.saturating_sub(over))
}

/// The same figures as a table, for screen readers (hidden on screen).
fn table(days: &[Day]) -> Markup {
    html! {
        table #chart-table .visually-hidden {
            caption { "Messages per day, oldest first" }
            thead { tr { th scope="col" { "Day" } @for s in &SERIES { th scope="col" { (s.name) } } } }
            tbody {
                @for d in days {
                    tr { th scope="row" { (d.label) } @for s in &SERIES { td { ((s.value)(&d.counts)) } } }
                }
            }
        }
    }
}
