//! `/v1/mailboxes`: listing, creation rules, deletion and what deletion takes with it.

use edgemail::store::{Email, Folder, Summary};
use serde_json::{Value, json};

use crate::client::Client;
use crate::harness::{A, B, World};

/// Creates a mailbox and returns the 201 body.
#[track_caller]
fn create(c: &Client, body: Value) -> Value {
    c.post("/v1/mailboxes", body).expect(201).json()
}

/// The local parts the key's listing shows, in order.
#[track_caller]
fn locals(c: &Client) -> Vec<String> {
    let list = c.get("/v1/mailboxes").expect(200).json();
    let items = list.as_array().expect("an array");
    items.iter().map(|m| m["localPart"].as_str().expect("localPart").to_owned()).collect()
}

/// Asserts a 400 `invalid_request` for this creation body; returns the message.
#[track_caller]
fn rejected(c: &Client, body: Value) -> String {
    let err = c.post("/v1/mailboxes", body).expect_error(400, "invalid_request");
    err["message"].as_str().expect("message").to_owned()
}

/// A stored inbound email with this id in `mailbox`.
fn email(id: &str, mailbox: &str) -> Email {
    Email {
        summary: Summary {
            id: id.to_owned(),
            mailbox: mailbox.to_owned(),
            folder: Folder::Inbox,
            from: "sender@example.org".to_owned(),
            to: vec![mailbox.to_owned()],
            subject: "Hello".to_owned(),
            snippet: "Hi there".to_owned(),
            status: crate::harness::status("received"),
            created_at: 1_700_000_000_000,
            size: 120,
            has_attachments: false,
        },
        cc: Vec::new(),
        reply_to: None,
        message_id: Some(format!("<{id}@example.org>")),
        in_reply_to: None,
        headers: Vec::new(),
        text: Some("Hi there".to_owned()),
        html: None,
        attachments: Vec::new(),
        deliveries: Vec::new(),
        ..Default::default()
    }
}

#[test]
fn a_fresh_domain_lists_no_mailboxes() {
    let w = World::start();
    assert_eq!(w.alpha().get("/v1/mailboxes").expect(200).json(), json!([]));
}

#[test]
fn create_with_local_part_returns_the_mailbox_and_lists_it() {
    let w = World::start();
    let m = create(&w.alpha(), json!({"address": "hello", "displayName": "Hello Team"}));
    assert_eq!(m["address"], "hello@alpha.test");
    assert_eq!(m["localPart"], "hello");
    assert_eq!(m["domain"], A);
    assert_eq!(m["displayName"], "Hello Team");
    assert!(m["createdAt"].as_u64().is_some_and(|t| t > 1_600_000_000_000), "{m}");
    let list = w.alpha().get("/v1/mailboxes").expect(200).json();
    assert_eq!(list, json!([m]));
}

#[test]
fn create_without_display_name_gives_null() {
    let w = World::start();
    let m = create(&w.alpha(), json!({"address": "plain"}));
    assert_eq!(m["displayName"], Value::Null);
    let m = create(&w.alpha(), json!({"address": "nulled", "displayName": null}));
    assert_eq!(m["displayName"], Value::Null);
}

#[test]
fn create_accepts_the_full_address_on_the_key_domain() {
    let w = World::start();
    let m = create(&w.alpha(), json!({"address": "sales@alpha.test"}));
    assert_eq!(m["address"], "sales@alpha.test");
    assert_eq!(m["localPart"], "sales");
    let m = create(&w.alpha(), json!({"address": "Info@ALPHA.TEST"}));
    assert_eq!(m["address"], "info@alpha.test");
}

#[test]
fn create_lower_cases_the_local_part() {
    let w = World::start();
    let m = create(&w.alpha(), json!({"address": "Jane.Doe"}));
    assert_eq!(m["address"], "jane.doe@alpha.test");
    assert_eq!(m["localPart"], "jane.doe");
    assert_eq!(locals(&w.alpha()), ["jane.doe"]);
}

