//! Every request example in `schema/openapi.yaml` works as shown: each is sent to a server
//! prepared exactly as `edgemail demo` prepares it (its domain, mailbox and key), and must get a
//! 2xx whose body matches the documented schema. An example that names a domain no key can use,
//! a mailbox the demo lacks or a date that has passed fails here.

use std::collections::HashMap;
use std::net::Ipv4Addr;

use serde_json::Value;

use crate::dns::Dns;
use crate::harness::{Server, TempDir};
use crate::schema::doc;
use crate::smtp_sink::Sink;

const METHODS: [&str; 4] = ["post", "put", "patch", "delete"];

/// Prepares the demo data in `dir` as `edgemail demo` does; returns the demo key.
fn demo_key(dir: &TempDir) -> String {
    let store = crate::harness::open_store(&dir.0);
    let text = edgemail::demo::prepare(&store, "http://127.0.0.1").expect("demo data");
    let key = text.lines().find_map(|l| l.strip_prefix("API key (shown once): "));
    key.expect("the demo prints its key").trim().to_owned()
}

/// (method, path template, example name, body), in the document's order.
fn request_examples() -> Vec<(String, String, String, Value)> {
    let mut out = Vec::new();
    for (path, item) in doc()["paths"].as_object().expect("paths") {
        for method in METHODS {
            let Some(media) =
                item.get(method).map(|op| &op["requestBody"]["content"]["application/json"])
            else {
                continue;
            };
            let entry = |name: &str, value: &Value| {
                (method.to_ascii_uppercase(), path.clone(), name.to_owned(), value.clone())
            };
            if let Some(single) = media.get("example") {
                out.push(entry("example", single));
            }
            for (name, ex) in media.get("examples").and_then(Value::as_object).into_iter().flatten()
            {
                out.push(entry(name, &ex["value"]));
            }
        }
    }
    out
}

/// The collection a `{id}` path belongs to: `/v1/sequences/{id}/enroll` -> `/v1/sequences`.
fn collection(path: &str) -> &str {
    path.split("/{id}").next().unwrap_or(path)
}

#[test]
fn every_request_example_succeeds_against_the_demo() {
    let dir = TempDir::new("examples");
    let key = demo_key(&dir);
    // Recipients in the examples live at example.org and example.net; their MX is a local sink.
    // The example webhook's host resolves to 127.0.0.1 (nothing listens on its port).
    let dns = Dns::start();
    dns.add_a("example.com", Ipv4Addr::LOCALHOST);
    let sink = Sink::start();
    for name in ["example.org", "example.net"] {
        dns.add_mx(name, 10, &format!("mx.{name}"));
        dns.add_a(&format!("mx.{name}"), Ipv4Addr::LOCALHOST);
    }
    let nameserver = dns.addr().to_string();
    let port = sink.port().to_string();
    let server = Server::start_with(
        &dir.0,
        &["--nameserver", &nameserver],
        &[
            ("EDGEMAIL_DELIVERY_PORT", &port),
            ("EDGEMAIL_DELIVERY_DNS_TIMEOUT", "500ms"),
            ("EDGEMAIL_WEBHOOKS_ALLOW_PRIVATE", "true"),
        ],
    );
    let api = server.client(Some(&key));
    let mut examples = request_examples();
    // Edits come after every creation (a paused sequence takes no enrollments).
    examples.sort_by_key(|(method, ..)| method == "PATCH");
    assert!(examples.len() >= 15, "only {} request examples found", examples.len());
    // Ids made by the examples that create resources, for the examples that edit them.
    let mut made: HashMap<String, String> = HashMap::new();
    // The demo's welcome message, for the examples that change an email.
    let welcome = api.get("/v1/emails").expect(200).json()[0]["id"].as_str().map(str::to_owned);
    made.insert("/v1/emails".into(), welcome.expect("the demo's welcome message"));
    let mut failures = Vec::new();
    for (method, template, name, body) in &examples {
        let id = made.get(collection(template)).cloned().unwrap_or_default();
        // The folder the create example makes, percent-encoded as a path segment.
        let path = template
            .replace("{address}", "hello@demo.test")
            .replace("{id}", &id)
            .replace("{name}", "Projects%2F2026");
        let resp = api.request(method, &path, Some(body.to_string().into_bytes()));
        if !(200..300).contains(&resp.status) {
            failures.push(format!(
                "{method} {template} ({name}) -> {}: {}",
                resp.status,
                resp.text()
            ));
            continue;
        }
        if let Some(new_id) = resp.json().get("id").and_then(Value::as_str) {
            made.entry(template.clone()).or_insert_with(|| new_id.to_owned());
        }
    }
    assert!(failures.is_empty(), "request examples refused:\n{}", failures.join("\n"));
}
