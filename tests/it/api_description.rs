//! The OpenAPI document and the router agree, and both forms of the document are served.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::harness::World;
use crate::schema::doc;

const METHODS: [&str; 5] = ["get", "post", "put", "patch", "delete"];

/// (method, path) pairs.
type Operations = BTreeSet<(String, String)>;

/// The served and the planned operations of the document.
fn documented() -> (Operations, Operations) {
    let mut served = BTreeSet::new();
    let mut planned = BTreeSet::new();
    for (path, item) in doc()["paths"].as_object().expect("paths") {
        for method in METHODS {
            if let Some(op) = item.get(method) {
                let entry = (method.to_ascii_uppercase(), path.clone());
                if op.get("x-edgemail-planned") == Some(&Value::Bool(true)) {
                    planned.insert(entry);
                } else {
                    served.insert(entry);
                }
            }
        }
    }
    (served, planned)
}

#[test]
fn every_route_is_documented_and_every_documented_route_is_served() {
    let routes: BTreeSet<(String, String)> =
        edgemail::api::routes().iter().map(|r| (r.method.to_string(), r.path.to_owned())).collect();
    let (served, planned) = documented();
    let undocumented: Vec<_> = routes.difference(&served).collect();
    assert!(undocumented.is_empty(), "routes missing from openapi.yaml: {undocumented:?}");
    let unserved: Vec<_> = served.difference(&routes).collect();
    assert!(
        unserved.is_empty(),
        "documented but not routed (mark x-edgemail-planned?): {unserved:?}"
    );
    assert!(planned.is_disjoint(&routes), "a served route is still marked planned");
}

/// The server's full route table is the API's plus the dashboard's. The dashboard's routes (`/`,
/// `/favicon.ico` and everything under `/ui/`) answer HTML pages and forms, not the JSON API,
/// so they are left out of the document and of the walk above on purpose; nothing else may be.
#[test]
fn only_dashboard_pages_are_left_out_of_the_document() {
    let api: BTreeSet<(String, String)> =
        edgemail::api::routes().iter().map(|r| (r.method.to_string(), r.path.to_owned())).collect();
    let mut pages = 0;
    for route in edgemail::app::routes() {
        let entry = (route.method.to_string(), route.path.to_owned());
        if api.contains(&entry) {
            continue;
        }
        let page =
            route.path == "/" || route.path == "/favicon.ico" || route.path.starts_with("/ui/");
        assert!(page, "{entry:?} is served but neither in the API table nor a dashboard page");
        assert_eq!(route.access, edgemail::http::Access::Page, "{entry:?}");
        pages += 1;
    }
    assert!(pages > 0, "the dashboard's routes are missing from the server");
    let (served, _) = documented();
    assert!(served.iter().all(|(_, p)| !p.starts_with("/ui/")), "a page is in the API document");
}

#[test]
fn document_header_and_operations_are_complete() {
    let d = doc();
    assert!(d["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")));
    assert_eq!(d["info"]["version"], "1.0.0");
    let mut ids = BTreeSet::new();
    for (path, item) in d["paths"].as_object().expect("paths") {
        for method in METHODS {
            if let Some(op) = item.get(method) {
                let id = op["operationId"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{method} {path}: no operationId"));
                assert!(ids.insert(id.to_owned()), "duplicate operationId {id}");
                let responses = op["responses"].as_object().expect("responses");
                assert!(!responses.is_empty(), "{method} {path}: no responses");
            }
        }
    }
    // Every spec endpoint is described, including those later stages serve.
    for (method, path) in [
        ("post", "/v1/send"),
        ("get", "/v1/sequences"),
        ("post", "/v1/sequences/{id}/enroll"),
        ("get", "/v1/domain-health"),
        ("get", "/v1/warmup"),
        ("get", "/v1/bounces"),
        ("get", "/v1/suppressions"),
        ("get", "/v1/campaign-stats"),
        ("post", "/api/tools/check-deliverability"),
        ("post", "/api/tools/validate-emails"),
        ("post", "/api/tools/generate-subject-lines"),
    ] {
        assert!(d["paths"][path][method].is_object(), "{method} {path} is not described");
    }
}

#[test]
fn both_forms_are_served_and_agree() {
    let w = World::start();
    let c = w.anonymous();
    let json = c.get("/openapi.json").expect(200);
    assert_eq!(json.header("content-type"), Some("application/json"));
    assert_eq!(&json.json(), doc());
    let yaml = c.get("/api/openapi.yaml").expect(200);
    assert_eq!(yaml.header("content-type"), Some("application/yaml"));
    assert_eq!(yaml.text(), edgemail::app::OPENAPI_YAML);
    let health = c.get("/healthz").expect(200).json();
    assert_eq!(health["status"], "ok");
}
