//! `GET /metrics`: the Prometheus exposition parsed line by line. Every series of the contract is
//! there from start-up, at zero; counters move with traffic; the route label is a template, never
//! a raw path; `metrics.token` guards the endpoint.

use std::collections::BTreeMap;

use serde_json::json;

use crate::client::Client;
use crate::harness::{Seed, Server, TempDir, World};
use crate::mail_world::{MailWorld, basic};

/// The samples of an exposition: `name{labels}` -> value, labels kept as written.
struct Exposition {
    samples: BTreeMap<String, f64>,
    types: BTreeMap<String, String>,
}

impl Exposition {
    fn parse(text: &str) -> Exposition {
        let (mut samples, mut types) = (BTreeMap::new(), BTreeMap::new());
        assert!(text.trim_end().ends_with("# EOF"), "no # EOF terminator");
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# TYPE ") {
                let (name, kind) = rest.split_once(' ').expect("TYPE name kind");
                types.insert(name.to_owned(), kind.to_owned());
                continue;
            }
            if line.starts_with('#') || line.is_empty() {
                continue;
            }
            let (series, value) = line.rsplit_once(' ').expect("a sample is `series value`");
            let value: f64 = value.parse().unwrap_or_else(|_| panic!("bad value in {line}"));
            assert!(samples.insert(series.to_owned(), value).is_none(), "duplicate {series}");
        }
        Exposition { samples, types }
    }

    fn get(&self, series: &str) -> f64 {
        *self.samples.get(series).unwrap_or_else(|| panic!("{series} missing"))
    }

    /// The sum over every series of `name` whose labels contain each of `with`.
    fn sum(&self, name: &str, with: &[&str]) -> f64 {
        self.samples
            .iter()
            .filter(|(s, _)| {
                s.split('{').next() == Some(name) && with.iter().all(|w| s.contains(w))
            })
            .map(|(_, v)| v)
            .sum()
    }

    fn labels_of(&self, name: &str) -> Vec<&str> {
        let prefix = format!("{name}{{");
        self.samples.keys().filter_map(|s| s.strip_prefix(&prefix)).collect()
    }
}

fn scrape(c: &Client) -> Exposition {
    let resp = c.get("/metrics").expect(200);
    let ct = resp.header("content-type").unwrap_or_default();
    assert!(ct.starts_with("application/openmetrics-text"), "{ct}");
    Exposition::parse(&resp.text())
}

#[test]
fn every_metric_of_the_contract_exists_from_start_up_at_zero() {
    let w = World::start();
    let m = scrape(&w.anonymous());
    for (name, kind) in [
        ("edgemail_http_requests", "counter"),
        ("edgemail_http_request_duration_seconds", "histogram"),
        ("edgemail_queue_depth", "gauge"),
        ("edgemail_deliveries", "counter"),
        ("edgemail_inbound_messages", "counter"),
        ("edgemail_webhook_deliveries", "counter"),
        ("edgemail_store_commit_duration_seconds", "histogram"),
        ("edgemail_build_info", "gauge"),
        ("edgemail_store_writable", "gauge"),
        ("edgemail_smtp_sessions", "counter"),
        ("edgemail_tls_handshakes", "counter"),
        ("edgemail_dns_lookups", "counter"),
        ("edgemail_sequence_steps", "counter"),
    ] {
        assert_eq!(m.types.get(name).map(String::as_str), Some(kind), "{name}");
    }
    for result in ["delivered", "deferred", "bounced", "failed"] {
        assert_eq!(m.get(&format!("edgemail_deliveries_total{{result=\"{result}\"}}")), 0.0);
    }
    for result in ["accepted", "deferred", "rejected"] {
        assert_eq!(m.get(&format!("edgemail_inbound_messages_total{{result=\"{result}\"}}")), 0.0);
    }
    for result in ["succeeded", "retrying", "failed"] {
        assert_eq!(
            m.get(&format!("edgemail_webhook_deliveries_total{{result=\"{result}\"}}")),
            0.0
        );
    }
    for state in ["due", "waiting"] {
        assert_eq!(m.get(&format!("edgemail_queue_depth{{state=\"{state}\"}}")), 0.0);
    }
    assert_eq!(m.get("edgemail_store_writable"), 1.0);
    assert_eq!(m.get("edgemail_smtp_sessions_total"), 0.0);
    assert_eq!(m.sum("edgemail_http_requests_total", &["route=\"/v1/emails/{id}\""]), 0.0);
    assert!(m.get("edgemail_http_request_duration_seconds_count") >= 0.0);
    assert!(m.get("edgemail_store_commit_duration_seconds_count") >= 0.0);
    let version = format!("edgemail_build_info{{version=\"{}\"}}", env!("CARGO_PKG_VERSION"));
    assert_eq!(m.get(&version), 1.0);
}

#[test]
fn counters_move_with_traffic_and_routes_are_labelled_by_template() {
    let w = World::start();
    let before = scrape(&w.anonymous());
    let a = w.alpha();
    a.get("/v1/emails/em_secret_looking_id").expect_error(404, "not_found");
    a.post("/v1/contacts", json!({"email": "ada@example.org", "name": "Ada"})).expect(201);
    w.anonymous().get("/no/such/path/with-a-token").expect_error(404, "not_found");
    let after = scrape(&w.anonymous());
    let delta = |name: &str, with: &[&str]| after.sum(name, with) - before.sum(name, with);
    let emails = ["route=\"/v1/emails/{id}\"", "status=\"404\""];
    assert_eq!(delta("edgemail_http_requests_total", &emails), 1.0);
    let contacts = ["route=\"/v1/contacts\"", "status=\"201\""];
    assert_eq!(delta("edgemail_http_requests_total", &contacts), 1.0);
    let unmatched = ["route=\"unmatched\"", "status=\"404\""];
    assert_eq!(delta("edgemail_http_requests_total", &unmatched), 1.0);
    assert!(delta("edgemail_store_commit_duration_seconds_count", &[]) >= 1.0);
    assert!(delta("edgemail_http_request_duration_seconds_count", &[]) >= 3.0);
    for labels in after.labels_of("edgemail_http_requests_total") {
        assert!(!labels.contains("em_secret") && !labels.contains("with-a-token"), "{labels}");
    }
}

#[test]
fn deliveries_and_queue_show_in_the_metrics() {
    let w = MailWorld::start();
    let id = w.send(basic(json!(["ann@example.org"]))).expect(200).json()["messageId"]
        .as_str()
        .expect("id")
        .to_owned();
    w.wait_status(&id, "delivered");
    let m = scrape(&w.server.client(None));
    assert_eq!(m.get("edgemail_deliveries_total{result=\"delivered\"}"), 1.0);
    assert!(m.sum("edgemail_dns_lookups_total", &[]) >= 1.0);
    assert_eq!(m.sum("edgemail_queue_depth", &[]), 0.0);
}

#[test]
fn a_configured_token_guards_the_metrics() {
    let dir = TempDir::new("metrics-token");
    Seed::open(&dir.0).close();
    let server = Server::start_with(&dir.0, &[], &[("EDGEMAIL_METRICS_TOKEN", "s3cret-token")]);
    server.client(None).get("/metrics").expect_error(401, "unauthorized");
    server.client(Some("wrong-token")).get("/metrics").expect_error(401, "unauthorized");
    let m = scrape(&server.client(Some("s3cret-token")));
    assert_eq!(m.get("edgemail_store_writable"), 1.0);
    // Probes stay open.
    server.client(None).get("/healthz").expect(200);
    server.client(None).get("/readyz").expect(200);
}
