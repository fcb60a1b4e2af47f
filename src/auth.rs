//! API keys: their format, hashing, and the in-memory table the server authenticates against.
//! The table is loaded from the store at start and replaced after every key or domain change the
//! server makes, so a request costs one SHA-256 and one hash-map lookup, never a disk read.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::ids::{new_id, now_ms, secret};
use crate::store::{ApiKey, Store, encode_hex};

/// Prefix of every secret, so leaked keys are easy to recognise (and to scan for).
pub const KEY_PREFIX: &str = "em_";

/// Who is calling.
#[derive(Debug, Clone)]
pub struct Principal {
    pub key_id: Arc<str>,
    /// `None` for an org-wide key.
    pub domain: Option<Arc<str>>,
}

impl Principal {
    /// The key's domain, or 403 for an org-wide key (which may only call analytics).
    pub fn domain(&self) -> Result<&str> {
        self.domain.as_deref().ok_or(Error::Forbidden(
            "this is an org-wide key; it may only call the analytics endpoints",
        ))
    }
}

pub fn hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

/// A new key: the record to store, its hash, and the secret shown once to the user.
pub fn new_key(name: &str, domain: Option<String>) -> (ApiKey, [u8; 32], String) {
    let secret = secret(KEY_PREFIX);
    let digest = hash(&secret);
    let key = ApiKey {
        id: new_id("key"),
        name: name.to_owned(),
        domain,
        prefix: secret.chars().take(KEY_PREFIX.len() + 6).collect(),
        hash: encode_hex(&digest),
        created_at: now_ms(),
        revoked_at: None,
    };
    (key, digest, secret)
}

#[derive(Default)]
pub struct KeyTable {
    live: RwLock<HashMap<[u8; 32], Principal>>,
}

impl KeyTable {
    pub fn reload(&self, store: &Store) -> Result<()> {
        let keys = store.read_blocking(|r| r.live_keys())?;
        let live = keys
            .into_iter()
            .map(|(hash, key)| {
                let principal =
                    Principal { key_id: key.id.into(), domain: key.domain.map(Arc::from) };
                (hash, principal)
            })
            .collect();
        match self.live.write() {
            Ok(mut table) => *table = live,
            Err(poisoned) => *poisoned.into_inner() = live,
        }
        Ok(())
    }

    /// The live key whose secret hashes to `digest` (dashboard sessions keep the digest only).
    pub fn by_digest(&self, digest: &[u8; 32]) -> Option<Principal> {
        let table = match self.live.read() {
            Ok(table) => table,
            Err(poisoned) => poisoned.into_inner(),
        };
        table.get(digest).cloned()
    }

    /// Resolves an `Authorization` header value.
    pub fn authenticate(&self, header: Option<&[u8]>) -> Result<Principal> {
        let Some(header) = header else {
            return Err(Error::Unauthorized("missing API key; send Authorization: Bearer <key>"));
        };
        let token = header
            .strip_prefix(b"Bearer ")
            .or_else(|| header.strip_prefix(b"bearer "))
            .map(|t| t.trim_ascii())
            .ok_or(Error::Unauthorized("the Authorization header must be `Bearer <key>`"))?;
        let digest: [u8; 32] = Sha256::digest(token).into();
        let table = match self.live.read() {
            Ok(table) => table,
            Err(poisoned) => poisoned.into_inner(),
        };
        table.get(&digest).cloned().ok_or(Error::Unauthorized("invalid or revoked API key"))
    }
}
