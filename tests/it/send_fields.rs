//! The optional fields of `POST /v1/send` end to end, to an SMTP sink on 127.0.0.1: copies and
//! blind copies, Reply-To, the sender's headers, attachments (bytes compared after parsing the
//! received MIME), tags and metadata; and a 400 naming the field for every bad input.

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::{Value, json};

use crate::mail_world::{MailWorld, basic, header, verify_dkim};

/// Deterministic bytes covering every byte value, CR and LF included.
fn binary(len: usize) -> Vec<u8> {
    let mut x: u32 = 0x9e37_79b9;
    (0..len)
        .map(|i| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            if i < 256 { i as u8 } else { (x >> 16) as u8 }
        })
        .collect()
}

/// The attachments of a received message: (filename, content type, bytes).
fn attachments_of(raw: &[u8]) -> Vec<(String, String, Vec<u8>)> {
    use mail_parser::MimeHeaders;
    let message = mail_parser::MessageParser::default().parse(raw).expect("parse message");
    message
        .attachments()
        .map(|a| {
            let ct = a
                .content_type()
                .map(|c| format!("{}/{}", c.ctype(), c.subtype().unwrap_or("")))
                .unwrap_or_default();
            (a.attachment_name().unwrap_or("").to_owned(), ct, a.contents().to_vec())
        })
        .collect()
}

/// The header block of a message, lower-cased.
fn head_lower(raw: &[u8]) -> String {
    let text = String::from_utf8_lossy(raw);
    text.split("\r\n\r\n").next().unwrap_or("").to_ascii_lowercase()
}

#[test]
fn every_field_arrives_as_sent_and_bcc_is_nowhere_in_the_message() {
    let w = MailWorld::start();
    let pdf = binary(70_000);
    let notes = b"line one\nline two\r\nbare CR\rend".to_vec();
    let sent = w
        .send(json!({
            "from": "sales@alpha.test",
            "to": "ada@example.org",
            "cc": ["grace@example.net"],
            "bcc": "hidden@example.org",
            "replyTo": "support@alpha.test",
            "subject": "Your invoice",
            "html": "<p>Attached.</p>",
            "headers": {"X-Campaign": "autumn", "X-Entity-Ref-ID": "inv-42"},
            "attachments": [
                {"filename": "invoice.pdf", "content": B64.encode(&pdf)},
                {"filename": "notes.txt", "content": B64.encode(&notes), "contentType": "text/plain"}
            ],
            "tags": ["invoice", "q4"],
            "metadata": {"customerId": "c_123", "plan": "pro"}
        }))
        .expect(200)
        .json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    let got = w.sink.wait_for(3, Duration::from_secs(20));
    let mut rcpts: Vec<String> = got.iter().flat_map(|m| m.rcpt_to.clone()).collect();
    rcpts.sort();
    assert_eq!(rcpts, ["ada@example.org", "grace@example.net", "hidden@example.org"]);
    for m in &got {
        let raw = &m.data;
        let head = head_lower(raw);
        assert!(!head.contains("\r\nbcc:") && !head.starts_with("bcc:"), "a Bcc header: {head}");
        assert!(!head.contains("hidden@example.org"), "the blind copy shows: {head}");
        assert_eq!(header(raw, "To").as_deref(), Some("<ada@example.org>"));
        assert_eq!(header(raw, "Cc").as_deref(), Some("<grace@example.net>"));
        assert_eq!(header(raw, "Reply-To").as_deref(), Some("<support@alpha.test>"));
        assert_eq!(header(raw, "X-Campaign").as_deref(), Some("autumn"));
        assert_eq!(header(raw, "X-Entity-Ref-ID").as_deref(), Some("inv-42"));
        assert!(header(raw, "Content-Type").is_some_and(|c| c.starts_with("multipart/mixed")));
        let files = attachments_of(raw);
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(files[0].0, "invoice.pdf");
        assert_eq!(files[0].1, "application/pdf");
        assert!(files[0].2 == pdf, "the PDF's bytes differ at the receiving server");
        assert_eq!(files[1].0, "notes.txt");
        assert_eq!(files[1].1, "text/plain");
        assert_eq!(files[1].2, notes, "the text file's bytes differ");
        let results = verify_dkim(&w.dns, raw);
        assert!(!results.is_empty() && results.iter().all(|(_, r)| r == "Pass"), "{results:?}");
    }
    let email = w.wait_status(&id, "delivered");
    assert_eq!(email["tags"], json!(["invoice", "q4"]));
    assert_eq!(email["metadata"], json!({"customerId": "c_123", "plan": "pro"}));
    assert_eq!(email["cc"], json!(["grace@example.net"]));
    assert_eq!(email["bcc"], json!(["hidden@example.org"]));
    assert_eq!(email["replyTo"], "support@alpha.test");
    assert_eq!(email["hasAttachments"], true);
    assert_eq!(
        email["attachments"],
        json!([
            {"filename": "invoice.pdf", "contentType": "application/pdf", "size": pdf.len()},
            {"filename": "notes.txt", "contentType": "text/plain", "size": notes.len()}
        ])
    );
    let headers = email["headers"].as_array().expect("headers");
    assert!(headers.iter().any(|h| h["name"] == "X-Campaign" && h["value"] == "autumn"));
    assert_eq!(email["deliveries"].as_array().map(Vec::len), Some(3));
    // The summary in the folder listing says so too.
    let sent_folder = w.api().get("/v1/emails?folder=sent&mailbox=sales").expect(200).json();
    assert_eq!(sent_folder[0]["hasAttachments"], true);
}

