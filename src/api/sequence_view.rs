//! How a sequence reads in answers: the list, `GET /v1/sequences/{id}` and create share it.

use serde::Serialize;

use crate::store::{EnrollmentStats, SendingWindow, Sequence, Step};

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
    steps: &'a [Step],
    created_at: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    step_count: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stats: Option<&'a EnrollmentStats>,
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
        steps: &s.steps,
        created_at: s.created_at,
        step_count: listed.then_some(s.steps.len()),
        stats: listed.then_some(&s.stats),
    }
}
