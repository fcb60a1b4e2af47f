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
        let now = Instant::now();
        let (cached, retry_later) = self.cached(&domain, now);
        // No record (or no answer) keeps a cached policy until it expires: section 5.1.
        let Some(id) = record::id(&self.dns, &domain).await else {
            return cached.map(|(_, p)| p);
        };
        match cached {
            Some((cached_id, policy)) if cached_id == id => return Some(policy),
            cached if retry_later.as_deref() == Some(id.as_str()) => {
                return cached.map(|(_, p)| p);
            }
            _ => {}
        }
        match self.fetch(&domain).await {
            Ok(policy) => {
                crate::metrics::mta_sts_fetch(true);
                tracing::info!(%domain, %id, mode = policy.mode.label(), "MTA-STS policy fetched");
                let policy = Arc::new(policy);
                self.store(&domain, Some((id, policy.clone())), now);
                Some(policy)
            }
            Err(why) => {
                crate::metrics::mta_sts_fetch(false);
                tracing::warn!(%domain, %id, error = %why, "MTA-STS policy fetch failed");
                self.failed(&domain, id, now);
                cached.map(|(_, p)| p)
            }
        }
    }

    /// The unexpired cached policy of `domain` with its id, and the id not to fetch again yet.
    fn cached(
        &self,
        domain: &str,
        now: Instant,
    ) -> (Option<(String, Arc<Policy>)>, Option<String>) {
        let Ok(mut cache) = self.cache.lock() else { return (None, None) };
        let Some(entry) = cache.get_mut(domain) else { return (None, None) };
        entry.cached = entry.cached.take().filter(|c| c.expires > now);
        entry.failed = entry.failed.take().filter(|(_, until)| *until > now);
        let cached = entry.cached.as_ref().map(|c| (c.id.clone(), c.policy.clone()));
        (cached, entry.failed.as_ref().map(|(id, _)| id.clone()))
    }

    fn store(&self, domain: &str, fetched: Option<(String, Arc<Policy>)>, now: Instant) {
        let Ok(mut cache) = self.cache.lock() else { return };
        if cache.len() >= MAX_DOMAINS && !cache.contains_key(domain) {
            cache.retain(|_, e| e.cached.as_ref().is_some_and(|c| c.expires > now));
            if cache.len() >= MAX_DOMAINS {
                return;
            }
        }
        let entry = cache.entry(domain.to_owned()).or_default();
        if let Some((id, policy)) = fetched {
            let expires = now + policy.max_age;
            entry.cached = Some(Cached { id, policy, expires });
            entry.failed = None;
        }
    }

    fn failed(&self, domain: &str, id: String, now: Instant) {
        self.store(domain, None, now);
        if let Ok(mut cache) = self.cache.lock()
            && let Some(entry) = cache.get_mut(domain)
        {
            entry.failed = Some((id, now + RETRY_FETCH));
        }
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
