//! The follow-up engine. One task reads the enrollments whose next step is due and advances each
//! in the same transaction that queues its message, so a step is taken exactly once: a crash
//! before the commit leaves the step due, a crash after it leaves the message in the queue.
//! Enrollments waiting on a delay are not looked at until their time comes.

pub mod merge;
mod previous;
mod sender;
pub mod window;

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::Duration;

use std::sync::Arc;

use crate::error::Result;
use crate::ids::now_ms;
use crate::mail::outbound::Outbound;
use crate::mail::text::html_to_text;
use crate::shutdown::Shutdown;
use crate::store::{
    Email, Enrollment, EnrollmentStatus, SendType, Sequence, Step, Store, Variant, VariantOf, Wtx,
};
use crate::wake::Wake;
use merge::{Merge, Target, fill};
use sender::Sender;

/// Due steps advanced per transaction.
const BATCH: usize = 256;
/// The longest the engine sleeps without looking (a safety net; wake-ups come sooner).
const IDLE: Duration = Duration::from_secs(60);

/// What the sequence engine works with.
pub struct Deps {
    pub store: Arc<Store>,
    /// Wakes the delivery queue when steps were queued.
    pub queue: Wake,
    /// Its own wake-up: new enrollments, a resumed sequence.
    pub wake: Wake,
    /// Steps are taken by the leading node only.
    pub node: Arc<crate::cluster::Node>,
}

pub async fn run(app: Arc<Deps>, mut shutdown: Shutdown) {
    // Enrollments made through other nodes are told here on a shared store.
    let mut told = app.store.changes();
    loop {
        if !app.node.leads() {
            tokio::select! {
                _ = tokio::time::sleep(app.node.poll(IDLE)) => continue,
                _ = shutdown.wait() => break,
            }
        }
        let now = now_ms();
        let (due, mut next) = match app.store.read(move |r| r.due_enrollments(now, BATCH)).await {
            Ok(found) => found,
            Err(e) => {
                tracing::error!(error = %e, "sequence scan failed");
                (Vec::new(), Some(now + 1000))
            }
        };
        if !due.is_empty() {
            match app.store.write(move |w| advance_all(w, &due, now_ms())).await {
                Ok(sent) => {
                    crate::metrics::sequence_steps(sent as u64);
                    if sent > 0 {
                        app.queue.wake();
                    }
                    // Advancing scheduled new due times: look again before sleeping.
                    continue;
                }
                Err(e) => {
                    tracing::error!(error = %e, "sequence steps failed");
                    next = Some(now + 1000);
                }
            }
        }
        let wait = next.map_or(IDLE, |at| Duration::from_millis(at.saturating_sub(now)).min(IDLE));
        let wait = app.node.poll(wait);
        tokio::select! {
            _ = app.wake.notified() => {}
            _ = told.wait(&[crate::store::Topic::Sequences]) => {}
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.wait() => break,
        }
    }
}

/// Advances every due enrollment; returns how many messages were queued. A batch usually holds
/// many enrollments of few sequences, so each sequence is read and written once per batch.
fn advance_all(w: &mut Wtx<'_>, due: &[(u64, String)], now: u64) -> Result<usize> {
    let mut sent = 0;
    let mut sequences: HashMap<String, Sequence> = HashMap::new();
    for (at, id) in due {
        // The entry may have gone since the scan (ended, or taken by an earlier pass).
        let Some(mut e) = w.take_due_enrollment(*at, id)? else { continue };
        if !e.status.is_active() {
            continue;
        }
        let sequence = match sequences.entry(e.sequence_id.clone()) {
            Entry::Occupied(found) => found.into_mut(),
            Entry::Vacant(slot) => match w.load_sequence(&e.sequence_id)? {
                Some(loaded) => slot.insert(loaded),
                None => continue,
            },
        };
        sent += advance(w, &mut e, sequence, *at, now)?;
        w.save_enrollment(&e)?;
    }
    for sequence in sequences.values() {
        w.save_sequence(sequence)?;
    }
    Ok(sent)
}

