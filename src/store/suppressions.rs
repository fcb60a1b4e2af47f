//! Suppressions: the addresses a domain must not send to, with why and since when. The first
//! reason stands; `SUPPRESSIONS_BY_TIME` orders them for paging.

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::error::Result;
use super::tables::*;
use super::{Rtx, Tables, Wtx, decode, encode, get_json};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Suppression {
    pub email: String,
    /// `hard_bounce`, `complaint`, `unsubscribed` or `manual`.
    pub reason: String,
    /// What caused it, in words (the SMTP reply of a bounce, the unsubscribe path...).
    pub source: String,
    pub unsubscribed_at: u64,
}

fn suppression(tx: &impl Tables, domain: &str, email: &str) -> Result<Option<Suppression>> {
    let key = email.to_ascii_lowercase();
    get_json(tx, SUPPRESSIONS, (domain, key.as_str()))
}

impl Wtx<'_> {
    /// Adds an address to the domain's suppression list; an existing entry is kept (its first
    /// reason and time stand). Returns whether it was new.
    pub fn suppress(
        &mut self,
        domain: &str,
        email: &str,
        reason: &str,
        source: &str,
        at: u64,
    ) -> Result<bool> {
        let key = email.to_ascii_lowercase();
        let mut table = self.tx.open_table(SUPPRESSIONS)?;
        if table.get((domain, key.as_str()))?.is_some() {
            return Ok(false);
        }
        let entry = Suppression {
            email: email.to_owned(),
            reason: reason.to_owned(),
            source: source.chars().take(500).collect(),
            unsubscribed_at: at,
        };
        table.insert((domain, key.as_str()), encode(&entry)?.as_slice())?;
        self.tx.open_table(SUPPRESSIONS_BY_TIME)?.insert((domain, at, key.as_str()), ())?;
        Ok(true)
    }

    /// Takes an address off the domain's suppression list; returns whether it was on it.
    pub fn unsuppress(&mut self, domain: &str, email: &str) -> Result<bool> {
        let key = email.to_ascii_lowercase();
        let mut table = self.tx.open_table(SUPPRESSIONS)?;
        let removed = table.remove((domain, key.as_str()))?;
        let Some(entry) = removed.map(|v| decode::<Suppression>(v.value())).transpose()? else {
            return Ok(false);
        };
        let mut by_time = self.tx.open_table(SUPPRESSIONS_BY_TIME)?;
        by_time.remove((domain, entry.unsubscribed_at, key.as_str()))?;
        Ok(true)
    }

    pub fn suppression_for(&self, domain: &str, email: &str) -> Result<Option<Suppression>> {
        suppression(self, domain, email)
    }
}

impl Rtx {
    /// Reads the suppressions of these addresses ahead, for the lookups that follow.
    pub fn suppressions_ahead<'a>(
        &self,
        domain: &str,
        emails: impl IntoIterator<Item = &'a str>,
    ) -> Result<()> {
        self.tx.ahead(|ahead| {
            for email in emails {
                ahead.key(SUPPRESSIONS, (domain, email.to_ascii_lowercase().as_str()));
            }
        })
    }

    pub fn suppression(&self, domain: &str, email: &str) -> Result<Option<Suppression>> {
        suppression(self, domain, email)
    }

    /// A page of the domain's suppressions in `(unsubscribedAt, address)` order, starting after
    /// the time `after`: `(total, items, has_more)`. A page never ends inside a group of items
    /// that share one time, so the `after` cursor skips nothing (the page may then hold more
    /// than `limit` items).
    pub fn suppressions_page(
        &self,
        domain: &str,
        after: Option<u64>,
        limit: usize,
    ) -> Result<(u64, Vec<Suppression>, bool)> {
        let index = self.tx.open_table(SUPPRESSIONS_BY_TIME)?;
        let entries = self.tx.open_table(SUPPRESSIONS)?;
        let mut total = 0u64;
        let mut keys: Vec<(u64, String)> = Vec::new();
        let mut has_more = false;
        for entry in index.range((domain, 0u64, "")..)? {
            let (key, _) = entry?;
            let (d, at, email) = key.value();
            if d != domain {
                break;
            }
            total += 1;
            if after.is_some_and(|cursor| at <= cursor) {
                continue;
            }
            let group_open = keys.last().is_some_and(|(last, _)| *last == at);
            if keys.len() < limit || group_open {
                keys.push((at, email.to_owned()));
            } else {
                has_more = true;
            }
        }
        let mut items = Vec::with_capacity(keys.len());
        for (_, email) in keys {
            if let Some(v) = entries.get((domain, email.as_str()))? {
                items.push(decode(v.value())?);
            }
        }
        Ok((total, items, has_more))
    }
}
