//! What happens to mail that reaches our MX: recipients are checked at RCPT time (hosted domains
//! only, so we are never an open relay); an accepted message gets Received and
//! Authentication-Results (SPF, DKIM, DMARC by mail-auth) headers, is parsed, and is committed to
//! every recipient mailbox's inbox before the 250. Reports about mail we sent (DSNs to our bounce
//! addresses, ARF complaints) and replies to it update the sent messages and suppressions.

pub mod report;

use std::net::IpAddr;
use std::time::Duration;

use mail_auth::dmarc::verify::DmarcParameters;
use mail_auth::spf::verify::SpfParameters;
use mail_auth::{AuthenticatedMessage, AuthenticationResults, MessageAuthenticator};
use mail_parser::{Message, MessageParser, MimeHeaders};

use crate::app::App;
use crate::error::{Error, Result};
use crate::ids::{new_id, now_ms};
use crate::store::{Attachment, Email, Folder, Header, Summary};

/// The envelope of a received message.
pub struct Envelope {
    pub ip: IpAddr,
    pub helo: String,
    pub from: String,
    pub recipients: Vec<String>,
    pub tls: bool,
}

/// Local parts that are not mailboxes but that we answer for on every hosted domain.
enum System {
    /// `bounces+<email id>`: DSNs about that message.
    Bounce(String),
    /// `unsubscribe`: the mailto: of List-Unsubscribe.
    Unsubscribe,
    /// `postmaster` (RFC 5321 requires it) and `abuse`: complaints.
    Postmaster,
}

fn system(local: &str) -> Option<System> {
    let lower = local.to_ascii_lowercase();
    if let Some(id) = lower.strip_prefix("bounces+") {
        return Some(System::Bounce(id.to_owned()));
    }
    match lower.as_str() {
        "unsubscribe" => Some(System::Unsubscribe),
        "postmaster" | "abuse" => Some(System::Postmaster),
        _ => None,
    }
}

/// The RCPT TO decision: `Err` carries the SMTP reply.
pub async fn check_recipient(app: &App, address: &str) -> std::result::Result<(), String> {
    let Some((local, domain)) = address.rsplit_once('@') else {
        return Err("501 5.1.3 recipient must be a full address\r\n".into());
    };
    let (local, domain) = (local.to_ascii_lowercase(), domain.to_ascii_lowercase());
    let is_system = system(&local).is_some();
    let lookup = app
        .store
        .read(move |r| {
            if !r.hosts(&domain)? {
                return Ok(Err(format!(
                    "550 5.7.1 relaying denied: {domain} is not hosted here\r\n"
                )));
            }
            if is_system || r.mailbox(&domain, &local)?.is_some() {
                Ok(Ok(()))
            } else {
                Ok(Err(format!("550 5.1.1 no mailbox {local}@{domain} here\r\n")))
            }
        })
        .await;
    match lookup {
        Ok(answer) => answer,
        Err(e) => {
            tracing::error!(error = %e, "recipient check failed");
            Err("451 4.3.0 temporary failure, try again later\r\n".into())
        }
    }
}

