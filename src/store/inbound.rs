//! Received mail: a stored email per recipient mailbox, with the raw message kept beside it.

use super::emails::Email;
use super::tables::*;
use super::{Rtx, Wtx};
use crate::error::Result;

impl Wtx<'_> {
    /// Stores each copy (one per recipient mailbox) and its raw message.
    pub fn store_received(&mut self, copies: &[Email], raw: &[u8]) -> Result<()> {
        for email in copies {
            self.insert_email(email)?;
            self.tx.open_table(RAW)?.insert(email.summary.id.as_str(), raw)?;
        }
        Ok(())
    }
}

impl Rtx {
    pub fn raw_message(&self, id: &str) -> Result<Option<Vec<u8>>> {
        let table = self.tx.open_table(RAW)?;
        let found = table.get(id)?;
        Ok(found.map(|v| v.value().to_vec()))
    }

    /// Whether `domain` is hosted here.
    pub fn hosts(&self, domain: &str) -> Result<bool> {
        Ok(self.tx.open_table(DOMAINS)?.get(domain)?.is_some())
    }
}
