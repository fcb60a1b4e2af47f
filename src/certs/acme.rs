//! ACME (RFC 8555) on instant-acme: one account per directory and certificates per group of
//! names, both kept in the store, so every node and every backup has them. A group is
//! `acme.names` when set, else `smtp.hostname` alone and, per hosted domain, its `mail.`,
//! `autoconfig.` and `mta-sts.` names. A certificate is renewed two thirds into its lifetime;
//! a failed order is tried again after `acme.retry_initial`, doubling up to `acme.retry_max`.
//! Challenges: HTTP-01 when the `--http-challenge` listener runs, else TLS-ALPN-01 on
//! `--https`. On a shared store only the leading node orders, and every node serves what it
//! orders and answers its challenges (`shared.rs`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use instant_acme::{
    Account, AccountCredentials, AuthorizationStatus, ChallengeType, Identifier, NewAccount,
    NewOrder, OrderStatus, RetryPolicy,
};

use super::shared::{Answer, Follower, publish, served, withdraw};
use super::{Certs, Source};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::shutdown::Shutdown;
use crate::store::{Store, StoredCertificate, Topic};

/// How often the groups are looked at again when nothing is due: hosted domains come and go,
/// and another node may have renewed a certificate.
const RECHECK: Duration = Duration::from_secs(60);
/// On a shared store, how long the ordering node waits between putting up its answers and
/// telling the CA they are ready: every node follows the store at least once a second.
const FOLLOW_DELAY: Duration = Duration::from_secs(2);

/// This node among the nodes sharing the store, as the cluster (above on the map) tells it.
pub struct Role {
    /// Whether other nodes may share the store.
    pub shared: bool,
    /// Whether this node leads now: only the leader orders.
    pub leads: Box<dyn Fn() -> bool + Send + Sync>,
}

impl Role {
    /// On a shared store, what another node stored wakes nobody here: look at least every
    /// second.
    fn poll(&self, wait: Duration) -> Duration {
        if self.shared { wait.min(Duration::from_secs(1)) } else { wait }
    }
}

/// Orders and renews until `shutdown`, installing each new certificate in `certs`. On a
/// shared store only the leader orders; every node follows the store.
pub async fn run(
    certs: Arc<Certs>,
    store: Arc<Store>,
    config: Arc<Config>,
    role: Role,
    mut shutdown: Shutdown,
) {
    let Some(directory) = config.acme.directory.clone() else { return };
    if certs.from_file() {
        tracing::info!("acme.directory is set, but a certificate file is configured: it wins");
        return;
    }
    let kind = match (config.acme.http_challenge_listen, config.http.tls_listen) {
        (Some(_), _) => Some(ChallengeType::Http01),
        (None, Some(_)) => Some(ChallengeType::TlsAlpn01),
        (None, None) => {
            tracing::warn!("ACME needs --http-challenge (HTTP-01) or --https (TLS-ALPN-01)");
            None
        }
    };
    if kind.is_none() && !role.shared {
        return;
    }
    let share = role.shared.then_some(store.as_ref());
    let (mut account, mut follower) = (None, Follower::default());
    let mut failures: HashMap<String, (u32, u64)> = HashMap::new();
    let mut look_at = 0;
    // On a shared store: what other nodes store (certificates, challenge answers) is followed
    // at once, and a domain hosted or removed anywhere makes the leader look at the groups.
    let (mut stored, mut hosted) = (store.changes(), store.changes());
    loop {
        if let Some(store) = share
            && let Err(e) = follower.look(&certs, store).await
        {
            tracing::warn!(error = %e, "ACME: the store's certificates were not read");
        }
        let mut wait = RECHECK;
        if let Some(kind) = kind.as_ref().filter(|_| (role.leads)()) {
            let now = crate::ids::now_ms();
            if now >= look_at {
                let ordering = (directory.as_str(), kind, share);
                wait = round(&certs, &store, &config, ordering, &mut account, &mut failures)
                    .await
                    .unwrap_or_else(|e| {
                        tracing::warn!(error = %e, "ACME: no certificates this round");
                        config.acme.retry_initial
                    });
                look_at = now + wait.as_millis() as u64;
            } else {
                wait = Duration::from_millis(look_at - now);
            }
        }
        tokio::select! {
            () = tokio::time::sleep(role.poll(wait)) => {}
            () = stored.wait(&[Topic::Certificates]) => {}
            () = hosted.wait(&[Topic::Domains]) => look_at = 0,
            () = shutdown.wait() => return,
        }
    }
}

