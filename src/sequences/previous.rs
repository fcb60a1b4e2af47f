//! A follow-up waits for the message before it: while the previous step's message is still
//! queued or being retried, the next `send_email` step does not go out. A contact whose first
//! message is deferred for an hour would otherwise get the follow-up before it, or both at once.
//! Once every recipient of it is final the enrollment goes on: delivered, the next step runs;
//! failed or bounced, the queue has already ended the enrollment (`store::attempts`).

use crate::error::Result;
use crate::store::{Enrollment, Wtx};

/// How long after the message's next attempt the engine looks again, should the queue's own
/// wake-up (`Wtx::resume_after_delivery`) be missed, e.g. when the message was cancelled.
const LOOK_AGAIN_MS: u64 = 60_000;

/// When the enrollment's previous message is not final yet: when to look again.
pub fn wait(w: &Wtx<'_>, e: &Enrollment, now: u64) -> Result<Option<u64>> {
    let Some(id) = &e.last_email else { return Ok(None) };
    let Some(email) = w.email_in_write(id)? else { return Ok(None) };
    if email.all_final() {
        return Ok(None);
    }
    let next = email.next_attempt_at.unwrap_or(now).max(now);
    Ok(Some(next.saturating_add(LOOK_AGAIN_MS)))
}
