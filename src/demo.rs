//! Demo mode: a domain, a mailbox with a welcome message, and a key, so a newcomer has a working
//! API within a minute. Running it again reuses the domain and mailbox and adds a fresh key (a
//! key's secret is never shown twice).

use crate::error::Result;
use crate::ids::{new_id, now_ms};
use crate::store::{Email, Folder, Header, MessageStatus, Store, Summary};

pub const DOMAIN: &str = "demo.test";
const MAILBOX: &str = "hello";

/// Prepares the demo data and returns the text to print.
pub fn prepare(store: &Store, base_url: &str) -> Result<String> {
    if store.read_blocking(|r| r.domain(DOMAIN))?.is_none() {
        let domain = crate::dkim::generate(DOMAIN)?;
        store.write_blocking(move |w| w.add_domain(&domain))?;
    }
    if store.read_blocking(|r| r.mailbox(DOMAIN, MAILBOX))?.is_none() {
        store.write_blocking(|w| {
            w.create_mailbox(DOMAIN, MAILBOX, Some("Demo".into()))?;
            w.insert_email(&welcome())
        })?;
    }
    let (key, hash, secret) = crate::auth::new_key("demo", Some(DOMAIN.into()));
    store.write_blocking(move |w| w.create_key(&key, &hash))?;
    let auth = format!("-H 'Authorization: Bearer {secret}'");
    let json = "-H 'Content-Type: application/json'";
    Ok(format!(
        "\nedgemail demo: domain {DOMAIN}, mailbox {MAILBOX}@{DOMAIN}\nAPI key (shown once): \
         {secret}\n\nTry:\n  curl -s {base_url}/v1/mailboxes {auth}\n  curl -s \
         '{base_url}/v1/emails?folder=inbox' {auth}\n  curl -s -X POST {base_url}/v1/mailboxes \
         {auth} {json} -d '{{\"address\":\"sales\",\"displayName\":\"Sales team\"}}'\n  curl -s \
         -X POST {base_url}/v1/contacts {auth} {json} -d \
         '{{\"email\":\"jane@example.com\",\"name\":\"Jane Doe\"}}'\n  curl -s -X POST \
         {base_url}/v1/sender-groups {auth} {json} -d '{{\"name\":\"Launch\",\"mailboxes\":\"all\",\
         \"emails\":\"jane@example.com, joe@example.com\"}}'\n  curl -s -X POST \
         {base_url}/v1/sequences {auth} {json} -d '{{\"name\":\"Welcome\",\"from\":\"{MAILBOX}@{DOMAIN}\",\
         \"steps\":[{{\"type\":\"send_email\",\"subject\":\"Hi {{{{name}}}}\",\"html\":\"<p>Hi \
         {{{{name}}}}!</p>\"}},{{\"type\":\"delay\",\"delayMs\":86400000}},{{\"type\":\"send_email\",\
         \"subject\":\"\",\"html\":\"<p>Just checking in.</p>\"}}]}}'\n  curl -s \
         {base_url}/v1/sequences {auth}\n  curl -s {base_url}/v1/domain-health {auth}\n  curl -s \
         {base_url}/openapi.json\n\n"
    ))
}

fn welcome() -> Email {
    let text = "Welcome to edgemail. This message sits in the inbox of the demo mailbox; list it \
                with GET /v1/emails and read it with GET /v1/emails/{id}.";
    let created_at = now_ms();
    Email {
        summary: Summary {
            id: new_id("em"),
            mailbox: format!("{MAILBOX}@{DOMAIN}"),
            folder: Folder::Inbox,
            from: "edgemail <noreply@demo.test>".into(),
            to: vec![format!("{MAILBOX}@{DOMAIN}")],
            subject: "Welcome to edgemail".into(),
            snippet: text.chars().take(160).collect(),
            status: MessageStatus::Received,
            created_at,
            size: text.len() as u64,
            has_attachments: false,
        },
        cc: Vec::new(),
        reply_to: None,
        message_id: Some(format!("<{}@{DOMAIN}>", new_id("welcome"))),
        in_reply_to: None,
        headers: vec![Header { name: "Subject".into(), value: "Welcome to edgemail".into() }],
        text: Some(text.into()),
        html: None,
        attachments: Vec::new(),
        deliveries: Vec::new(),
        ..Default::default()
    }
}
