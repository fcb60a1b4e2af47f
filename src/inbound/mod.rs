//! What happens to mail that reaches our MX: recipients are checked at RCPT time (hosted domains
//! only, so we are never an open relay); an accepted message gets Received and
//! Authentication-Results (SPF, DKIM, DMARC by mail-auth) headers, is parsed, and is committed to
//! every recipient mailbox's inbox before the 250. Reports about mail we sent (DSNs to our bounce
//! addresses, ARF complaints) and replies to it update the sent messages and suppressions.

pub mod auth;
pub mod report;

use std::net::IpAddr;

use mail_auth::MessageAuthenticator;
use mail_parser::{Message, MessageParser, MimeHeaders};

use crate::error::{Error, Result};
use crate::ids::{new_id, now_ms};
use crate::state::App;
use crate::store::{Attachment, Email, Folder, Header, MessageStatus, Summary, Wtx};

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
    /// `bounces+<email id>-<tag>`: DSNs about that message (the tag is verified later).
    Bounce(String),
    /// `unsubscribe`: the mailto: of List-Unsubscribe.
    Unsubscribe,
    /// `postmaster` (RFC 5321 requires it) and `abuse`: complaints.
    Postmaster,
}

fn system(local: &str) -> Option<System> {
    let lower = local.to_ascii_lowercase();
    if let Some(tagged) = lower.strip_prefix("bounces+") {
        return Some(System::Bounce(tagged.to_owned()));
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
    let is_system = match system(&local) {
        // A bounce address we never issued is refused here, before any data is taken.
        Some(System::Bounce(tagged)) => {
            if app.tokens.bounce_id(&tagged, &domain).is_none() {
                return Err(format!("550 5.1.1 no mailbox {local}@{domain} here\r\n"));
            }
            true
        }
        Some(_) => true,
        None => false,
    };
    let lookup = app
        .store
        .read(move |r| -> Result<_> {
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

/// Where the recipients of one message go.
#[derive(Default)]
struct Routed {
    mailboxes: Vec<String>,
    /// Messages named by verified bounce addresses.
    bounce_ids: Vec<String>,
    to_system: bool,
}

fn route(app: &App, recipients: &[String]) -> Routed {
    let mut routed = Routed::default();
    for r in recipients {
        let (local, domain) = r.rsplit_once('@').unwrap_or((r.as_str(), ""));
        let domain = domain.to_ascii_lowercase();
        match system(local) {
            Some(System::Bounce(tagged)) => {
                routed.bounce_ids.extend(app.tokens.bounce_id(&tagged, &domain));
            }
            Some(_) => routed.to_system = true,
            None => routed.mailboxes.push(format!("{}@{domain}", local.to_ascii_lowercase())),
        }
    }
    routed
}

/// Authenticates, parses and stores a message; returns the id of its first stored copy.
pub async fn accept(app: &App, envelope: Envelope, raw: Vec<u8>) -> Result<String> {
    let host = app.config.smtp.host().to_owned();
    let id = new_id("em");
    let now = now_ms();
    let authenticator = MessageAuthenticator(app.dns.resolver().clone());
    let facts = auth::Envelope { ip: envelope.ip, helo: &envelope.helo, mail_from: &envelope.from };
    let (results, verdict) = auth::authenticate(&authenticator, facts, &raw, &host).await;
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
    drop(raw);
    let seen = inspect(&full, now).ok_or_else(|| Error::invalid("unparseable message", ""))?;
    if let Some(id) =
        crate::warmup::receive::take(app, &envelope.recipients, &seen, &verdict, &full, now).await?
    {
        return Ok(id);
    }
    let routed = route(app, &envelope.recipients);
    let Inspected { email: template, failures, complaint, referenced, unsubscribe_token, parents } =
        seen;
    let unsubscribe_token = unsubscribe_token.filter(|_| routed.to_system);
    if routed.to_system
        && routed.mailboxes.is_empty()
        && complaint.is_none()
        && unsubscribe_token.is_none()
    {
        // The subject is left out: it may carry an unsubscribe token, which names a recipient.
        tracing::info!(from = %envelope.from,
            "mail to a system address (postmaster/abuse/unsubscribe) without a report; not stored");
    }
    let complaint = complaint.filter(|_| {
        let trusted =
            verdict.aligned() || verdict.authenticated_by(&app.config.smtp.feedback_senders);
        if !trusted {
            tracing::warn!(from = %envelope.from, ip = %envelope.ip,
                "complaint report ignored: not authenticated for its From domain");
        }
        trusted
    });
    let copies: Vec<Email> = routed
        .mailboxes
        .iter()
        .enumerate()
        .map(|(i, mailbox)| {
            let mut copy = template.clone();
            copy.summary.id = if i == 0 { id.clone() } else { new_id("em") };
            copy.summary.mailbox = mailbox.clone();
            copy
        })
        .collect();
    let unsubscribe =
        unsubscribe_token.and_then(|t| app.tokens.open(crate::tracking::Kind::Unsubscribe, &t));
    let reports = Reports {
        bounce_ids: routed.bounce_ids,
        // A report that reached another address names its message only by Message-ID, which is
        // no secret: it counts only when its sender authenticated for its From domain.
        referenced: if verdict.aligned() { referenced } else { Vec::new() },
        failures,
        complaint,
        unsubscribe,
    };
    app.store
        .write(move |w| {
            link_reply(w, &parents, &mut { copies }, &full)?;
            reports.apply(w, now)
        })
        .await?;
    Ok(id)
}

/// Links copies of a reply to the message of ours it answers, then stores them.
fn link_reply(w: &mut Wtx<'_>, parents: &[String], copies: &mut [Email], raw: &[u8]) -> Result<()> {
    let mut reply_of = None;
    for parent in parents {
        if let Some(original) = w.email_for_message_id(parent)? {
            reply_of = Some(original);
            break;
        }
    }
    if let Some(original) = &reply_of {
        for c in copies.iter_mut() {
            c.in_reply_to_id = Some(original.clone());
        }
        w.record_reply(original)?;
    }
    Ok(w.store_received(copies, raw)?)
}

/// What a received message reports about mail we sent, already screened for trust.
struct Reports {
    bounce_ids: Vec<String>,
    referenced: Vec<String>,
    failures: Vec<report::Failure>,
    complaint: Option<String>,
    unsubscribe: Option<Vec<String>>,
}

impl Reports {
    /// Acts on the reports inside the write that stores the message. Bounces and complaints
    /// touch only addresses that were recipients of the message they name.
    fn apply(self, w: &mut Wtx<'_>, now: u64) -> Result<()> {
        let mut targets = self.bounce_ids;
        for mid in &self.referenced {
            if let Some(found) = w.email_for_message_id(mid)? {
                targets.push(found);
            }
        }
        for failure in &self.failures {
            for target in &targets {
                w.record_bounce(target, &failure.recipient, &failure.reason, now)?;
            }
        }
        if let Some(recipient) = &self.complaint {
            for target in &targets {
                w.record_complaint(target, recipient, now)?;
            }
        }
        if let Some(fields) = &self.unsubscribe
            && let [id, recipient, ..] = fields.as_slice()
        {
            w.record_unsubscribe(id, recipient, "mailto", now)?;
        }
        Ok(())
    }
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
            status: MessageStatus::Received,
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
