//! Mail: a mailbox's folders, a folder's messages, and one message. A message's HTML is shown
//! in a sandboxed frame loaded from its own route, whose policy lets nothing load from anywhere
//! (remote images, fonts and styles of the sender stay blocked) and runs no script.

use bytes::Bytes;
use maud::html;

use super::call::{Call, enc, field, items, time_field};
use super::layout::{page, secure};
use super::{gate, or_page, visitor};
use crate::api::{emails, mailboxes};
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};
use crate::store::Folder;

/// A message body: inline styles and embedded images only, and a frame of this dashboard only.
const BODY_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
     font-src data:; form-action 'none'; frame-ancestors 'self'; base-uri 'none'; sandbox";

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let boxes =
        or_page!(Call::new(&ctx, &user).run(handler!(mailboxes::list)).await, &user, "/ui/mail");
    let addresses: Vec<String> = items(&boxes).iter().map(|m| field(m, "address")).collect();
    let mailbox = ctx.query_value("mailbox").or_else(|| addresses.first().cloned());
    let folder = ctx.query_value("folder").unwrap_or_else(|| "inbox".into());
    let Some(mailbox) = mailbox else {
        let body = html! { p { "No mailbox yet. " a href="/ui/mailboxes" { "Create one" } "." } };
        return Ok(page(&user, "/ui/mail", "Mail", body));
    };
    let query = format!("mailbox={}&folder={}&limit=100", enc(&mailbox), enc(&folder));
    let call = Call::new(&ctx, &user).query(query);
    let found = or_page!(call.run(handler!(emails::list)).await, &user, "/ui/mail");
    let body = html! {
        nav aria-label="Mailboxes" {
            ul.folders {
                @for a in &addresses {
                    li { a href={ "/ui/mail?mailbox=" (enc(a)) } aria-current=[(a == &mailbox).then_some("true")] { (a) } }
                }
            }
        }
        nav aria-label="Folders" {
            ul.folders {
                @for f in Folder::ALL {
                    li {
                        a href={ "/ui/mail?mailbox=" (enc(&mailbox)) "&folder=" (f.name()) }
                            aria-current=[(f.name() == folder).then_some("true")] { (f.name()) }
                    }
                }
            }
        }
        table {
            caption.muted { (mailbox) " · " (folder) }
            thead { tr { th { "From" } th { "To" } th { "Subject" } th { "Status" } th { "Date" } } }
            tbody {
                @for m in items(&found) {
                    tr {
                        td { (field(m, "from")) }
                        td { (m["to"].as_array().map(|t| t.iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(", ")).unwrap_or_default()) }
                        td { a href={ "/ui/mail/" (enc(&field(m, "id"))) } { (subject(m)) } }
                        td { (field(m, "status")) }
                        td { (time_field(m, "createdAt")) }
                    }
                }
            }
        }
        @if items(&found).is_empty() { p.muted { "No messages in this folder." } }
    };
    Ok(page(&user, "/ui/mail", "Mail", body))
}

fn subject(m: &serde_json::Value) -> String {
    let s = field(m, "subject");
    if s.trim().is_empty() { "(no subject)".into() } else { s }
}

pub async fn show(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let id = ctx.param("id").to_owned();
    let call = Call::new(&ctx, &user).param("id", id.clone());
    let m = or_page!(call.run(handler!(emails::get)).await, &user, "/ui/mail");
    let list = |name: &str| -> String {
        items(&m[name]).iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(", ")
    };
    let body = html! {
        dl.card {
            dt { "From" } dd { (field(&m, "from")) }
            dt { "To" } dd { (list("to")) }
            @if !items(&m["cc"]).is_empty() { dt { "Cc" } dd { (list("cc")) } }
            dt { "Date" } dd { (time_field(&m, "createdAt")) }
            dt { "Status" } dd { (field(&m, "status")) }
        }
        @if m["html"].is_string() {
            p.muted { "Remote content (images, fonts, styles from the web) is blocked in this view." }
            iframe.message sandbox="" title="Message content" src={ "/ui/mail/" (enc(&id)) "/body" } {}
        } @else {
            pre.card { (field(&m, "text")) }
        }
        p { a href={ "/ui/mail?mailbox=" (enc(&field(&m, "mailbox"))) "&folder=" (field(&m, "folder")) } { "Back to the folder" } }
    };
    Ok(page(&user, "/ui/mail", &subject(&m), body))
}

/// The HTML of a message, for its sandboxed frame only.
pub async fn body(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let call = Call::new(&ctx, &user).param("id", ctx.param("id"));
    let m = call.run(handler!(emails::get)).await?;
    let html = m["html"].as_str().unwrap_or_default().to_owned();
    let mut reply = Reply::raw("text/html; charset=utf-8", Bytes::from(html));
    secure(&mut reply, BODY_CSP);
    Ok(reply)
}
