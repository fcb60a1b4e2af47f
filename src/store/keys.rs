//! API keys. Only the SHA-256 of a secret is stored; the hash index holds live keys only, so
//! revoking a key is removing its hash.

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::tables::*;
use super::{Rtx, Wtx, decode, encode};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    pub id: String,
    pub name: String,
    /// The domain the key is scoped to; `None` for an org-wide key.
    pub domain: Option<String>,
    /// The first characters of the secret, to recognise a key in listings.
    pub prefix: String,
    /// Hex SHA-256 of the secret.
    pub hash: String,
    pub created_at: u64,
    pub revoked_at: Option<u64>,
}

/// The `META` entry counting changes to the live keys.
const KEYS_GENERATION: &str = "keys_generation";

impl Wtx<'_> {
    pub fn create_key(&mut self, key: &ApiKey, hash: &[u8; 32]) -> Result<()> {
        if let Some(domain) = &key.domain
            && !self.domain_exists(domain)?
        {
            return Err(Error::not_found("domain"));
        }
        self.tx.open_table(KEYS)?.insert(key.id.as_str(), encode(key)?.as_slice())?;
        self.tx.open_table(KEY_HASHES)?.insert(hash.as_slice(), key.id.as_str())?;
        self.next_keys_generation()
    }

    /// Counts a change to the live keys, so that nodes sharing the store reload theirs.
    fn next_keys_generation(&mut self) -> Result<()> {
        let mut meta = self.tx.open_table(META)?;
        let now = meta.get(KEYS_GENERATION)?.map_or(0, |v| v.value());
        meta.insert(KEYS_GENERATION, now + 1)?;
        Ok(())
    }

    pub fn revoke_key(&mut self, id: &str, at: u64) -> Result<ApiKey> {
        let mut keys = self.tx.open_table(KEYS)?;
        let found = keys.get(id)?.map(|v| decode::<ApiKey>(v.value())).transpose()?;
        let Some(mut key) = found else {
            return Err(Error::not_found("key"));
        };
        if key.revoked_at.is_none() {
            key.revoked_at = Some(at);
            keys.insert(id, encode(&key)?.as_slice())?;
            if let Some(hash) = decode_hex(&key.hash) {
                self.tx.open_table(KEY_HASHES)?.remove(hash.as_slice())?;
            }
            drop(keys);
            self.next_keys_generation()?;
        }
        Ok(key)
    }

    pub(super) fn revoke_domain_keys(&mut self, domain: &str) -> Result<usize> {
        let ids: Vec<String> = {
            let keys = self.tx.open_table(KEYS)?;
            let mut ids = Vec::new();
            for entry in keys.iter()? {
                let key: ApiKey = decode(entry?.1.value())?;
                if key.revoked_at.is_none() && key.domain.as_deref() == Some(domain) {
                    ids.push(key.id);
                }
            }
            ids
        };
        let now = crate::ids::now_ms();
        for id in &ids {
            self.revoke_key(id, now)?;
        }
        Ok(ids.len())
    }
}

impl Rtx {
    /// How many times the live keys changed: a node whose table was loaded at another count
    /// reloads it.
    pub fn keys_generation(&self) -> Result<u64> {
        Ok(self.tx.open_table(META)?.get(KEYS_GENERATION)?.map_or(0, |v| v.value()))
    }

    pub fn keys(&self) -> Result<Vec<ApiKey>> {
        let table = self.tx.open_table(KEYS)?;
        let mut out = Vec::new();
        for entry in table.iter()? {
            out.push(decode(entry?.1.value())?);
        }
        Ok(out)
    }

    /// Every key that is not revoked, with its hash.
    pub fn live_keys(&self) -> Result<Vec<([u8; 32], ApiKey)>> {
        let hashes = self.tx.open_table(KEY_HASHES)?;
        let keys = self.tx.open_table(KEYS)?;
        let mut out = Vec::new();
        for entry in hashes.iter()? {
            let (hash, id) = entry?;
            let Ok(hash) = <[u8; 32]>::try_from(hash.value()) else {
                continue;
            };
            if let Some(key) = keys.get(id.value())? {
                out.push((hash, decode(key.value())?));
            }
        }
        Ok(out)
    }
}

pub fn encode_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes.iter().fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

fn decode_hex(hex: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    if hex.len() != 64 {
        return None;
    }
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}
