//! Mailboxes: addresses on a hosted domain. Stored in their API shape, so a listing is the stored
//! documents joined into an array without decoding them.

use std::ops::ControlFlow as Flow;

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::quota::{Quota, usage};
use super::tables::*;
use super::{Rtx, Tables, Wtx, encode, get_json, scan_domain};
use crate::ids::now_ms;

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mailbox {
    pub address: String,
    pub local_part: String,
    pub domain: String,
    pub display_name: Option<String>,
    pub created_at: u64,
    /// At most this many campaign, sequence and warmup sends per UTC day; more wait a day.
    #[serde(default)]
    pub daily_limit: Option<u32>,
    /// At least this long between two such sends.
    #[serde(default)]
    pub min_gap_ms: Option<u64>,
    /// The most bytes of mail it may hold (0: no limit); `None` leaves it to the server's
    /// `mailbox.quota_bytes`.
    #[serde(default)]
    pub quota_bytes: Option<u64>,
    /// The spam filter's settings, once the mailbox's owner changed them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spam_filter: Option<SpamFilter>,
    /// Addresses its received mail is forwarded to (hosted or outside).
    #[serde(default)]
    pub forward_to: Vec<String>,
    /// With `forward_to`: whether a copy also stays here (mail is kept when nothing forwards).
    #[serde(default = "yes")]
    pub keep_copy: bool,
}

fn yes() -> bool {
    true
}

/// How a mailbox's received mail is filtered (`PATCH /v1/mailboxes/{address} {spamFilter}`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpamFilter {
    pub enabled: bool,
    /// Mail scoring this or more goes to Junk.
    pub junk_threshold: f64,
    /// Mail scoring this or more is refused at the end of DATA; `None`: never.
    pub reject_threshold: Option<f64>,
}

impl Default for SpamFilter {
    fn default() -> Self {
        SpamFilter { enabled: true, junk_threshold: 5.0, reject_threshold: None }
    }
}

impl Mailbox {
    /// Whether its campaign, sequence and warmup sends are paced at all.
    pub fn is_paced(&self) -> bool {
        self.daily_limit.is_some() || self.min_gap_ms.is_some_and(|gap| gap > 0)
    }
}

/// A change to a mailbox: `None` leaves a field, `Some(None)` clears it.
#[derive(Debug, Default, Clone)]
pub struct MailboxPatch {
    pub display_name: Option<Option<String>>,
    pub daily_limit: Option<Option<u32>>,
    pub min_gap_ms: Option<Option<u64>>,
    pub quota_bytes: Option<Option<u64>>,
    pub spam_filter: Option<SpamFilterPatch>,
    pub forward_to: Option<Vec<String>>,
    pub keep_copy: Option<bool>,
}

/// A change to a mailbox's spam filter: the fields given.
#[derive(Debug, Default, Clone, Copy)]
pub struct SpamFilterPatch {
    pub enabled: Option<bool>,
    pub junk_threshold: Option<f64>,
    pub reject_threshold: Option<Option<f64>>,
}

impl SpamFilterPatch {
    fn apply(self, mut filter: SpamFilter) -> SpamFilter {
        if let Some(enabled) = self.enabled {
            filter.enabled = enabled;
        }
        if let Some(junk) = self.junk_threshold {
            filter.junk_threshold = junk;
        }
        if let Some(reject) = self.reject_threshold {
            filter.reject_threshold = reject;
        }
        filter
    }
}

fn mailbox(tx: &impl Tables, domain: &str, local: &str) -> Result<Option<Mailbox>> {
    get_json(tx, MAILBOXES, (domain, local))
}

fn quota(tx: &impl Tables, domain: &str, local: &str, default: u64) -> Result<Option<Quota>> {
    let Some(found) = mailbox(tx, domain, local)? else { return Ok(None) };
    Ok(Some(Quota::of(usage(tx, &found.address)?, found.quota_bytes, default)))
}

fn of_domain(tx: &impl Tables, domain: &str) -> Result<Vec<Mailbox>> {
    scan_domain(&tx.table(MAILBOXES)?, domain)
}

