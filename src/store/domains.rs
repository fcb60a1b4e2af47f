//! Hosted domains, with their DKIM keys. Removing a domain and all it owns is `removal`'s.

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::tables::*;
use super::{Rtx, Tables, Wtx, decode, encode, get_json};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Domain {
    pub name: String,
    pub created_at: u64,
    pub dkim: Vec<DkimKey>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DkimKey {
    pub selector: String,
    /// `rsa-sha256` or `ed25519-sha256`.
    pub algorithm: String,
    /// Base64 of the private key: PKCS#1 DER for RSA, PKCS#8 DER for Ed25519.
    pub private_key: String,
    /// Base64 of the public key as published in the `p=` tag.
    pub public_key: String,
}

fn hosted(tx: &impl Tables, name: &str) -> Result<bool> {
    Ok(tx.table(DOMAINS)?.get(name)?.is_some())
}

impl Wtx<'_> {
    pub fn add_domain(&mut self, domain: &Domain) -> Result<()> {
        let mut table = self.tx.open_table(DOMAINS)?;
        if table.get(domain.name.as_str())?.is_some() {
            return Err(Error::Conflict(format!("domain {} already exists", domain.name)));
        }
        table.insert(domain.name.as_str(), encode(domain)?.as_slice())?;
        Ok(())
    }

    pub(super) fn domain_exists(&self, name: &str) -> Result<bool> {
        hosted(self, name)
    }

    /// Whether `domain` is hosted here, for the warmup engine inside a write.
    pub fn hosts_in_write(&self, domain: &str) -> Result<bool> {
        hosted(self, domain)
    }
}

impl Rtx {
    /// Reads these domains ahead, together, for the lookups that follow.
    pub fn domains_ahead<'n>(&self, names: impl IntoIterator<Item = &'n str>) -> Result<()> {
        self.tx.ahead(|ahead| {
            for name in names {
                ahead.key(DOMAINS, name);
            }
        })
    }

    /// Whether `domain` is hosted here.
    pub fn hosts(&self, domain: &str) -> Result<bool> {
        hosted(self, domain)
    }

    pub fn domains(&self) -> Result<Vec<Domain>> {
        let table = self.tx.open_table(DOMAINS)?;
        let mut out = Vec::new();
        for entry in table.iter()? {
            out.push(decode(entry?.1.value())?);
        }
        Ok(out)
    }

    pub fn domain(&self, name: &str) -> Result<Option<Domain>> {
        get_json(self, DOMAINS, name)
    }
}
