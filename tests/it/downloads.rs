//! Downloads end to end: `GET /v1/emails/{id}/raw` and `GET /v1/emails/{id}/attachments/{index}`
//! for mail sent through the API (compared with what the receiving server got) and for mail
//! received at our MX (compared with what the client sent).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use serde_json::json;

use crate::mail_world::MailWorld;
use crate::smtp_client::Talk;

/// The message without its DKIM-Signature fields (their `t=` differs between two signings) and
/// with its MIME boundaries (random for each rendering) numbered instead.
fn comparable(raw: &[u8]) -> Vec<u8> {
    let mut text = String::from_utf8(unsigned(raw)).expect("ASCII message");
    let mut n = 0;
    while let Some(at) = text.find("boundary=\"") {
        let start = at + "boundary=\"".len();
        let end = start + text[start..].find('"').expect("closing quote");
        let boundary = text[start..end].to_owned();
        text = text.replace(&format!("boundary=\"{boundary}\""), &format!("BOUNDARY{n}"));
        text = text.replace(&boundary, &format!("B{n}"));
        n += 1;
    }
    assert!(n > 0, "a multipart message");
    // SMTP's end of data may add a line break after the last line.
    text.trim_end().as_bytes().to_vec()
}

fn unsigned(raw: &[u8]) -> Vec<u8> {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").expect("a header block");
    let mut out = String::new();
    let mut skipping = false;
    for line in head.split("\r\n") {
        let continued = line.starts_with([' ', '\t']);
        if !continued {
            skipping = line.to_ascii_lowercase().starts_with("dkim-signature:");
        }
        if !skipping {
            out.push_str(line);
            out.push_str("\r\n");
        }
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

/// Deterministic bytes covering every byte value.
fn binary(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 + i / 256) as u8).collect()
}

#[test]
fn a_sent_message_downloads_as_it_was_delivered_with_its_attachments() {
    let w = MailWorld::start();
    let pdf = binary(40_000);
    let notes = "Übersicht: line one\r\nline two\n".as_bytes().to_vec();
    let sent = w
        .send(json!({
            "from": "sales@alpha.test", "to": "ada@example.org", "subject": "Files",
            "text": "See the files.",
            "attachments": [
                {"filename": "report.pdf", "content": B64.encode(&pdf)},
                {"filename": "Übersicht €.txt", "content": B64.encode(&notes), "contentType": "text/plain"}
            ]
        }))
        .expect(200)
        .json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    let got = w.sink.wait_for(1, Duration::from_secs(20));
    w.wait_status(&id, "delivered");
    let api = w.api();

    let raw = api.get(&format!("/v1/emails/{id}/raw")).expect(200);
    assert_eq!(raw.header("content-type"), Some("message/rfc822"));
    assert!(raw.header("content-disposition").is_some_and(|d| d.contains(&format!("{id}.eml"))));
    assert!(raw.text().contains("DKIM-Signature:"), "the download is signed as sent");
    let (mine, theirs) = (comparable(&raw.body), comparable(&got[0].data));
    let at = mine.iter().zip(&theirs).position(|(a, b)| a != b).unwrap_or(mine.len());
    assert!(
        mine == theirs,
        "the download differs from what was delivered from byte {at}:\n{}\n---\n{}",
        String::from_utf8_lossy(&mine[at.saturating_sub(200)..]),
        String::from_utf8_lossy(&theirs[at.saturating_sub(200)..])
    );

    let first = api.get(&format!("/v1/emails/{id}/attachments/0")).expect(200);
    assert_eq!(first.header("content-type"), Some("application/pdf"));
    assert_eq!(first.header("content-disposition"), Some("attachment; filename=\"report.pdf\""));
    assert!(first.body == pdf, "the PDF's bytes differ");
    let second = api.get(&format!("/v1/emails/{id}/attachments/1")).expect(200);
    assert_eq!(second.header("content-type"), Some("text/plain"));
    assert_eq!(
        second.header("content-disposition"),
        Some(
            "attachment; filename=\"_bersicht _.txt\"; filename*=UTF-8''%C3%9Cbersicht%20%E2%82%AC.txt"
        )
    );
    assert_eq!(second.body, notes);
    api.get(&format!("/v1/emails/{id}/attachments/2")).expect_error(404, "not_found");
    api.get(&format!("/v1/emails/{id}/attachments/x")).expect_error(400, "invalid_request");
    api.get("/v1/emails/em_missing/raw").expect_error(404, "not_found");
    api.get("/v1/emails/em_missing/attachments/0").expect_error(404, "not_found");
    w.server.client(None).get(&format!("/v1/emails/{id}/raw")).expect_error(401, "unauthorized");
}

#[test]
fn a_received_message_downloads_as_it_arrived() {
    let w = MailWorld::start();
    let file = binary(3000);
    let message = format!(
        "From: Ada <ada@example.org>\r\nTo: sales@alpha.test\r\nSubject: Plans\r\n\
         Message-ID: <plans@example.org>\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\nContent-Type: text/plain\r\n\r\n\
         Plans attached.\r\n--b\r\nContent-Type: application/zip\r\n\
         Content-Disposition: attachment; filename*=UTF-8''pl%C3%A4ne.zip\r\n\
         Content-Transfer-Encoding: base64\r\n\r\n{}\r\n--b--",
        B64.encode(&file)
    );
    let (mut s, _) = Talk::open(w.server.smtp);
    s.cmd("EHLO client.example.org");
    let done = s.mail("ada@example.org", &["sales@alpha.test"], &message);
    assert!(done.starts_with("250"), "{done}");
    let api = w.api();
    let list = api.get("/v1/emails?mailbox=sales").expect(200).json();
    let id = list[0]["id"].as_str().expect("id").to_owned();
    let email = api.get(&format!("/v1/emails/{id}")).expect(200).json();
    assert_eq!(
        email["attachments"],
        json!([{"filename": "pläne.zip", "contentType": "application/zip", "size": file.len()}])
    );

    let raw = api.get(&format!("/v1/emails/{id}/raw")).expect(200);
    assert_eq!(raw.header("content-type"), Some("message/rfc822"));
    let text = raw.text();
    assert!(text.starts_with("Received: from client.example.org"), "{text}");
    assert!(text.contains("Authentication-Results:"), "{text}");
    // The client's bytes follow our trace headers unchanged (the final CRLF is the one before the
    // end-of-data dot).
    let stored = raw.body.strip_suffix(b"\r\n").unwrap_or(&raw.body);
    assert!(stored.ends_with(message.as_bytes()), "the stored message differs:\n{text}");

    let got = api.get(&format!("/v1/emails/{id}/attachments/0")).expect(200);
    assert_eq!(got.header("content-type"), Some("application/zip"));
    assert_eq!(got.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(
        got.header("content-disposition"),
        Some("attachment; filename=\"pl_ne.zip\"; filename*=UTF-8''pl%C3%A4ne.zip")
    );
    assert!(got.body == file, "the attachment's bytes differ");
    api.get(&format!("/v1/emails/{id}/attachments/1")).expect_error(404, "not_found");
}
