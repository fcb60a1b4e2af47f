//! `/v1/sender-groups`: creation forms for mailboxes and recipients, updates, deletion, scoping.

use std::time::Duration;

use serde_json::{Value, json};

use crate::client::{Client, Resp};
use crate::harness::{A, B, World};

const HELLO: &str = "hello@alpha.test";
const SALES: &str = "sales@alpha.test";
const SUPPORT: &str = "support@alpha.test";

/// A world whose alpha domain has these mailboxes (beta has "hello").
fn world_with(locals: &[&str]) -> World {
    World::start_seeded(|seed| {
        for local in locals {
            seed.mailbox(A, local);
        }
        seed.mailbox(B, "hello");
    })
}

/// Creates a group and returns the 201 body.
#[track_caller]
fn create(c: &Client, body: Value) -> Value {
    c.post("/v1/sender-groups", body).expect(201).json()
}

/// Asserts a 400 `invalid_request`; returns its message.
#[track_caller]
fn invalid(resp: Resp) -> String {
    let err = resp.expect_error(400, "invalid_request");
    err["message"].as_str().expect("message").to_owned()
}

/// Asserts that this creation body is refused with 400; returns the message.
#[track_caller]
fn rejected(c: &Client, body: Value) -> String {
    invalid(c.post("/v1/sender-groups", body))
}

/// Asserts that a group with these `mailboxes` is refused with 400.
#[track_caller]
fn bad_mailboxes(c: &Client, mailboxes: Value) {
    rejected(c, json!({"name": "G", "mailboxes": mailboxes}));
}

/// Asserts that a group with these `emails` is refused with 400; returns the message.
#[track_caller]
fn bad_emails(c: &Client, emails: Value) -> String {
    rejected(c, json!({"name": "G", "emails": emails}))
}

#[track_caller]
fn patch(c: &Client, id: &Value, body: Value) -> Value {
    c.patch(&path(id), body).expect(200).json()
}

fn path(id: &Value) -> String {
    format!("/v1/sender-groups/{}", id.as_str().expect("id"))
}

#[track_caller]
fn list(c: &Client) -> Vec<Value> {
    let body = c.get("/v1/sender-groups").expect(200).json();
    body.as_array().expect("array").clone()
}

/// Timestamps are milliseconds: make the next one differ.
fn tick() {
    std::thread::sleep(Duration::from_millis(5));
}

#[test]
fn create_defaults_to_every_existing_mailbox() {
    let w = world_with(&["sales", "hello"]);
    let g = create(&w.alpha(), json!({"name": "Everyone"}));
    assert!(g["id"].as_str().is_some_and(|id| !id.is_empty()), "{g}");
    assert_eq!(g["name"], "Everyone");
    assert_eq!(g["mailboxes"], json!([HELLO, SALES]));
    assert_eq!(g["emails"], json!([]));
    let created = g["createdAt"].as_u64().expect("createdAt");
    assert!(created > 1_600_000_000_000, "{g}");
    assert_eq!(g["createdAt"], g["updatedAt"]);
    assert_eq!(list(&w.alpha()), [g]);
}

#[test]
fn all_is_a_snapshot_of_the_mailboxes_existing_now() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let g = create(&c, json!({"name": "All", "mailboxes": "all"}));
    assert_eq!(g["mailboxes"], json!([HELLO]));
    c.post("/v1/mailboxes", json!({"address": "later"})).expect(201);
    assert_eq!(list(&c)[0]["mailboxes"], json!([HELLO]));
}

#[test]
fn create_takes_mailboxes_as_a_string_or_an_array() {
    let w = world_with(&["hello", "sales", "support"]);
    let c = w.alpha();
    let g = create(&c, json!({"name": "S", "mailboxes": "sales, hello@alpha.test"}));
    assert_eq!(g["mailboxes"], json!([SALES, HELLO]));
    let g = create(&c, json!({"name": "One", "mailboxes": "support"}));
    assert_eq!(g["mailboxes"], json!([SUPPORT]));
    let g = create(&c, json!({"name": "A", "mailboxes": [SUPPORT, "Hello"]}));
    assert_eq!(g["mailboxes"], json!([SUPPORT, HELLO]));
}

#[test]
fn create_rejects_unknown_or_foreign_mailboxes() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    bad_mailboxes(&c, json!("hello, nobody"));
    bad_mailboxes(&c, json!(["nobody@alpha.test"]));
    bad_mailboxes(&c, json!("hello@beta.test"));
    bad_mailboxes(&c, json!(["hello", "hello@beta.test"]));
    assert!(list(&c).is_empty());
}

#[test]
fn create_needs_at_least_one_mailbox() {
    let w = world_with(&[]);
    let c = w.alpha();
    rejected(&c, json!({"name": "Nobody"}));
    rejected(&c, json!({"name": "Nobody", "mailboxes": "all"}));
    c.post("/v1/mailboxes", json!({"address": "hello"})).expect(201);
    for empty in [json!(""), json!([]), json!(" , ")] {
        bad_mailboxes(&c, empty);
    }
    assert!(list(&c).is_empty());
}

