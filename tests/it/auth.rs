//! Authentication and scoping: 401 without a valid key on every domain route, 403 for an org-wide
//! key on every domain route, public routes open to all, and domains that never see each other's
//! resources.

use edgemail::http::Access;
use edgemail::store::Folder;
use serde_json::{Value, json};

use crate::client::{Client, Resp};
use crate::emails::sample_email;
use crate::harness::{A, B, World};

/// One request to a route: method, concrete path, body.
struct Call {
    method: String,
    path: String,
    body: Option<Value>,
}

impl Call {
    fn send(&self, c: &Client) -> Resp {
        c.request(&self.method, &self.path, self.body.as_ref().map(|b| b.to_string().into_bytes()))
    }

    /// Sends with exactly this Authorization header (the client must have no key).
    fn send_with_auth(&self, c: &Client, authorization: &str) -> Resp {
        let body = self.body.as_ref().map(|b| b.to_string().into_bytes());
        let mut headers = vec![("Authorization", authorization)];
        if body.is_some() {
            headers.push(("Content-Type", "application/json"));
        }
        c.raw(&self.method, &self.path, &headers, body.as_deref())
    }

    fn name(&self) -> String {
        format!("{} {}", self.method, self.path)
    }
}

/// A body the route would accept from its own domain's key.
fn valid_body(method: &str, template: &str) -> Option<Value> {
    match (method, template) {
        ("GET" | "DELETE", _) => None,
        ("POST", "/v1/mailboxes") => Some(json!({"address": "probe", "displayName": "Probe"})),
        ("PATCH", "/v1/mailboxes/{address}") => Some(json!({"dailyLimit": 50, "minGapMs": 1000})),
        ("POST", "/v1/mailboxes/{address}/passwords") => Some(json!({"name": "Probe"})),
        ("POST", "/v1/aliases") => {
            Some(json!({"address": "probe-alias", "targets": ["ada@example.org"]}))
        }
        ("PATCH", "/v1/aliases/{address}") => Some(json!({"targets": ["ada@example.org"]})),
        ("POST", "/v1/mailboxes/{address}/folders") => Some(json!({"name": "Probe"})),
        // An mbox, not JSON: the probe's mailbox does not exist, so the body is never read.
        ("POST", "/v1/mailboxes/{address}/import") => {
            Some(json!("From a@b Mon Jan  5 10:00:00 2015\nSubject: probe\n\nprobe\n"))
        }
        ("PUT", "/v1/mailboxes/{address}/sieve") => Some(json!({"script": "keep;"})),
        ("PUT", "/v1/mailboxes/{address}/vacation") => {
            Some(json!({"enabled": true, "subject": "Away", "text": "Back soon."}))
        }
        ("PATCH", "/v1/mailboxes/{address}/folders/{name}") => Some(json!({"name": "Probe 2"})),
        ("PATCH", "/v1/emails/{id}") => Some(json!({"folder": "archive"})),
        ("POST", "/v1/sender-groups") => {
            Some(json!({"name": "Probe", "mailboxes": "all", "emails": ["ada@example.org"]}))
        }
        ("PATCH", "/v1/sender-groups/{id}") => Some(json!({"name": "Probe renamed"})),
        ("POST", "/v1/contacts") => Some(json!({"email": "ada@example.org", "name": "Ada"})),
        // A CSV body; key and scope are checked before its type and contents.
        ("POST", "/v1/contacts/import") => Some(json!("email\nada@example.org\n")),
        ("POST", "/v1/suppressions") => Some(json!({"email": "ada@example.org"})),
        ("POST", "/v1/send") => Some(
            json!({"from": "probe@alpha.test", "to": "ada@example.org", "subject": "Hi", "text": "Hello"}),
        ),
        ("POST", "/v1/sequences") => Some(json!({
            "name": "Probe", "from": "probe@alpha.test",
            "steps": [{"type": "send_email", "subject": "Hi", "html": "<p>Hello</p>"}]
        })),
        ("PATCH", "/v1/sequences/{id}") => Some(json!({"status": "paused"})),
        ("POST", "/v1/sequences/{id}/enroll") => {
            Some(json!({"contacts": [{"email": "ada@example.org"}]}))
        }
        ("PATCH", "/v1/sequences/{id}/enrollments/{enrollmentId}") => {
            Some(json!({"label": "interested"}))
        }
        ("POST", "/v1/warmup") => Some(json!({"mailbox": "probe", "replyRate": 0.5})),
        ("POST", "/v1/webhooks") => Some(json!({"url": "https://93.184.216.34/in"})),
        ("PATCH", "/v1/webhooks/{id}") => Some(json!({"enabled": false})),
        ("POST", "/v1/webhooks/{id}/rotate-secret" | "/v1/webhooks/{id}/test") => None,
        ("POST", "/v1/emails/{id}/junk" | "/v1/emails/{id}/not-junk") => None,
        _ => panic!("no valid body known for {method} {template}; add one to auth.rs"),
    }
}

