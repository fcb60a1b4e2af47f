//! What the store shares between the nodes of one PostgreSQL store: the certificates, and the
//! answers of the challenges in flight. One node orders (the leader, so a CA sees one order per
//! renewal, not one per node, and its rate limits are not spent N times); the CA may reach any
//! node behind the name, so the ordering node puts each answer in the store and every node
//! follows the store (`Follower`), installing new certificates and answering the challenges it
//! finds there. On the embedded file there is one node and nothing to follow.

use std::collections::HashMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;

use super::{Certs, Served, Source};
use crate::error::Result;
use crate::store::{Store, StoredCertificate, StoredChallenge};

/// How long a challenge answer stays in the store at most: an order whose node dies leaves it
/// behind, and the next round of the leader takes it down.
const CHALLENGE_LIFE_MS: u64 = 10 * 60 * 1000;
const HTTP01: &str = "http01:";
const ALPN: &str = "alpn:";

/// A stored certificate as the listeners serve it, unless it has expired or does not load.
pub(super) fn served(group: &str, stored: &StoredCertificate) -> Option<Served> {
    let now = crate::ids::now_ms() as i64;
    let served = super::served_from_pem(
        stored.chain_pem.as_bytes(),
        stored.key_pem.as_bytes(),
        Source::Acme,
    );
    match served {
        Ok(s) if s.info.not_after > now => Some(s),
        Ok(_) => None,
        Err(e) => {
            tracing::warn!(group, error = %e, "a stored ACME certificate does not load");
            None
        }
    }
}

/// A challenge answer put up by the ordering node, as the store keeps it.
pub(super) enum Answer<'a> {
    /// HTTP-01: the token and its key authorization.
    Http01 { token: &'a str, authorization: &'a str },
    /// TLS-ALPN-01: the name and the SHA-256 digest of the key authorization.
    Alpn { name: &'a str, digest: &'a [u8] },
}

impl Answer<'_> {
    fn id(&self) -> String {
        match self {
            Answer::Http01 { token, .. } => format!("{HTTP01}{token}"),
            Answer::Alpn { name, .. } => format!("{ALPN}{name}"),
        }
    }
}

/// Puts up an answer in the store for the other nodes; answers its id, to take it down.
pub(super) async fn publish(store: &Store, answer: &Answer<'_>) -> Result<String> {
    let id = answer.id();
    let stored = StoredChallenge {
        answer: match answer {
            Answer::Http01 { authorization, .. } => (*authorization).to_owned(),
            Answer::Alpn { digest, .. } => B64.encode(digest),
        },
        expires: crate::ids::now_ms() + CHALLENGE_LIFE_MS,
    };
    let key = id.clone();
    store.write(move |w| w.set_acme_challenge(&key, Some(&stored))).await?;
    Ok(id)
}

/// Takes down what `publish` put up, and whatever orders of dead nodes left behind.
pub(super) async fn withdraw(store: &Store, ids: Vec<String>) -> Result<()> {
    let now = crate::ids::now_ms();
    store
        .write(move |w| -> crate::store::Result<()> {
            for id in &ids {
                w.set_acme_challenge(id, None)?;
            }
            w.drop_stale_acme_challenges(now)?;
            Ok(())
        })
        .await?;
    Ok(())
}

/// What this node took from the store last, so a look changes only what changed.
#[derive(Debug, Default)]
pub(super) struct Follower {
    /// (group, not after) of the certificates installed at the last change.
    installed: Option<Vec<(String, u64)>>,
    /// HTTP-01 token -> key authorization.
    tokens: HashMap<String, String>,
    /// TLS-ALPN-01 name -> digest (base64).
    alpn: HashMap<String, String>,
}

impl Follower {
    /// One look at the store: certificates another node obtained are installed, challenge
    /// answers another node put up are answered here too, and those taken down are dropped.
    pub(super) async fn look(&mut self, certs: &Certs, store: &Store) -> Result<()> {
        let now = crate::ids::now_ms();
        let (stored, challenges) = store
            .read(move |r| -> crate::store::Result<_> {
                Ok((r.certificates()?, r.acme_challenges(now)?))
            })
            .await?;
        let seen: Vec<(String, u64)> =
            stored.iter().map(|(g, c)| (g.clone(), c.not_after)).collect();
        if self.installed.as_ref() != Some(&seen) {
            certs.install(stored.iter().filter_map(|(g, c)| served(g, c)).collect());
            self.installed = Some(seen);
        }
        self.follow(certs, challenges);
        Ok(())
    }

    fn follow(&mut self, certs: &Certs, challenges: Vec<(String, StoredChallenge)>) {
        let (mut tokens, mut alpn) = (HashMap::new(), HashMap::new());
        for (id, c) in challenges {
            if let Some(token) = id.strip_prefix(HTTP01) {
                tokens.insert(token.to_owned(), c.answer);
            } else if let Some(name) = id.strip_prefix(ALPN) {
                alpn.insert(name.to_owned(), c.answer);
            }
        }
        for gone in self.tokens.keys().filter(|t| !tokens.contains_key(*t)) {
            certs.set_token(gone, None);
        }
        for (token, authorization) in &tokens {
            if self.tokens.get(token) != Some(authorization) {
                certs.set_token(token, Some(authorization.clone()));
            }
        }
        for gone in self.alpn.keys().filter(|n| !alpn.contains_key(*n)) {
            certs.set_alpn_challenge(gone, None);
        }
        alpn.retain(|name, digest| {
            if self.alpn.get(name) == Some(digest) {
                return true;
            }
            // The challenge certificate is made here from the digest: its key never needs to
            // travel, and the CA checks only the digest it carries.
            let made = B64.decode(digest.as_bytes()).map_err(|e| e.to_string()).and_then(|d| {
                super::challenge::alpn_certificate(name, &d).map_err(|e| e.to_string())
            });
            match made {
                Ok(key) => certs.set_alpn_challenge(name, Some(key)),
                Err(e) => {
                    tracing::warn!(name, error = %e, "a stored TLS-ALPN-01 answer is unusable")
                }
            }
            true
        });
        self.tokens = tokens;
        self.alpn = alpn;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_follower_answers_what_the_store_holds_and_drops_what_it_no_longer_does() {
        let certs = Certs::new("mx.example.org");
        let mut follower = Follower::default();
        let answer = |a: &str, expires| StoredChallenge { answer: a.to_owned(), expires };
        let digest = B64.encode([7u8; 32]);
        follower.follow(
            &certs,
            vec![
                ("http01:tok1".to_owned(), answer("tok1.auth", u64::MAX)),
                ("alpn:mail.example.org".to_owned(), answer(&digest, u64::MAX)),
                ("other:x".to_owned(), answer("ignored", u64::MAX)),
            ],
        );
        assert_eq!(certs.token("tok1").as_deref(), Some("tok1.auth"));
        assert!(certs.alpn_challenge("mail.example.org").is_some());
        follower.follow(&certs, vec![("http01:tok2".to_owned(), answer("tok2.auth", u64::MAX))]);
        assert_eq!(certs.token("tok1"), None);
        assert_eq!(certs.token("tok2").as_deref(), Some("tok2.auth"));
        assert!(certs.alpn_challenge("mail.example.org").is_none());
        // A digest that is not base64 makes no certificate, and breaks nothing else.
        follower.follow(&certs, vec![("alpn:bad.example.org".to_owned(), answer("%%", u64::MAX))]);
        assert!(certs.alpn_challenge("bad.example.org").is_none());
    }
}