#[test]
fn create_on_another_domain_is_rejected() {
    let w = World::start();
    rejected(&w.alpha(), json!({"address": "sales@beta.test"}));
    rejected(&w.alpha(), json!({"address": "sales@example.com"}));
    assert!(locals(&w.alpha()).is_empty());
    assert!(locals(&w.beta()).is_empty());
}

#[test]
fn create_rejects_invalid_local_parts() {
    let w = World::start();
    let c = w.alpha();
    let long = "a".repeat(65);
    for bad in ["", "   ", "a b", "a..b", ".lead", "trail.", "a@b@alpha.test", "semi;colon", &long]
    {
        rejected(&c, json!({"address": bad}));
    }
    assert!(locals(&c).is_empty());
    // 64 characters is the limit, not past it.
    let max = "b".repeat(64);
    assert_eq!(create(&c, json!({"address": &max}))["localPart"], max.as_str());
}

#[test]
fn create_names_the_address_field_when_missing_or_mistyped() {
    let w = World::start();
    let c = w.alpha();
    let missing = rejected(&c, json!({"displayName": "No Address"}));
    assert!(missing.contains("address"), "{missing}");
    let mistyped = rejected(&c, json!({"address": 5}));
    assert!(mistyped.contains("`address`"), "{mistyped}");
    let mistyped = rejected(&c, json!({"address": ["a", "b"]}));
    assert!(mistyped.contains("`address`"), "{mistyped}");
}

#[test]
fn create_names_an_unknown_field() {
    let w = World::start();
    let msg = rejected(&w.alpha(), json!({"address": "hello", "nickname": "hi"}));
    assert!(msg.contains("nickname"), "{msg}");
    assert!(locals(&w.alpha()).is_empty());
}

#[test]
fn create_rejects_a_body_that_is_not_an_object() {
    let w = World::start();
    rejected(&w.alpha(), json!(["hello"]));
    rejected(&w.alpha(), json!("hello"));
    let resp = w.alpha().request("POST", "/v1/mailboxes", Some(b"{\"address\": ".to_vec()));
    resp.expect_error(400, "invalid_request");
}

#[test]
fn create_rejects_bad_display_names() {
    let w = World::start();
    let c = w.alpha();
    rejected(&c, json!({"address": "crlf", "displayName": "Evil\r\nBcc: x@example.com"}));
    rejected(&c, json!({"address": "lf", "displayName": "Two\nLines"}));
    rejected(&c, json!({"address": "long", "displayName": "n".repeat(201)}));
    rejected(&c, json!({"address": "typed", "displayName": 7}));
    assert!(locals(&c).is_empty());
    let name = "n".repeat(200);
    assert_eq!(create(&c, json!({"address": "long", "displayName": &name}))["displayName"], name);
}

#[test]
fn duplicate_address_is_a_conflict_regardless_of_case() {
    let w = World::start();
    let c = w.alpha();
    create(&c, json!({"address": "Sales"}));
    c.post("/v1/mailboxes", json!({"address": "sales"})).expect_error(409, "conflict");
    c.post("/v1/mailboxes", json!({"address": "SALES@alpha.test"})).expect_error(409, "conflict");
    assert_eq!(locals(&c), ["sales"]);
    // The same local part on the other domain is a different mailbox.
    create(&w.beta(), json!({"address": "sales"}));
}

#[test]
fn listing_is_ordered_by_local_part_and_scoped_to_the_key_domain() {
    let w = World::start_seeded(|seed| seed.mailbox(B, "other"));
    let c = w.alpha();
    for local in ["zed", "alpha", "mid"] {
        create(&c, json!({"address": local}));
    }
    assert_eq!(locals(&c), ["alpha", "mid", "zed"]);
    let list = c.get("/v1/mailboxes").expect(200).json();
    for m in list.as_array().expect("array") {
        assert_eq!(m["domain"], A, "{m}");
    }
    assert_eq!(locals(&w.beta()), ["other"]);
}

