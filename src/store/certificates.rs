//! Certificates obtained over ACME and the ACME account they were ordered with. They live in
//! the store (not in files) so that a backup holds them and every node sharing a PostgreSQL
//! store serves the same certificate and orders renewals on one account.

use serde::{Deserialize, Serialize};

use super::error::Result;
use super::kv::ReadableTable;
use super::tables::*;
use super::{Rtx, Wtx};

/// One certificate and its key, as the ACME server issued it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StoredCertificate {
    /// The names it was ordered for (its subject alternative names).
    pub names: Vec<String>,
    /// The chain in PEM: the leaf first, then the intermediates.
    pub chain_pem: String,
    /// The leaf's private key in PEM.
    pub key_pem: String,
    /// Its validity (Unix seconds), read from the leaf when it was stored.
    pub not_before: u64,
    pub not_after: u64,
}

/// An ACME challenge answer in flight, put up by the node that orders so that every node
/// sharing the store can answer the CA's validation, whichever node the CA reaches.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StoredChallenge {
    /// HTTP-01: the token's key authorization. TLS-ALPN-01: the SHA-256 digest of the key
    /// authorization, in hex (each node makes its own challenge certificate from it).
    pub answer: String,
    /// Unix ms after which it is stale: an order whose node died never takes it down.
    pub expires: u64,
}

/// Keys of the one table: `account:<directory URL>`, `cert:<group>` and
/// `challenge:<http01|alpn>:<token or name>`.
const ACCOUNT: &str = "account:";
const CERT: &str = "cert:";
const CHALLENGE: &str = "challenge:";
/// At most this many challenge rows are read: a CA asks for one per name of an order.
const MAX_CHALLENGES: usize = 1000;

impl Wtx<'_> {
    /// Keeps the credentials (JSON, with the private key) of the account on `directory`.
    pub fn put_acme_account(&mut self, directory: &str, credentials: &[u8]) -> Result<()> {
        let key = format!("{ACCOUNT}{directory}");
        self.tx.open_table(ACME)?.insert(key.as_str(), credentials)?;
        Ok(())
    }

    /// Keeps (or replaces) the certificate of a group of names.
    pub fn put_certificate(&mut self, group: &str, cert: &StoredCertificate) -> Result<()> {
        let key = format!("{CERT}{group}");
        let value = serde_json::to_vec(cert).map_err(super::Error::internal)?;
        self.tx.open_table(ACME)?.insert(key.as_str(), value.as_slice())?;
        Ok(())
    }

    /// Puts up (`Some`) or takes down (`None`) the answer of a challenge, by `id`
    /// (`http01:<token>` or `alpn:<name>`).
    pub fn set_acme_challenge(&mut self, id: &str, answer: Option<&StoredChallenge>) -> Result<()> {
        let key = format!("{CHALLENGE}{id}");
        let mut table = self.tx.open_table(ACME)?;
        match answer {
            Some(answer) => {
                let value = serde_json::to_vec(answer).map_err(super::Error::internal)?;
                table.insert(key.as_str(), value.as_slice())?;
            }
            None => {
                table.remove(key.as_str())?;
            }
        }
        Ok(())
    }

    /// Takes down the stale challenge answers (of orders whose node died); answers how many.
    pub fn drop_stale_acme_challenges(&mut self, now_ms: u64) -> Result<usize> {
        let mut table = self.tx.open_table(ACME)?;
        let mut stale = Vec::new();
        for entry in table.range(CHALLENGE..)?.take(MAX_CHALLENGES) {
            let (key, value) = entry?;
            if !key.value().starts_with(CHALLENGE) {
                break;
            }
            let fresh = serde_json::from_slice::<StoredChallenge>(value.value())
                .is_ok_and(|c| c.expires > now_ms);
            if !fresh {
                stale.push(key.value().to_owned());
            }
        }
        for key in &stale {
            table.remove(key.as_str())?;
        }
        Ok(stale.len())
    }
}

impl Rtx {
    pub fn acme_account(&self, directory: &str) -> Result<Option<Vec<u8>>> {
        let key = format!("{ACCOUNT}{directory}");
        let table = self.tx.open_table(ACME)?;
        let found = table.get(key.as_str())?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    /// Every stored certificate by group, in group order. A record that does not decode is left
    /// out (and ordered again), never an error for the listeners.
    pub fn certificates(&self) -> Result<Vec<(String, StoredCertificate)>> {
        let table = self.tx.open_table(ACME)?;
        let mut out = Vec::new();
        for entry in table.range(CERT..)? {
            let (key, value) = entry?;
            let Some(group) = key.value().strip_prefix(CERT).map(str::to_owned) else {
                break;
            };
            if let Ok(cert) = serde_json::from_slice(value.value()) {
                out.push((group, cert));
            }
        }
        Ok(out)
    }

    /// The challenge answers in flight by id, stale ones left out.
    pub fn acme_challenges(&self, now_ms: u64) -> Result<Vec<(String, StoredChallenge)>> {
        let table = self.tx.open_table(ACME)?;
        let mut out = Vec::new();
        for entry in table.range(CHALLENGE..)?.take(MAX_CHALLENGES) {
            let (key, value) = entry?;
            let Some(id) = key.value().strip_prefix(CHALLENGE).map(str::to_owned) else {
                break;
            };
            match serde_json::from_slice::<StoredChallenge>(value.value()) {
                Ok(c) if c.expires > now_ms => out.push((id, c)),
                _ => {}
            }
        }
        Ok(out)
    }
}
