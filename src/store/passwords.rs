//! Mailbox app passwords: what mail clients log in with. Only the PHC string of a slow salted
//! hash is kept; the password itself is shown once, when it is made.

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::scan::scan_domain;
use super::tables::*;
use super::{Rtx, Tables, Wtx, encode};

/// App passwords one mailbox may have: a login checks each of them, and each check is slow on
/// purpose.
pub const MAX_APP_PASSWORDS: usize = 10;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AppPassword {
    pub id: String,
    pub name: String,
    /// The PHC string (`$argon2id$...`) of the password.
    pub hash: String,
    pub created_at: u64,
}

fn of_mailbox(tx: &impl Tables, address: &str) -> Result<Vec<AppPassword>> {
    scan_domain(&tx.table(APP_PASSWORDS)?, address)
}

impl Wtx<'_> {
    /// Adds an app password to the mailbox `address` (lower-cased `local@domain`).
    pub fn add_app_password(&mut self, address: &str, password: &AppPassword) -> Result<()> {
        if !self.mailbox_exists(address)? {
            return Err(Error::not_found("mailbox"));
        }
        if of_mailbox(self, address)?.len() >= MAX_APP_PASSWORDS {
            return Err(Error::Conflict(format!(
                "mailbox {address} already has {MAX_APP_PASSWORDS} app passwords; delete one first"
            )));
        }
        let mut table = self.tx.open_table(APP_PASSWORDS)?;
        table.insert((address, password.id.as_str()), encode(password)?.as_slice())?;
        Ok(())
    }

    pub fn delete_app_password(&mut self, address: &str, id: &str) -> Result<()> {
        match self.tx.open_table(APP_PASSWORDS)?.remove((address, id))? {
            Some(_) => Ok(()),
            None => Err(Error::not_found("app password")),
        }
    }

    /// Removes every app password of a mailbox (when the mailbox goes).
    pub(super) fn remove_app_passwords(&mut self, address: &str) -> Result<()> {
        let ids: Vec<String> = of_mailbox(self, address)?.into_iter().map(|p| p.id).collect();
        let mut table = self.tx.open_table(APP_PASSWORDS)?;
        for id in &ids {
            table.remove((address, id.as_str()))?;
        }
        Ok(())
    }
}

impl Rtx {
    /// The mailbox's app passwords, oldest first.
    pub fn app_passwords(&self, address: &str) -> Result<Vec<AppPassword>> {
        of_mailbox(self, address)
    }
}
