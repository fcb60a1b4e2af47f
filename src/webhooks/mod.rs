//! The webhook dispatcher. Events are recorded by the store in the transactions of the changes
//! they report (see `store::outbox`); this engine posts them. One scheduler task reads what is
//! due, starts an attempt per delivery within the overall and per-endpoint limits, and sleeps
//! until the next due time or a wake-up (an event written, attempts committed). Attempts run as
//! their own tasks and send their outcomes to one committer, which writes them in batches; until
//! that commit a delivery stays due, so a crash re-posts at most what was in flight.

mod circuit;
pub mod client;
pub mod sign;
pub mod target;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::config::Webhooks;
use crate::dns::Dns;
use crate::ids::now_ms;
use crate::shutdown::Shutdown;
use crate::store::{AttemptOutcome, DueDelivery, Store, Topic};
use crate::wake::Wake;
use circuit::Circuits;
use client::Client;

/// An endpoint has this long to answer.
pub const TIMEOUT: Duration = Duration::from_secs(10);
/// Retries wait at most this long.
const MAX_INTERVAL: Duration = Duration::from_secs(10 * 3600);
/// Due entries read per scan beyond those in flight: enough to find work for other endpoints
/// behind a saturated one.
const LOOK_AHEAD: usize = 1024;
/// The pause between scans, after one that started work and after one that found nothing it
/// could start. Wake-ups arriving meanwhile fold into one scan: a busy server writes events
/// faster than scanning each would be worth, and a dead endpoint's backlog (read again by every
/// scan) must not cost the rest of the server its CPU.
const PAUSE_BUSY: Duration = Duration::from_millis(2);
const PAUSE_IDLE: Duration = Duration::from_millis(50);

/// What the dispatcher works with.
pub struct Deps {
    pub store: Arc<Store>,
    pub dns: Arc<Dns>,
    pub config: Webhooks,
    /// Woken when an event is written (the store's handle).
    pub wake: Wake,
    /// Events are posted by the leading node only.
    pub node: Arc<crate::cluster::Node>,
}

struct Engine {
    deps: Arc<Deps>,
    client: Client,
    in_flight: Mutex<HashSet<String>>,
    slots: Arc<Semaphore>,
    endpoints: Mutex<HashMap<String, Arc<Semaphore>>>,
    circuits: Circuits,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

impl Engine {
    fn endpoint_slot(&self, webhook: &str) -> Option<OwnedSemaphorePermit> {
        let semaphore = locked(&self.endpoints)
            .entry(webhook.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.deps.config.per_endpoint)))
            .clone();
        semaphore.try_acquire_owned().ok()
    }
}

/// Runs the dispatcher until shutdown, then lets attempts in flight commit (for up to the
/// endpoints' time limit).
pub async fn run(deps: Arc<Deps>, mut shutdown: Shutdown) {
    let engine = Arc::new(Engine {
        client: Client::new(deps.dns.clone(), deps.config.allow_private),
        in_flight: Mutex::new(HashSet::new()),
        slots: Arc::new(Semaphore::new(deps.config.concurrency)),
        endpoints: Mutex::new(HashMap::new()),
        circuits: Circuits::new(deps.config.retry_initial),
        deps,
    });
    let (outcomes, received) = mpsc::unbounded_channel();
    let committer = tokio::spawn(commit(engine.clone(), received));
    let pruner = tokio::spawn(prune(engine.deps.clone()));
    // Events recorded on other nodes are told here on a shared store.
    let mut told = engine.deps.store.changes();
    loop {
        if !engine.deps.node.leads() {
            tokio::select! {
                _ = tokio::time::sleep(engine.deps.node.poll(PAUSE_IDLE * 4)) => continue,
                _ = shutdown.wait() => break,
            }
        }
        let (next, started) = scan(&engine, &outcomes).await;
        tokio::time::sleep(if started { PAUSE_BUSY } else { PAUSE_IDLE }).await;
        let now = now_ms();
        let wait = match next {
            Some(at) if at > now => Duration::from_millis(at - now).min(Duration::from_secs(60)),
            // Due work left behind busy slots: a commit wakes us when one frees.
            _ => Duration::from_secs(1),
        };
        let wait = engine.deps.node.poll(wait);
        tokio::select! {
            _ = engine.deps.wake.notified() => {}
            _ = told.wait(&[Topic::Webhooks]) => {}
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.wait() => break,
        }
    }
    pruner.abort();
    drop(outcomes);
    let _ = tokio::time::timeout(TIMEOUT + Duration::from_secs(2), committer).await;
}

