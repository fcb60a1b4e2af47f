//! `/v1/contacts`: upsert by email, listing oldest first, validation, deletion, and per-domain
//! contact books.

use std::time::Duration;

use edgemail::ids::now_ms;
use serde_json::{Value, json};

use crate::client::Client;
use crate::harness::World;

fn create(c: &Client, email: &str, name: &str) -> Value {
    c.post("/v1/contacts", json!({"email": email, "name": name})).expect(201).json()
}

fn ids(list: &Value) -> Vec<&str> {
    let items = list.as_array().unwrap_or_else(|| panic!("not an array: {list}"));
    items.iter().map(|c| c["id"].as_str().expect("id")).collect()
}

/// Lets the millisecond clock move on, so times and time-ordered ids differ.
fn tick() {
    std::thread::sleep(Duration::from_millis(5));
}

#[test]
fn create_answers_201_with_the_contact() {
    let w = World::start();
    let before = now_ms();
    let contact = create(&w.alpha(), "ada@example.org", "Ada Lovelace");
    let after = now_ms();
    assert!(contact["id"].as_str().is_some_and(|id| !id.is_empty()), "{contact}");
    assert_eq!(contact["email"], "ada@example.org");
    assert_eq!(contact["name"], "Ada Lovelace");
    let created = contact["createdAt"].as_u64().expect("createdAt");
    assert!((before..=after).contains(&created), "{created} not in {before}..={after}");
    assert_eq!(contact["updatedAt"], contact["createdAt"]);
    let list = w.alpha().get("/v1/contacts").expect(200).json();
    assert_eq!(list, json!([contact]));
}

#[test]
fn posting_the_same_email_in_another_case_updates_the_name() {
    let w = World::start();
    let a = w.alpha();
    let first = create(&a, "ada@example.org", "Ada");
    tick();
    let second = create(&a, "ADA@Example.ORG", "Ada Lovelace");
    assert_eq!(second["id"], first["id"]);
    assert_eq!(second["name"], "Ada Lovelace");
    assert_eq!(second["createdAt"], first["createdAt"]);
    let (before, now) = (first["updatedAt"].as_u64(), second["updatedAt"].as_u64());
    assert!(now >= before, "updatedAt went back: {first} then {second}");
    let list = a.get("/v1/contacts").expect(200).json();
    assert_eq!(ids(&list), [first["id"].as_str().expect("id")]);
    assert_eq!(list[0]["name"], "Ada Lovelace");
}

#[test]
fn contact_email_is_the_address_as_last_given_with_the_domain_lower_cased() {
    let w = World::start();
    let a = w.alpha();
    let first = create(&a, "Ada.Lovelace@Example.ORG", "Ada");
    assert_eq!(first["email"], "Ada.Lovelace@example.org", "{first}");
    let second = create(&a, "ada.LOVELACE@EXAMPLE.org", "Ada");
    assert_eq!(second["id"], first["id"]);
    assert_eq!(second["email"], "ada.LOVELACE@example.org", "{second}");
    assert_eq!(a.get("/v1/contacts").expect(200).json(), json!([second]));
}

#[test]
fn list_is_oldest_first_and_only_the_keys_domain() {
    let w = World::start();
    let (a, b) = (w.alpha(), w.beta());
    let mut want = Vec::new();
    for (email, name) in
        [("c@example.org", "Cee"), ("a@example.org", "Ay"), ("b@example.org", "Bee")]
    {
        want.push(create(&a, email, name)["id"].as_str().expect("id").to_owned());
        tick();
    }
    let theirs = create(&b, "z@example.org", "Zed");
    // Renaming an existing contact keeps its place.
    create(&a, "c@example.org", "Cee Renamed");
    let list = a.get("/v1/contacts").expect(200).json();
    assert_eq!(ids(&list), want);
    assert_eq!(list[0]["name"], "Cee Renamed");
    assert_eq!(b.get("/v1/contacts").expect(200).json(), json!([theirs]));
}

#[test]
fn empty_contact_book_lists_as_an_empty_array() {
    let w = World::start();
    assert_eq!(w.alpha().get("/v1/contacts").expect(200).json(), json!([]));
}

#[test]
fn missing_email_or_name_is_invalid_request_naming_the_field() {
    let w = World::start();
    let a = w.alpha();
    for (body, field) in [
        (json!({"name": "Ada"}), "email"),
        (json!({"email": "ada@example.org"}), "name"),
        (json!({"email": null, "name": "Ada"}), "email"),
        (json!({"email": "ada@example.org", "name": null}), "name"),
    ] {
        let err = a.post("/v1/contacts", body.clone()).expect_error(400, "invalid_request");
        let message = err["message"].as_str().unwrap_or("");
        assert!(message.contains(field), "{body}: message does not name `{field}`: {err}");
    }
    a.post("/v1/contacts", json!({})).expect_error(400, "invalid_request");
    assert_eq!(a.get("/v1/contacts").expect(200).json(), json!([]));
}

