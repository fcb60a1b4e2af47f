//! What our MX saw of other domains' DMARC, kept for the aggregate reports we send them
//! (RFC 7489 section 7.2): per hosted domain that received the mail, per reporting period and
//! per policy domain, one row per distinct source and outcome with its message count. A group's
//! head row (`policy_domain` + `HEAD`) holds the policy last published and how many rows the
//! group has, so a flood of distinct sources cannot grow a group past `MAX_ROWS`.
//!
//! Keyed `(hosted domain, period start in Unix seconds, policy domain + suffix)`: the groups of
//! past periods are one scan, and a domain's rows go with it (`removal`).

use std::ops::ControlFlow as Flow;

use serde::{Deserialize, Serialize};

use super::error::Result;
use super::kv::ReadableTable;
use super::tables::DMARC_SEEN;
use super::{Rtx, Tables, Wtx, decode, encode};

/// Rows one report may carry: distinct source addresses and outcomes within a period.
pub const MAX_ROWS: u64 = 1_000;

/// Ends a group's head key; a row key ends with its signature instead. A newline cannot
/// appear in a domain name, so the two never collide and sort head first.
const HEAD: &str = "\n";

/// The DMARC record a policy domain published, as a report restates it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DmarcPolicy {
    /// Where the record was found: the From domain or its organizational domain.
    pub domain: String,
    /// `r` or `s`.
    pub adkim: String,
    pub aspf: String,
    /// `none`, `quarantine` or `reject`.
    pub p: String,
    pub sp: String,
    pub pct: u8,
    /// Failure reporting options (`fo`: `0`, `1`, `d`, `s`).
    pub fo: String,
    /// The `rua` destinations: each URI and its size limit in bytes (0: none given).
    pub rua: Vec<(String, u64)>,
}

/// One DKIM signature's result, as the report's `auth_results` lists it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenDkim {
    pub domain: String,
    pub selector: String,
    /// `pass`, `fail`, `neutral`, `temperror`, `permerror` or `none`.
    pub result: String,
}

/// What one message showed: the row it counts in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenRow {
    pub source_ip: String,
    pub header_from: String,
    pub envelope_from: String,
    /// What we did: `none`, `quarantine` or `reject`.
    pub disposition: String,
    /// Why it differs from the policy, when it does (`sampled_out`, `trusted_forwarder`,
    /// `local_policy`).
    pub reason: Option<String>,
    /// Whether an aligned DKIM signature, an aligned SPF domain passed.
    pub dkim_aligned: bool,
    pub spf_aligned: bool,
    pub dkim: Vec<SeenDkim>,
    /// The SPF domain, its scope (`mfrom` or `helo`) and result.
    pub spf: (String, String, String),
}

/// A message seen: the policy that asked for a report, and its row.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DmarcSeen {
    pub policy: DmarcPolicy,
    pub row: SeenRow,
}

#[derive(Serialize, Deserialize)]
struct Head {
    policy: DmarcPolicy,
    rows: u64,
}

#[derive(Serialize, Deserialize)]
struct Counted {
    row: SeenRow,
    count: u64,
}

/// A period's rows about one policy domain, received by one hosted domain: one report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DmarcGroup {
    pub reporter: String,
    pub period: u64,
    pub policy: DmarcPolicy,
    pub rows: Vec<(SeenRow, u64)>,
}

impl DmarcGroup {
    fn head_key(&self) -> String {
        format!("{}{HEAD}", self.policy.domain)
    }
}

/// A row's key within its group: the policy domain and a digest of the row.
fn row_key(policy_domain: &str, row: &SeenRow) -> Result<String> {
    let digest = ring::digest::digest(&ring::digest::SHA256, &encode(row)?);
    let hex: String = digest.as_ref()[..12].iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!("{policy_domain}\n{hex}"))
}

impl Wtx<'_> {
    /// Counts a message `reporter` received in the period starting at `period`. A new row
    /// beyond `MAX_ROWS` of its group is not kept (the report stays a sample of the period).
    pub fn note_dmarc(&mut self, reporter: &str, period: u64, seen: &DmarcSeen) -> Result<()> {
        let mut table = self.tx.open_table(DMARC_SEEN)?;
        let head_key = format!("{}{HEAD}", seen.policy.domain);
        let key = row_key(&seen.policy.domain, &seen.row)?;
        let head: Option<Head> = table
            .get((reporter, period, head_key.as_str()))?
            .map(|v| decode(v.value()))
            .transpose()?;
        let mut head = head.unwrap_or(Head { policy: seen.policy.clone(), rows: 0 });
        let counted: Option<Counted> =
            table.get((reporter, period, key.as_str()))?.map(|v| decode(v.value())).transpose()?;
        let counted = match counted {
            Some(c) => Counted { count: c.count.saturating_add(1), ..c },
            None if head.rows >= MAX_ROWS => return Ok(()),
            None => {
                head.rows += 1;
                Counted { row: seen.row.clone(), count: 1 }
            }
        };
        // The newest record is the one the report restates.
        head.policy = seen.policy.clone();
        table.insert((reporter, period, head_key.as_str()), encode(&head)?.as_slice())?;
        table.insert((reporter, period, key.as_str()), encode(&counted)?.as_slice())?;
        Ok(())
    }

    /// Removes a group that was reported (or cannot be); whether it was still there, so that
    /// of two nodes sending the same report only one goes on.
    pub fn take_dmarc_group(&mut self, group: &DmarcGroup) -> Result<bool> {
        let mut table = self.tx.open_table(DMARC_SEEN)?;
        let head = group.head_key();
        let (reporter, period) = (group.reporter.as_str(), group.period);
        if table.get((reporter, period, head.as_str()))?.is_none() {
            return Ok(false);
        }
        // The head sorts first; the rows follow it, all sharing the policy domain and `\n`.
        let end = format!("{}\u{b}", group.policy.domain);
        table.retain_in(
            (reporter, period, head.as_str())..(reporter, period, end.as_str()),
            |_, _| false,
        )?;
        Ok(true)
    }

    /// Drops what `domain` saw, when it is removed.
    pub(super) fn drop_dmarc_seen(&mut self, domain: &str) -> Result<()> {
        let mut table = self.tx.open_table(DMARC_SEEN)?;
        table.retain_in((domain, 0, "")..=(domain, u64::MAX, ""), |_, _| false)
    }
}

impl Rtx {
    /// Up to `limit` groups of periods that started before `before`, in key order.
    pub fn dmarc_due(&self, before: u64, limit: usize) -> Result<Vec<DmarcGroup>> {
        let table = self.table(DMARC_SEEN)?;
        let mut groups: Vec<DmarcGroup> = Vec::new();
        table.scan::<(&str, u64, &str)>(.., false, |(reporter, period, key), value| {
            if period >= before {
                return Ok(Flow::Continue(()));
            }
            if let Some(policy_domain) = key.strip_suffix(HEAD) {
                if groups.len() == limit {
                    return Ok(Flow::Break(()));
                }
                let head: Head = decode(value)?;
                let mut policy = head.policy;
                policy.domain = policy_domain.to_owned();
                groups.push(DmarcGroup {
                    reporter: reporter.to_owned(),
                    period,
                    policy,
                    rows: Vec::new(),
                });
            } else if let Some(group) = groups.last_mut()
                && group.reporter == reporter
                && group.period == period
                && key.split_once('\n').is_some_and(|(d, _)| d == group.policy.domain)
            {
                let counted: Counted = decode(value)?;
                group.rows.push((counted.row, counted.count));
            }
            Ok(Flow::Continue(()))
        })?;
        Ok(groups)
    }
}