#[test]
fn attachments_up_to_ten_mib_in_all_are_sent_intact_and_one_byte_more_is_refused() {
    let w = MailWorld::start();
    let limit = 10 * 1024 * 1024;
    let big = binary(limit - 1000);
    let small = binary(1000);
    let body = |extra: usize| {
        json!({"from": "sales@alpha.test", "to": "ada@example.org", "subject": "Big", "text": "see",
               "attachments": [{"filename": "big.bin", "content": B64.encode(&big)},
                               {"filename": "small.bin", "content": B64.encode(binary(1000 + extra))}]})
    };
    let over = w.send(body(1)).expect_error(400, "invalid_request");
    assert!(
        over["message"].as_str().is_some_and(|m| m.contains("attachments[1].content")),
        "{over}"
    );
    let id = w.send(body(0)).expect(200).json()["messageId"].as_str().expect("id").to_owned();
    let got = w.sink.wait_for(1, Duration::from_secs(60));
    let files = attachments_of(&got[0].data);
    assert!(files[0].2 == big, "the large file's bytes differ");
    assert!(files[1].2 == small, "the small file's bytes differ");
    let email = w.wait_status(&id, "delivered");
    assert_eq!(email["attachments"][0]["size"], big.len());
}

#[test]
fn a_campaign_shares_its_attachment_tags_and_metadata_with_every_message() {
    let w = MailWorld::start();
    let file = binary(5000);
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": ["ada@example.org", "grace@example.net"],
                     "subject": "Catalogue", "html": "<p>Ours</p>", "type": "campaign",
                     "attachments": [{"filename": "catalogue.pdf", "content": B64.encode(&file)}],
                     "tags": ["autumn"], "metadata": {"list": "customers"}}))
        .expect(200)
        .json();
    let got = w.sink.wait_for(2, Duration::from_secs(20));
    for m in &got {
        let files = attachments_of(&m.data);
        assert!(files.len() == 1 && files[0].2 == file, "{:?}", files.len());
    }
    let ids: Vec<String> = sent["messageIds"]
        .as_array()
        .expect("ids")
        .iter()
        .filter_map(|v| v.as_str().map(str::to_owned))
        .collect();
    // Deleting one message (twice: to trash, then for good) keeps the other's attachment.
    w.wait_status(&ids[0], "delivered");
    w.api().delete(&format!("/v1/emails/{}", ids[0])).expect(200);
    w.api().delete(&format!("/v1/emails/{}", ids[0])).expect(200);
    for id in &ids[1..] {
        let email = w.wait_status(id, "delivered");
        assert_eq!(email["tags"], json!(["autumn"]));
        assert_eq!(email["metadata"], json!({"list": "customers"}));
        assert_eq!(email["attachments"][0]["filename"], "catalogue.pdf");
    }
}

#[test]
fn copies_are_screened_like_to_and_sent_once() {
    let w = MailWorld::start();
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": "ada@example.org",
                     "cc": "x@mailinator.com, ADA@example.org", "bcc": ["nope", "grace@example.net"],
                     "subject": "s", "text": "t"}))
        .expect(200)
        .json();
    let blocked: Vec<(String, String)> = sent["blocked"]
        .as_array()
        .expect("blocked")
        .iter()
        .map(|b| {
            (b["email"].as_str().unwrap_or("").into(), b["reason"].as_str().unwrap_or("").into())
        })
        .collect();
    assert!(
        blocked.contains(&("x@mailinator.com".into(), "disposable_address".into())),
        "{blocked:?}"
    );
    assert!(blocked.contains(&("nope".into(), "invalid_address".into())), "{blocked:?}");
    let id = sent["messageId"].as_str().expect("id");
    let email = w.wait_status(id, "delivered");
    assert_eq!(email["cc"], json!([]), "ada is already in `to`");
    assert_eq!(email["bcc"], json!(["grace@example.net"]));
    let got = w.sink.wait_for(2, Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(w.sink.messages().len(), 2, "{got:?}");
    // Every recipient refused, in whichever list: 422.
    let all_bad = json!({"from": "sales@alpha.test", "to": "nope", "cc": "x@mailinator.com",
                         "bcc": "y@mailinator.com", "subject": "s", "text": "t"});
    let body = w.send(all_bad).expect_error(422, "unprocessable_entity");
    assert_eq!(body["blocked"].as_array().map(Vec::len), Some(3), "{body}");
}

