//! Warmup enrollments: one record per mailbox holding its settings and counters. The rules that
//! change them live in `crate::warmup`; this file only reads and writes the records, and lends
//! that module the few lookups it needs inside a write.

use redb::ReadableTable;
use serde::{Deserialize, Serialize};

use super::emails::Email;
use super::mailboxes::Mailbox;
use super::tables::*;
use super::{Rtx, Wtx, decode, encode, scan_domain};
use crate::error::Result;

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Warmup {
    /// Full address.
    pub mailbox: String,
    pub enabled: bool,
    pub start_limit: u32,
    pub target_limit: u32,
    pub ramp_days: u32,
    pub reply_rate: f64,
    pub enrolled_at: u64,
    /// The UTC day (days since the Unix epoch) the `*_today` counters belong to.
    pub today: u64,
    pub sent_today: u32,
    pub received_today: u32,
    pub replied_today: u32,
    pub sent_total: u64,
    pub received_total: u64,
    pub replied_total: u64,
    pub delivered_total: u64,
    pub bounced_total: u64,
    pub landed_total: u64,
    /// No new conversation starts before this time.
    pub next_send_at: u64,
    /// Ids of warmup messages sent whose delivery is not final yet.
    pub pending: Vec<String>,
}

impl Warmup {
    fn key(&self) -> (&str, &str) {
        let (local, domain) = self.mailbox.rsplit_once('@').unwrap_or((self.mailbox.as_str(), ""));
        (domain, local)
    }
}

impl Wtx<'_> {
    pub fn warmup(&self, domain: &str, local: &str) -> Result<Option<Warmup>> {
        let table = self.tx.open_table(WARMUP)?;
        let found = table.get((domain, local))?;
        found.map(|v| decode(v.value())).transpose()
    }

    pub fn put_warmup(&mut self, record: &Warmup) -> Result<()> {
        self.tx.open_table(WARMUP)?.insert(record.key(), encode(record)?.as_slice())?;
        Ok(())
    }

    /// Drops the enrollment of a mailbox (when the mailbox is deleted).
    pub(super) fn remove_warmup(&mut self, domain: &str, local: &str) -> Result<()> {
        self.tx.open_table(WARMUP)?.remove((domain, local))?;
        Ok(())
    }

    /// Any stored email by id, for warmup bookkeeping inside a write.
    pub fn email_in_write(&self, id: &str) -> Result<Option<Email>> {
        self.load_email(id)
    }

    pub fn mailbox_in_write(&self, domain: &str, local: &str) -> Result<Option<Mailbox>> {
        let table = self.tx.open_table(MAILBOXES)?;
        let found = table.get((domain, local))?;
        found.map(|v| decode(v.value())).transpose()
    }

    pub fn hosts_in_write(&self, domain: &str) -> Result<bool> {
        self.domain_exists(domain)
    }
}

impl Rtx {
    pub fn warmup(&self, domain: &str, local: &str) -> Result<Option<Warmup>> {
        let table = self.tx.open_table(WARMUP)?;
        let found = table.get((domain, local))?;
        found.map(|v| decode(v.value())).transpose()
    }

    /// The domain's enrollments, in local-part order.
    pub fn warmups(&self, domain: &str) -> Result<Vec<Warmup>> {
        scan_domain(&self.tx.open_table(WARMUP)?, domain)
    }

    /// Every enrollment of every domain.
    pub fn all_warmups(&self) -> Result<Vec<Warmup>> {
        let table = self.tx.open_table(WARMUP)?;
        let mut out = Vec::new();
        for entry in table.iter()? {
            let (_, value) = entry?;
            out.push(decode(value.value())?);
        }
        Ok(out)
    }
}