/// Keeps the delivery logs to `max_age`: finished deliveries older than that go, a bounded
/// number per write so a large backlog never makes one long transaction.
async fn prune(deps: Arc<Deps>) {
    let mut every = tokio::time::interval(Duration::from_secs(600));
    loop {
        every.tick().await;
        loop {
            let before = now_ms().saturating_sub(deps.config.max_age.as_millis() as u64);
            match deps.store.write(move |w| w.prune_webhook_log(before, 5_000)).await {
                Ok(n) if n >= 5_000 => continue,
                Ok(_) => break,
                Err(e) => {
                    tracing::warn!(error = %e, "pruning the webhook delivery logs failed");
                    break;
                }
            }
        }
    }
}

/// Starts what is due and has room; returns when the scan's first entry not started is due, and
/// whether it started anything.
async fn scan(
    engine: &Arc<Engine>,
    outcomes: &mpsc::UnboundedSender<AttemptOutcome>,
) -> (Option<u64>, bool) {
    let now = now_ms();
    if engine.slots.available_permits() == 0 {
        // Every slot is taken: reading the outbox again would find nothing to start. A commit
        // frees slots and wakes the loop; this counts as busy so that the pause stays short.
        return (None, true);
    }
    let look = locked(&engine.in_flight).len() + LOOK_AHEAD;
    let open = engine.circuits.open();
    let read = engine.deps.store.read(move |r| r.due_webhooks(now, look, &open)).await;
    let found = match read {
        Ok(found) => found,
        Err(e) => {
            tracing::error!(error = %e, "webhook outbox read failed");
            return (Some(now + 1000), false);
        }
    };
    let mut next = earliest(found.next, engine.circuits.next_probe());
    let mut chosen = Vec::new();
    let mut permits = HashMap::new();
    let probing = probes_due(engine, found.held, now);
    let probes: HashMap<String, String> =
        probing.iter().map(|(_, id, hook)| (id.clone(), hook.clone())).collect();
    for (at, id, webhook) in probing.into_iter().chain(found.due) {
        if locked(&engine.in_flight).contains(&id) {
            continue;
        }
        let Ok(slot) = engine.slots.clone().try_acquire_owned() else {
            next = Some(at);
            break;
        };
        let Some(endpoint) = engine.endpoint_slot(&webhook) else {
            next = Some(next.map_or(at, |n| n.min(at)));
            continue;
        };
        locked(&engine.in_flight).insert(id.clone());
        permits.insert(id.clone(), (slot, endpoint, webhook));
        chosen.push((at, id));
    }
    for (id, webhook) in &probes {
        if !permits.contains_key(id) {
            engine.circuits.release_probe(webhook);
        }
    }
    if chosen.is_empty() {
        return (next, false);
    }
    let keys = chosen.clone();
    let jobs = match engine.deps.store.read(move |r| r.load_due_webhooks(&keys)).await {
        Ok(jobs) => jobs,
        Err(e) => {
            tracing::error!(error = %e, "webhook outbox read failed");
            Vec::new()
        }
    };
    for job in jobs {
        if let Some((slot, endpoint, _)) = permits.remove(&job.delivery.id) {
            let probe = probes.contains_key(&job.delivery.id);
            tokio::spawn(attempt(engine.clone(), job, (slot, endpoint), probe, outcomes.clone()));
        }
    }
    // Chosen but gone meanwhile (the endpoint deleted, the event given up): nothing to do.
    let mut in_flight = locked(&engine.in_flight);
    for (id, (_, _, webhook)) in &permits {
        in_flight.remove(id);
        if probes.contains_key(id) {
            engine.circuits.release_probe(webhook);
        }
    }
    (next, true)
}