#[test]
fn bad_inputs_are_400_naming_the_field() {
    let w = MailWorld::start();
    let base = || json!({"from": "sales@alpha.test", "to": "ada@example.org", "subject": "s", "text": "t"});
    let with = |field: &str, value: Value| {
        let mut body = base();
        body[field] = value;
        body
    };
    let cases: Vec<(Value, &str)> = vec![
        (
            with("attachments", json!([{"filename": "a.bin", "content": "%%%not base64"}])),
            "attachments[0].content",
        ),
        (
            with("attachments", json!([{"filename": "", "content": "aGk="}])),
            "attachments[0].filename",
        ),
        (
            with("attachments", json!([{"filename": "../a", "content": "aGk="}])),
            "attachments[0].filename",
        ),
        (with("attachments", json!([{"content": "aGk="}])), "filename"),
        (
            with(
                "attachments",
                json!([{"filename": "a", "content": "aGk=", "contentType": "pdf"}]),
            ),
            "attachments[0].contentType",
        ),
        (with("attachments", json!({"filename": "a"})), "attachments"),
        (with("attachments", json!([{"filename": "a", "content": 5}])), "attachments[0].content"),
        (with("tags", json!(vec!["t"; 11])), "tags"),
        (with("tags", json!(["x".repeat(129)])), "tags[0]"),
        (with("tags", json!([""])), "tags[0]"),
        (with("tags", json!("one")), "tags"),
        (
            with(
                "metadata",
                json!(
                    (0..21)
                        .map(|i| (format!("k{i}"), json!("v")))
                        .collect::<serde_json::Map<_, _>>()
                ),
            ),
            "metadata",
        ),
        (with("metadata", json!({"n": 5})), "metadata.n"),
        (with("metadata", json!({"k": "v".repeat(1001)})), "metadata.k"),
        (with("headers", json!({"From": "evil@x.test"})), "headers.From"),
        (with("headers", json!({"bcc": "spy@x.test"})), "headers.bcc"),
        (with("headers", json!({"DKIM-Signature": "v=1"})), "headers.DKIM-Signature"),
        (with("headers", json!({"Content-Type": "text/html"})), "headers.Content-Type"),
        (
            with("headers", json!({"List-Unsubscribe": "<https://x.test>"})),
            "headers.List-Unsubscribe",
        ),
        (with("headers", json!({"X-Edgemail-Warmup": "1"})), "headers.X-Edgemail-Warmup"),
        (with("headers", json!({"X-Ok": "a\r\nBcc: spy@x.test"})), "headers.X-Ok"),
        (with("headers", json!({"X-Ok": "a\nb"})), "headers.X-Ok"),
        (with("headers", json!({"X Bad": "v"})), "headers.X Bad"),
        (with("headers", json!({"X-N": 1})), "headers.X-N"),
        (with("headers", json!(["X-A: b"])), "headers"),
        (with("cc", json!(null)), "cc"),
        (with("cc", json!([1])), "cc"),
        (with("bcc", json!(5)), "bcc"),
        (with("replyTo", json!("nobody")), "replyTo"),
        (with("replyTo", json!(["a@b.test"])), "replyTo"),
    ];
    for (body, field) in cases {
        let err = w.send(body.clone()).expect_error(400, "invalid_request");
        let message = err["message"].as_str().unwrap_or("");
        assert!(message.contains(field), "{field} not named for {body}: {message}");
    }
    let mut campaign = with("cc", json!("grace@example.net"));
    campaign["type"] = json!("campaign");
    let err = w.send(campaign).expect_error(400, "invalid_request");
    assert!(err["message"].as_str().is_some_and(|m| m.contains("`cc`")), "{err}");
    assert!(w.sink.messages().is_empty(), "nothing was sent");
}

#[test]
fn manual_suppressions_are_added_listed_honoured_and_removed() {
    let w = MailWorld::start();
    let c = w.api();
    let added = c
        .post("/v1/suppressions", json!({"email": "Ada@Example.org", "reason": "asked by phone"}))
        .expect(201)
        .json();
    assert_eq!((&added["email"], &added["reason"]), (&json!("Ada@example.org"), &json!("manual")));
    assert_eq!(added["source"], "asked by phone");
    // Again: the first entry stands.
    let again = c.post("/v1/suppressions", json!({"email": "ada@example.org"})).expect(200).json();
    assert_eq!(again["unsubscribedAt"], added["unsubscribedAt"]);
    let listed = c.get("/v1/suppressions").expect(200).json();
    assert_eq!(listed["items"][0]["reason"], "manual", "{listed}");
    let refused = w.send(basic(json!("ada@example.org")));
    assert_eq!(refused.status, 422, "{}", refused.text());

    c.delete("/v1/suppressions/ada%40example.org").expect(200);
    c.delete("/v1/suppressions/ada@example.org").expect_error(404, "not_found");
    assert_eq!(c.get("/v1/suppressions").expect(200).json()["total"], 0);
    let sent = w.send(basic(json!("ada@example.org"))).expect(200).json();
    assert_eq!(sent["status"], "queued", "{sent}");

    for bad in [json!({}), json!({"email": "nope"}), json!({"email": "a@b.org", "x": 1})] {
        c.post("/v1/suppressions", bad).expect_error(400, "invalid_request");
    }
    c.delete("/v1/suppressions/not-an-address").expect_error(400, "invalid_request");
}