/// Runs the enrollment's steps from its current one until a delay, a closed sending window or the
/// end.
fn advance(
    w: &mut Wtx<'_>,
    e: &mut Enrollment,
    sequence: &mut Sequence,
    due: u64,
    now: u64,
) -> Result<usize> {
    e.due = None;
    let Some(sender) = gate(w, e, sequence, due, now)? else { return Ok(0) };
    let mut sent = 0;
    loop {
        let Some(step) = sequence.steps.get(e.step as usize).cloned() else {
            w.transition(e, sequence, EnrollmentStatus::Completed, now)?;
            return Ok(sent);
        };
        if matches!(step, Step::SendEmail { .. }) {
            if let Some(again) = previous::wait(w, e, now)? {
                e.awaiting_delivery = true;
                w.schedule_enrollment(e, again)?;
                return Ok(sent);
            }
            e.awaiting_delivery = false;
            if let Some(open) = window_wait(sequence, e, now) {
                w.schedule_enrollment(e, open)?;
                return Ok(sent);
            }
        }
        let index = e.step;
        e.step += 1;
        e.updated_at = now;
        match step {
            Step::Delay { delay_ms, .. } => {
                w.schedule_enrollment(e, now.saturating_add(delay_ms))?;
                return Ok(sent);
            }
            Step::SendEmail { subject, html, text, variants } => {
                // The step as it stands in this transaction: a PATCH lands before or after it,
                // never inside, so the message is the old step or the new one whole.
                let (body, variant) = match variants.is_empty() {
                    true => (Variant { subject, html, text }, None),
                    false => {
                        let at = sequence.next_variant(index, variants.len());
                        let v = variants[at as usize].clone();
                        (v, Some(VariantOf { step: index, index: at }))
                    }
                };
                let mut email = compose(e, sequence, &sender, &body, now);
                email.variant = variant;
                email.step = Some(index);
                email.tracking = sequence.tracking;
                if e.thread.is_none() {
                    e.thread = email.message_id.clone();
                    e.thread_subject = Some(email.summary.subject.clone());
                }
                e.last_email = Some(email.summary.id.clone());
                w.enqueue(&email, now)?;
                w.note_sequence_mail(&email.summary.mailbox, &e.email, &email.summary.id)?;
                sequence.counters.sent += 1;
                if let Some(v) = variant {
                    sequence.variant_counters(v.step, v.index).sent += 1;
                }
                sequence.step_counters(index).sent += 1;
                sent += 1;
            }
        }
    }
}

/// What is checked when a step comes due before anything runs: the sequence's status, the
/// contact's suppression and a mailbox to send from. `None` when the enrollment waits or ended.
fn gate(
    w: &mut Wtx<'_>,
    e: &mut Enrollment,
    sequence: &mut Sequence,
    due: u64,
    now: u64,
) -> Result<Option<Sender>> {
    match sequence.status.as_str() {
        "paused" => {
            // Checked when the step is due: it waits, parked, until the sequence resumes.
            e.parked = true;
            e.due = Some(due);
            return Ok(None);
        }
        "completed" => {
            w.transition(e, sequence, EnrollmentStatus::Cancelled, now)?;
            return Ok(None);
        }
        _ => {}
    }
    if let Some(s) = w.suppression_for(&e.domain, &e.email)? {
        let status = if s.reason == "hard_bounce" {
            EnrollmentStatus::Bounced
        } else {
            EnrollmentStatus::Cancelled
        };
        w.transition(e, sequence, status, now)?;
        return Ok(None);
    }
    let sender = sender::sticky(w, e, sequence)?;
    if sender.is_none() {
        // The sending mailbox was deleted (or the group has none left): nothing may go out in
        // its name any more.
        w.transition(e, sequence, EnrollmentStatus::Cancelled, now)?;
    }
    Ok(sender)
}

/// When the sequence's sending window is closed now for this contact: the time it next opens.
/// The enrollment's own time zone wins over the window's.
fn window_wait(sequence: &Sequence, e: &Enrollment, now: u64) -> Option<u64> {
    let window = sequence.sending_window.as_ref()?;
    let name = e.timezone.as_deref().unwrap_or(&window.timezone);
    // Zones are checked when given; one that a later build no longer knows reads as UTC.
    let zone = window::zone(name).unwrap_or(jiff::tz::TimeZone::UTC);
    let open = window::next_open(window, &zone, now);
    (open > now).then_some(open)
}

/// The message of one `send_email` step: merge fields filled, threaded under the first message.
fn compose(
    e: &Enrollment,
    sequence: &Sequence,
    sender: &Sender,
    body: &Variant,
    now: u64,
) -> Email {
    let merge = Merge { fields: &e.merge_fields, email: &e.email, seed: &e.id };
    let mut subject = fill(&body.subject, &merge, Target::Subject);
    if subject.trim().is_empty()
        && let Some(first) = &e.thread_subject
    {
        subject = if first.starts_with("Re: ") { first.clone() } else { format!("Re: {first}") };
    }
    // A text-only step goes as text/plain alone (so without a pixel); with html the text part
    // is the one given, or one made from the html.
    let html = (!body.html.is_empty()).then(|| fill(&body.html, &merge, Target::Html));
    let text = match (&body.text, &html) {
        (Some(text), _) => fill(text, &merge, Target::Text),
        (None, Some(html)) => html_to_text(html),
        (None, None) => String::new(),
    };
    Outbound {
        kind: SendType::Sequence,
        mailbox: sender.mailbox.clone(),
        from: sender.from_header.clone(),
        to: vec![e.email.clone()],
        subject,
        text,
        html,
        in_reply_to: e.thread.clone(),
        batch_id: None,
        sequence: Some((sequence.id.clone(), e.id.clone())),
        scheduled_at: None,
        due: now,
        now,
    }
    .into_email()
}
