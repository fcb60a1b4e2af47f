//! A mailbox's Sieve scripts (RFC 5228), its vacation settings (RFC 5230) and Sieve's duplicate
//! tracking. Scripts are kept as uploaded: they are checked by the compiler before they are
//! stored, and compiled again at delivery (compiling is cheap next to parsing the message).
//! Several named scripts may exist (ManageSieve); at most one is active, and that one is what
//! the API shows and what delivery runs.

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::kv::ReadableTable;
use super::scan::scan_domain;
use super::tables::{SIEVE_SCRIPTS, SIEVE_SEEN, VACATIONS};
use super::{Rtx, Tables, Wtx, decode, encode};

/// Scripts one mailbox may keep.
pub const MAX_SCRIPTS: usize = 16;
/// The name the API gives the active script when the mailbox has none yet.
const DEFAULT_NAME: &str = "edgemail";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SieveScript {
    pub name: String,
    pub script: String,
    pub active: bool,
    pub updated_at: u64,
}

/// Vacation auto-reply settings of a mailbox.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Vacation {
    pub enabled: bool,
    pub subject: String,
    pub text: String,
    pub start_at: Option<u64>,
    pub end_at: Option<u64>,
    pub days: u32,
    pub updated_at: u64,
}

fn scripts(tx: &impl Tables, address: &str) -> Result<Vec<SieveScript>> {
    scan_domain(&tx.table(SIEVE_SCRIPTS)?, address)
}

