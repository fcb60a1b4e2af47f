//! Secrets generated on first start and kept for the life of the file (the tracking-token key).

use super::error::{Error, Result};
use super::kv::ReadableTable;
use super::tables::*;
use super::{Rtx, Wtx};

impl Wtx<'_> {
    pub fn put_secret(&mut self, name: &str, value: &[u8]) -> Result<()> {
        self.tx.open_table(SECRETS)?.insert(name, value)?;
        Ok(())
    }
}

impl Rtx {
    pub fn secret(&self, name: &str) -> Result<Vec<u8>> {
        self.optional_secret(name)?.ok_or_else(|| Error::internal(format!("secret {name} missing")))
    }

    pub fn optional_secret(&self, name: &str) -> Result<Option<Vec<u8>>> {
        let table = self.tx.open_table(SECRETS)?;
        let found = table.get(name)?;
        Ok(found.map(|v| v.value().to_vec()))
    }
}
