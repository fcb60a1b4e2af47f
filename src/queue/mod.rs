//! The delivery queue. One scheduler task owns the "what is due" question: it reads the due-time
//! index, starts an attempt per due message (bounded by `delivery.concurrency`), and sleeps until
//! the next due time or a wake-up (a new message, a finished attempt). An attempt delivers the
//! message's pending recipients, then commits every outcome in one write; until that commit the
//! queue entry stays, so a crash redelivers at most the messages that were in flight.

mod claim;
pub mod client;
pub mod compose;
mod error;
mod load;
pub mod local;
mod notice;
mod pacing;
mod remote;
pub mod retry;
mod shaping;
mod smtputf8;
mod sts;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::config::{Config, Delivery};
use crate::dns::Dns;
use crate::ids::now_ms;
use crate::mail::sign::Signers;
use crate::shutdown::Shutdown;
use crate::store::{Email, Outcome, Store, Summary, Topic};
use crate::tracking::Tokens;
use crate::wake::Wake;
use claim::{LEASE_LOST, claim};
use client::Pool;
pub use error::{Error, Result};
use load::{Load, Loaded, load};

/// What the delivery engine works with: the narrow handles, not the whole server.
pub struct Deps {
    pub store: Arc<Store>,
    pub queue: Arc<Queue>,
    pub dns: Arc<Dns>,
    pub tokens: Arc<Tokens>,
    pub signers: Arc<Signers>,
    pub delivery: Delivery,
    /// The base of tracking and unsubscribe links.
    pub public_url: String,
    /// How long attempts in flight may take to commit at shutdown.
    pub grace: Duration,
    /// On a shared store, a message is delivered by the node that claimed it.
    pub node: Arc<crate::cluster::Node>,
    /// Wakes the sequence engine when a follow-up that waited for a delivery is due.
    pub sequences: crate::wake::Wake,
}

impl Deps {
    fn composer(&self) -> compose::Composer<'_> {
        compose::Composer {
            public_url: &self.public_url,
            tokens: &self.tokens,
            signers: &self.signers,
        }
    }
}

type Engine = Arc<Deps>;

/// How often the queue looks again at a store that refuses writes.
const STORE_RECHECK: Duration = Duration::from_secs(1);

pub struct Queue {
    wake: Wake,
    in_flight: Mutex<HashSet<String>>,
    /// Due messages another node has claimed, with when to look at them again.
    elsewhere: Mutex<HashMap<String, std::time::Instant>>,
    /// Whether this node was the only live one when last looked at (`claim::others`).
    peers: claim::Peers,
    slots: Arc<Semaphore>,
    per_domain: Mutex<HashMap<String, Arc<Semaphore>>>,
    per_domain_limit: usize,
    pool: Pool,
    /// The provider groups of mail exchangers, with their limits and pauses.
    shaper: shaping::Shaper,
    /// Recipient domains' MTA-STS policies (RFC 8461).
    sts: crate::mta_sts::Sts,
    /// The receiving side that takes mail for hosted domains (see `local`).
    local: OnceLock<Arc<dyn local::Local>>,
    /// Our host name, as we greet and as our delivery reports name us.
    host: String,
}

impl Queue {
    pub fn new(config: &Config, dns: Arc<Dns>, wake: Wake) -> Queue {
        let d = &config.delivery;
        let credentials = match (&d.relay_username, &d.relay_password) {
            (Some(user), Some(pass)) => {
                Some(mail_send::Credentials::new(user.clone(), pass.clone()))
            }
            _ => None,
        };
        let helo = config.smtp.hostname.clone().unwrap_or_else(|| "localhost".into());
        let policy = match &d.relay {
            Some(_) => client::TlsPolicy::Verified { ca: d.relay_ca.clone() },
            None => client::TlsPolicy::Opportunistic,
        };
        let sts = crate::mta_sts::Sts::new(&config.mta_sts, dns, d.allow_private);
        let verifier = sts.verifier();
        Queue {
            wake,
            in_flight: Mutex::new(HashSet::new()),
            elsewhere: Mutex::new(HashMap::new()),
            peers: claim::Peers::default(),
            slots: Arc::new(Semaphore::new(d.concurrency)),
            per_domain: Mutex::new(HashMap::new()),
            per_domain_limit: d.per_domain,
            pool: Pool::new(
                helo.clone(),
                d.connect_timeout,
                d.command_timeout,
                credentials,
                policy,
                verifier,
            ),
            shaper: shaping::Shaper::new(config.shaping.clone()),
            sts,
            local: OnceLock::new(),
            host: helo,
        }
    }

