//! Aliases: addresses on a hosted domain that are no mailbox but pass their mail on to targets
//! (hosted mailboxes, other aliases, outside addresses). The local part `*` is the domain's
//! catch-all. Stored in their API shape, like mailboxes, so a page is the documents joined.

use std::ops::{Bound, ControlFlow as Flow};

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::kv::ReadableTable;
use super::scan::JsonPage;
use super::tables::*;
use super::{Rtx, Tables, Wtx, drain_domain, encode, get_json};
use crate::ids::now_ms;

/// The local part of the catch-all alias.
pub const CATCH_ALL: &str = "*";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Alias {
    /// `local@domain`, lower-cased (`*@domain` for the catch-all).
    pub address: String,
    /// Lower-cased full addresses, in the order given, without repeats.
    pub targets: Vec<String>,
    pub created_at: u64,
}

fn alias(tx: &impl Tables, domain: &str, local: &str) -> Result<Option<Alias>> {
    get_json(tx, ALIASES, (domain, local))
}

impl Wtx<'_> {
    /// Creates `local@domain` (validated, lower-cased); 409 when a mailbox or an alias has it.
    pub fn create_alias(
        &mut self,
        domain: &str,
        local: &str,
        targets: Vec<String>,
    ) -> Result<Alias> {
        if !self.domain_exists(domain)? {
            return Err(Error::not_found("domain"));
        }
        if self.tx.open_table(MAILBOXES)?.get((domain, local))?.is_some() {
            return Err(Error::Conflict(format!("{local}@{domain} is a mailbox")));
        }
        let mut table = self.tx.open_table(ALIASES)?;
        if table.get((domain, local))?.is_some() {
            return Err(Error::Conflict(format!("alias {local}@{domain} already exists")));
        }
        let alias = Alias { address: format!("{local}@{domain}"), targets, created_at: now_ms() };
        table.insert((domain, local), encode(&alias)?.as_slice())?;
        Ok(alias)
    }

    /// Replaces the targets of `local@domain`.
    pub fn update_alias(
        &mut self,
        domain: &str,
        local: &str,
        targets: Vec<String>,
    ) -> Result<Alias> {
        let Some(mut found) = alias(self, domain, local)? else {
            return Err(Error::not_found("alias"));
        };
        found.targets = targets;
        self.tx.open_table(ALIASES)?.insert((domain, local), encode(&found)?.as_slice())?;
        Ok(found)
    }

    pub fn delete_alias(&mut self, domain: &str, local: &str) -> Result<()> {
        if self.tx.open_table(ALIASES)?.remove((domain, local))?.is_none() {
            return Err(Error::not_found("alias"));
        }
        Ok(())
    }

    /// Whether `local@domain` is an alias: a mailbox may not be created over one.
    pub(super) fn alias_exists(&self, domain: &str, local: &str) -> Result<bool> {
        Ok(self.tx.open_table(ALIASES)?.get((domain, local))?.is_some())
    }

    pub(super) fn remove_domain_aliases(&mut self, domain: &str) -> Result<usize> {
        drain_domain(&mut self.tx.open_table(ALIASES)?, domain)
    }
}

impl Rtx {
    pub fn alias(&self, domain: &str, local: &str) -> Result<Option<Alias>> {
        alias(self, domain, local)
    }

    /// Up to `limit` aliases of `domain` after the local part `after`, in local-part order, as a
    /// JSON array; and the last local part when more follow.
    pub fn aliases_page_json(
        &self,
        domain: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<u8>, Option<String>)> {
        let table = self.tx.open_table(ALIASES)?;
        let lo = match after {
            Some(local) => Bound::Excluded((domain, local)),
            None => Bound::Included((domain, "")),
        };
        let mut page = JsonPage::new(limit, 128 * limit.min(100) + 2);
        let mut last = String::new();
        table.scan::<(&str, &str)>((lo, Bound::Unbounded), false, |(d, local), value| {
            if d != domain || page.add(value).is_break() {
                return Ok(Flow::Break(()));
            }
            last.clear();
            last.push_str(local);
            Ok(Flow::Continue(()))
        })?;
        let (out, more) = page.finish();
        Ok((out, more.then_some(last)))
    }
}
