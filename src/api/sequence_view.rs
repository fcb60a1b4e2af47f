//! How a sequence reads in answers: the list, `GET /v1/sequences/{id}` and create share it.

use serde::Serialize;

use super::analytics::rate;
use crate::store::{EnrollmentStats, SendingWindow, Sequence, Step, TrackingOptions};

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct View<'a> {
    id: &'a str,
    name: &'a str,
    /// Null when the sequence sends from a sender group.
    from: Option<&'a str>,
    sender_group_id: Option<&'a str>,
    sending_window: Option<&'a SendingWindow>,
    /// `pause` or `continue`: what an out-of-office answer with a return date does.
    out_of_office: &'a str,
    status: &'a str,
    /// Every part shown, on or off.
    tracking: TrackingOptions,
    steps: &'a [Step],
    created_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    step_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<Stats<'a>>,
}

/// The enrollment counts with rates per enrolled lead and the counters of each step.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Stats<'a> {
    #[serde(flatten)]
    counts: &'a EnrollmentStats,
    /// Leads that replied / leads enrolled; the others likewise per lead.
    reply_rate: f64,
    open_rate: f64,
    click_rate: f64,
    bounce_rate: f64,
    steps: Vec<StepRow>,
}

/// The message counters of one `send_email` step, by its position in `steps`.
#[derive(Serialize)]
struct StepRow {
    index: u32,
    sent: u64,
    delivered: u64,
    opened: u64,
    clicked: u64,
    replied: u64,
    bounced: u64,
}

fn stats(s: &Sequence) -> Stats<'_> {
    let c = &s.stats;
    let steps = s
        .steps
        .iter()
        .enumerate()
        .filter(|(_, step)| matches!(step, Step::SendEmail { .. }))
        .map(|(i, _)| {
            let index = i as u32;
            let found = s.step_counters.iter().find(|c| c.step == index);
            let m = found.map(|c| c.counters.clone()).unwrap_or_default();
            StepRow {
                index,
                sent: m.sent,
                delivered: m.delivered,
                opened: m.opened,
                clicked: m.clicked,
                replied: m.replied,
                bounced: m.bounced,
            }
        })
        .collect();
    Stats {
        counts: c,
        reply_rate: rate(c.replied, c.total),
        open_rate: rate(c.opened, c.total),
        click_rate: rate(c.clicked, c.total),
        bounce_rate: rate(c.bounced, c.total),
        steps,
    }
}

/// The sequence; `listed` adds `stepCount` and `stats` (the list and the single GET).
pub fn view(s: &Sequence, listed: bool) -> View<'_> {
    View {
        id: &s.id,
        name: &s.name,
        from: s.sender_group_id.is_none().then_some(s.from.as_str()),
        sender_group_id: s.sender_group_id.as_deref(),
        sending_window: s.sending_window.as_ref(),
        out_of_office: s.out_of_office.as_deref().unwrap_or("continue"),
        status: &s.status,
        tracking: s.tracking.unwrap_or_default(),
        steps: &s.steps,
        created_at: s.created_at,
        step_count: listed.then_some(s.steps.len()),
        stats: listed.then(|| stats(s)),
    }
}
