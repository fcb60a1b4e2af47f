//! TLS-RPT reports (RFC 8460 section 4): JSON, read with serde_json (no entities, nesting
//! bounded by its recursion limit) after the size cap of `unpack`; policies and failure details
//! are capped in count. What we keep per policy is what the summary counts.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::store::{TlsPolicy, TlsReport};

/// Policies one report may carry, and failure details over all of them.
const MAX_POLICIES: usize = 1_000;
const MAX_FAILURE_DETAILS: usize = 10_000;

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Report {
    organization_name: String,
    report_id: String,
    policies: Vec<Entry>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Entry {
    policy: Policy,
    summary: Summary,
    #[serde(default)]
    failure_details: Vec<Failure>,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Policy {
    policy_type: String,
    policy_domain: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Summary {
    total_successful_session_count: u64,
    total_failure_session_count: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "kebab-case")]
struct Failure {
    result_type: String,
    #[serde(default)]
    failed_session_count: u64,
}

/// Reads a TLS-RPT report.
pub fn parse(doc: &[u8]) -> Result<TlsReport, String> {
    let report: Report =
        serde_json::from_slice(doc).map_err(|e| format!("not a TLS-RPT report: {e}"))?;
    if report.policies.len() > MAX_POLICIES {
        return Err(format!("more than {MAX_POLICIES} policies"));
    }
    let details: usize = report.policies.iter().map(|p| p.failure_details.len()).sum();
    if details > MAX_FAILURE_DETAILS {
        return Err(format!("more than {MAX_FAILURE_DETAILS} failure details"));
    }
    let policies = report
        .policies
        .into_iter()
        .map(|e| {
            let mut failures = BTreeMap::new();
            for f in e.failure_details {
                let kind: String = f.result_type.chars().take(64).collect();
                let n: &mut u64 = failures.entry(kind).or_default();
                *n = n.saturating_add(f.failed_session_count);
            }
            TlsPolicy {
                policy_domain: e.policy.policy_domain.trim().to_ascii_lowercase(),
                policy_type: e.policy.policy_type,
                success: e.summary.total_successful_session_count,
                failure: e.summary.total_failure_session_count,
                failures,
            }
        })
        .collect();
    Ok(TlsReport { org: report.organization_name, report_id: report.report_id, policies })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rfc_example_is_read() {
        let doc = br#"{"organization-name":"Company-X","date-range":{"start-datetime":"2016-04-01T00:00:00Z","end-datetime":"2016-04-01T23:59:59Z"},
          "contact-info":"sts-reporting@company-x.example","report-id":"5065427c-23d3-47ca-b6e0-946ea0e8c4be",
          "policies":[{"policy":{"policy-type":"sts","policy-string":["version: STSv1","mode: testing","mx: *.mail.company-y.example","max_age: 86400"],
          "policy-domain":"company-y.example","mx-host":["*.mail.company-y.example"]},
          "summary":{"total-successful-session-count":5326,"total-failure-session-count":303},
          "failure-details":[{"result-type":"certificate-expired","sending-mta-ip":"2001:db8:abcd:0012::1","receiving-mx-hostname":"mx1.mail.company-y.example","failed-session-count":100},
          {"result-type":"starttls-not-supported","sending-mta-ip":"2001:db8:abcd:0013::1","receiving-mx-hostname":"mx2.mail.company-y.example","failed-session-count":200},
          {"result-type":"validation-failure","sending-mta-ip":"198.51.100.62","receiving-ip":"203.0.113.56","receiving-mx-hostname":"mx-backup.mail.company-y.example","failed-session-count":3,"failure-reason-code":"X509_V_ERR_PROXY_PATH_LENGTH_EXCEEDED"}]}]}"#;
        let r = parse(doc).expect("report"); // ok: test
        assert_eq!(r.org, "Company-X");
        let p = &r.policies[0];
        assert_eq!((p.success, p.failure), (5326, 303));
        assert_eq!(p.failures.get("starttls-not-supported"), Some(&200));
        assert!(parse(b"{\"policies\": 1}").is_err());
        let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
        assert!(parse(deep.as_bytes()).is_err());
    }
}
