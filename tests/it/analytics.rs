//! Analytics endpoints that exist so far: suppressions, paged.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::harness::{A, B, World};

const T: u64 = 1_795_305_600_000;

fn world() -> World {
    World::start_seeded(|s| {
        // Five for A, two of them at the same instant; one for B.
        s.suppression(A, "e@example.org", "hard_bounce", T + 3);
        s.suppression(A, "a@example.org", "unsubscribed", T + 1);
        s.suppression(A, "c@example.org", "complaint", T + 2);
        s.suppression(A, "b@example.org", "hard_bounce", T + 2);
        s.suppression(A, "d@example.org", "unsubscribed", T + 2);
        s.suppression(B, "z@example.net", "hard_bounce", T + 9);
    })
}

fn emails(page: &Value) -> Vec<String> {
    page["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|i| i["email"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_domain_key_pages_through_every_suppression_once_in_time_order() {
    let w = world();
    let first = w.alpha().get("/v1/suppressions?limit=2").expect(200).json();
    assert_eq!(first["domain"], A);
    assert_eq!(first["total"], 5);
    assert_eq!(first["hasMore"], true);
    // The page ends inside the T+2 group, so it is extended to hold the whole group.
    assert_eq!(
        emails(&first),
        ["a@example.org", "b@example.org", "c@example.org", "d@example.org"]
    );
    assert_eq!(first["items"][1]["reason"], "hard_bounce");
    assert_eq!(first["items"][2]["reason"], "complaint");
    let cursor = first["items"][3]["unsubscribedAt"].as_u64().expect("cursor");
    let second =
        w.alpha().get(&format!("/v1/suppressions?limit=2&after={cursor}")).expect(200).json();
    assert_eq!(emails(&second), ["e@example.org"]);
    assert_eq!(second["hasMore"], false);
    let all = w.alpha().get("/v1/suppressions").expect(200).json();
    assert_eq!(emails(&all).len(), 5);
    let mut seen = BTreeSet::new();
    let mut after = None::<u64>;
    loop {
        let path = match after {
            Some(a) => format!("/v1/suppressions?limit=1&after={a}"),
            None => "/v1/suppressions?limit=1".to_owned(),
        };
        let page = w.alpha().get(&path).expect(200).json();
        for e in emails(&page) {
            assert!(seen.insert(e.clone()), "{e} returned twice");
        }
        if page["hasMore"] != true {
            break;
        }
        after = page["items"]
            .as_array()
            .and_then(|i| i.last())
            .and_then(|i| i["unsubscribedAt"].as_u64());
    }
    assert_eq!(seen.len(), 5);
}

#[test]
fn an_org_wide_key_gets_a_page_per_domain() {
    let w = world();
    let pages = w.org().get("/v1/suppressions").expect(200).json();
    let domains: Vec<&str> =
        pages.as_array().expect("array").iter().filter_map(|p| p["domain"].as_str()).collect();
    assert_eq!(domains, [A, B]);
    let only_b = w.org().get(&format!("/v1/suppressions?domain={B}")).expect(200).json();
    assert_eq!(only_b.as_array().map(Vec::len), Some(1));
    assert_eq!(emails(&only_b[0]), ["z@example.net"]);
    w.org().get("/v1/suppressions?domain=unknown.test").expect_error(404, "not_found");
}

#[test]
fn bad_parameters_and_other_domains_are_refused() {
    let w = world();
    for q in ["limit=0", "limit=501", "limit=x", "after=yesterday", "after=-1"] {
        w.alpha().get(&format!("/v1/suppressions?{q}")).expect_error(400, "invalid_request");
    }
    w.alpha().get(&format!("/v1/suppressions?domain={B}")).expect_error(404, "not_found");
    w.anonymous().get("/v1/suppressions").expect_error(401, "unauthorized");
    let own = w.beta().get("/v1/suppressions").expect(200).json();
    assert_eq!(emails(&own), ["z@example.net"]);
}