impl Wtx<'_> {
    fn write_script(&mut self, address: &str, script: &SieveScript) -> Result<()> {
        let mut table = self.tx.open_table(SIEVE_SCRIPTS)?;
        table.insert((address, script.name.as_str()), encode(script)?.as_slice())?;
        Ok(())
    }

    /// Stores `script` under `name` (a new name counts against `MAX_SCRIPTS`), keeping whether
    /// it was active; `activate` makes it the active one.
    pub fn put_sieve(
        &mut self,
        address: &str,
        name: &str,
        script: &str,
        now: u64,
        activate: bool,
    ) -> Result<SieveScript> {
        if !self.mailbox_exists(address)? {
            return Err(Error::not_found("mailbox"));
        }
        let existing = scripts(self, address)?;
        let old = existing.iter().find(|s| s.name == name);
        if old.is_none() && existing.len() >= MAX_SCRIPTS {
            return Err(Error::Conflict(format!(
                "mailbox {address} already has {MAX_SCRIPTS} Sieve scripts; delete one first"
            )));
        }
        let active = activate || old.is_some_and(|s| s.active);
        if activate {
            self.set_active_sieve(address, None)?;
        }
        let stored = SieveScript {
            name: name.to_owned(),
            script: script.to_owned(),
            active,
            updated_at: now,
        };
        self.write_script(address, &stored)?;
        Ok(stored)
    }

    /// Replaces the active script (the API's one script), or makes one when none is active.
    pub fn put_active_sieve(
        &mut self,
        address: &str,
        script: &str,
        now: u64,
    ) -> Result<SieveScript> {
        let name = scripts(self, address)?
            .into_iter()
            .find(|s| s.active)
            .map_or_else(|| DEFAULT_NAME.to_owned(), |s| s.name);
        self.put_sieve(address, &name, script, now, true)
    }

    /// Makes `name` the only active script; `None` deactivates every script.
    pub fn set_active_sieve(&mut self, address: &str, name: Option<&str>) -> Result<()> {
        let all = scripts(self, address)?;
        if let Some(name) = name
            && !all.iter().any(|s| s.name == name)
        {
            return Err(Error::not_found("script"));
        }
        for mut s in all {
            let active = Some(s.name.as_str()) == name;
            if s.active != active {
                s.active = active;
                self.write_script(address, &s)?;
            }
        }
        Ok(())
    }

    /// The name of the active script, if any.
    pub fn sieve_active_name(&self, address: &str) -> Result<Option<String>> {
        Ok(scripts(self, address)?.into_iter().find(|s| s.active).map(|s| s.name))
    }

    pub fn delete_sieve(&mut self, address: &str, name: &str) -> Result<()> {
        match self.tx.open_table(SIEVE_SCRIPTS)?.remove((address, name))? {
            Some(_) => Ok(()),
            None => Err(Error::not_found("script")),
        }
    }

    /// Deletes the active script (what the API's DELETE means).
    pub fn delete_active_sieve(&mut self, address: &str) -> Result<()> {
        match scripts(self, address)?.into_iter().find(|s| s.active) {
            Some(s) => self.delete_sieve(address, &s.name),
            None => Err(Error::not_found("Sieve script")),
        }
    }

    pub fn rename_sieve(&mut self, address: &str, from: &str, to: &str) -> Result<()> {
        let all = scripts(self, address)?;
        if all.iter().any(|s| s.name == to) {
            return Err(Error::Conflict(format!("a script named {to} exists")));
        }
        let Some(mut script) = all.into_iter().find(|s| s.name == from) else {
            return Err(Error::not_found("script"));
        };
        self.delete_sieve(address, from)?;
        to.clone_into(&mut script.name);
        self.write_script(address, &script)
    }

    pub fn put_vacation(&mut self, address: &str, vacation: &Vacation) -> Result<()> {
        if !self.mailbox_exists(address)? {
            return Err(Error::not_found("mailbox"));
        }
        self.tx.open_table(VACATIONS)?.insert(address, encode(vacation)?.as_slice())?;
        Ok(())
    }

    pub fn delete_vacation(&mut self, address: &str) -> Result<()> {
        match self.tx.open_table(VACATIONS)?.remove(address)? {
            Some(_) => Ok(()),
            None => Err(Error::not_found("vacation")),
        }
    }

    /// Sieve's duplicate test: whether `id` was seen for `address` and has not expired; when
    /// not, it is recorded until `until`.
    pub fn sieve_seen(&mut self, address: &str, id: &str, now: u64, until: u64) -> Result<bool> {
        let mut table = self.tx.open_table(SIEVE_SEEN)?;
        if let Some(expiry) = table.get((address, id))?.map(|v| v.value())
            && expiry > now
        {
            return Ok(true);
        }
        table.insert((address, id), until)?;
        Ok(false)
    }

    /// Forgets scripts, vacation and duplicates of a mailbox (when the mailbox goes).
    pub(super) fn remove_sieve(&mut self, address: &str) -> Result<()> {
        for s in scripts(self, address)? {
            self.delete_sieve(address, &s.name)?;
        }
        self.tx.open_table(VACATIONS)?.remove(address)?;
        let seen: Vec<String> = {
            let table = self.tx.open_table(SIEVE_SEEN)?;
            let mut ids = Vec::new();
            for entry in table.range((address, "")..)? {
                let (key, _) = entry?;
                if key.value().0 != address {
                    break;
                }
                ids.push(key.value().1.to_owned());
            }
            ids
        };
        let mut table = self.tx.open_table(SIEVE_SEEN)?;
        for id in &seen {
            table.remove((address, id.as_str()))?;
        }
        Ok(())
    }
}

impl Rtx {
    /// Every script of the mailbox, by name.
    pub fn sieve_scripts(&self, address: &str) -> Result<Vec<SieveScript>> {
        scripts(self, address)
    }

    /// The active script of the mailbox.
    pub fn active_sieve(&self, address: &str) -> Result<Option<SieveScript>> {
        Ok(scripts(self, address)?.into_iter().find(|s| s.active))
    }

    pub fn vacation(&self, address: &str) -> Result<Option<Vacation>> {
        let table = self.table(VACATIONS)?;
        match table.get(address)? {
            Some(v) => Ok(Some(decode(v.value())?)),
            None => Ok(None),
        }
    }
}
