//! The webhook outbox: an event's body, stored once, and one delivery per endpoint it goes to.
//! A pending delivery sits in `WEBHOOK_DUE` under its next attempt time, so the dispatcher's work
//! is one range read and a restart finds it all again. An event's body goes with its last
//! pending delivery; the delivery records stay as the endpoint's log.

use std::collections::HashMap;

use super::kv::{ReadableTable, Table};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::emails::Email;
use super::error::Result;
use super::events::EventType;
use super::status::SendType;
use super::tables::*;
use super::webhooks::Webhook;
use super::{Rtx, Wtx, decode, encode, get_json};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WebhookStatus {
    Pending,
    Succeeded,
    Failed,
}

/// One event to one endpoint, and how its attempts went.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDelivery {
    pub id: String,
    pub webhook_id: String,
    pub event_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub status: WebhookStatus,
    pub attempts: u32,
    pub last_status_code: Option<u16>,
    pub last_error: Option<String>,
    pub next_attempt_at: Option<u64>,
    pub created_at: u64,
}

/// A pending delivery that is due, with what an attempt needs.
#[derive(Debug, Clone)]
pub struct DueDelivery {
    /// Its key in the due index, which the outcome names.
    pub due: u64,
    pub delivery: WebhookDelivery,
    pub url: String,
    pub secret: String,
    pub enabled: bool,
    /// The JSON body, the same on every attempt.
    pub body: Vec<u8>,
}

/// What one attempt did.
#[derive(Debug, Clone)]
pub struct AttemptOutcome {
    pub id: String,
    pub due: u64,
    pub succeeded: bool,
    pub status_code: Option<u16>,
    pub error: Option<String>,
    /// When a failed delivery is tried again; `None` gives up (`failed`).
    pub retry_at: Option<u64>,
}

