//! Cursor paging of `/v1/emails` and `/v1/contacts` (a `Link: <URL>; rel="next"` header, the
//! body still the spec's array), walked while new items arrive; and how received mail reads.

use std::collections::HashSet;

use edgemail::store::Folder;
use serde_json::{Value, json};

use crate::client::{Client, Resp};
use crate::emails::sample_email;
use crate::harness::{A, World};
use crate::smtp_client::Talk;

/// The URL of the `rel="next"` link, if the answer has one.
fn next_link(resp: &Resp) -> Option<String> {
    let link = resp.header("link")?;
    assert!(link.ends_with("; rel=\"next\""), "{link}");
    let url = link.strip_prefix('<')?.split_once('>')?.0;
    Some(url.to_owned())
}

fn ids(resp: &Resp) -> Vec<String> {
    let list = resp.json();
    let items = list.as_array().unwrap_or_else(|| panic!("the body stays an array: {list}"));
    items.iter().map(|e| e["id"].as_str().expect("id").to_owned()).collect()
}

fn receive(smtp: std::net::SocketAddr, n: usize) {
    let (mut s, _) = Talk::open(smtp);
    s.cmd("EHLO pager.example.org");
    let message = format!("From: x@example.org\r\nTo: sales@{A}\r\nSubject: late {n}\r\n\r\nhi");
    let done = s.mail("x@example.org", &[&format!("sales@{A}")], &message);
    assert!(done.starts_with("250"), "{done}");
}

#[test]
fn paging_through_250_emails_sees_each_once_while_mail_arrives() {
    let mut seeded = Vec::new();
    let w = World::start_seeded(|seed| {
        seed.mailbox(A, "sales");
        for n in 0..250u64 {
            let email = sample_email(&format!("sales@{A}"), Folder::Inbox, &format!("m{n}"), n);
            seeded.push(email.summary.id.clone());
            seed.email(email);
        }
    });
    let c = w.alpha();
    let mut url = "/v1/emails?mailbox=sales&folder=inbox&limit=40".to_owned();
    let (mut seen, mut pages) = (Vec::new(), 0);
    loop {
        let resp = c.get(&url).expect(200);
        seen.extend(ids(&resp));
        pages += 1;
        // New mail arrives between pages: it is newer than the cursor, so it is not repeated.
        receive(w.server.smtp, pages);
        match next_link(&resp) {
            Some(next) => {
                assert!(next.contains("mailbox=sales") && next.contains("limit=40"), "{next}");
                url = next;
            }
            None => break,
        }
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "an email was listed twice");
    let seeded_seen: Vec<&String> = seen.iter().filter(|id| seeded.contains(id)).collect();
    let newest_first: Vec<&String> = seeded.iter().rev().collect();
    assert_eq!(seeded_seen, newest_first, "every seeded email once, newest first");
    assert_eq!(pages, 7, "250 emails in pages of 40");

    // A page that ends the folder has no link; a bad cursor is a 400 naming it.
    let empty = c.get("/v1/emails?mailbox=sales&folder=sent").expect(200);
    assert_eq!((ids(&empty).len(), next_link(&empty)), (0, None));
    let err = c.get("/v1/emails?mailbox=sales&cursor=%21%21").expect_error(400, "invalid_request");
    assert!(err["message"].as_str().unwrap_or("").contains("cursor"), "{err}");
}

fn contact_ids(c: &Client, url: &str) -> (Vec<String>, Option<String>) {
    let resp = c.get(url).expect(200);
    (ids(&resp), next_link(&resp))
}

#[test]
fn paging_through_250_contacts_sees_each_once_while_contacts_are_added() {
    let w = World::start();
    let c = w.alpha();
    let mut created = Vec::new();
    for n in 0..250 {
        let body = json!({"email": format!("person{n}@example.org"), "name": format!("P {n}")});
        created.push(c.post("/v1/contacts", body).expect(201).json()["id"].to_string());
    }
    let created: Vec<String> = created.iter().map(|s| s.trim_matches('"').to_owned()).collect();
    let (first, _) = contact_ids(&c, "/v1/contacts");
    assert_eq!(first.len(), 100, "the default page is 100");

    let mut url = Some("/v1/contacts?limit=60".to_owned());
    let (mut seen, mut added) = (Vec::new(), Vec::new());
    while let Some(next) = url {
        let (page, link) = contact_ids(&c, &next);
        assert!(page.len() <= 60);
        seen.extend(page);
        if added.len() < 3 {
            let body = json!({"email": format!("new{}@example.org", added.len()), "name": "N"});
            added.push(c.post("/v1/contacts", body).expect(201).json()["id"].clone());
        }
        url = link;
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "a contact was listed twice");
    assert_eq!(seen[..250], created[..], "oldest first, each once");
    let added: Vec<String> = added.iter().filter_map(Value::as_str).map(str::to_owned).collect();
    assert_eq!(seen[250..], added[..], "contacts added meanwhile come last, once");

    for bad in ["0", "501", "x"] {
        c.get(&format!("/v1/contacts?limit={bad}")).expect_error(400, "invalid_request");
    }
    c.get("/v1/contacts?cursor=nope").expect_error(400, "invalid_request");
}

#[test]
fn received_mail_keeps_names_lf_text_and_no_made_up_html() {
    let w = World::start_seeded(|seed| seed.mailbox(A, "sales"));
    let message = format!(
        "From: Ada <ada@example.org>\r\nTo: Sales Team <sales@{A}>, bare@example.net\r\n\
         Cc: \"Doe, Jane\" <jane@example.org>, Bob <bob@example.org>\r\nSubject: plain\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\nfirst line\r\nsecond line"
    );
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO sender.example.org");
    assert!(s.mail("ada@example.org", &[&format!("sales@{A}")], &message).starts_with("250"));
    let c = w.alpha();
    let list = c.get("/v1/emails?mailbox=sales").expect(200).json();
    let id = list[0]["id"].as_str().expect("id").to_owned();
    let email = c.get(&format!("/v1/emails/{id}")).expect(200).json();
    assert_eq!(email["html"], Value::Null, "the sender sent no HTML: {email}");
    assert_eq!(email["text"], "first line\nsecond line\n");
    assert_eq!(email["to"], json!([format!("Sales Team <sales@{A}>"), "bare@example.net"]));
    assert_eq!(email["cc"], json!(["\"Doe, Jane\" <jane@example.org>", "Bob <bob@example.org>"]));
}
