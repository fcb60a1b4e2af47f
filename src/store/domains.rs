//! Hosted domains, with their DKIM keys. Removing a domain removes everything that belongs to it.

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::tables::*;
use super::{Rtx, Wtx, decode, encode};
use crate::error::{Error, Result};

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

/// What a domain removal took with it.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    pub mailboxes: usize,
    pub emails: usize,
    pub contacts: usize,
    pub sender_groups: usize,
    pub keys_revoked: usize,
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

    pub fn remove_domain(&mut self, name: &str) -> Result<Removed> {
        if self.tx.open_table(DOMAINS)?.remove(name)?.is_none() {
            return Err(Error::not_found("domain"));
        }
        let mut removed = Removed::default();
        for mailbox in self.domain_mailboxes(name)? {
            removed.emails += self.delete_mailbox_contents(&mailbox.address)?;
            removed.mailboxes += 1;
        }
        removed.contacts = self.remove_domain_contacts(name)?;
        self.remove_domain_sequences(name)?;
        removed.sender_groups = drain_domain(&mut self.tx.open_table(GROUPS)?, name)?;
        drain_domain(&mut self.tx.open_table(MAILBOXES)?, name)?;
        drain_domain(&mut self.tx.open_table(WARMUP)?, name)?;
        removed.keys_revoked = self.revoke_domain_keys(name)?;
        Ok(removed)
    }

    pub(super) fn domain_exists(&self, name: &str) -> Result<bool> {
        Ok(self.tx.open_table(DOMAINS)?.get(name)?.is_some())
    }
}

/// Removes every entry of a (domain, _) keyed table; returns how many.
pub(super) fn drain_domain<V: redb::Value + 'static>(
    table: &mut redb::Table<(&'static str, &'static str), V>,
    domain: &str,
) -> Result<usize> {
    let mut keys = Vec::new();
    for entry in table.range((domain, "")..)? {
        let (key, _) = entry?;
        let (d, k) = key.value();
        if d != domain {
            break;
        }
        keys.push(k.to_owned());
    }
    for key in &keys {
        table.remove((domain, key.as_str()))?;
    }
    Ok(keys.len())
}

impl Rtx {
    pub fn domains(&self) -> Result<Vec<Domain>> {
        let table = self.tx.open_table(DOMAINS)?;
        let mut out = Vec::new();
        for entry in table.iter()? {
            out.push(decode(entry?.1.value())?);
        }
        Ok(out)
    }

    pub fn domain(&self, name: &str) -> Result<Option<Domain>> {
        let table = self.tx.open_table(DOMAINS)?;
        let found = table.get(name)?;
        found.map(|v| decode(v.value())).transpose()
    }
}