impl Wtx<'_> {
    /// Records an event for every enabled endpoint of `domain` that takes `kind`, in the
    /// transaction of the change it reports. `data` is only built when someone listens.
    pub fn emit(
        &mut self,
        domain: &str,
        kind: EventType,
        data: impl FnOnce() -> Value,
    ) -> Result<()> {
        let hooks = self.subscribers(domain, kind)?;
        if hooks.is_empty() {
            return Ok(());
        }
        let ids: Vec<&str> = hooks.iter().map(|h| h.id.as_str()).collect();
        self.put_event_for(&ids, kind, data())?;
        Ok(())
    }

    /// `emit` for an event about a stored message. Warmup mail never produces events.
    pub(super) fn emit_about(
        &mut self,
        email: &Email,
        kind: EventType,
        data: impl FnOnce() -> Value,
    ) -> Result<()> {
        if email.summary.folder.is_hidden() || email.send_type == Some(SendType::Warmup) {
            return Ok(());
        }
        self.emit(email.domain(), kind, data)
    }

    /// Queues a `webhook.test` event to one endpoint, whatever it subscribes to; returns the
    /// event's id.
    pub fn queue_test_event(&mut self, domain: &str, id: &str) -> Result<String> {
        let hook = self.owned_webhook(domain, id)?;
        let data = serde_json::json!({ "webhookId": hook.id });
        self.put_event_for(&[hook.id.as_str()], EventType::WebhookTest, data)
    }

    fn put_event_for(&mut self, hooks: &[&str], kind: EventType, data: Value) -> Result<String> {
        let now = crate::ids::now_ms();
        let event_id = crate::ids::new_id("msg");
        let body = serde_json::json!({ "type": kind.name(), "timestamp": now, "data": data });
        self.put_event(&event_id, &encode(&body)?)?;
        for hook in hooks {
            self.add_delivery(hook, &event_id, kind.name(), now)?;
        }
        Ok(event_id)
    }

    /// Deletes an endpoint with its delivery log; what was pending for it is dropped.
    pub fn delete_webhook(&mut self, domain: &str, id: &str) -> Result<()> {
        self.take_webhook(domain, id)?;
        self.remove_endpoint_deliveries(id)
    }

    /// Deletes every endpoint of a domain (the domain is being removed).
    pub(super) fn remove_domain_webhooks(&mut self, domain: &str) -> Result<()> {
        let hooks: Vec<Webhook> = super::scan_index(self, WEBHOOKS_BY_DOMAIN, WEBHOOKS, domain)?;
        for hook in hooks {
            self.delete_webhook(domain, &hook.id)?;
        }
        Ok(())
    }

    fn put_event(&mut self, event_id: &str, body: &[u8]) -> Result<()> {
        self.tx.open_table(WEBHOOK_EVENTS)?.insert(event_id, body)?;
        Ok(())
    }

    /// A pending delivery of `event_id` to `webhook_id`, due now.
    pub(super) fn add_delivery(
        &mut self,
        webhook_id: &str,
        event_id: &str,
        kind: &str,
        now: u64,
    ) -> Result<String> {
        let id = crate::ids::new_id("whd");
        let delivery = WebhookDelivery {
            id: id.clone(),
            webhook_id: webhook_id.to_owned(),
            event_id: event_id.to_owned(),
            kind: kind.to_owned(),
            status: WebhookStatus::Pending,
            attempts: 0,
            last_status_code: None,
            last_error: None,
            next_attempt_at: Some(now),
            created_at: now,
        };
        self.tx
            .open_table(WEBHOOK_DELIVERIES)?
            .insert(id.as_str(), encode(&delivery)?.as_slice())?;
        self.tx
            .open_table(WEBHOOK_DELIVERIES_BY_ENDPOINT)?
            .insert((webhook_id, id.as_str()), ())?;
        self.tx.open_table(WEBHOOK_DUE)?.insert((now, id.as_str()), webhook_id)?;
        self.tx.open_table(WEBHOOK_EVENT_REFS)?.insert((event_id, id.as_str()), ())?;
        self.emitted = true;
        Ok(id)
    }

    /// Commits a batch of attempts. An outcome whose due entry is gone (the endpoint was deleted
    /// meanwhile) is dropped.
    pub fn finish_webhook_attempts(&mut self, outcomes: &[AttemptOutcome]) -> Result<()> {
        let now = crate::ids::now_ms();
        // Each table is opened once for the whole batch: a batch holds thousands of outcomes.
        let mut due = self.tx.open_table(WEBHOOK_DUE)?;
        let mut deliveries = self.tx.open_table(WEBHOOK_DELIVERIES)?;
        let mut refs = self.tx.open_table(WEBHOOK_EVENT_REFS)?;
        let mut events = self.tx.open_table(WEBHOOK_EVENTS)?;
        for o in outcomes {
            if due.remove((o.due, o.id.as_str()))?.is_none() {
                continue;
            }
            let Some(stored) = deliveries.get(o.id.as_str())? else { continue };
            let mut d: WebhookDelivery = decode(stored.value())?;
            drop(stored);
            d.attempts += 1;
            d.last_status_code = o.status_code;
            d.last_error.clone_from(&o.error);
            d.next_attempt_at = if o.succeeded { None } else { o.retry_at };
            d.status = match (o.succeeded, o.retry_at) {
                (true, _) => WebhookStatus::Succeeded,
                (false, Some(_)) => WebhookStatus::Pending,
                (false, None) => WebhookStatus::Failed,
            };
            match d.next_attempt_at {
                Some(at) => {
                    due.insert((at.max(now), d.id.as_str()), d.webhook_id.as_str())?;
                    d.next_attempt_at = Some(at.max(now));
                }
                None => release(&mut refs, &mut events, &d.event_id, &d.id)?,
            }
            deliveries.insert(d.id.as_str(), encode(&d)?.as_slice())?;
        }
        Ok(())
    }

    /// Removes up to `limit` finished deliveries made before `before` from the endpoints' logs;
    /// returns how many. Pending ones stay whatever their age.
    pub fn prune_webhook_log(&mut self, before: u64, limit: usize) -> Result<usize> {
        let hooks: Vec<String> = {
            let table = self.tx.open_table(WEBHOOKS)?;
            table.iter()?.map(|e| e.map(|(k, _)| k.value().to_owned())).collect::<Result<_, _>>()?
        };
        let mut old = Vec::new();
        for hook in &hooks {
            let index = self.tx.open_table(WEBHOOK_DELIVERIES_BY_ENDPOINT)?;
            let table = self.tx.open_table(WEBHOOK_DELIVERIES)?;
            for entry in index.range((hook.as_str(), "")..)? {
                let (key, _) = entry?;
                let (h, id) = key.value();
                if h != hook || old.len() >= limit {
                    break;
                }
                let Some(value) = table.get(id)? else { continue };
                let d: WebhookDelivery = decode(value.value())?;
                if d.created_at >= before {
                    break;
                }
                if d.status != WebhookStatus::Pending {
                    old.push((hook.clone(), id.to_owned()));
                }
            }
        }
        for (hook, id) in &old {
            self.tx
                .open_table(WEBHOOK_DELIVERIES_BY_ENDPOINT)?
                .remove((hook.as_str(), id.as_str()))?;
            self.tx.open_table(WEBHOOK_DELIVERIES)?.remove(id.as_str())?;
        }
        Ok(old.len())
    }

    /// Drops a delivery's hold on its event; the body goes with the last one.
    fn release_event(&mut self, event_id: &str, delivery_id: &str) -> Result<()> {
        let mut refs = self.tx.open_table(WEBHOOK_EVENT_REFS)?;
        let mut events = self.tx.open_table(WEBHOOK_EVENTS)?;
        release(&mut refs, &mut events, event_id, delivery_id)
    }

    /// Removes an endpoint's deliveries, pending or done (the endpoint is being deleted).
    pub(super) fn remove_endpoint_deliveries(&mut self, webhook_id: &str) -> Result<()> {
        let ids: Vec<String> = {
            let index = self.tx.open_table(WEBHOOK_DELIVERIES_BY_ENDPOINT)?;
            let mut ids = Vec::new();
            for entry in index.range((webhook_id, "")..)? {
                let (key, _) = entry?;
                if key.value().0 != webhook_id {
                    break;
                }
                ids.push(key.value().1.to_owned());
            }
            ids
        };
        for id in &ids {
            self.tx
                .open_table(WEBHOOK_DELIVERIES_BY_ENDPOINT)?
                .remove((webhook_id, id.as_str()))?;
            let removed = {
                let mut table = self.tx.open_table(WEBHOOK_DELIVERIES)?;
                let found = table.remove(id.as_str())?;
                found.map(|v| decode::<WebhookDelivery>(v.value())).transpose()?
            };
            let Some(d) = removed else { continue };
            if let (WebhookStatus::Pending, Some(at)) = (d.status, d.next_attempt_at) {
                self.tx.open_table(WEBHOOK_DUE)?.remove((at, id.as_str()))?;
                self.release_event(&d.event_id, id)?;
            }
        }
        Ok(())
    }
}