/// Every route with `access`, path parameters filled with a dummy value.
fn calls(access: Access) -> Vec<Call> {
    let calls: Vec<Call> = edgemail::api::routes()
        .iter()
        .filter(|r| r.access == access)
        .map(|r| {
            let method = r.method.to_string();
            let path = r
                .path
                .split('/')
                .map(|seg| if seg.starts_with('{') { "dummy" } else { seg })
                .collect::<Vec<_>>()
                .join("/");
            Call { body: valid_body(&method, r.path), method, path }
        })
        .collect();
    assert!(!calls.is_empty(), "no {access:?} routes");
    calls
}

/// Checks that nothing was created on `c`'s domain.
fn assert_domain_untouched(c: &Client) {
    for list in ["/v1/mailboxes", "/v1/aliases", "/v1/sender-groups", "/v1/contacts", "/v1/emails"]
    {
        assert_eq!(c.get(list).expect(200).json(), json!([]), "{list}");
    }
}

#[test]
fn missing_key_is_unauthorized_on_every_domain_route() {
    let w = World::start();
    let anon = w.anonymous();
    for call in calls(Access::Domain) {
        let err = call.send(&anon).expect_error(401, "unauthorized");
        assert_eq!(err["status"], 401, "{}", call.name());
    }
    // Authentication comes before validating the body.
    anon.post("/v1/contacts", json!({})).expect_error(401, "unauthorized");
    assert_domain_untouched(&w.alpha());
}

#[test]
fn wrong_or_malformed_authorization_is_unauthorized_on_every_domain_route() {
    let w = World::start();
    let anon = w.anonymous();
    let no_scheme = w.a.clone();
    let basic_with_key = format!("Basic {}", w.a);
    let token_with_key = format!("Token {}", w.a);
    let headers = [
        "Bearer wrong",
        "Basic xyz",
        "Bearer ",
        "Bearer",
        no_scheme.as_str(),
        basic_with_key.as_str(),
        token_with_key.as_str(),
    ];
    for call in calls(Access::Domain) {
        for header in headers {
            let resp = call.send_with_auth(&anon, header);
            assert_eq!(resp.status, 401, "{} with {header:?}: {}", call.name(), resp.text());
            resp.expect_error(401, "unauthorized");
        }
        call.send(&w.server.client(Some("bogus"))).expect_error(401, "unauthorized");
    }
    assert_domain_untouched(&w.alpha());
}

#[test]
fn another_seeded_key_of_a_domain_is_live() {
    let mut extra = String::new();
    let w = World::start_seeded(|seed| extra = seed.key(Some(A)));
    let second = w.server.client(Some(&extra));
    let made = second.post("/v1/contacts", json!({"email": "ada@example.org", "name": "Ada"}));
    let contact = made.expect(201).json();
    // Both keys of the domain see the same contact book.
    assert_eq!(w.alpha().get("/v1/contacts").expect(200).json(), json!([contact]));
    assert_eq!(w.beta().get("/v1/contacts").expect(200).json(), json!([]));
}

#[test]
fn org_wide_key_is_forbidden_on_every_domain_route() {
    let w = World::start_seeded(|seed| seed.mailbox(A, "box"));
    let org = w.org();
    for call in calls(Access::Domain) {
        let resp = call.send(&org);
        assert_eq!(resp.status, 403, "{}: {}", call.name(), resp.text());
        resp.expect_error(403, "forbidden");
    }
    // Scope is checked before the body.
    org.post("/v1/contacts", json!({})).expect_error(403, "forbidden");
    let a = w.alpha();
    assert_eq!(a.get("/v1/mailboxes").expect(200).json().as_array().map(Vec::len), Some(1));
    for list in ["/v1/sender-groups", "/v1/contacts"] {
        assert_eq!(a.get(list).expect(200).json(), json!([]), "{list}");
    }
}

#[test]
fn public_routes_need_no_key_and_ignore_bad_ones() {
    let w = World::start();
    let bogus = w.server.client(Some("bogus"));
    for call in calls(Access::Public) {
        for (who, c) in [("anonymous", w.anonymous()), ("bogus", w.server.client(Some("bogus")))] {
            let resp = call.send(&c);
            assert_eq!(resp.status, 200, "{} as {who}: {}", call.name(), resp.text());
        }
        call.send(&w.org()).expect(200);
        call.send(&w.alpha()).expect(200);
    }
    for path in ["/healthz", "/openapi.json", "/api/openapi.yaml"] {
        w.anonymous().get(path).expect(200);
        bogus.get(path).expect(200);
    }
}

#[test]
fn a_domain_key_cannot_delete_another_domains_mailbox() {
    let w = World::start_seeded(|seed| {
        seed.mailbox(B, "x");
        seed.mailbox(A, "mine");
    });
    let a = w.alpha();
    a.delete(&format!("/v1/mailboxes/x@{B}")).expect_error(404, "not_found");
    a.delete("/v1/mailboxes/x").expect_error(404, "not_found");
    let theirs = w.beta().get("/v1/mailboxes").expect(200).json();
    let addresses: Vec<&Value> =
        theirs.as_array().expect("array").iter().map(|m| &m["address"]).collect();
    assert_eq!(addresses, [&json!(format!("x@{B}"))]);
    let ours = a.get("/v1/mailboxes").expect(200).json();
    assert_eq!(ours.as_array().map(Vec::len), Some(1), "{ours}");
    assert_eq!(ours[0]["address"], format!("mine@{A}"));
}