fn earliest(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// The probes of open circuits whose time has come, out of the first held entry of each. At
/// each probe, what the endpoint held past `webhooks.max_age` is given up.
fn probes_due(
    engine: &Arc<Engine>,
    held: Vec<(u64, String, String)>,
    now: u64,
) -> Vec<(u64, String, String)> {
    let mut probes = Vec::new();
    for entry in held {
        if !engine.circuits.take_probe(&entry.2, now) {
            continue;
        }
        tokio::spawn(expire(engine.deps.clone(), entry.2.clone()));
        probes.push(entry);
    }
    probes
}

/// Gives up the events an open circuit held past `webhooks.max_age`.
async fn expire(deps: Arc<Deps>, webhook: String) {
    let before = now_ms().saturating_sub(deps.config.max_age.as_millis() as u64);
    loop {
        let hook = webhook.clone();
        match deps.store.write(move |w| w.expire_webhook_backlog(&hook, before, 5_000)).await {
            Ok(n) if n >= 5_000 => continue,
            Ok(_) => break,
            Err(e) => {
                tracing::warn!(error = %e, "giving up a dead endpoint's old events failed");
                break;
            }
        }
    }
}

async fn attempt(
    engine: Arc<Engine>,
    mut job: DueDelivery,
    _held: (OwnedSemaphorePermit, OwnedSemaphorePermit),
    probe: bool,
    outcomes: mpsc::UnboundedSender<AttemptOutcome>,
) {
    let answer = if job.enabled {
        let body = Bytes::from(std::mem::take(&mut job.body));
        let answer = post(&engine.client, &job, body).await;
        let failed = answer.as_ref().map_or(true, |code| *code >= 500);
        engine.circuits.record(&job.delivery.webhook_id, failed, probe, now_ms());
        answer
    } else {
        if probe {
            engine.circuits.release_probe(&job.delivery.webhook_id);
        }
        Err("the endpoint is disabled".into())
    };
    let attempts = job.delivery.attempts + 1;
    let now = now_ms();
    let config = &engine.deps.config;
    let outcome = match answer {
        Ok(code) if (200..300).contains(&code) => AttemptOutcome {
            id: job.delivery.id,
            due: job.due,
            succeeded: true,
            status_code: Some(code),
            error: None,
            retry_at: None,
        },
        failed => {
            let (status_code, error) = match failed {
                Ok(code) => (Some(code), format!("the endpoint answered HTTP {code}")),
                Err(e) => (None, e),
            };
            let retry_at = job
                .enabled
                .then(|| retry_at(config, job.delivery.created_at, attempts, now))
                .flatten();
            AttemptOutcome {
                id: job.delivery.id,
                due: job.due,
                succeeded: false,
                status_code,
                error: Some(error),
                retry_at,
            }
        }
    };
    crate::metrics::webhook_delivery(match (outcome.succeeded, outcome.retry_at) {
        (true, _) => "succeeded",
        (false, Some(_)) => "retrying",
        (false, None) => "failed",
    });
    let _ = outcomes.send(outcome);
}

async fn post(client: &Client, job: &DueDelivery, body: Bytes) -> client::Answer {
    let target = target::parse(&job.url)?;
    let timestamp = now_ms() / 1000;
    let signature = sign::signature(&job.secret, &job.delivery.event_id, timestamp, &body)
        .ok_or("the endpoint's secret is not valid base64")?;
    let headers = [
        ("webhook-id", job.delivery.event_id.clone()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", signature),
    ];
    client.post(&target, &headers, body, TIMEOUT).await
}

/// When a delivery that failed its `attempts`-th attempt is tried again: `retry_initial`,
/// doubling each time up to `MAX_INTERVAL`; `None` once that would pass `max_age` after the
/// event.
pub fn retry_at(config: &Webhooks, created_at: u64, attempts: u32, now: u64) -> Option<u64> {
    let initial = config.retry_initial.as_millis() as u64;
    let factor = 1u64.checked_shl(attempts.saturating_sub(1).min(40)).unwrap_or(u64::MAX);
    let wait = initial.saturating_mul(factor).min(MAX_INTERVAL.as_millis() as u64).max(initial);
    let at = now.saturating_add(wait);
    (at <= created_at.saturating_add(config.max_age.as_millis() as u64)).then_some(at)
}

/// Writes outcomes in batches: whatever arrived while the previous write was committing.
async fn commit(engine: Arc<Engine>, mut received: mpsc::UnboundedReceiver<AttemptOutcome>) {
    while let Some(first) = received.recv().await {
        let mut batch = vec![first];
        while batch.len() < 2048 {
            match received.try_recv() {
                Ok(o) => batch.push(o),
                Err(_) => break,
            }
        }
        let ids: Vec<String> = batch.iter().map(|o| o.id.clone()).collect();
        if let Err(e) = engine.deps.store.write(move |w| w.finish_webhook_attempts(&batch)).await {
            tracing::error!(error = %e, "webhook outcomes not committed; retrying later");
            // Left due and marked in flight a little, so a storage fault is not a hot loop.
            tokio::time::sleep(Duration::from_secs(5)).await;
        }
        let mut in_flight = locked(&engine.in_flight);
        for id in &ids {
            in_flight.remove(id);
        }
        drop(in_flight);
        engine.deps.wake.wake();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_double_until_the_maximum_age() {
        let config = Webhooks {
            retry_initial: Duration::from_secs(5),
            max_age: Duration::from_secs(60),
            allow_private: false,
            concurrency: 1,
            per_endpoint: 1,
        };
        assert_eq!(retry_at(&config, 0, 1, 0), Some(5_000));
        assert_eq!(retry_at(&config, 0, 2, 5_000), Some(15_000));
        assert_eq!(retry_at(&config, 0, 3, 15_000), Some(35_000));
        assert_eq!(retry_at(&config, 0, 4, 35_000), None);
    }
}