impl Wtx<'_> {
    /// Creates `local@domain`; `local` is already validated and lower-cased.
    pub fn create_mailbox(
        &mut self,
        domain: &str,
        local: &str,
        display_name: Option<String>,
    ) -> Result<Mailbox> {
        if !self.domain_exists(domain)? {
            return Err(Error::not_found("domain"));
        }
        if self.alias_exists(domain, local)? {
            return Err(Error::Conflict(format!("{local}@{domain} is an alias")));
        }
        let mut table = self.tx.open_table(MAILBOXES)?;
        if table.get((domain, local))?.is_some() {
            return Err(Error::Conflict(format!("mailbox {local}@{domain} already exists")));
        }
        let mailbox = Mailbox {
            address: format!("{local}@{domain}"),
            local_part: local.to_owned(),
            domain: domain.to_owned(),
            display_name,
            created_at: now_ms(),
            daily_limit: None,
            min_gap_ms: None,
            quota_bytes: None,
            spam_filter: None,
            forward_to: Vec::new(),
            keep_copy: true,
        };
        table.insert((domain, local), encode(&mailbox)?.as_slice())?;
        Ok(mailbox)
    }

    /// Applies `patch` to `local@domain`.
    pub fn update_mailbox(
        &mut self,
        domain: &str,
        local: &str,
        patch: MailboxPatch,
    ) -> Result<Mailbox> {
        let Some(mut mailbox) = mailbox(self, domain, local)? else {
            return Err(Error::not_found("mailbox"));
        };
        if let Some(name) = patch.display_name {
            mailbox.display_name = name;
        }
        if let Some(limit) = patch.daily_limit {
            mailbox.daily_limit = limit;
        }
        if let Some(gap) = patch.min_gap_ms {
            mailbox.min_gap_ms = gap;
        }
        if let Some(quota) = patch.quota_bytes {
            mailbox.quota_bytes = quota;
        }
        if let Some(targets) = patch.forward_to {
            mailbox.forward_to = targets;
        }
        if let Some(keep) = patch.keep_copy {
            mailbox.keep_copy = keep;
        }
        if let Some(change) = patch.spam_filter {
            mailbox.spam_filter = Some(change.apply(mailbox.spam_filter.unwrap_or_default()));
        }
        let mut table = self.tx.open_table(MAILBOXES)?;
        table.insert((domain, local), encode(&mailbox)?.as_slice())?;
        Ok(mailbox)
    }

    /// The quota of `local@domain` as this write sees it (with `default`, the server's
    /// `mailbox.quota_bytes`); `None` when there is no such mailbox.
    pub fn quota_in_write(&self, domain: &str, local: &str, default: u64) -> Result<Option<Quota>> {
        quota(self, domain, local, default)
    }

    /// Whether `size` more bytes fit the quota of `address` (lower-cased `local@domain`; see
    /// `quota_in_write`). An address that is no mailbox has no quota.
    pub fn has_room(&self, address: &str, size: u64, default: u64) -> Result<bool> {
        let (local, domain) = address.rsplit_once('@').unwrap_or((address, ""));
        Ok(quota(self, domain, local, default)?.is_none_or(|q| q.fits(size)))
    }

    /// Whether `address` (lower-cased `local@domain`) is a mailbox.
    pub fn mailbox_exists(&self, address: &str) -> Result<bool> {
        let (local, domain) = address.rsplit_once('@').unwrap_or((address, ""));
        Ok(self.tx.open_table(MAILBOXES)?.get((domain, local))?.is_some())
    }

    /// The mailbox `local@domain`, for the warmup engine inside a write.
    pub fn mailbox_in_write(&self, domain: &str, local: &str) -> Result<Option<Mailbox>> {
        mailbox(self, domain, local)
    }

    pub(super) fn domain_mailboxes(&self, domain: &str) -> Result<Vec<Mailbox>> {
        of_domain(self, domain)
    }
}

impl Rtx {
    pub fn mailboxes(&self, domain: &str) -> Result<Vec<Mailbox>> {
        of_domain(self, domain)
    }

    /// The domain's mailboxes as a JSON array, straight from the stored documents.
    pub fn mailboxes_json(&self, domain: &str) -> Result<Vec<u8>> {
        let table = self.tx.open_table(MAILBOXES)?;
        // Room for a page of ten mailboxes, so that the usual listing never grows its buffer.
        let mut out = Vec::with_capacity(2048);
        out.push(b'[');
        table.scan((domain, "").., false, |(d, _), value| {
            if d != domain {
                return Ok(Flow::Break(()));
            }
            if out.len() > 1 {
                out.push(b',');
            }
            out.extend_from_slice(value);
            Ok(Flow::Continue(()))
        })?;
        out.push(b']');
        Ok(out)
    }

    pub fn mailbox(&self, domain: &str, local: &str) -> Result<Option<Mailbox>> {
        mailbox(self, domain, local)
    }

    /// `local@domain` and its quota (see `Wtx::quota_in_write`).
    pub fn mailbox_quota(
        &self,
        domain: &str,
        local: &str,
        default: u64,
    ) -> Result<Option<(Mailbox, Quota)>> {
        let Some(found) = mailbox(self, domain, local)? else { return Ok(None) };
        let used = usage(self, &found.address)?;
        let quota = Quota::of(used, found.quota_bytes, default);
        Ok(Some((found, quota)))
    }
}
