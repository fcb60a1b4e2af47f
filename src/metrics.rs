//! The process's metrics, exposed at `GET /metrics` in the Prometheus (OpenMetrics) text format.
//! One registry for the process, built on first use; recording is an atomic add on a series
//! created ahead (the labels are `&'static str` and small integers: nothing is allocated on the
//! hot path once a series exists). Every series named in the contract exists from start-up, at
//! zero. Gauges that describe the store (queue depth, whether it takes writes) are set by the
//! scrape itself, just before encoding.

use std::sync::LazyLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Label of a request that matched no route: raw paths never become label values.
pub const UNMATCHED: &str = "unmatched";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Request {
    route: &'static str,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Result {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct State {
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Group {
    group: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Mode {
    mode: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Build {
    version: &'static str,
}

/// The outcome of one recipient's delivery attempt.
pub const DELIVERY_RESULTS: [&str; 4] = ["delivered", "deferred", "bounced", "failed"];
/// What became of a message offered to the inbound SMTP listener at DATA.
pub const INBOUND_RESULTS: [&str; 3] = ["accepted", "deferred", "rejected"];
/// The outcome of one webhook delivery attempt: a 2xx, a failure to be retried, or given up.
pub const WEBHOOK_RESULTS: [&str; 3] = ["succeeded", "retrying", "failed"];
/// Entries of the delivery queue: due now, or waiting (a scheduled send, a retry).
pub const QUEUE_STATES: [&str; 2] = ["due", "waiting"];
const OK_FAILED: [&str; 2] = ["ok", "failed"];
/// Provider groups of outbound shaping: the built-in ones, and every other MX host together.
pub const SHAPING_GROUPS: [&str; 5] = ["gmail", "microsoft", "yahoo", "icloud", "other"];
/// The MTA-STS policy modes under which a mail exchanger can fail its domain's policy.
pub const MTA_STS_MODES: [&str; 2] = ["enforce", "testing"];

pub struct Metrics {
    registry: Registry,
    http_requests: Family<Request, Counter>,
    http_duration: Histogram,
    queue_depth: Family<State, Gauge>,
    queue_oldest: Gauge,
    deliveries: Family<Result, Counter>,
    inbound: Family<Result, Counter>,
    webhooks: Family<Result, Counter>,
    commit_duration: Histogram,
    store_writable: Gauge,
    store_faults: Counter,
    store_retries: Counter,
    queue_claims: Counter,
    store_round_trips: Counter,
    store_notifications: Counter,
    store_listener_reconnects: Counter,
    smtp_sessions: Counter,
    tls_handshakes: Family<Result, Counter>,
    dns_lookups: Family<Result, Counter>,
    sequence_steps: Counter,
    delivery_pauses: Family<Group, Counter>,
    mta_sts_fetches: Family<Result, Counter>,
    mta_sts_failures: Family<Mode, Counter>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

fn family<L: EncodeLabelSet + Clone + std::hash::Hash + Eq + std::fmt::Debug + Send + Sync>(
    labels: impl IntoIterator<Item = L>,
) -> Family<L, Counter> {
    let family = Family::<L, Counter>::default();
    for l in labels {
        let _ = family.get_or_create(&l);
    }
    family
}

fn results(names: &[&'static str]) -> Family<Result, Counter> {
    family(names.iter().map(|&result| Result { result }))
}

impl Metrics {
    fn new() -> Metrics {
        let states = Family::<State, Gauge>::default();
        for &state in &QUEUE_STATES {
            let _ = states.get_or_create(&State { state });
        }
        let m = Metrics {
            registry: Registry::default(),
            http_requests: Family::default(),
            http_duration: Histogram::new(exponential_buckets(0.000_25, 2.0, 16)),
            queue_depth: states,
            queue_oldest: Gauge::default(),
            deliveries: results(&DELIVERY_RESULTS),
            inbound: results(&INBOUND_RESULTS),
            webhooks: results(&WEBHOOK_RESULTS),
            commit_duration: Histogram::new(exponential_buckets(0.000_1, 2.0, 16)),
            store_writable: Gauge::default(),
            store_faults: Counter::default(),
            store_retries: Counter::default(),
            queue_claims: Counter::default(),
            store_round_trips: Counter::default(),
            store_notifications: Counter::default(),
            store_listener_reconnects: Counter::default(),
            smtp_sessions: Counter::default(),
            tls_handshakes: results(&OK_FAILED),
            dns_lookups: results(&OK_FAILED),
            sequence_steps: Counter::default(),
            delivery_pauses: family(SHAPING_GROUPS.iter().map(|&group| Group { group })),
            mta_sts_fetches: results(&OK_FAILED),
            mta_sts_failures: family(MTA_STS_MODES.iter().map(|&mode| Mode { mode })),
        };
        m.store_writable.set(1);
        m.register()
    }

    fn register(mut self) -> Metrics {
        let r = &mut self.registry;
        let p = "edgemail_";
        r.register(
            format!("{p}http_requests"),
            "HTTP requests by route template and status",
            self.http_requests.clone(),
        );
        r.register(
            format!("{p}http_request_duration_seconds"),
            "Time from request head to response",
            self.http_duration.clone(),
        );
        r.register(
            format!("{p}queue_depth"),
            "Delivery queue entries by state",
            self.queue_depth.clone(),
        );
        r.register(
            format!("{p}queue_oldest_due_age_seconds"),
            "How long the oldest due queue entry has waited",
            self.queue_oldest.clone(),
        );
        r.register(
            format!("{p}deliveries"),
            "Outbound delivery attempts by recipient outcome",
            self.deliveries.clone(),
        );
        r.register(
            format!("{p}inbound_messages"),
            "Messages offered to the inbound SMTP listener, by outcome",
            self.inbound.clone(),
        );
        r.register(
            format!("{p}webhook_deliveries"),
            "Webhook delivery attempts by outcome",
            self.webhooks.clone(),
        );
        r.register(
            format!("{p}store_commit_duration_seconds"),
            "Duration of one group commit, fsync included",
            self.commit_duration.clone(),
        );
        r.register(
            format!("{p}store_writable"),
            "1 when the store takes writes, 0 while its disk is full or failing",
            self.store_writable.clone(),
        );
        r.register(
            format!("{p}store_faults"),
            "Times the store turned degraded after a disk fault",
            self.store_faults.clone(),
        );
        r.register(
            format!("{p}store_retries"),
            "Group commits run again after a concurrent transaction (another node) won",
            self.store_retries.clone(),
        );
        r.register(
            format!("{p}queue_claims"),
            "Queued messages this node claimed after their acceptance (retries, others' mail)",
            self.queue_claims.clone(),
        );
        r.register(
            format!("{p}store_round_trips"),
            "Exchanges with PostgreSQL: statements sent together, and their answers awaited",
            self.store_round_trips.clone(),
        );
        r.register(
            format!("{p}store_notifications"),
            "Notifications of other nodes' writes received (PostgreSQL LISTEN)",
            self.store_notifications.clone(),
        );
        r.register(
            format!("{p}store_listener_reconnects"),
            "Times the connection listening for those notifications was made again after a cut",
            self.store_listener_reconnects.clone(),
        );
        r.register(
            format!("{p}smtp_sessions"),
            "Inbound SMTP connections served",
            self.smtp_sessions.clone(),
        );
        r.register(
            format!("{p}tls_handshakes"),
            "Inbound STARTTLS handshakes by outcome",
            self.tls_handshakes.clone(),
        );
        r.register(
            format!("{p}dns_lookups"),
            "DNS lookups for delivery by outcome",
            self.dns_lookups.clone(),
        );
        r.register(
            format!("{p}sequence_steps"),
            "Sequence steps that queued a message",
            self.sequence_steps.clone(),
        );
        r.register(
            format!("{p}delivery_pauses"),
            "Times a provider group was paused after a throttling answer",
            self.delivery_pauses.clone(),
        );
        r.register(
            format!("{p}mta_sts_policy_fetches"),
            "MTA-STS policy fetches by outcome",
            self.mta_sts_fetches.clone(),
        );
        r.register(
            format!("{p}mta_sts_failures"),
            "Mail exchangers that failed their domain's MTA-STS policy, by policy mode",
            self.mta_sts_failures.clone(),
        );
        let build = Family::<Build, Gauge>::default();
        build.get_or_create(&Build { version: env!("CARGO_PKG_VERSION") }).set(1);
        r.register(format!("{p}build_info"), "The running build", build);
        self
    }
}

/// One HTTP request answered; `route` is the route's template (or `UNMATCHED`).
pub fn http_request(route: &'static str, status: u16, took: Duration) {
    let m = &*METRICS;
    m.http_requests.get_or_create(&Request { route, status }).inc();
    m.http_duration.observe(took.as_secs_f64());
}

/// Creates the series of every route at zero, so dashboards see them from start-up.
pub fn http_routes(routes: impl IntoIterator<Item = &'static str>) {
    for route in routes {
        let _ = METRICS.http_requests.get_or_create(&Request { route, status: 200 });
    }
}

fn count(family: &Family<Result, Counter>, names: &[&'static str], result: &str, n: u64) {
    // Only known results are counted: a label set is never made from a caller's text.
    if let Some(&result) = names.iter().find(|r| **r == result) {
        family.get_or_create(&Result { result }).inc_by(n);
    }
}

/// A recipient's delivery attempt ended with `result`, one of `DELIVERY_RESULTS`.
pub fn delivery(result: &str) {
    count(&METRICS.deliveries, &DELIVERY_RESULTS, result, 1);
}

/// A message offered at DATA ended with `result`, one of `INBOUND_RESULTS`.
pub fn inbound_message(result: &str) {
    count(&METRICS.inbound, &INBOUND_RESULTS, result, 1);
}

/// A webhook delivery attempt ended with `result`, one of `WEBHOOK_RESULTS`: `succeeded` (a 2xx),
/// `retrying` (failed, another attempt follows) or `failed` (given up).
pub fn webhook_delivery(result: &str) {
    count(&METRICS.webhooks, &WEBHOOK_RESULTS, result, 1);
}

pub fn store_commit(took: Duration) {
    METRICS.commit_duration.observe(took.as_secs_f64());
}

/// A group commit lost a race on a shared store and runs again.
pub fn store_retry() {
    METRICS.store_retries.inc();
}

/// This node claimed `n` queued messages it did not hold (shared store).
pub fn queue_claimed(n: usize) {
    METRICS.queue_claims.inc_by(n as u64);
}

/// One exchange with a shared store's server (PostgreSQL).
pub fn store_round_trip() {
    METRICS.store_round_trips.inc();
}

/// A notification of a committed write arrived (shared store).
pub fn store_notification() {
    METRICS.store_notifications.inc();
}

/// The listening connection was made again after a cut; what was told meanwhile was lost.
pub fn store_listener_reconnect() {
    METRICS.store_listener_reconnects.inc();
}

/// The store turned degraded (`false`) or takes writes again (`true`).
pub fn store_writable(writable: bool) {
    METRICS.store_writable.set(i64::from(writable));
    if !writable {
        METRICS.store_faults.inc();
    }
}

pub fn smtp_session() {
    METRICS.smtp_sessions.inc();
}

pub fn tls_handshake(ok: bool) {
    count(&METRICS.tls_handshakes, &OK_FAILED, if ok { "ok" } else { "failed" }, 1);
}

pub fn dns_lookup(ok: bool) {
    count(&METRICS.dns_lookups, &OK_FAILED, if ok { "ok" } else { "failed" }, 1);
}

pub fn sequence_steps(n: u64) {
    METRICS.sequence_steps.inc_by(n);
}

/// A provider group (one of `SHAPING_GROUPS`) was paused after a throttling answer.
pub fn delivery_pause(group: &'static str) {
    METRICS.delivery_pauses.get_or_create(&Group { group }).inc();
}

/// An MTA-STS policy fetch succeeded or failed.
pub fn mta_sts_fetch(ok: bool) {
    count(&METRICS.mta_sts_fetches, &OK_FAILED, if ok { "ok" } else { "failed" }, 1);
}

/// A mail exchanger failed its domain's policy (not listed, no STARTTLS, a certificate that
/// does not verify) under `mode`, one of `MTA_STS_MODES`.
pub fn mta_sts_failure(mode: &'static str) {
    METRICS.mta_sts_failures.get_or_create(&Mode { mode }).inc();
}

/// The queue as the scrape found it: entries due now, entries waiting, and the age of the oldest
/// due entry.
pub fn queue(due: u64, waiting: u64, oldest_due: Duration) {
    let m = &*METRICS;
    let as_gauge = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    m.queue_depth.get_or_create(&State { state: "due" }).set(as_gauge(due));
    m.queue_depth.get_or_create(&State { state: "waiting" }).set(as_gauge(waiting));
    m.queue_oldest.set(as_gauge(oldest_due.as_secs()));
}

/// The text exposition of every metric.
pub fn encode() -> std::result::Result<String, std::fmt::Error> {
    let mut out = String::with_capacity(16 * 1024);
    prometheus_client::encoding::text::encode(&mut out, &METRICS.registry)?;
    Ok(out)
}

/// The content type of `encode`'s output.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(text: &str, series: &str) -> Option<f64> {
        text.lines().find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
    }

    #[test]
    fn recording_moves_the_series_and_unknown_results_make_none() {
        let before = encode().expect("encode"); // ok: test
        let series = r#"edgemail_webhook_deliveries_total{result="succeeded"}"#;
        let start = sample(&before, series).expect("present at zero"); // ok: test
        webhook_delivery("succeeded");
        webhook_delivery("made-up");
        http_request("/v1/things/{id}", 404, Duration::from_millis(3));
        let after = encode().expect("encode"); // ok: test
        assert_eq!(sample(&after, series), Some(start + 1.0));
        assert!(!after.contains("made-up"));
        assert!(
            after.contains(
                r#"edgemail_http_requests_total{route="/v1/things/{id}",status="404"} 1"#
            )
        );
        assert!(after.contains("edgemail_build_info{version="));
        assert!(after.ends_with("# EOF\n"));
    }
}