/// One look at every group: reload what the store holds, order what is missing or due. Answers
/// how long to wait before the next look.
async fn round(
    certs: &Certs,
    store: &Store,
    config: &Config,
    (directory, kind, share): (&str, &ChallengeType, Option<&Store>),
    account: &mut Option<Account>,
    failures: &mut HashMap<String, (u32, u64)>,
) -> Result<Duration> {
    let stored: HashMap<String, StoredCertificate> =
        store.read(|r| r.certificates()).await?.into_iter().collect();
    certs.install(stored.iter().filter_map(|(g, c)| served(g, c)).collect());
    let groups = groups(config, store).await?;
    let mut next = crate::ids::now_ms() + RECHECK.as_millis() as u64;
    for (group, names) in groups {
        let now = crate::ids::now_ms();
        let current = stored.get(&group).filter(|c| same_names(&c.names, &names));
        if let Some(c) = current {
            let due = renew_at(c);
            if now < due {
                next = next.min(due);
                continue;
            }
        }
        if let Some((_, after)) = failures.get(&group).filter(|(_, after)| now < *after) {
            next = next.min(*after);
            continue;
        }
        let obtained = match account_for(account, store, config, directory).await {
            Ok(acct) => order(&acct, (certs, share), &names, kind).await,
            Err(e) => Err(e),
        };
        match obtained {
            Ok(cert) => {
                tracing::info!(names = ?cert.names, challenge = ?kind, "certificate obtained over ACME");
                failures.remove(&group);
                next = next.min(renew_at(&cert));
                let g = group.clone();
                store.write(move |w| w.put_certificate(&g, &cert)).await?;
                let stored = store.read(|r| r.certificates()).await?;
                certs.install(stored.iter().filter_map(|(g, c)| served(g, c)).collect());
            }
            Err(e) => {
                let tries = failures.get(&group).map_or(0, |(n, _)| *n);
                let wait = backoff(config, tries);
                tracing::warn!(?names, error = %e, retry_in = ?wait, "ACME order failed");
                let after = now + wait.as_millis() as u64;
                failures.insert(group, (tries + 1, after));
                next = next.min(after);
            }
        }
    }
    // At least a second between looks, even if a CA issues certificates already due.
    let wait = next.saturating_sub(crate::ids::now_ms()).max(1000);
    Ok(Duration::from_millis(wait))
}

/// The wait after `tries` failures in a row: `retry_initial` doubled each time, up to
/// `retry_max`.
pub(super) fn backoff(config: &Config, tries: u32) -> Duration {
    let factor = 1u32.checked_shl(tries.min(20)).unwrap_or(u32::MAX);
    config.acme.retry_initial.saturating_mul(factor).min(config.acme.retry_max)
}

/// When a certificate is due for renewal (Unix ms): two thirds into its lifetime.
pub(super) fn renew_at(c: &StoredCertificate) -> u64 {
    let (start, end) = (c.not_before * 1000, c.not_after * 1000);
    start + end.saturating_sub(start) / 3 * 2
}

fn same_names(a: &[String], b: &[String]) -> bool {
    let (mut a, mut b) = (a.to_vec(), b.to_vec());
    a.sort();
    b.sort();
    a == b
}

/// The groups of names to hold certificates for, by group key.
async fn groups(config: &Config, store: &Store) -> Result<Vec<(String, Vec<String>)>> {
    if !config.acme.names.is_empty() {
        return Ok(vec![("names".to_owned(), config.acme.names.clone())]);
    }
    let mut out = Vec::new();
    let host = config.smtp.host();
    // A name without a dot (`localhost`) cannot be validated by any public CA.
    if host.contains('.') {
        out.push(("host".to_owned(), vec![host.to_owned()]));
    }
    for domain in store.read(|r| r.domains()).await? {
        let names = ["mail", "autoconfig", "mta-sts"].map(|p| format!("{p}.{}", domain.name));
        out.push((format!("domain:{}", domain.name), names.to_vec()));
    }
    Ok(out)
}

/// The account on `directory`: from memory, from the store, or created (and stored).
async fn account_for(
    account: &mut Option<Account>,
    store: &Store,
    config: &Config,
    directory: &str,
) -> Result<Account> {
    if let Some(a) = account {
        return Ok(a.clone());
    }
    let failed = |e: instant_acme::Error| Error::Unavailable(format!("ACME account: {e}"));
    let builder = || match &config.acme.ca_file {
        Some(ca) => Account::builder_with_root(ca).map_err(failed),
        None => Account::builder().map_err(failed),
    };
    let dir = directory.to_owned();
    let stored = store.read(move |r| r.acme_account(&dir)).await?;
    let credentials = stored.and_then(|s| serde_json::from_slice::<AccountCredentials>(&s).ok());
    let made = match credentials {
        Some(credentials) => builder()?.from_credentials(credentials).await.map_err(failed)?,
        None => {
            let contact = config.acme.email.as_ref().map(|e| format!("mailto:{e}"));
            let contact: Vec<&str> = contact.iter().map(String::as_str).collect();
            let new = NewAccount {
                contact: &contact,
                terms_of_service_agreed: true,
                only_return_existing: false,
            };
            let (made, credentials) =
                builder()?.create(&new, directory.to_owned(), None).await.map_err(failed)?;
            let bytes = serde_json::to_vec(&credentials).map_err(Error::internal)?;
            let dir = directory.to_owned();
            store.write(move |w| w.put_acme_account(&dir, &bytes)).await?;
            made
        }
    };
    *account = Some(made.clone());
    Ok(made)
}