/// Authenticates, parses and stores a message; returns the id of its first stored copy.
pub async fn accept(app: &App, envelope: Envelope, raw: Vec<u8>) -> Result<String> {
    let host = app.config.smtp.host().to_owned();
    let id = new_id("em");
    let now = now_ms();
    let results = authenticate(app, &envelope, &raw, &host).await;
    let received = format!(
        "Received: from {} ({}) by {host} with {} id {id}; {}\r\n",
        sanitize(&envelope.helo),
        envelope.ip,
        if envelope.tls { "ESMTPS" } else { "ESMTP" },
        rfc2822_date(now)
    );
    let mut full = Vec::with_capacity(received.len() + results.len() + raw.len());
    full.extend_from_slice(received.as_bytes());
    full.extend_from_slice(results.as_bytes());
    full.extend_from_slice(&raw);
    let seen = inspect(&full, now).ok_or_else(|| Error::invalid("unparseable message", ""))?;
    if let Some(id) =
        crate::warmup::receive::take(app, &envelope.recipients, &seen, &full, now).await?
    {
        return Ok(id);
    }
    let mut mailboxes = Vec::new();
    let mut bounce_ids = Vec::new();
    let mut to_system = false;
    for r in &envelope.recipients {
        let (local, domain) = r.rsplit_once('@').unwrap_or((r.as_str(), ""));
        match system(local) {
            Some(System::Bounce(email_id)) => bounce_ids.push(email_id),
            Some(_) => to_system = true,
            None => mailboxes.push(format!(
                "{}@{}",
                local.to_ascii_lowercase(),
                domain.to_ascii_lowercase()
            )),
        }
    }
    let Inspected { email: template, failures, complaint, referenced, unsubscribe_token, parents } =
        seen;
    let unsubscribe_token = unsubscribe_token.filter(|_| to_system);
    if to_system && mailboxes.is_empty() && complaint.is_none() && unsubscribe_token.is_none() {
        tracing::info!(from = %envelope.from, subject = %template.summary.subject,
            "mail to a system address (postmaster/abuse/unsubscribe) without a report; not stored");
    }
    let copies: Vec<Email> = mailboxes
        .iter()
        .enumerate()
        .map(|(i, mailbox)| {
            let mut copy = template.clone();
            copy.summary.id = if i == 0 { id.clone() } else { new_id("em") };
            copy.summary.mailbox = mailbox.clone();
            copy
        })
        .collect();
    let tokens_ok =
        unsubscribe_token.and_then(|t| app.tokens.open(crate::tracking::Kind::Unsubscribe, &t));
    app.store
        .write(move |w| {
            // Resolve what the message refers to inside the same transaction.
            let mut reply_of = None;
            for parent in &parents {
                if let Some(original) = w.email_for_message_id(parent)? {
                    reply_of = Some(original);
                    break;
                }
            }
            let mut copies = copies;
            if let Some(original) = &reply_of {
                for c in copies.iter_mut() {
                    c.in_reply_to_id = Some(original.clone());
                }
                w.record_reply(original)?;
            }
            w.store_received(&copies, &full)?;
            // A DSN names its message through our bounce address, or through the original's
            // Message-ID when the reporting server sent it elsewhere.
            let mut targets = bounce_ids.clone();
            for mid in &referenced {
                if let Some(found) = w.email_for_message_id(mid)? {
                    targets.push(found);
                }
            }
            for failure in &failures {
                for target in &targets {
                    w.record_bounce(target, &failure.recipient, &failure.reason, now)?;
                }
            }
            if let Some(recipient) = &complaint {
                for target in &targets {
                    w.record_complaint(target, recipient, now)?;
                }
            }
            if let Some(fields) = &tokens_ok {
                w.record_unsubscribe(&fields[0], &fields[1], "mailto", now)?;
            }
            Ok(())
        })
        .await?;
    Ok(id)
}

/// What a received message says, read without side effects (and fuzzed as such).
pub struct Inspected {
    /// The stored form; the mailbox and id are filled in per copy.
    pub email: Email,
    /// Permanent failures, when the message is a DSN.
    pub failures: Vec<report::Failure>,
    /// The complained-about recipient, when it is an ARF report.
    pub complaint: Option<String>,
    /// Message-IDs a report refers to.
    pub referenced: Vec<String>,
    /// The token of a mailto: unsubscribe.
    pub unsubscribe_token: Option<String>,
    /// Message-IDs the message answers (In-Reply-To, then References, newest first).
    pub parents: Vec<String>,
}

/// Parses a received message (already carrying our trace headers) into what we act on.
pub fn inspect(raw: &[u8], now: u64) -> Option<Inspected> {
    let message = MessageParser::default().parse(raw)?;
    Some(Inspected {
        email: parse_email(&message, raw.len() as u64, now),
        failures: report::dsn_failures(&message),
        complaint: report::complaint(&message),
        referenced: report::referenced_message_ids(&message),
        unsubscribe_token: unsubscribe_token(&message),
        parents: references(&message),
    })
}

/// SPF, DKIM and DMARC of the message as an Authentication-Results header. A DNS failure makes a
/// temperror result, never a refusal: the message is stored and the result says what happened.
async fn authenticate(app: &App, envelope: &Envelope, raw: &[u8], host: &str) -> String {
    let authenticator = MessageAuthenticator(app.dns.resolver().clone());
    let Some(message) = AuthenticatedMessage::parse(raw) else {
        return format!("Authentication-Results: {host}; none (unparseable message)\r\n");
    };
    let check = async {
        let dkim = authenticator.verify_dkim(&message).await;
        let helo = if envelope.helo.is_empty() { "unknown" } else { envelope.helo.as_str() };
        let spf = authenticator
            .verify_spf(SpfParameters::verify_mail_from(envelope.ip, helo, host, &envelope.from))
            .await;
        let mail_from_domain = envelope.from.rsplit_once('@').map_or(helo, |(_, d)| d).to_owned();
        let dmarc = authenticator
            .verify_dmarc(DmarcParameters::new(&message, &dkim, &mail_from_domain, &spf))
            .await;
        AuthenticationResults::new(host)
            .with_dkim_results(&dkim, message.from())
            .with_spf_mailfrom_result(&spf, envelope.ip, &envelope.from, helo)
            .with_dmarc_result(&dmarc)
            .to_header()
    };
    match tokio::time::timeout(Duration::from_secs(15), check).await {
        Ok(header) => header,
        Err(_) => format!(
            "Authentication-Results: {host}; dkim=temperror; spf=temperror; dmarc=temperror\r\n"
        ),
    }
}

