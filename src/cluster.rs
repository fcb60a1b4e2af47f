//! This node among the nodes sharing one store (PostgreSQL). Each node renews a heartbeat in the
//! store; a queued message is delivered by the node that claimed it, and a claim is good only
//! while its node's heartbeat is, so the work of a node that died waits one lease
//! (`cluster.lease`) and is then taken by another. One node at a time holds the leader's lease
//! and runs the engines that must run once (sequences, warmup, the webhook dispatcher). Changes
//! to the API keys are counted in the store, and every node reloads its key table when the
//! count moves: at once when the store tells it (PostgreSQL notifications), and by reading the
//! count on a timer as the fallback. On the embedded file there is one node: it leads, and claims
//! nothing.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::ids::now_ms;
use crate::shutdown::Shutdown;
use crate::store::{Changes, Result, Store, Topic};

/// How often a node reads the key generation while no notifications arrive: a key revoked on
/// one node stops working on every node within this (plus a read).
const KEYS_POLL: Duration = Duration::from_millis(400);
/// How often it reads it while they arrive (they tell a change at once): still within 2 s of a
/// revocation should the listening connection be cut without its node noticing yet.
const KEYS_POLL_LISTENING: Duration = Duration::from_millis(1500);
/// On a shared store the writes of other nodes wake nobody here: scanners look again at least
/// this often.
const SCAN_POLL: Duration = Duration::from_secs(1);
const LEADER: &str = "leader";

pub struct Node {
    name: String,
    lease: Duration,
    shared: bool,
    /// Until when (Unix ms) this node holds the leader's lease, as of its last renewal.
    leads_until: AtomicU64,
}

impl Node {
    pub fn new(config: &crate::config::Cluster, shared: bool) -> Arc<Node> {
        Arc::new(Node {
            name: config.node.clone(),
            lease: config.lease,
            shared,
            leads_until: AtomicU64::new(0),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether other nodes may share the store.
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// Whether the engines that run once per cluster run here now.
    pub fn leads(&self) -> bool {
        !self.shared || self.leads_until.load(Ordering::Acquire) > now_ms()
    }

    /// The longest a scanner may sleep: on a shared store, work other nodes add or give up
    /// does not wake it.
    pub fn poll(&self, wait: Duration) -> Duration {
        if self.shared { wait.min(SCAN_POLL) } else { wait }
    }

    /// How long (ms) this node's heartbeat must still run for it to take on a message: half a
    /// lease, while a node that renews on time always has three quarters left. An attempt that
    /// outlasts the margin may be delivered again by another node (README, Scale-out).
    pub fn claim_margin(&self) -> u64 {
        self.lease_ms() / 2
    }

    fn lease_ms(&self) -> u64 {
        self.lease.as_millis() as u64
    }

    /// Announces the node, frees the claims it held before a restart (they are delivered again,
    /// by whichever node claims them first) and tries for the leader's lease.
    pub async fn join(&self, store: &Store) -> Result<()> {
        if !self.shared {
            return Ok(());
        }
        let (node, until) = (self.name.clone(), now_ms() + self.lease_ms());
        let freed = store
            .write(move |w| -> Result<usize> {
                w.heartbeat(&node, until)?;
                w.free_claims_of(&node)
            })
            .await?;
        tracing::info!(node = %self.name, freed, "joined the nodes sharing the store");
        self.renew(store).await
    }

    /// Renews the heartbeat, and takes or keeps the leader's lease when it is free.
    async fn renew(&self, store: &Store) -> Result<()> {
        let now = now_ms();
        let (node, until) = (self.name.clone(), now + self.lease_ms());
        let leads = store
            .write(move |w| -> Result<bool> {
                w.heartbeat(&node, until)?;
                w.take_lease(LEADER, &node, now, until)
            })
            .await?;
        let before = self.leads();
        // Stop leading a little before the lease ends, so two nodes never lead at once.
        let margin = self.lease_ms() / 4;
        self.leads_until.store(if leads { until - margin } else { 0 }, Ordering::Release);
        if leads != before {
            tracing::info!(node = %self.name, leads, "leadership changed");
        }
        Ok(())
    }

    /// Ends the heartbeat, the claims and the leadership once the engines have stopped, so that
    /// the others take over at once rather than after the lease.
    pub async fn leave(&self, store: &Store) -> Result<()> {
        if !self.shared {
            return Ok(());
        }
        self.leads_until.store(0, Ordering::Release);
        let (node, now) = (self.name.clone(), now_ms());
        store
            .write(move |w| -> Result<()> {
                w.heartbeat(&node, now)?;
                w.free_claims_of(&node)?;
                w.release_lease(LEADER, &node)
            })
            .await
    }

    /// Until shutdown: renews the heartbeat four times a lease, calls `keys_changed` when
    /// another node changed the API keys, and `domains_changed` when one changed the hosted
    /// domains (or their DKIM keys).
    pub async fn run(
        self: Arc<Self>,
        store: Arc<Store>,
        keys_changed: impl Fn() + Send + 'static,
        domains_changed: impl Fn() + Send + 'static,
        mut shutdown: Shutdown,
    ) {
        if !self.shared {
            return;
        }
        let mut keys = Keys {
            generation: store.read(|r| r.keys_generation()).await.unwrap_or(0),
            read_at: Instant::now(),
            told: store.changes(),
        };
        let mut domains = store.changes();
        let mut renew = tokio::time::interval(self.lease / 4);
        renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut poll = tokio::time::interval(KEYS_POLL);
        loop {
            tokio::select! {
                _ = renew.tick() => {
                    if let Err(e) = self.renew(&store).await {
                        tracing::warn!(error = %e, "heartbeat not renewed");
                    }
                }
                _ = keys.told.wait(&[Topic::Keys]) => keys.check(&store, &keys_changed).await,
                _ = poll.tick() => {
                    let every = if store.listening() { KEYS_POLL_LISTENING } else { KEYS_POLL };
                    if keys.read_at.elapsed() + KEYS_POLL / 2 >= every {
                        keys.check(&store, &keys_changed).await;
                    }
                }
                _ = domains.wait(&[Topic::Domains]) => domains_changed(),
                _ = shutdown.wait() => break,
            }
        }
    }
}

/// The key generation as this node last read it, and the notifications that tell it moved.
struct Keys {
    generation: u64,
    read_at: Instant,
    told: Changes,
}

impl Keys {
    /// Reads the generation; calls `changed` when it moved.
    async fn check(&mut self, store: &Store, changed: &impl Fn()) {
        self.read_at = Instant::now();
        match store.read(|r| r.keys_generation()).await {
            Ok(now) if now != self.generation => {
                self.generation = now;
                changed();
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "key generation not read"),
        }
    }
}