/// What a challenge in flight put up, taken down when the order ends however it ends.
#[derive(Default)]
struct Posted {
    tokens: Vec<String>,
    alpn: Vec<String>,
    /// The ids of the answers put up in the shared store.
    shared: Vec<String>,
}

/// One order: its challenges answered, then the certificate fetched.
async fn order(
    account: &Account,
    (certs, share): (&Certs, Option<&Store>),
    names: &[String],
    kind: &ChallengeType,
) -> Result<StoredCertificate> {
    let mut posted = Posted::default();
    let result = order_posting(account, (certs, share), names, kind, &mut posted).await;
    posted.tokens.iter().for_each(|t| certs.set_token(t, None));
    posted.alpn.iter().for_each(|n| certs.set_alpn_challenge(n, None));
    if let Some(store) = share
        && let Err(e) = withdraw(store, posted.shared).await
    {
        tracing::warn!(error = %e, "ACME: answers left in the store until they go stale");
    }
    result
}

async fn order_posting(
    account: &Account,
    (certs, share): (&Certs, Option<&Store>),
    names: &[String],
    kind: &ChallengeType,
    posted: &mut Posted,
) -> Result<StoredCertificate> {
    let failed = |e: instant_acme::Error| Error::Unavailable(format!("ACME: {e}"));
    let ids: Vec<Identifier> = names.iter().map(|n| Identifier::Dns(n.clone())).collect();
    let mut order = account.new_order(&NewOrder::new(&ids)).await.map_err(failed)?;
    // Two passes: every answer is put up (and, on a shared store, followed by every node)
    // before the CA hears that any is ready, since it may validate at once and at any node.
    for ready in [false, true] {
        let mut authorizations = order.authorizations();
        while let Some(authz) = authorizations.next().await {
            let mut authz = authz.map_err(failed)?;
            match authz.status {
                AuthorizationStatus::Pending => {}
                AuthorizationStatus::Valid => continue,
                other => return Err(Error::Unavailable(format!("ACME authorization {other:?}"))),
            }
            let mut challenge = authz.challenge(kind.clone()).ok_or_else(|| {
                Error::Unavailable(format!("the CA offers no {kind:?} challenge"))
            })?;
            if ready {
                challenge.set_ready().await.map_err(failed)?;
                continue;
            }
            let authorization = challenge.key_authorization();
            let name = challenge.identifier().to_string().to_ascii_lowercase();
            let digest = authorization.digest();
            let answer = if *kind == ChallengeType::Http01 {
                Answer::Http01 { token: &challenge.token, authorization: authorization.as_str() }
            } else {
                Answer::Alpn { name: &name, digest: digest.as_ref() }
            };
            if let Some(store) = share {
                posted.shared.push(publish(store, &answer).await?);
            }
            match answer {
                Answer::Http01 { token, authorization } => {
                    certs.set_token(token, Some(authorization.to_owned()));
                    posted.tokens.push(token.to_owned());
                }
                Answer::Alpn { name, digest } => {
                    let key = super::challenge::alpn_certificate(name, digest)?;
                    certs.set_alpn_challenge(name, Some(key));
                    posted.alpn.push(name.to_owned());
                }
            }
        }
        if !ready && share.is_some() {
            tokio::time::sleep(FOLLOW_DELAY).await;
        }
    }
    let retries = RetryPolicy::new().timeout(Duration::from_secs(60));
    let status = order.poll_ready(&retries).await.map_err(failed)?;
    if status != OrderStatus::Ready {
        let why = order.state().error.as_ref().map(|p| p.to_string()).unwrap_or_default();
        return Err(Error::Unavailable(format!("ACME order {status:?}: {why}")));
    }
    let key_pem = order.finalize().await.map_err(failed)?;
    let chain_pem = order.poll_certificate(&retries).await.map_err(failed)?;
    let served = super::served_from_pem(chain_pem.as_bytes(), key_pem.as_bytes(), Source::Acme)?;
    Ok(StoredCertificate {
        names: names.to_vec(),
        chain_pem,
        key_pem,
        not_before: (served.info.not_before / 1000).max(0) as u64,
        not_after: (served.info.not_after / 1000).max(0) as u64,
    })
}
