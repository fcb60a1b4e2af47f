//! What the webhook dispatcher reads to find work, with the endpoints whose circuits are open
//! left out, and how the backlog such an endpoint holds is given up at `webhooks.max_age`
//! without attempts (its events are never tried while the circuit is open, so no failed attempt
//! gives them up the usual way).

use std::collections::HashSet;

use super::kv::ReadableTable;

use super::error::Result;
use super::outbox::{WebhookDelivery, WebhookStatus, release};
use super::tables::*;
use super::{Rtx, Wtx, decode, encode};

/// Due entries, each `(time, delivery id, webhook id)`.
#[derive(Debug, Default)]
pub struct DueWebhooks {
    /// Up to the limit, oldest first, none of a held endpoint.
    pub due: Vec<(u64, String, String)>,
    /// The oldest due entry of each held endpoint that has one: its probe, should one be sent.
    pub held: Vec<(u64, String, String)>,
    /// When the first entry after those read is due.
    pub next: Option<u64>,
}

impl Rtx {
    /// Entries of the due index at or before `now`, oldest first: up to `limit` of endpoints not
    /// in `held`, and the first of each endpoint in `held`. Held entries do not count against the
    /// limit, so a dead endpoint's backlog never hides other endpoints' work.
    pub fn due_webhooks(
        &self,
        now: u64,
        limit: usize,
        held: &HashSet<String>,
    ) -> Result<DueWebhooks> {
        let table = self.tx.open_table(WEBHOOK_DUE)?;
        let mut out = DueWebhooks::default();
        let mut seen: HashSet<String> = HashSet::new();
        for entry in table.iter()? {
            let (key, hook) = entry?;
            let (at, id) = key.value();
            if at > now || out.due.len() >= limit {
                out.next = Some(at);
                break;
            }
            let hook = hook.value();
            if !held.contains(hook) {
                out.due.push((at, id.to_owned(), hook.to_owned()));
            } else if seen.len() < held.len() && seen.insert(hook.to_owned()) {
                out.held.push((at, id.to_owned(), hook.to_owned()));
            }
        }
        Ok(out)
    }
}

impl Wtx<'_> {
    /// Gives up, as `failed` and without counting an attempt, up to `limit` pending deliveries
    /// to `webhook_id` made before `before`; returns how many.
    pub fn expire_webhook_backlog(
        &mut self,
        webhook_id: &str,
        before: u64,
        limit: usize,
    ) -> Result<usize> {
        let mut old = Vec::new();
        {
            let index = self.tx.open_table(WEBHOOK_DELIVERIES_BY_ENDPOINT)?;
            let table = self.tx.open_table(WEBHOOK_DELIVERIES)?;
            // Delivery ids grow with time, so the endpoint's index is in creation order.
            for entry in index.range((webhook_id, "")..)? {
                let (key, _) = entry?;
                let (hook, id) = key.value();
                if hook != webhook_id || old.len() >= limit {
                    break;
                }
                let Some(value) = table.get(id)? else { continue };
                let d: WebhookDelivery = decode(value.value())?;
                if d.created_at >= before {
                    break;
                }
                if d.status == WebhookStatus::Pending {
                    old.push(d);
                }
            }
        }
        let mut due = self.tx.open_table(WEBHOOK_DUE)?;
        let mut deliveries = self.tx.open_table(WEBHOOK_DELIVERIES)?;
        let mut refs = self.tx.open_table(WEBHOOK_EVENT_REFS)?;
        let mut events = self.tx.open_table(WEBHOOK_EVENTS)?;
        for mut d in old.iter().cloned() {
            if let Some(at) = d.next_attempt_at {
                due.remove((at, d.id.as_str()))?;
            }
            d.status = WebhookStatus::Failed;
            d.next_attempt_at = None;
            d.last_error = Some(
                "given up at webhooks.max_age: the endpoint kept failing (circuit open)".into(),
            );
            release(&mut refs, &mut events, &d.event_id, &d.id)?;
            deliveries.insert(d.id.as_str(), encode(&d)?.as_slice())?;
        }
        Ok(old.len())
    }
}