#[test]
fn invalid_email_is_invalid_request() {
    let w = World::start();
    let a = w.alpha();
    for email in ["nope", "a@b", "", "@example.org", "a b@example.org", "a@", "a..b@example.org"] {
        let body = json!({"email": email, "name": "Someone"});
        let err = a.post("/v1/contacts", body).expect_error(400, "invalid_request");
        assert!(err["message"].as_str().unwrap_or("").contains("email"), "{email:?}: {err}");
    }
    let err = a
        .post("/v1/contacts", json!({"email": 5, "name": "Five"}))
        .expect_error(400, "invalid_request");
    assert!(err["message"].as_str().unwrap_or("").contains("email"), "{err}");
    assert_eq!(a.get("/v1/contacts").expect(200).json(), json!([]));
}

#[test]
fn invalid_name_is_invalid_request() {
    let w = World::start();
    let a = w.alpha();
    let long = "n".repeat(201);
    for name in
        ["", "   ", "Ada\nLovelace", "Ada\r\nBcc: x@example.org", "tab\there", long.as_str()]
    {
        let body = json!({"email": "ada@example.org", "name": name});
        let err = a.post("/v1/contacts", body).expect_error(400, "invalid_request");
        assert!(err["message"].as_str().unwrap_or("").contains("name"), "{name:?}: {err}");
    }
    a.post("/v1/contacts", json!({"email": "ada@example.org", "name": ["Ada"]}))
        .expect_error(400, "invalid_request");
    // 200 characters is still fine.
    create(&a, "ada@example.org", &"n".repeat(200));
}

#[test]
fn unknown_fields_and_malformed_bodies_are_invalid_request() {
    let w = World::start();
    let a = w.alpha();
    let body = json!({"email": "ada@example.org", "name": "Ada", "phone": "123"});
    let err = a.post("/v1/contacts", body).expect_error(400, "invalid_request");
    assert!(err["message"].as_str().unwrap_or("").contains("phone"), "{err}");
    let json_headers = [("Content-Type", "application/json")];
    let malformed: [&[u8]; 4] = [b"{\"email\": ", b"[\"ada@example.org\", \"Ada\"]", b"", b"null"];
    for raw in malformed {
        a.raw("POST", "/v1/contacts", &json_headers, Some(raw))
            .expect_error(400, "invalid_request");
    }
    assert_eq!(a.get("/v1/contacts").expect(200).json(), json!([]));
}

#[test]
fn delete_removes_the_contact_once() {
    let w = World::start();
    let a = w.alpha();
    let kept = create(&a, "grace@example.net", "Grace");
    let gone = create(&a, "ada@example.org", "Ada");
    let path = format!("/v1/contacts/{}", gone["id"].as_str().expect("id"));
    assert_eq!(a.delete(&path).expect(200).json(), json!({"deleted": true}));
    a.delete(&path).expect_error(404, "not_found");
    assert_eq!(a.get("/v1/contacts").expect(200).json(), json!([kept]));
    // The email is free again: posting it creates a new contact.
    let again = create(&a, "ada@example.org", "Ada Again");
    assert_ne!(again["id"], gone["id"]);
    assert_eq!(again["name"], "Ada Again");
}

#[test]
fn delete_unknown_contact_is_not_found() {
    let w = World::start();
    w.alpha().delete("/v1/contacts/ct_00000000000000000000000000").expect_error(404, "not_found");
    w.alpha().delete("/v1/contacts/nope").expect_error(404, "not_found");
}

#[test]
fn the_same_email_is_a_separate_contact_in_each_domain() {
    let w = World::start();
    let (a, b) = (w.alpha(), w.beta());
    let ours = create(&a, "ada@example.org", "Ada at Alpha");
    let theirs = create(&b, "ada@example.org", "Ada at Beta");
    assert_ne!(ours["id"], theirs["id"]);
    assert_eq!(a.get("/v1/contacts").expect(200).json(), json!([ours]));
    assert_eq!(b.get("/v1/contacts").expect(200).json(), json!([theirs]));

    // Renaming in one domain leaves the other alone.
    let renamed = create(&a, "ada@example.org", "Ada Renamed");
    assert_eq!(renamed["id"], ours["id"]);
    assert_eq!(b.get("/v1/contacts").expect(200).json(), json!([theirs]));

    // Deleting in one domain leaves the other alone.
    let path = format!("/v1/contacts/{}", ours["id"].as_str().expect("id"));
    a.delete(&path).expect(200);
    assert_eq!(a.get("/v1/contacts").expect(200).json(), json!([]));
    assert_eq!(b.get("/v1/contacts").expect(200).json(), json!([theirs]));
}
