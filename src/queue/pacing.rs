//! Mailbox pacing at the queue: a campaign, sequence or warmup message whose mailbox has a daily
//! cap or a minimum gap goes only in the slot the store gives it (see `store::pacing`).

use crate::ids::now_ms;
use crate::store::{Email, SendType, Slot};

use super::{Deps, Result};

/// Whether the message must wait (its queue entry has then moved to its slot).
pub async fn holds(app: &Deps, email: &Email, due: u64) -> Result<bool> {
    let paced_kind =
        matches!(email.send_type, Some(SendType::Campaign | SendType::Sequence | SendType::Warmup));
    // Only a first attempt takes a slot: a retry of a deferred recipient was counted already.
    if !paced_kind || email.deliveries.iter().any(|d| d.attempts > 0) {
        return Ok(false);
    }
    let Some((local, domain)) = email.summary.mailbox.rsplit_once('@') else { return Ok(false) };
    let (local, domain) = (local.to_owned(), domain.to_owned());
    let Some(mailbox) = app.store.read(move |r| r.mailbox(&domain, &local)).await? else {
        return Ok(false);
    };
    if !mailbox.is_paced() {
        return Ok(false);
    }
    let id = email.summary.id.clone();
    let slot = app.store.write(move |w| w.pace_send(&mailbox, &id, due, now_ms())).await?;
    if let Slot::Later(at) = slot {
        tracing::debug!(email = %email.summary.id, at, "paced: waits for its slot");
    }
    Ok(slot != Slot::Now)
}