#[test]
fn create_needs_a_name() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let msg = rejected(&c, json!({"mailboxes": "all"}));
    assert!(msg.contains("name"), "{msg}");
    rejected(&c, json!({"name": ""}));
    let msg = rejected(&c, json!({"name": 3}));
    assert!(msg.contains("`name`"), "{msg}");
    let msg = rejected(&c, json!({"name": "G", "colour": "red"}));
    assert!(msg.contains("colour"), "{msg}");
    assert!(list(&c).is_empty());
}

#[test]
fn create_splits_and_trims_recipients() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let text = " ada@x.org ,grace@y.net\nlinus@z.com \n";
    let g = create(&c, json!({"name": "Text", "emails": text}));
    assert_eq!(g["emails"], json!(["ada@x.org", "grace@y.net", "linus@z.com"]));
    let g = create(&c, json!({"name": "Array", "emails": [" ada@x.org", "bob@x.org "]}));
    assert_eq!(g["emails"], json!(["ada@x.org", "bob@x.org"]));
}

#[test]
fn create_rejects_an_invalid_recipient_and_names_it() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let msg = bad_emails(&c, json!("ada@x.org, not-an-address"));
    assert!(msg.contains("not-an-address"), "{msg}");
    let msg = bad_emails(&c, json!(["ok@x.org", "bad@@x.org"]));
    assert!(msg.contains("bad@@x.org"), "{msg}");
    assert!(list(&c).is_empty());
}

#[test]
fn create_deduplicates_recipients_case_insensitively_in_first_seen_order() {
    let w = world_with(&["hello"]);
    let emails = ["Ann@Example.COM", "bob@x.org", "ann@example.com", "BOB@X.ORG"];
    let g = create(&w.alpha(), json!({"name": "Dedup", "emails": emails}));
    assert_eq!(g["emails"], json!(["Ann@example.com", "bob@x.org"]));
}

#[test]
fn listing_is_oldest_first_and_scoped_to_the_key_domain() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    for name in ["first", "second", "third"] {
        create(&c, json!({"name": name}));
        tick();
    }
    let names: Vec<Value> = list(&c).iter().map(|g| g["name"].clone()).collect();
    assert_eq!(names, ["first", "second", "third"]);
    assert!(list(&w.beta()).is_empty());
}

#[test]
fn patch_changes_only_the_given_fields() {
    let w = world_with(&["hello", "sales"]);
    let c = w.alpha();
    let g = create(&c, json!({"name": "Old", "emails": "ada@x.org"}));
    tick();
    let p = patch(&c, &g["id"], json!({"name": "New"}));
    assert_eq!(p["name"], "New");
    for same in ["id", "mailboxes", "emails", "createdAt"] {
        assert_eq!(p[same], g[same], "{same}");
    }
    let (before, after) = (g["updatedAt"].as_u64(), p["updatedAt"].as_u64());
    assert!(after > before, "{g} -> {p}");
    assert_eq!(list(&c), [p]);
}

#[test]
fn patch_with_an_empty_object_changes_nothing() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let g = create(&c, json!({"name": "G", "emails": ["ada@x.org"]}));
    tick();
    assert_eq!(patch(&c, &g["id"], json!({})), g);
    assert_eq!(list(&c), [g]);
}

#[test]
fn patch_emails_replaces_the_list_and_overrides_add_and_remove() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let g = create(&c, json!({"name": "G", "emails": "ada@x.org, bob@x.org"}));
    let body = json!({
        "emails": "Cy@Example.ORG\ndee@x.org\ncy@example.org",
        "addEmails": ["eve@x.org"],
        "removeEmails": "dee@x.org",
    });
    let p = patch(&c, &g["id"], body);
    assert_eq!(p["emails"], json!(["Cy@example.org", "dee@x.org"]));
    let p = patch(&c, &g["id"], json!({"emails": []}));
    assert_eq!(p["emails"], json!([]));
}

#[test]
fn patch_adds_then_removes_recipients() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let g = create(&c, json!({"name": "G", "emails": ["ada@x.org", "bob@x.org"]}));
    let p = patch(&c, &g["id"], json!({"addEmails": "ADA@x.org, cy@x.org\neve@x.org"}));
    assert_eq!(p["emails"], json!(["ada@x.org", "bob@x.org", "cy@x.org", "eve@x.org"]));
    let body = json!({"addEmails": ["zed@x.org"], "removeEmails": ["BOB@X.org", "zed@x.org"]});
    let p = patch(&c, &g["id"], body);
    assert_eq!(p["emails"], json!(["ada@x.org", "cy@x.org", "eve@x.org"]));
    // Removing an address that is not there is harmless.
    let p = patch(&c, &g["id"], json!({"removeEmails": "nobody@x.org"}));
    assert_eq!(p["emails"], json!(["ada@x.org", "cy@x.org", "eve@x.org"]));
    assert_eq!(p["name"], "G");
}

