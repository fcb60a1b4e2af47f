//! `/v1/emails`: listing a mailbox folder, reading one email, and the trash-then-purge delete.
//! Emails cannot be created over HTTP yet, so every test seeds them through the storage API.

use std::time::Duration;

use edgemail::ids::new_id;
use edgemail::store::{Attachment, Delivery, Email, Folder, Header, Summary};
use serde_json::{Value, json};

use crate::client::Client;
use crate::harness::{A, B, Seed, World};

/// A plain received message in `mailbox` (a full address), with a fixed creation time.
pub fn sample_email(mailbox: &str, folder: Folder, subject: &str, created_at: u64) -> Email {
    let status = if folder == Folder::Drafts { "draft" } else { "received" };
    Email {
        summary: Summary {
            id: new_id("em"),
            mailbox: mailbox.to_owned(),
            folder,
            from: "Sender <sender@example.org>".to_owned(),
            to: vec![mailbox.to_owned()],
            subject: subject.to_owned(),
            snippet: format!("body of {subject}"),
            status: crate::harness::status(status),
            created_at,
            size: 321,
            has_attachments: false,
        },
        cc: Vec::new(),
        reply_to: None,
        message_id: Some(format!("<{subject}@example.org>")),
        in_reply_to: None,
        headers: vec![Header { name: "Subject".to_owned(), value: subject.to_owned() }],
        text: Some(format!("body of {subject}")),
        html: None,
        attachments: Vec::new(),
        deliveries: Vec::new(),
        ..Default::default()
    }
}

/// Seeds a sample email and returns its id.
fn put(seed: &Seed, mailbox: &str, folder: Folder, subject: &str, at: u64) -> String {
    let email = sample_email(mailbox, folder, subject, at);
    let id = email.summary.id.clone();
    seed.email(email);
    id
}

/// The ids `GET /v1/emails{query}` lists, in order.
fn listed(c: &Client, query: &str) -> Vec<String> {
    let list = c.get(&format!("/v1/emails{query}")).expect(200).json();
    let items = list.as_array().unwrap_or_else(|| panic!("not an array: {list}"));
    items.iter().map(|e| e["id"].as_str().expect("id").to_owned()).collect()
}

fn at_a(local: &str) -> String {
    format!("{local}@{A}")
}

fn moved_to_trash() -> Value {
    json!({"deleted": false, "moved": "trash"})
}

fn purged() -> Value {
    json!({"deleted": true, "moved": "none"})
}

#[test]
fn list_without_any_mailbox_is_an_empty_array() {
    let w = World::start();
    assert_eq!(w.alpha().get("/v1/emails").expect(200).json(), json!([]));
    assert!(listed(&w.alpha(), "?folder=trash&limit=5").is_empty());
}

#[test]
fn list_defaults_to_the_earliest_mailbox_inbox_newest_first() {
    let mut want = Vec::new();
    let w = World::start_seeded(|seed| {
        // Created first, though it sorts last by name: it is the default mailbox.
        seed.mailbox(A, "zed");
        std::thread::sleep(Duration::from_millis(5));
        seed.mailbox(A, "abc");
        let zed = at_a("zed");
        let mid = put(seed, &zed, Folder::Inbox, "mid", 2_000);
        let old = put(seed, &zed, Folder::Inbox, "old", 1_000);
        let new = put(seed, &zed, Folder::Inbox, "new", 3_000);
        put(seed, &zed, Folder::Sent, "sent one", 4_000);
        put(seed, &at_a("abc"), Folder::Inbox, "other box", 5_000);
        want = vec![new, mid, old];
    });
    let a = w.alpha();
    let list = a.get("/v1/emails").expect(200).json();
    assert_eq!(listed(&a, ""), want, "{list}");
    let explicit = a.get("/v1/emails?mailbox=zed&folder=inbox&limit=50").expect(200).json();
    assert_eq!(explicit, list);
    let newest = &list[0];
    assert_eq!(newest["mailbox"], at_a("zed"));
    assert_eq!(newest["folder"], "inbox");
    assert_eq!(newest["from"], "Sender <sender@example.org>");
    assert_eq!(newest["to"], json!([at_a("zed")]));
    assert_eq!(newest["subject"], "new");
    assert_eq!(newest["snippet"], "body of new");
    assert_eq!(newest["status"], "received");
    assert_eq!(newest["createdAt"], 3_000);
    assert_eq!(newest["size"], 321);
    assert_eq!(newest["hasAttachments"], false);
}

#[test]
fn list_by_local_part_or_full_address_shows_only_that_mailbox() {
    let (mut first, mut second) = (String::new(), String::new());
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "first");
        std::thread::sleep(Duration::from_millis(5));
        seed.mailbox(A, "second");
        seed.mailbox(B, "second");
        first = put(seed, &at_a("first"), Folder::Inbox, "one", 1_000);
        second = put(seed, &at_a("second"), Folder::Inbox, "two", 2_000);
        put(seed, &format!("second@{B}"), Folder::Inbox, "beta", 3_000);
    });
    let a = w.alpha();
    assert_eq!(listed(&a, "?mailbox=second"), [second.clone()]);
    assert_eq!(listed(&a, &format!("?mailbox=second%40{A}")), [second.clone()]);
    assert_eq!(listed(&a, &format!("?mailbox=second@{A}")), [second]);
    assert_eq!(listed(&a, "?mailbox=first"), [first]);
}

