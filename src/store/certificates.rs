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

/// Keys of the one table: `account:<directory URL>` and `cert:<group>`.
const ACCOUNT: &str = "account:";
const CERT: &str = "cert:";

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
}
