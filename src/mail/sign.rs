//! DKIM signing with a domain's keys: an RSA-SHA256 signature (what every receiver verifies) and
//! an Ed25519-SHA256 one (RFC 8463) beside it. Parsed keys are cached per domain, since parsing an
//! RSA key costs more than signing with it.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use mail_auth::common::crypto::{Ed25519Key, RsaKey, Sha256, SigningKey};
use mail_auth::common::headers::HeaderWriter;
use mail_auth::dkim::{Canonicalization, DkimSigner, Done};
use rustls::pki_types::{PrivateKeyDer, PrivatePkcs1KeyDer};

use crate::error::{Error, Result};
use crate::store::Domain;

/// Headers covered by the signatures (absent ones are signed as absent, so they cannot be added
/// later). RFC 8058 requires List-Unsubscribe and List-Unsubscribe-Post to be signed.
const SIGNED: [&str; 12] = [
    "From",
    "To",
    "Cc",
    "Subject",
    "Date",
    "Message-ID",
    "MIME-Version",
    "Content-Type",
    "In-Reply-To",
    "References",
    "List-Unsubscribe",
    "List-Unsubscribe-Post",
];

pub struct DomainSigner {
    rsa: Option<DkimSigner<RsaKey<Sha256>, Done>>,
    ed25519: Option<DkimSigner<Ed25519Key, Done>>,
}

fn configure<K: SigningKey>(key: K, domain: &str, selector: &str) -> DkimSigner<K, Done> {
    DkimSigner::from_key(key)
        .domain(domain)
        .selector(selector)
        .headers(SIGNED)
        .header_canonicalization(Canonicalization::Relaxed)
        .body_canonicalization(Canonicalization::Relaxed)
}

impl DomainSigner {
    pub fn new(domain: &Domain) -> Result<DomainSigner> {
        let mut signer = DomainSigner { rsa: None, ed25519: None };
        for key in &domain.dkim {
            let der = B64.decode(&key.private_key).map_err(Error::internal)?;
            let bad = |e: mail_auth::Error| {
                Error::internal(format!("DKIM key {} of {}: {e}", key.selector, domain.name))
            };
            match key.algorithm.as_str() {
                "rsa-sha256" => {
                    let der = PrivateKeyDer::Pkcs1(PrivatePkcs1KeyDer::from(der));
                    let parsed = RsaKey::<Sha256>::from_key_der(der).map_err(bad)?;
                    signer.rsa = Some(configure(parsed, &domain.name, &key.selector));
                }
                "ed25519-sha256" => {
                    let parsed = Ed25519Key::from_pkcs8_der(&der).map_err(bad)?;
                    signer.ed25519 = Some(configure(parsed, &domain.name, &key.selector));
                }
                other => tracing::warn!(algorithm = other, "unknown DKIM key algorithm ignored"),
            }
        }
        Ok(signer)
    }

    /// The message with its DKIM-Signature headers prepended.
    pub fn sign(&self, message: &[u8]) -> Result<Vec<u8>> {
        let failed = |e: mail_auth::Error| Error::internal(format!("DKIM signing: {e}"));
        let mut headers = String::new();
        if let Some(rsa) = &self.rsa {
            headers.push_str(&rsa.sign(message).map_err(failed)?.to_header());
        }
        if let Some(ed) = &self.ed25519 {
            headers.push_str(&ed.sign(message).map_err(failed)?.to_header());
        }
        let mut out = Vec::with_capacity(headers.len() + message.len());
        out.extend_from_slice(headers.as_bytes());
        out.extend_from_slice(message);
        Ok(out)
    }
}

/// Signers by domain name, built on first use. Each entry remembers the keys it was built from
/// and is rebuilt when the domain's stored keys differ: a domain removed and added again (or its
/// keys rotated) must never be signed for with a key that is no longer published.
#[derive(Default)]
pub struct Signers {
    cache: RwLock<HashMap<String, Cached>>,
}

struct Cached {
    /// `(selector, private key)` of every key the signer holds.
    keys: Vec<(String, String)>,
    signer: Arc<DomainSigner>,
}

fn same_keys(cached: &[(String, String)], domain: &Domain) -> bool {
    cached.len() == domain.dkim.len()
        && cached
            .iter()
            .zip(&domain.dkim)
            .all(|((selector, key), k)| *selector == k.selector && *key == k.private_key)
}

impl Signers {
    pub fn get(&self, domain: &Domain) -> Result<Arc<DomainSigner>> {
        if let Ok(cache) = self.cache.read()
            && let Some(found) = cache.get(&domain.name)
            && same_keys(&found.keys, domain)
        {
            return Ok(found.signer.clone());
        }
        let signer = Arc::new(DomainSigner::new(domain)?);
        let keys =
            domain.dkim.iter().map(|k| (k.selector.clone(), k.private_key.clone())).collect();
        if let Ok(mut cache) = self.cache.write() {
            cache.insert(domain.name.clone(), Cached { keys, signer: signer.clone() });
        }
        Ok(signer)
    }
}