impl Rtx {
    /// What attempts at the given due entries need; entries gone meanwhile are left out.
    pub fn load_due_webhooks(&self, entries: &[(u64, String)]) -> Result<Vec<DueDelivery>> {
        let deliveries = self.tx.open_table(WEBHOOK_DELIVERIES)?;
        let events = self.tx.open_table(WEBHOOK_EVENTS)?;
        let due = self.tx.open_table(WEBHOOK_DUE)?;
        let mut endpoints: HashMap<String, Option<Webhook>> = HashMap::new();
        let mut out = Vec::with_capacity(entries.len());
        for (at, id) in entries {
            if due.get((*at, id.as_str()))?.is_none() {
                continue;
            }
            let Some(d) = deliveries.get(id.as_str())? else { continue };
            let delivery: WebhookDelivery = decode(d.value())?;
            if !endpoints.contains_key(&delivery.webhook_id) {
                let hook = get_json(self, WEBHOOKS, delivery.webhook_id.as_str())?;
                endpoints.insert(delivery.webhook_id.clone(), hook);
            }
            let Some(Some(hook)) = endpoints.get(&delivery.webhook_id) else { continue };
            let Some(body) = events.get(delivery.event_id.as_str())? else { continue };
            out.push(DueDelivery {
                due: *at,
                url: hook.url.clone(),
                secret: hook.secret.clone(),
                enabled: hook.enabled,
                body: body.value().to_vec(),
                delivery,
            });
        }
        Ok(out)
    }

    /// An endpoint's deliveries, newest first.
    pub fn webhook_deliveries(
        &self,
        webhook_id: &str,
        limit: usize,
    ) -> Result<Vec<WebhookDelivery>> {
        let index = self.tx.open_table(WEBHOOK_DELIVERIES_BY_ENDPOINT)?;
        let table = self.tx.open_table(WEBHOOK_DELIVERIES)?;
        let mut out = Vec::new();
        let range = index.range((webhook_id, "")..(webhook_id, "\u{10FFFF}"))?;
        for entry in range.rev().take(limit) {
            let (key, _) = entry?;
            if let Some(v) = table.get(key.value().1)? {
                out.push(decode(v.value())?);
            }
        }
        Ok(out)
    }
}

