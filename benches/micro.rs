//! Function-level benchmarks of the request hot path: routing, body parsing, reply encoding.
//! Run with `cargo bench --bench micro`.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use edgemail::api;
use edgemail::http::Router;
use edgemail::store::Mailbox;
use hyper::Method;

fn routing(c: &mut Criterion) {
    let router = match Router::new(api::routes()) {
        Ok(r) => r,
        Err(e) => panic!("routes: {e}"),
    };
    c.bench_function("route GET /v1/mailboxes", |b| {
        b.iter(|| router.find(black_box(&Method::GET), black_box("/v1/mailboxes")).is_ok())
    });
    c.bench_function("route DELETE /v1/mailboxes/{address} (percent-decoded)", |b| {
        b.iter(|| {
            router
                .find(black_box(&Method::DELETE), black_box("/v1/mailboxes/sales%40demo.test"))
                .is_ok()
        })
    });
    c.bench_function("route miss -> 405", |b| {
        b.iter(|| router.find(black_box(&Method::PUT), black_box("/v1/contacts")).is_err())
    });
}

fn json(c: &mut Criterion) {
    let contact = br#"{"email":"jane.doe@example.com","name":"Jane Doe"}"#;
    c.bench_function("parse+validate contact body", |b| {
        b.iter(|| api::contacts::parse_upsert(black_box(contact)).is_ok())
    });
    let group = br#"{"name":"Launch","mailboxes":"all","emails":"a@example.com, b@example.com\nc@example.org"}"#;
    c.bench_function("parse+validate sender group body", |b| {
        b.iter(|| api::sender_groups::parse_create(black_box(group), "demo.test").is_ok())
    });
    let mailboxes: Vec<Mailbox> = (0..20)
        .map(|i| Mailbox {
            address: format!("user{i}@demo.test"),
            local_part: format!("user{i}"),
            domain: "demo.test".into(),
            display_name: Some(format!("User {i}")),
            daily_limit: None,
            min_gap_ms: None,
            created_at: 1_795_305_600_000 + i,
        })
        .collect();
    c.bench_function("serialize 20 mailboxes", |b| {
        b.iter(|| serde_json::to_vec(black_box(&mailboxes)).map(|v| v.len()))
    });
}

/// What recording costs a request: compare with the CPU time a request takes under load (2 cores
/// divided by the `load.sh` rate; about 52 µs at 38k req/s), the budget being 2 % of it.
fn metrics(c: &mut Criterion) {
    edgemail::metrics::http_routes(["/v1/mailboxes"]);
    c.bench_function("metrics: record an HTTP request (counter + histogram)", |b| {
        b.iter(|| {
            edgemail::metrics::http_request(
                black_box("/v1/mailboxes"),
                black_box(200),
                black_box(std::time::Duration::from_micros(180)),
            )
        })
    });
    c.bench_function("metrics: record a delivery outcome", |b| {
        b.iter(|| edgemail::metrics::delivery(black_box("delivered")))
    });
}

fn spf(c: &mut Criterion) {
    let record = "v=spf1 ip4:192.0.2.0/24 ip6:2001:db8::/32 a mx:mail.example.com/24 \
                  include:_spf.example.net include:spf.protection.example.org ~all";
    c.bench_function("parse SPF record (7 terms)", |b| {
        b.iter(|| edgemail::health::spf::parse(black_box(record)).is_ok())
    });
}

criterion_group!(benches, routing, json, spf, metrics);
criterion_main!(benches);