#[test]
fn list_selects_each_folder() {
    let mut by_folder = Vec::new();
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "box");
        for (n, folder) in Folder::ALL.into_iter().enumerate() {
            let id = put(
                seed,
                &at_a("box"),
                folder,
                folder.system_name().unwrap_or_default(),
                1_000 + n as u64,
            );
            by_folder.push((folder.system_name().unwrap_or_default(), id));
        }
    });
    for (name, id) in &by_folder {
        let list = w.alpha().get(&format!("/v1/emails?folder={name}")).expect(200).json();
        assert_eq!(list.as_array().map(Vec::len), Some(1), "folder {name}: {list}");
        assert_eq!(list[0]["id"], *id);
        assert_eq!(list[0]["folder"], *name);
    }
}

#[test]
fn list_limit_returns_the_newest() {
    let mut all = Vec::new();
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "box");
        for n in 0..5u64 {
            all.push(put(seed, &at_a("box"), Folder::Inbox, &format!("n{n}"), 1_000 + n));
        }
    });
    all.reverse();
    let a = w.alpha();
    assert_eq!(listed(&a, "?limit=2"), all[..2]);
    assert_eq!(listed(&a, "?limit=1"), all[..1]);
    assert_eq!(listed(&a, "?limit=100"), all);
    assert_eq!(listed(&a, "?limit=5"), all);
}

#[test]
fn list_rejects_bad_folder_and_limit() {
    let w = World::start_seeded(|seed| seed.mailbox(A, "box"));
    let a = w.alpha();
    // A folder the mailbox does not have is not found, as a missing mailbox is.
    for folder in ["spam", "all", "inbox,sent"] {
        let err = a.get(&format!("/v1/emails?folder={folder}")).expect_error(404, "not_found");
        assert!(err["message"].as_str().unwrap_or("").contains("folder"), "{folder}: {err}");
    }
    let limits = ["0", "101", "abc", "-1", "1.5"].map(|l| ("limit", l));
    for (field, value) in limits {
        let path = format!("/v1/emails?{field}={value}");
        let err = a.get(&path).expect_error(400, "invalid_request");
        let message = err["message"].as_str().unwrap_or("");
        assert!(message.contains(field), "{path}: {err}");
    }
}

#[test]
fn list_unknown_or_foreign_mailbox_is_not_found() {
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "box");
        seed.mailbox(B, "other");
        put(seed, &format!("other@{B}"), Folder::Inbox, "beta", 1_000);
    });
    let a = w.alpha();
    // Unknown here; another domain's mailbox by full address and by its local part.
    let other_full = format!("/v1/emails?mailbox=other@{B}");
    let nobody_full = format!("/v1/emails?mailbox=nobody@{A}");
    for path in ["/v1/emails?mailbox=nobody", &nobody_full, &other_full, "/v1/emails?mailbox=other"]
    {
        a.get(path).expect_error(404, "not_found");
    }
    assert_eq!(listed(&w.beta(), "?mailbox=other").len(), 1);
}

