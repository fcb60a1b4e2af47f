//! Aggregate reports other mail systems send about a hosted domain: DMARC aggregate reports
//! (RFC 7489 appendix C) and TLS-RPT reports (RFC 8460), as parsed when they arrived. Keyed
//! `(domain, receivedAt, id)`, so the reports of the last N days are one range read; reports
//! older than `KEEP_MS` go when a newer one of the domain is stored. A report is known by its
//! reporter and id (`REPORTS_SEEN`): a copy that arrives again within `KEEP_MS` is not stored.

use std::collections::BTreeMap;
use std::ops::ControlFlow as Flow;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::error::Result;
use super::kv::{ReadableTable, TableDefinition};
use super::tables::{DMARC_REPORTS, REPORTS_SEEN, TLS_REPORTS};
use super::{Rtx, Tables, Wtx, decode, encode};

/// How long a report is kept: the longest window the summaries offer (90 days).
pub const KEEP_MS: u64 = 90 * 86_400_000;

/// A DMARC aggregate report as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DmarcReport {
    pub org: String,
    pub report_id: String,
    /// The period it covers, Unix seconds.
    pub begin: u64,
    pub end: u64,
    /// The domain whose published policy it reports on.
    pub policy_domain: String,
    pub records: Vec<DmarcRecord>,
}

/// One row of a DMARC report: messages from one source with one outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DmarcRecord {
    pub source_ip: String,
    pub count: u64,
    /// `none`, `quarantine` or `reject`.
    pub disposition: String,
    /// The DMARC-aligned results the receiver evaluated: `pass` or `fail`.
    pub dkim: String,
    pub spf: String,
    pub header_from: String,
}

impl DmarcRecord {
    /// DMARC passes when either aligned mechanism does (RFC 7489 section 6.6.2).
    pub fn dmarc_pass(&self) -> bool {
        self.dkim == "pass" || self.spf == "pass"
    }
}

/// A TLS-RPT report as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsReport {
    pub org: String,
    pub report_id: String,
    pub policies: Vec<TlsPolicy>,
}

/// The sessions of one policy in a TLS-RPT report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TlsPolicy {
    pub policy_domain: String,
    /// `sts`, `tlsa` or `no-policy-found`.
    pub policy_type: String,
    pub success: u64,
    pub failure: u64,
    /// Failed sessions by result type (`certificate-expired`, `starttls-not-supported`, ...).
    pub failures: BTreeMap<String, u64>,
}

type ReportTable = TableDefinition<'static, (&'static str, u64, &'static str), &'static [u8]>;

/// Every key of `REPORTS_SEEN` starts with its kind (`dmarc` or `tls`): this bounds a domain's.
const SEEN_END: &str = "\u{7f}";

impl Wtx<'_> {
    /// Stores a DMARC report for `domain` unless the same one (reporter, report id, policy
    /// domain) already was; drops the domain's reports past `KEEP_MS`. Answers whether stored.
    pub fn add_dmarc_report(
        &mut self,
        domain: &str,
        id: &str,
        now: u64,
        r: &DmarcReport,
    ) -> Result<bool> {
        let seen = format!("dmarc\n{}\n{}\n{}", r.org, r.report_id, r.policy_domain);
        self.add_report(DMARC_REPORTS, (domain, &seen), id, now, &encode(r)?)
    }

    /// Stores a TLS-RPT report for `domain`, as `add_dmarc_report` (known by reporter and id).
    pub fn add_tls_report(
        &mut self,
        domain: &str,
        id: &str,
        now: u64,
        r: &TlsReport,
    ) -> Result<bool> {
        let seen = format!("tls\n{}\n{}", r.org, r.report_id);
        self.add_report(TLS_REPORTS, (domain, &seen), id, now, &encode(r)?)
    }

    /// Drops every report `domain` received, when it is removed.
    pub(super) fn drop_aggregate_reports(&mut self, domain: &str) -> Result<()> {
        for def in [DMARC_REPORTS, TLS_REPORTS] {
            let mut table = self.tx.open_table(def)?;
            table.retain_in((domain, 0, "")..=(domain, u64::MAX, ""), |_, _| false)?;
        }
        let mut seen = self.tx.open_table(REPORTS_SEEN)?;
        seen.retain_in((domain, "")..(domain, SEEN_END), |_, _| false)?;
        Ok(())
    }

    fn add_report(
        &mut self,
        def: ReportTable,
        (domain, seen): (&str, &str),
        id: &str,
        now: u64,
        doc: &[u8],
    ) -> Result<bool> {
        let cutoff = now.saturating_sub(KEEP_MS);
        let mut known = self.tx.open_table(REPORTS_SEEN)?;
        let first = known.get((domain, seen))?.map(|v| v.value());
        if first.is_some_and(|at| at >= cutoff) {
            return Ok(false);
        }
        known.insert((domain, seen), now)?;
        known.retain_in((domain, "")..(domain, SEEN_END), |_, at| at >= cutoff)?;
        drop(known);
        let mut table = self.tx.open_table(def)?;
        table.insert((domain, now, id), doc)?;
        table.retain_in((domain, 0, "")..(domain, cutoff, ""), |_, _| false)?;
        Ok(true)
    }
}

impl Rtx {
    /// The DMARC reports `domain` received at or after `since` (Unix ms), oldest first.
    pub fn dmarc_reports(&self, domain: &str, since: u64) -> Result<Vec<DmarcReport>> {
        reports(self, DMARC_REPORTS, domain, since)
    }

    /// The TLS-RPT reports `domain` received at or after `since`, oldest first.
    pub fn tls_reports(&self, domain: &str, since: u64) -> Result<Vec<TlsReport>> {
        reports(self, TLS_REPORTS, domain, since)
    }
}

fn reports<T: DeserializeOwned>(
    tx: &impl Tables,
    def: ReportTable,
    domain: &str,
    since: u64,
) -> Result<Vec<T>> {
    let table = tx.table(def)?;
    let mut out = Vec::new();
    table.scan((domain, since, "").., false, |(d, _, _), value| {
        if d != domain {
            return Ok(Flow::Break(()));
        }
        out.push(decode(value)?);
        Ok(Flow::Continue(()))
    })?;
    Ok(out)
}