use mail_auth::common::headers::HeaderWriter;

/// The email as stored for a mailbox (the mailbox and id are filled in per copy).
fn parse_email(message: &Message<'_>, size: u64, now: u64) -> Email {
    let addresses = |a: Option<&mail_parser::Address<'_>>| -> Vec<String> {
        a.map(|a| a.iter().filter_map(|x| x.address().map(str::to_owned)).collect())
            .unwrap_or_default()
    };
    let from = message
        .from()
        .and_then(|a| a.first())
        .map(|a| match (a.name(), a.address()) {
            (Some(name), Some(addr)) => format!("\"{name}\" <{addr}>"),
            (_, Some(addr)) => addr.to_owned(),
            (Some(name), None) => name.to_owned(),
            (None, None) => String::new(),
        })
        .unwrap_or_default();
    let text = message.body_text(0).map(|t| t.into_owned());
    let html = message.body_html(0).map(|h| h.into_owned());
    let snippet_source = text
        .clone()
        .or_else(|| html.as_deref().map(crate::mail::text::html_to_text))
        .unwrap_or_default();
    let attachments: Vec<Attachment> = message
        .attachments()
        .map(|p| Attachment {
            filename: p.attachment_name().map(str::to_owned),
            content_type: p
                .content_type()
                .map(|ct| match ct.subtype() {
                    Some(sub) => format!("{}/{sub}", ct.ctype()),
                    None => ct.ctype().to_owned(),
                })
                .unwrap_or_else(|| "application/octet-stream".into()),
            size: p.len() as u64,
        })
        .collect();
    let headers: Vec<Header> = message
        .headers_raw()
        .map(|(name, value)| Header { name: name.to_owned(), value: value.trim().to_owned() })
        .collect();
    // Folders list mail in the order it arrived; the sender's Date header is kept in `headers`.
    let created_at = now;
    Email {
        summary: Summary {
            id: String::new(),
            mailbox: String::new(),
            folder: Folder::Inbox,
            from,
            to: addresses(message.to()),
            subject: message.subject().unwrap_or("").to_owned(),
            snippet: crate::mail::text::snippet(&snippet_source),
            status: "received".into(),
            created_at,
            size,
            has_attachments: !attachments.is_empty(),
        },
        cc: addresses(message.cc()),
        reply_to: message
            .reply_to()
            .and_then(|a| a.first())
            .and_then(|a| a.address())
            .map(str::to_owned),
        message_id: message.message_id().map(|m| format!("<{m}>")),
        in_reply_to: message.in_reply_to().as_text().map(|m| format!("<{m}>")),
        headers,
        text,
        html,
        attachments,
        ..Email::default()
    }
}

/// The Message-IDs a message answers: In-Reply-To, then References from the newest.
fn references(message: &Message<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let mut push = |v: &mail_parser::HeaderValue<'_>| {
        if let Some(list) = v.as_text_list() {
            out.extend(list.iter().rev().map(|m| format!("<{m}>")));
        } else if let Some(one) = v.as_text() {
            out.push(format!("<{one}>"));
        }
    };
    push(message.in_reply_to());
    push(message.references());
    out
}

/// The token in a List-Unsubscribe mailto: subject (`unsubscribe <token>`).
fn unsubscribe_token(message: &Message<'_>) -> Option<String> {
    let subject = message.subject()?.trim();
    let token = subject.strip_prefix("unsubscribe").unwrap_or(subject).trim();
    (!token.is_empty()).then(|| token.to_owned())
}

fn sanitize(helo: &str) -> String {
    helo.chars().filter(|c| c.is_ascii_graphic()).take(255).collect()
}

fn rfc2822_date(ms: u64) -> String {
    mail_builder::headers::date::Date::new((ms / 1000) as i64).to_rfc822()
}