#[test]
fn patch_rejects_an_invalid_recipient() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let g = create(&c, json!({"name": "G", "emails": "ada@x.org"}));
    for field in ["emails", "addEmails", "removeEmails"] {
        let msg = invalid(c.patch(&path(&g["id"]), json!({field: "oops"})));
        assert!(msg.contains("oops"), "{field}: {msg}");
    }
    assert_eq!(list(&c), [g]);
}

#[test]
fn patch_replaces_mailboxes_and_never_empties_them() {
    let w = world_with(&["hello", "sales", "support"]);
    let c = w.alpha();
    let g = create(&c, json!({"name": "G", "mailboxes": "hello"}));
    let p = patch(&c, &g["id"], json!({"mailboxes": ["sales", SUPPORT]}));
    assert_eq!(p["mailboxes"], json!([SALES, SUPPORT]));
    let p = patch(&c, &g["id"], json!({"mailboxes": "all"}));
    assert_eq!(p["mailboxes"], json!([HELLO, SALES, SUPPORT]));
    let id = path(&g["id"]);
    for bad in [json!(""), json!([]), json!("nobody"), json!("hello@beta.test")] {
        invalid(c.patch(&id, json!({"mailboxes": bad})));
    }
    assert_eq!(list(&c), [p]);
}

#[test]
fn patch_rejects_malformed_bodies() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let g = create(&c, json!({"name": "G"}));
    let id = path(&g["id"]);
    invalid(c.request("PATCH", &id, Some(b"{\"name\": \"x\"".to_vec())));
    let msg = invalid(c.patch(&id, json!({"name": 3})));
    assert!(msg.contains("`name`"), "{msg}");
    invalid(c.patch(&id, json!({"name": ""})));
    invalid(c.patch(&id, json!({"addEmails": 5})));
    let msg = invalid(c.patch(&id, json!({"members": []})));
    assert!(msg.contains("members"), "{msg}");
    assert_eq!(list(&c), [g]);
}

#[test]
fn patch_of_an_unknown_group_is_not_found() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let id = "/v1/sender-groups/sg_missing";
    c.patch(id, json!({"name": "X"})).expect_error(404, "not_found");
    c.patch(id, json!({})).expect_error(404, "not_found");
}

#[test]
fn delete_removes_the_group_but_not_its_mailboxes() {
    let w = world_with(&["hello", "sales"]);
    let c = w.alpha();
    let g = create(&c, json!({"name": "G"}));
    let keep = create(&c, json!({"name": "Keep"}));
    let id = path(&g["id"]);
    assert_eq!(c.delete(&id).expect(200).json(), json!({"deleted": true}));
    c.delete(&id).expect_error(404, "not_found");
    c.patch(&id, json!({"name": "Back"})).expect_error(404, "not_found");
    assert_eq!(list(&c), [keep]);
    let mailboxes = c.get("/v1/mailboxes").expect(200).json();
    assert_eq!(mailboxes.as_array().map(Vec::len), Some(2), "{mailboxes}");
}

#[test]
fn another_domain_cannot_see_or_change_the_group() {
    let w = world_with(&["hello"]);
    let g = create(&w.alpha(), json!({"name": "Alpha only", "emails": "ada@x.org"}));
    let (id, beta) = (path(&g["id"]), w.beta());
    beta.patch(&id, json!({"name": "Taken"})).expect_error(404, "not_found");
    beta.patch(&id, json!({})).expect_error(404, "not_found");
    beta.delete(&id).expect_error(404, "not_found");
    assert!(list(&beta).is_empty());
    assert_eq!(list(&w.alpha()), [g]);
}

#[test]
fn org_wide_key_is_forbidden() {
    let w = world_with(&["hello"]);
    let g = create(&w.alpha(), json!({"name": "G"}));
    let org = w.org();
    org.get("/v1/sender-groups").expect_error(403, "forbidden");
    org.post("/v1/sender-groups", json!({"name": "Org"})).expect_error(403, "forbidden");
    org.delete(&path(&g["id"])).expect_error(403, "forbidden");
    assert_eq!(list(&w.alpha()), [g]);
}

#[test]
fn null_fields_are_refused_by_name() {
    let w = world_with(&["hello"]);
    let c = w.alpha();
    let msg = rejected(&c, json!({"name": "Launch", "mailboxes": null}));
    assert!(msg.contains("`mailboxes`") && msg.contains("null"), "{msg}");
    let msg = rejected(&c, json!({"name": "Launch", "emails": null}));
    assert!(msg.contains("`emails`"), "{msg}");
    let id = create(&c, json!({"name": "Launch"}))["id"].as_str().expect("id").to_owned();
    let msg = invalid(c.patch(&format!("/v1/sender-groups/{id}"), json!({"mailboxes": null})));
    assert!(msg.contains("`mailboxes`"), "{msg}");
}