#[test]
fn a_domain_key_cannot_update_or_delete_another_domains_group() {
    let w = World::start_seeded(|seed| seed.mailbox(B, "x"));
    let b = w.beta();
    let body = json!({"name": "Beta group", "mailboxes": "all", "emails": ["ada@example.org"]});
    let group = b.post("/v1/sender-groups", body).expect(201).json();
    let path = format!("/v1/sender-groups/{}", group["id"].as_str().expect("id"));
    let a = w.alpha();
    a.patch(&path, json!({"name": "Hijacked"})).expect_error(404, "not_found");
    a.patch(&path, json!({"addEmails": ["evil@example.org"]})).expect_error(404, "not_found");
    a.delete(&path).expect_error(404, "not_found");
    assert_eq!(b.get("/v1/sender-groups").expect(200).json(), json!([group]));
    assert_eq!(a.get("/v1/sender-groups").expect(200).json(), json!([]));
}

#[test]
fn a_domain_key_cannot_delete_another_domains_contact() {
    let w = World::start();
    let b = w.beta();
    let contact = b
        .post("/v1/contacts", json!({"email": "ada@example.org", "name": "Ada"}))
        .expect(201)
        .json();
    let path = format!("/v1/contacts/{}", contact["id"].as_str().expect("id"));
    w.alpha().delete(&path).expect_error(404, "not_found");
    assert_eq!(b.get("/v1/contacts").expect(200).json(), json!([contact]));
    assert_eq!(w.alpha().get("/v1/contacts").expect(200).json(), json!([]));
}

#[test]
fn a_domain_key_cannot_read_or_delete_another_domains_email() {
    let mut id = String::new();
    let w = World::start_seeded(|seed| {
        seed.mailbox(B, "x");
        let email = sample_email(&format!("x@{B}"), Folder::Inbox, "private", 1_000);
        id = email.summary.id.clone();
        seed.email(email);
    });
    let path = format!("/v1/emails/{id}");
    let a = w.alpha();
    a.get(&path).expect_error(404, "not_found");
    a.get(&format!("{path}/raw")).expect_error(404, "not_found");
    a.get(&format!("{path}/attachments/0")).expect_error(404, "not_found");
    a.delete(&path).expect_error(404, "not_found");
    a.delete(&path).expect_error(404, "not_found");
    let b = w.beta();
    let email = b.get(&path).expect(200).json();
    assert_eq!(email["folder"], "inbox", "a delete by another domain moved it: {email}");
    let inbox = b.get("/v1/emails").expect(200).json();
    assert_eq!(inbox.as_array().map(Vec::len), Some(1), "{inbox}");
    assert_eq!(b.get("/v1/emails?folder=trash").expect(200).json(), json!([]));
}

#[test]
fn lists_never_show_another_domains_items() {
    let w = World::start_seeded(|seed| {
        for (domain, n) in [(A, 1_000), (B, 2_000)] {
            seed.mailbox(domain, "shared");
            let email = sample_email(&format!("shared@{domain}"), Folder::Inbox, domain, n);
            seed.email(email);
        }
    });
    for (domain, c) in [(A, w.alpha()), (B, w.beta())] {
        let group = json!({"name": format!("group of {domain}"), "mailboxes": "all"});
        c.post("/v1/sender-groups", group).expect(201);
        c.post("/v1/contacts", json!({"email": "ada@example.org", "name": domain})).expect(201);
    }
    for (domain, c) in [(A, w.alpha()), (B, w.beta())] {
        let mailboxes = c.get("/v1/mailboxes").expect(200).json();
        assert_eq!(mailboxes.as_array().map(Vec::len), Some(1), "{mailboxes}");
        assert_eq!(mailboxes[0]["address"], format!("shared@{domain}"));
        let groups = c.get("/v1/sender-groups").expect(200).json();
        assert_eq!(groups.as_array().map(Vec::len), Some(1), "{groups}");
        assert_eq!(groups[0]["name"], format!("group of {domain}"));
        assert_eq!(groups[0]["mailboxes"], json!([format!("shared@{domain}")]));
        let contacts = c.get("/v1/contacts").expect(200).json();
        assert_eq!(contacts.as_array().map(Vec::len), Some(1), "{contacts}");
        assert_eq!(contacts[0]["name"], domain);
        let emails = c.get("/v1/emails").expect(200).json();
        assert_eq!(emails.as_array().map(Vec::len), Some(1), "{emails}");
        assert_eq!(emails[0]["mailbox"], format!("shared@{domain}"));
        assert_eq!(emails[0]["subject"], domain);
    }
}