#[test]
fn get_returns_the_full_email_with_attachments_and_deliveries() {
    const T: u64 = 1_700_000_000_000;
    let mut id = String::new();
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "box");
        let mut email = sample_email(&at_a("box"), Folder::Sent, "report", T);
        email.summary.from = at_a("box");
        email.summary.to = vec!["ada@example.org".into(), "grace@example.net".into()];
        email.summary.status = crate::harness::status("deferred");
        email.summary.has_attachments = true;
        email.summary.size = 4_096;
        email.cc = vec!["linus@example.com".into()];
        email.reply_to = Some("replies@alpha.test".into());
        email.in_reply_to = Some("<earlier@example.org>".into());
        let header = |name: &str, value: &str| Header { name: name.into(), value: value.into() };
        email.headers = vec![header("From", &at_a("box")), header("X-Custom", "yes")];
        email.html = Some("<p>body of report</p>".into());
        let attachment = |filename: Option<&str>, content_type: &str, size| Attachment {
            filename: filename.map(str::to_owned),
            content_type: content_type.into(),
            size,
        };
        email.attachments = vec![
            attachment(Some("report.pdf"), "application/pdf", 1_234),
            attachment(None, "image/png", 10),
        ];
        let delivery = |recipient: &str, status: &str, attempts, last: Option<&str>, at| Delivery {
            recipient: recipient.into(),
            status: crate::harness::status(status),
            attempts,
            last_response: last.map(str::to_owned),
            updated_at: at,
            bounce_class: None,
        };
        email.deliveries = vec![
            delivery("ada@example.org", "delivered", 1, Some("250 OK"), T + 500),
            delivery("grace@example.net", "deferred", 3, None, T + 900),
        ];
        id = email.summary.id.clone();
        seed.email(email);
    });
    let a = w.alpha();
    let got = a.get(&format!("/v1/emails/{id}")).expect(200).json();
    let want = json!({
        "id": id, "mailbox": at_a("box"), "folder": "sent", "from": at_a("box"),
        "to": ["ada@example.org", "grace@example.net"], "subject": "report",
        "snippet": "body of report", "status": "deferred", "createdAt": T,
        "size": 4_096, "hasAttachments": true, "cc": ["linus@example.com"],
        "replyTo": "replies@alpha.test", "messageId": "<report@example.org>",
        "inReplyTo": "<earlier@example.org>",
        "headers": [{"name": "From", "value": at_a("box")}, {"name": "X-Custom", "value": "yes"}],
        "text": "body of report", "html": "<p>body of report</p>",
        "attachments": [
            {"filename": "report.pdf", "contentType": "application/pdf", "size": 1_234},
            {"filename": null, "contentType": "image/png", "size": 10}
        ],
        "deliveries": [
            {"recipient": "ada@example.org", "status": "delivered", "attempts": 1,
             "lastResponse": "250 OK", "updatedAt": T + 500},
            {"recipient": "grace@example.net", "status": "deferred", "attempts": 3,
             "lastResponse": null, "updatedAt": T + 900}
        ],
        "type": null, "batchId": null, "scheduledAt": null, "nextAttemptAt": null, "tracking": null,
        "inReplyToId": null, "sequenceId": null, "enrollmentId": null,
        "bcc": [], "tags": [], "metadata": {}, "flags": []
    });
    assert_eq!(got, want);
    let sent = a.get("/v1/emails?folder=sent").expect(200).json();
    assert_eq!(sent[0]["id"], id);
    assert_eq!(sent[0]["hasAttachments"], true);
}

#[test]
fn get_or_delete_of_an_unknown_or_foreign_email_is_not_found() {
    let mut foreign = String::new();
    let w = World::start_seeded(|seed| {
        seed.mailbox(B, "box");
        foreign = put(seed, &format!("box@{B}"), Folder::Inbox, "beta", 1_000);
    });
    let unknown = format!("/v1/emails/{}", new_id("em"));
    let theirs = format!("/v1/emails/{foreign}");
    for path in [unknown.as_str(), "/v1/emails/nope", theirs.as_str()] {
        w.alpha().get(path).expect_error(404, "not_found");
        w.alpha().delete(path).expect_error(404, "not_found");
    }
    assert_eq!(w.beta().get(&theirs).expect(200).json()["folder"], "inbox");
}

#[test]
fn delete_moves_to_trash_then_removes_permanently() {
    let (mut id, mut other) = (String::new(), String::new());
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "box");
        id = put(seed, &at_a("box"), Folder::Inbox, "doomed", 2_000);
        other = put(seed, &at_a("box"), Folder::Inbox, "kept", 1_000);
    });
    let a = w.alpha();
    let path = format!("/v1/emails/{id}");
    assert_eq!(a.delete(&path).expect(200).json(), moved_to_trash());
    assert_eq!(listed(&a, ""), [other.clone()]);
    assert_eq!(listed(&a, "?folder=trash"), [id.clone()]);
    assert_eq!(a.get(&path).expect(200).json()["folder"], "trash");

    assert_eq!(a.delete(&path).expect(200).json(), purged());
    a.get(&path).expect_error(404, "not_found");
    a.delete(&path).expect_error(404, "not_found");
    assert!(listed(&a, "?folder=trash").is_empty());
    assert_eq!(listed(&a, ""), [other]);
}

#[test]
fn delete_from_sent_or_drafts_moves_to_trash() {
    let mut seeded = Vec::new();
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "box");
        for (n, folder) in [Folder::Sent, Folder::Drafts].into_iter().enumerate() {
            seeded.push((
                folder.system_name().unwrap_or_default(),
                put(seed, &at_a("box"), folder, "x", 1_000 + n as u64),
            ));
        }
    });
    let a = w.alpha();
    for (folder, id) in &seeded {
        let moved = a.delete(&format!("/v1/emails/{id}")).expect(200).json();
        assert_eq!(moved, moved_to_trash(), "from {folder}");
        assert!(listed(&a, &format!("?folder={folder}")).is_empty());
    }
    assert_eq!(listed(&a, "?folder=trash").len(), 2);
}

#[test]
fn delete_of_an_email_already_in_trash_removes_it() {
    let mut id = String::new();
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "box");
        id = put(seed, &at_a("box"), Folder::Trash, "trashed", 1_000);
    });
    let path = format!("/v1/emails/{id}");
    assert_eq!(w.alpha().delete(&path).expect(200).json(), purged());
    w.alpha().get(&path).expect_error(404, "not_found");
}