/// Drops the delivery's claim on its event; the event's body goes with the last claim.
pub(super) fn release(
    refs: &mut Table<(&str, &str), ()>,
    events: &mut Table<&str, &[u8]>,
    event_id: &str,
    delivery_id: &str,
) -> Result<()> {
    refs.remove((event_id, delivery_id))?;
    let others = refs.range((event_id, "")..)?.next().transpose()?;
    if others.is_none_or(|(k, _)| k.value().0 != event_id) {
        events.remove(event_id)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Store;
    use super::*;

    fn hook(id: &str, events: &[&str], enabled: bool) -> Webhook {
        Webhook {
            id: id.into(),
            domain: "x.test".into(),
            url: "https://example.com/".into(),
            events: events.iter().map(|e| e.to_string()).collect(),
            description: None,
            enabled,
            secret: "whsec_AAAA".into(),
            created_at: 0,
        }
    }

    fn count(store: &Store, table: TableDefinition<&str, &[u8]>) -> usize {
        store
            .read_blocking(|r| -> Result<_> { Ok(r.tx.open_table(table)?.iter()?.count()) })
            .expect("read") // ok: test
    }

    use super::super::kv::TableDefinition;

    #[test]
    fn events_fan_out_to_subscribers_and_their_bodies_go_with_the_last_delivery() {
        let dir = std::env::temp_dir().join(format!("edgemail-outbox-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).expect("open"); // ok: test
        store
            .write_blocking(|w| -> Result<_> {
                w.create_webhook(&hook("wh_a", &["email.delivered"], true))?;
                w.create_webhook(&hook("wh_b", &["email.delivered", "email.opened"], true))?;
                w.create_webhook(&hook("wh_c", &["email.delivered"], false))?;
                w.emit("x.test", EventType::EmailDelivered, || serde_json::json!({"n": 1}))?;
                w.emit("x.test", EventType::EmailBounced, || serde_json::json!({"n": 2}))?;
                w.emit("y.test", EventType::EmailDelivered, || serde_json::json!({"n": 3}))?;
                Ok(())
            })
            .expect("emit"); // ok: test
        assert_eq!((count(&store, WEBHOOK_EVENTS), count(&store, WEBHOOK_DELIVERIES)), (1, 2));
        let none = std::collections::HashSet::new();
        let due =
            store.read_blocking(move |r| r.due_webhooks(u64::MAX, 10, &none)).expect("due").due; // ok: test
        assert_eq!(due.len(), 2);
        let jobs = store.read_blocking(|r| r.load_due_webhooks(&[(due[0].0, due[0].1.clone())]));
        let body: serde_json::Value =
            serde_json::from_slice(&jobs.expect("load")[0].body).expect("json"); // ok: test
        assert_eq!(
            (&body["type"], &body["data"]),
            (&"email.delivered".into(), &serde_json::json!({"n": 1}))
        );
        let outcome = |(due, id, _): &(u64, String, String), succeeded| AttemptOutcome {
            id: id.clone(),
            due: *due,
            succeeded,
            status_code: Some(if succeeded { 200 } else { 500 }),
            error: None,
            retry_at: None,
        };
        let (first, second) = (outcome(&due[0], true), outcome(&due[1], false));
        store.write_blocking(move |w| w.finish_webhook_attempts(&[first])).expect("finish"); // ok: test
        assert_eq!(count(&store, WEBHOOK_EVENTS), 1, "the other delivery still needs the body");
        store.write_blocking(move |w| w.finish_webhook_attempts(&[second])).expect("finish"); // ok: test
        assert_eq!(count(&store, WEBHOOK_EVENTS), 0);
        let log = store.read_blocking(|r| r.webhook_deliveries("wh_b", 10)).expect("log"); // ok: test
        assert_eq!((log[0].status, log[0].attempts), (WebhookStatus::Failed, 1));
        let pruned = store.write_blocking(|w| w.prune_webhook_log(u64::MAX, 10)).expect("prune"); // ok: test
        assert_eq!((pruned, count(&store, WEBHOOK_DELIVERIES)), (2, 0));
        store.write_blocking(|w| w.delete_webhook("x.test", "wh_a")).expect("delete"); // ok: test
        let left = store.read_blocking(|r| r.webhooks("x.test")).expect("list"); // ok: test
        assert_eq!(left.len(), 2);
        store.close();
        drop(store);
        std::fs::remove_dir_all(&dir).ok();
    }
}