#[test]
fn delete_by_local_part_then_again_is_not_found() {
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "x");
        seed.mailbox(A, "y");
    });
    let c = w.alpha();
    assert_eq!(c.delete("/v1/mailboxes/x").expect(200).json(), json!({"deleted": true}));
    assert_eq!(locals(&c), ["y"]);
    c.delete("/v1/mailboxes/x").expect_error(404, "not_found");
    c.delete("/v1/mailboxes/never").expect_error(404, "not_found");
}

#[test]
fn delete_accepts_the_full_address_raw_or_encoded() {
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "raw");
        seed.mailbox(A, "enc");
        seed.mailbox(A, "upper");
    });
    let c = w.alpha();
    c.delete("/v1/mailboxes/raw@alpha.test").expect(200);
    c.delete("/v1/mailboxes/enc%40alpha.test").expect(200);
    c.delete("/v1/mailboxes/UPPER@Alpha.Test").expect(200);
    assert!(locals(&c).is_empty());
    c.delete("/v1/mailboxes/enc%40alpha.test").expect_error(404, "not_found");
}

#[test]
fn delete_cannot_reach_another_domain() {
    let w = World::start_seeded(|seed| seed.mailbox(B, "shared"));
    w.alpha().delete("/v1/mailboxes/shared@beta.test").expect_error(404, "not_found");
    w.alpha().delete("/v1/mailboxes/shared%40beta.test").expect_error(404, "not_found");
    w.alpha().delete("/v1/mailboxes/shared").expect_error(404, "not_found");
    assert_eq!(locals(&w.beta()), ["shared"]);
}

#[test]
fn deleting_a_mailbox_deletes_its_emails_only() {
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "x");
        seed.mailbox(A, "y");
        seed.email(email("em_x_one", "x@alpha.test"));
        let mut sent = email("em_x_two", "x@alpha.test");
        sent.summary.folder = Folder::Sent;
        sent.summary.status = crate::harness::status("delivered");
        seed.email(sent);
        seed.email(email("em_y_one", "y@alpha.test"));
    });
    let c = w.alpha();
    for id in ["em_x_one", "em_x_two", "em_y_one"] {
        c.get(&format!("/v1/emails/{id}")).expect(200);
    }
    c.delete("/v1/mailboxes/x").expect(200);
    c.get("/v1/emails/em_x_one").expect_error(404, "not_found");
    c.get("/v1/emails/em_x_two").expect_error(404, "not_found");
    let kept = c.get("/v1/emails/em_y_one").expect(200).json();
    assert_eq!(kept["mailbox"], "y@alpha.test");
}

#[test]
fn deleting_a_mailbox_removes_it_from_sender_groups() {
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "x");
        seed.mailbox(A, "y");
    });
    let c = w.alpha();
    let both = c.post("/v1/sender-groups", json!({"name": "Both"})).expect(201).json();
    let only_y = c.post("/v1/sender-groups", json!({"name": "Y", "mailboxes": "y"})).expect(201);
    let only_y = only_y.json();
    assert_eq!(both["mailboxes"], json!(["x@alpha.test", "y@alpha.test"]));
    c.delete("/v1/mailboxes/x@alpha.test").expect(200);
    let groups = c.get("/v1/sender-groups").expect(200).json();
    let groups = groups.as_array().expect("array");
    assert_eq!(groups.len(), 2, "{groups:?}");
    let after = groups.iter().find(|g| g["id"] == both["id"]).expect("group still exists");
    assert_eq!(after["mailboxes"], json!(["y@alpha.test"]));
    assert_eq!(after["name"], "Both");
    let untouched = groups.iter().find(|g| g["id"] == only_y["id"]).expect("other group");
    assert_eq!(untouched, &only_y);
}

#[test]
fn org_wide_key_is_forbidden() {
    let w = World::start_seeded(|seed| seed.mailbox(A, "x"));
    w.org().get("/v1/mailboxes").expect_error(403, "forbidden");
    w.org().post("/v1/mailboxes", json!({"address": "new"})).expect_error(403, "forbidden");
    w.org().delete("/v1/mailboxes/x@alpha.test").expect_error(403, "forbidden");
    assert_eq!(locals(&w.alpha()), ["x"]);
}