    /// Mail for hosted domains goes to `receiver` from now on, rather than over SMTP.
    pub fn register_local(&self, receiver: Arc<dyn local::Local>) {
        let _ = self.local.set(receiver);
    }

    /// Tells the scheduler to look at the queue now.
    pub fn wake(&self) {
        self.wake.wake();
    }

    fn in_flight(&self) -> std::sync::MutexGuard<'_, HashSet<String>> {
        match self.in_flight.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    async fn domain_slot(&self, key: &str) -> Option<OwnedSemaphorePermit> {
        let semaphore = {
            let mut map = self.per_domain.lock().ok()?;
            map.entry(key.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_domain_limit)))
                .clone()
        };
        semaphore.acquire_owned().await.ok()
    }
}

/// Runs the scheduler until shutdown, then waits (up to the HTTP grace period) for attempts in
/// flight to commit.
pub async fn run(app: Engine, mut shutdown: Shutdown) {
    let queue = &app.queue;
    // A node that left (or joined) is told here on a shared store: what it held may be ours.
    let mut told = app.store.changes();
    loop {
        if !app.store.writable() {
            // An attempt could not commit its outcome: a delivery made now would be made again
            // after the disk recovers. Wait for it instead.
            tokio::select! {
                _ = tokio::time::sleep(STORE_RECHECK) => continue,
                _ = shutdown.wait() => break,
            }
        }
        let free = queue.slots.available_permits();
        if free == 0 {
            // Every slot is busy: a scan could start nothing, and under a send burst it would
            // run once per wake-up over the whole in-flight head. A finishing attempt frees its
            // slot and wakes us; the timer covers an attempt task that ended without doing so.
            tokio::select! {
                _ = queue.wake.notified() => continue,
                _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                _ = shutdown.wait() => break,
            }
        }
        let now = now_ms();
        let next_due = scan(&app, now).await;
        let wait = next_due.map_or(Duration::from_secs(60), |due| {
            Duration::from_millis(due.saturating_sub(now)).min(Duration::from_secs(60))
        });
        let wait = app.node.poll(wait);
        tokio::select! {
            _ = queue.wake.notified() => {}
            _ = told.wait(&[Topic::Nodes]) => queue.peers_changed(),
            _ = tokio::time::sleep(wait) => {}
            _ = shutdown.wait() => break,
        }
    }
    let deadline = tokio::time::Instant::now() + app.grace;
    while !queue.in_flight().is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Looks at the queue's head and starts an attempt on each entry due at `now` that no attempt
/// holds, while slots are free; answers when the first entry not yet due is.
async fn scan(app: &Engine, now: u64) -> Option<u64> {
    let queue = &app.queue;
    let free = queue.slots.available_permits();
    let skipped = queue.claimed_elsewhere();
    // The head holds the entries in flight (they stay queued until final) and those another
    // node claimed; past them, no more entries than there are free slots can start.
    let in_flight = queue.in_flight().len();
    let look = in_flight + skipped.len() + free.min(256);
    let (head, spooled) = match claim::spooling(app) {
        true => claim::spooled_head(app, in_flight + free.min(256), look).await,
        false => (app.store.read(move |r| r.due(u64::MAX, look)).await, HashSet::new()),
    };
    let head = head.unwrap_or_else(|e| {
        tracing::error!(error = %e, "queue read failed");
        Vec::new()
    });
    tracing::debug!(entries = head.len(), in_flight = queue.in_flight().len(), "queue scan");
    let next_due = head.iter().find(|(due, _)| *due > now).map(|(due, _)| *due);
    let startable: Vec<(u64, String)> = {
        let in_flight = queue.in_flight();
        let new = |(_, id): &&(u64, String)| !in_flight.contains(id) && !skipped.contains(id);
        head.iter().filter(|(due, _)| *due <= now).filter(new).take(free).cloned().collect()
    };
    // What this node's spool holds is its own; the rest came from the whole queue's head.
    let wide: Vec<(u64, String)> =
        startable.iter().filter(|(_, id)| !spooled.contains(id)).cloned().collect();
    let others = claim::others(app, &wide).await.unwrap_or_else(|e| {
        // Each attempt checks its claim anyway: the cost of starting them is a lost write each.
        tracing::warn!(error = %e, "claims read failed");
        HashSet::new()
    });
    for (due, id) in startable {
        if others.contains(&id) {
            continue;
        }
        let Ok(permit) = queue.slots.clone().try_acquire_owned() else {
            break; // at capacity: a finishing attempt wakes us
        };
        queue.in_flight().insert(id.clone());
        tokio::spawn(attempt(app.clone(), due, id, permit));
    }
    next_due
}

async fn attempt(app: Engine, due: u64, id: String, slot: OwnedSemaphorePermit) {
    if let Err(e) = attempt_inner(&app, due, &id).await {
        tracing::error!(error = %e, email = %id, "delivery attempt failed; retrying shortly");
        // Keep it marked in flight a little, so a persistent storage fault is not a hot loop.
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
    app.queue.in_flight().remove(&id);
    // The slot is free before the wake-up: `run` waits while no slot is, and a wake-up it saw
    // with this slot still held would be spent.
    drop(slot);
    app.queue.wake();
}

async fn attempt_inner(app: &Deps, due: u64, id: &str) -> Result<()> {
    let mut loaded = load(app, due, id).await?;
    if matches!(loaded, Load::Unclaimed) {
        // Another node's message whose node stopped, or ours after a lapse: claim it in a
        // write (which loses to a live holder), then load it again under the claim.
        if !claim(app, due, id).await? {
            return Ok(());
        }
        loaded = load(app, due, id).await?;
    }
    let Loaded { email, domain, submitted, parts, hosted } = match loaded {
        Load::Ready(loaded) => *loaded,
        // Gone (deleted, or its domain removed): the commit below drops the queue entry.
        Load::Orphan => return finish(app, (due, id), Vec::new(), 0, None, None).await,
        Load::Gone | Load::Unclaimed => return Ok(()),
    };
    tracing::debug!(email = id, due, "delivery attempt");
    let pending: Vec<String> = email
        .deliveries
        .iter()
        .filter(|d| !d.status.is_final())
        .map(|d| d.recipient.clone())
        .collect();
    if pending.is_empty() {
        return finish(app, (due, id), Vec::new(), 0, None, None).await;
    }
    if pacing::holds(app, &email, due).await? {
        return Ok(());
    }
    let composer = app.composer();
    let was_submitted = submitted.is_some();
    let message = match submitted {
        Some(raw) => compose::sign_pooled(&composer, &email, &domain, raw).await,
        None => compose::render_pooled(&composer, &email, &domain, &parts).await,
    }
    .map_err(|source| Error::Compose { email: id.to_owned(), source })?;
    let (pending, handed) = match app.queue.local.get() {
        Some(receiver) => {
            let bounce = |r: &str| remote::bounce_address(app, &email, r, &domain.name);
            local::hand_over(&**receiver, &hosted, pending, &domain.name, &bounce, &message).await
        }
        None => (pending, local::Handover { outcomes: Vec::new(), commit: None }),
    };
    let mut outcomes = handed.outcomes;
    let remote = remote::deliver_all(app, &email, &domain.name, &pending, &message).await;
    outcomes.extend(remote.outcomes);
    let now = now_ms();
    let started = email.scheduled_at.unwrap_or(email.summary.created_at);
    let max_age = app.delivery.max_age.as_millis() as u64;
    if now.saturating_sub(started) >= max_age {
        for (_, outcome) in outcomes.iter_mut() {
            if let Outcome::Deferred(last) = outcome {
                *outcome =
                    Outcome::Failed(format!("gave up after {}s; last: {last}", max_age / 1000));
            }
        }
    }
    // Failures of a message a mail client submitted are reported to its sender's inbox.
    // A forward's failures belong to its original sender, whom its SRS address reaches.
    let reported = was_submitted && email.envelope_from.is_none();
    let report = notice::prepare(app, &email, reported, &message, &outcomes);
    let commit = match (handed.commit, report) {
        (Some(copies), Some(report)) => {
            let both: local::Commit =
                Arc::new(move |w: &mut crate::store::Wtx<'_>| -> crate::error::Result<()> {
                    copies(w)?;
                    report(w)
                });
            Some(both)
        }
        (copies, report) => copies.or(report),
    };
    let mut retry_at = now + retry_delay(app, &email).as_millis() as u64;
    if let Some(held) = remote.held {
        // Held recipients were not tried: they go when their group takes mail again, or with
        // the retry of a deferred one if that comes first.
        let resume = shaping::due_ms(held).max(now + shaping::MIN_HOLD.as_millis() as u64);
        let deferred = outcomes.iter().any(|(_, o)| matches!(o, Outcome::Deferred(_)));
        retry_at = if deferred { retry_at.min(resume) } else { resume };
    }
    let seen = Some((email.domain().to_owned(), email.summary.clone()));
    finish(app, (due, id), outcomes, retry_at, commit, seen).await
}

/// Commits the attempt's outcomes, with the copies handed to local mailboxes and the report to
/// the sender's inbox (`local`) when the entry is still queued. While the disk refuses writes, the outcomes are held and the commit
/// retried: a refused write is "later", never a delivery outcome, and delivering again what the
/// receivers already took would duplicate it. At shutdown the store closes, the retry ends and
/// the entry, still queued, is delivered again after the restart (at least once).
/// `seen`: the message's domain and summary as the attempt loaded it, to name the keys the
/// commit reads ahead of its group commit.
async fn finish(
    app: &Deps,
    (due, id): (u64, &str),
    outcomes: Vec<(String, Outcome)>,
    retry_at: u64,
    local: Option<local::Commit>,
    seen: Option<(String, Summary)>,
) -> Result<()> {
    use crate::store::JobError;
    let outcomes = Arc::new(outcomes);
    let (mut held, mut tries) = (false, 0u32);
    let node = app.node.is_shared().then(|| app.node.name().to_owned());
    loop {
        let (email, held_outcomes, local) = (id.to_owned(), outcomes.clone(), local.clone());
        let (named, seen) = ((id.to_owned(), node.clone()), seen.clone());
        let ahead = move |w: &crate::store::Wtx<'_>| {
            let seen = seen.as_ref().map(|(domain, summary)| (domain.as_str(), summary));
            w.finish_ahead((due, &named.0), named.1.as_deref(), seen)
        };
        let node = node.clone();
        let commit = move |w: &mut crate::store::Wtx<'_>| -> crate::error::Result<bool> {
            if let Some(node) = &node {
                if !w.is_queued_in_write(due, &email)? {
                    // Deleted or cancelled meanwhile, its claim with it (`Wtx::unqueue`): the
                    // outcome is dropped, as `finish_attempt` drops it on a store of its own.
                    return Ok(false);
                }
                if !w.holds_claim(&email, node, now_ms())? {
                    return Err(crate::store::Error::Conflict(LEASE_LOST.into()).into());
                }
                w.release_claim(due, &email, node)?;
            }
            if let Some(store_copies) = &local
                && w.is_queued_in_write(due, &email)?
            {
                store_copies(w)?;
            }
            Ok(w.finish_attempt(&email, due, &held_outcomes, retry_at)?)
        };
        match app.store.write_snapshot_ahead(ahead, commit).await {
            Err(e)
                if e.is_disk()
                    || (e.is_transient() && app.store.is_open() && tries < retry::HOLD_TRIES) =>
            {
                if !held {
                    tracing::warn!(email = id, error = %e, "delivery outcome held until the store takes it");
                    held = true;
                }
                // The receivers have the message: what failed is recording that, and sending
                // it again would deliver it twice. A lost race is tried again soon, a disk or
                // a store out of reach once a second.
                tries += 1;
                let pause =
                    if e.is_contention() { retry::held_pause(tries) } else { STORE_RECHECK };
                tokio::time::sleep(pause).await;
            }
            Err(crate::error::Error::Conflict(m)) if m == LEASE_LOST => {
                // Another node counted this one dead and took the message over: what this
                // attempt did is for it to find out again (at least once, never lost).
                tracing::warn!(email = id, "delivery outcome dropped: {LEASE_LOST}");
                return Ok(());
            }
            done => {
                if done.map_err(Error::Commit)? {
                    app.sequences.wake();
                }
                for (recipient, outcome) in outcomes.iter() {
                    crate::metrics::delivery(outcome.result());
                    // One line per recipient and attempt; the field names are a contract (README).
                    tracing::info!(
                        target: "edgemail::delivery",
                        event = "delivery_attempt",
                        email_id = id,
                        recipient = %recipient,
                        result = outcome.result(),
                        smtp_response = outcome.response(),
                        "delivery attempt"
                    );
                }
                return Ok(());
            }
        }
    }
}

fn retry_delay(app: &Deps, email: &Email) -> Duration {
    let attempts = email.deliveries.iter().map(|d| d.attempts).max().unwrap_or(0) + 1;
    let d = &app.delivery;
    retry::delay(attempts, d.retry_initial, d.retry_max_interval, rand::random::<f64>())
}
