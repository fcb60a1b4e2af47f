//! The summaries `GET /v1/dmarc-reports` and `GET /v1/tls-reports` answer (their shapes are
//! contracts: extensions.md, "Reports"): DMARC results per source IP over every report of the
//! window, and TLS sessions per policy.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::store::{DmarcReport, TlsReport};

/// Sources listed at most, the busiest first: a window of reports for a large domain names
/// many addresses, and the answer stays small.
pub const MAX_SOURCES: usize = 1_000;

#[derive(Debug, Default, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct PassFail {
    pub pass: u64,
    pub fail: u64,
}

impl PassFail {
    fn add(&mut self, pass: bool, n: u64) {
        let slot = if pass { &mut self.pass } else { &mut self.fail };
        *slot = slot.saturating_add(n);
    }
}

#[derive(Debug, Default, Clone, Copy, Serialize, PartialEq, Eq)]
pub struct Dispositions {
    pub none: u64,
    pub quarantine: u64,
    pub reject: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub source_ip: String,
    pub count: u64,
    pub spf: PassFail,
    pub dkim: PassFail,
    pub dmarc: PassFail,
    pub disposition: Dispositions,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Reporter {
    pub org: String,
    pub reports: u64,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct DmarcSummary {
    pub reports: u64,
    pub messages: u64,
    pub reporters: Vec<Reporter>,
    pub sources: Vec<Source>,
}

/// Sums `reports` per reporting organization and per source IP, busiest first.
pub fn dmarc(reports: &[DmarcReport]) -> DmarcSummary {
    let mut reporters: BTreeMap<&str, u64> = BTreeMap::new();
    let mut sources: HashMap<&str, Source> = HashMap::new();
    let mut messages = 0u64;
    for report in reports {
        *reporters.entry(report.org.as_str()).or_default() += 1;
        for r in &report.records {
            messages = messages.saturating_add(r.count);
            let s = sources.entry(r.source_ip.as_str()).or_insert_with(|| Source {
                source_ip: r.source_ip.clone(),
                count: 0,
                spf: PassFail::default(),
                dkim: PassFail::default(),
                dmarc: PassFail::default(),
                disposition: Dispositions::default(),
            });
            s.count = s.count.saturating_add(r.count);
            s.spf.add(r.spf == "pass", r.count);
            s.dkim.add(r.dkim == "pass", r.count);
            s.dmarc.add(r.dmarc_pass(), r.count);
            let d = &mut s.disposition;
            let slot = match r.disposition.as_str() {
                "quarantine" => &mut d.quarantine,
                "reject" => &mut d.reject,
                _ => &mut d.none,
            };
            *slot = slot.saturating_add(r.count);
        }
    }
    let mut sources: Vec<Source> = sources.into_values().collect();
    sources.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.source_ip.cmp(&b.source_ip)));
    sources.truncate(MAX_SOURCES);
    let mut reporters: Vec<Reporter> = reporters
        .into_iter()
        .map(|(org, reports)| Reporter { org: org.to_owned(), reports })
        .collect();
    reporters.sort_by(|a, b| b.reports.cmp(&a.reports).then_with(|| a.org.cmp(&b.org)));
    DmarcSummary { reports: reports.len() as u64, messages, reporters, sources }
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PolicySummary {
    pub policy_domain: String,
    pub policy_type: String,
    pub success: u64,
    pub failure: u64,
    pub failures: BTreeMap<String, u64>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct TlsSummary {
    pub reports: u64,
    pub policies: Vec<PolicySummary>,
}

/// Sums `reports` per (policy domain, policy type).
pub fn tls(reports: &[TlsReport]) -> TlsSummary {
    let mut policies: BTreeMap<(String, String), PolicySummary> = BTreeMap::new();
    for p in reports.iter().flat_map(|r| &r.policies) {
        let key = (p.policy_domain.clone(), p.policy_type.clone());
        let s = policies.entry(key).or_insert_with(|| PolicySummary {
            policy_domain: p.policy_domain.clone(),
            policy_type: p.policy_type.clone(),
            success: 0,
            failure: 0,
            failures: BTreeMap::new(),
        });
        s.success = s.success.saturating_add(p.success);
        s.failure = s.failure.saturating_add(p.failure);
        for (kind, n) in &p.failures {
            let slot = s.failures.entry(kind.clone()).or_default();
            *slot = slot.saturating_add(*n);
        }
    }
    TlsSummary { reports: reports.len() as u64, policies: policies.into_values().collect() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DmarcRecord;

    fn record(ip: &str, count: u64, dkim: &str, spf: &str, disposition: &str) -> DmarcRecord {
        DmarcRecord {
            source_ip: ip.into(),
            count,
            disposition: disposition.into(),
            dkim: dkim.into(),
            spf: spf.into(),
            header_from: "example.com".into(),
        }
    }

    #[test]
    fn sources_sum_over_reports_busiest_first() {
        let report = |org: &str, records| DmarcReport {
            org: org.into(),
            report_id: "1".into(),
            begin: 0,
            end: 1,
            policy_domain: "example.com".into(),
            records,
        };
        let reports = [
            report("google.com", vec![record("192.0.2.1", 10, "pass", "fail", "none")]),
            report(
                "Outlook.com",
                vec![
                    record("192.0.2.1", 5, "pass", "pass", "none"),
                    record("203.0.113.9", 20, "fail", "fail", "reject"),
                ],
            ),
            report("google.com", vec![]),
        ];
        let s = dmarc(&reports);
        assert_eq!((s.reports, s.messages), (3, 35));
        assert_eq!(s.reporters[0], Reporter { org: "google.com".into(), reports: 2 });
        assert_eq!(s.sources[0].source_ip, "203.0.113.9");
        assert_eq!(s.sources[0].disposition.reject, 20);
        let ours = &s.sources[1];
        assert_eq!((ours.count, ours.spf.pass, ours.spf.fail, ours.dmarc.pass), (15, 5, 10, 15));
    }
}
