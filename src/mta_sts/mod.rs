//! MTA-STS for outbound delivery (RFC 8461). A recipient domain that publishes
//! `_mta-sts.<domain> TXT "v=STSv1; id=..."` serves its policy at
//! `https://mta-sts.<domain>/.well-known/mta-sts.txt`; the policy is cached in memory per
//! domain with the id it was fetched under, fetched again when the id changes or its `max_age`
//! passes, and kept while a refresh fails (section 5.1: an attacker who blocks the TXT record or
//! the policy host must not turn enforcement off). The delivery queue asks `policy` before it
//! connects and verifies the mail exchangers' certificates with `verifier`.

pub mod policy;
mod record;
pub mod tls;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio_rustls::TlsConnector;

use crate::config::MtaSts;
use crate::dns::Dns;
use crate::webhooks::client::Client;
use crate::webhooks::target;
pub use policy::{Mode, Policy};

/// How long a policy fetch may take, connection and body included.
const FETCH_TIMEOUT: Duration = Duration::from_secs(15);
/// The largest policy body read (the RFC's policies are a few hundred bytes).
const MAX_POLICY: usize = 64 * 1024;
/// After a failed fetch, the same id is not fetched again for this long: every delivery to the
/// domain would otherwise wait for the policy host's time-out.
const RETRY_FETCH: Duration = Duration::from_secs(5 * 60);
/// Domains remembered at most; past it, expired entries are dropped before a new one goes in.
const MAX_DOMAINS: usize = 100_000;

struct Cached {
    id: String,
    policy: Arc<Policy>,
    expires: Instant,
}

#[derive(Default)]
struct Entry {
    cached: Option<Cached>,
    /// The id whose fetch failed, and when it may be tried again.
    failed: Option<(String, Instant)>,
    /// Held while the domain's policy is fetched.
    gate: Arc<tokio::sync::Mutex<()>>,
}

pub struct Sts {
    enabled: bool,
    dns: Arc<Dns>,
    client: Client,
    verifier: Option<TlsConnector>,
    port: u16,
    cache: Mutex<HashMap<String, Entry>>,
}

impl Sts {
    /// `allow_private` lets policy hosts resolve to non-public addresses (test set-ups), as
    /// `delivery.allow_private` does for mail exchangers.
    pub fn new(config: &MtaSts, dns: Arc<Dns>, allow_private: bool) -> Sts {
        let verifier = match config.enabled.then(|| tls::connector(config.ca_file.as_deref())) {
            Some(Ok(connector)) => Some(connector),
            Some(Err(e)) => {
                tracing::error!(error = %e, "MTA-STS has no certificate verifier: policies cannot be fetched");
                None
            }
            None => None,
        };
        Sts {
            enabled: config.enabled,
            client: Client::with_tls(dns.clone(), allow_private, verifier.clone()),
            dns,
            verifier,
            port: config.policy_port,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// The verifier a policy's mail exchangers must pass (None when MTA-STS is off or broken).
    pub fn verifier(&self) -> Option<TlsConnector> {
        self.verifier.clone()
    }

    /// The policy in force for `domain`, if any (mode `none` included: the caller ignores it).
    pub async fn policy(&self, domain: &str) -> Option<Arc<Policy>> {
        if !self.enabled {
            return None;
        }
        let domain = domain.trim_end_matches('.').to_ascii_lowercase();
        // No record (or no answer) keeps a cached policy until it expires: section 5.1.
        let Some(id) = record::id(&self.dns, &domain).await else {
            return self.cached(&domain);
        };
        if let Some(known) = self.known(&domain, &id) {
            return known;
        }
        // One fetch per domain at a time: the deliveries of a campaign to one domain all start
        // here together, and its policy host should see one request, not one per delivery.
        let gate = self.gate(&domain);
        let _turn = gate.lock().await;
        if let Some(known) = self.known(&domain, &id) {
            return known;
        }
        let now = Instant::now();
        match self.fetch(&domain).await {
            Ok(policy) => {
                crate::metrics::mta_sts_fetch(true);
                tracing::info!(%domain, %id, mode = policy.mode.label(), "MTA-STS policy fetched");
                let policy = Arc::new(policy);
                self.update(&domain, |e| {
                    let expires = now + policy.max_age;
                    e.cached = Some(Cached { id, policy: policy.clone(), expires });
                    e.failed = None;
                });
                Some(policy)
            }
            Err(why) => {
                crate::metrics::mta_sts_fetch(false);
                tracing::warn!(%domain, %id, error = %why, "MTA-STS policy fetch failed");
                self.update(&domain, |e| e.failed = Some((id, now + RETRY_FETCH)));
                self.cached(&domain)
            }
        }
    }

    /// The unexpired cached policy of `domain`, whatever its id.
    fn cached(&self, domain: &str) -> Option<Arc<Policy>> {
        let cache = self.cache.lock().ok()?;
        let cached = cache.get(domain)?.cached.as_ref()?;
        (cached.expires > Instant::now()).then(|| cached.policy.clone())
    }

    /// What the cache says for record `id` without a fetch: its policy when fetched under that
    /// id, or the older policy (or none) when a fetch for that id failed a short while ago.
    /// None when the policy must be fetched.
    fn known(&self, domain: &str, id: &str) -> Option<Option<Arc<Policy>>> {
        let now = Instant::now();
        let mut cache = self.cache.lock().ok()?;
        let entry = cache.get_mut(domain)?;
        entry.cached = entry.cached.take().filter(|c| c.expires > now);
        entry.failed = entry.failed.take().filter(|(_, until)| *until > now);
        let policy = entry.cached.as_ref().map(|c| (c.id == id, c.policy.clone()));
        match (policy, &entry.failed) {
            (Some((true, policy)), _) => Some(Some(policy)),
            (policy, Some((failed, _))) if failed == id => Some(policy.map(|(_, p)| p)),
            _ => None,
        }
    }

    fn gate(&self, domain: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut gate = None;
        self.update(domain, |e| gate = Some(e.gate.clone()));
        gate.unwrap_or_default()
    }

    /// Changes `domain`'s entry, made if needed while the cache has room.
    fn update(&self, domain: &str, change: impl FnOnce(&mut Entry)) {
        let Ok(mut cache) = self.cache.lock() else { return };
        if cache.len() >= MAX_DOMAINS && !cache.contains_key(domain) {
            let now = Instant::now();
            cache.retain(|_, e| e.cached.as_ref().is_some_and(|c| c.expires > now));
            if cache.len() >= MAX_DOMAINS {
                return;
            }
        }
        change(cache.entry(domain.to_owned()).or_default());
    }

    /// The policy from its host: HTTPS with a verified certificate, a 200 answer of type
    /// text/plain (no redirect followed), a body within `MAX_POLICY` that parses.
    async fn fetch(&self, domain: &str) -> Result<Policy, String> {
        let port = if self.port == 443 { String::new() } else { format!(":{}", self.port) };
        let url = format!("https://mta-sts.{domain}{port}/.well-known/mta-sts.txt");
        let target = target::parse(&url)?;
        let got = self.client.get(&target, FETCH_TIMEOUT, MAX_POLICY).await?;
        if got.status != 200 {
            return Err(format!("{url} answered {}", got.status));
        }
        let media = got.content_type.split(';').next().unwrap_or_default().trim();
        if !media.eq_ignore_ascii_case("text/plain") {
            return Err(format!("{url} is of type {:?}, not text/plain", got.content_type));
        }
        let text = std::str::from_utf8(&got.body).map_err(|_| format!("{url} is not UTF-8"))?;
        Policy::parse(text)
    }
}
