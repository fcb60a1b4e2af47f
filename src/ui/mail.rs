//! Mail: a mailbox's folders, a folder's messages, and one message. A message's HTML is shown
//! in a sandboxed frame loaded from its own route, whose policy lets nothing load from anywhere
//! (remote images, fonts and styles of the sender stay blocked) and runs no script. Remote
//! images load only in a view the user asked for (`?remote=1`): a tracking pixel tells the
//! sender the mail was read, so that is the reader's choice, one view at a time.

use bytes::Bytes;
use maud::html;

use super::call::{Call, enc, field, items, time_field};
use super::layout::{page, secure};
use super::{gate, or_page, visitor};
use crate::api::{emails, folders, mailboxes};
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

/// A message body: inline styles and embedded images only, and a frame of this dashboard only.
const BODY_CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; \
     font-src data:; form-action 'none'; frame-ancestors 'self'; base-uri 'none'; sandbox";
/// The same, with remote images allowed (asked for per view); scripts, frames, fonts and
/// stylesheets from elsewhere stay blocked.
const BODY_CSP_REMOTE: &str = "default-src 'none'; style-src 'unsafe-inline'; \
     img-src data: http: https:; font-src data:; form-action 'none'; frame-ancestors 'self'; \
     base-uri 'none'; sandbox";

/// Messages per page of a folder.
const PAGE: usize = 50;

/// Whether this view asked for remote content.
fn remote(ctx: &Ctx) -> bool {
    ctx.query_value("remote").as_deref() == Some("1")
}

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
    let here = format!("/ui/mail?mailbox={}&folder={}", enc(&mailbox), enc(&folder));
    let mut query = format!("mailbox={}&folder={}&limit={PAGE}", enc(&mailbox), enc(&folder));
    let cursor = ctx.query_value("cursor");
    if let Some(cursor) = &cursor {
        query.push_str(&format!("&cursor={}", enc(cursor)));
    }
    let call = Call::new(&ctx, &user).query(query);
    let (found, next) = or_page!(call.run_page(handler!(emails::list)).await, &user, "/ui/mail");
    let call = Call::new(&ctx, &user).param("address", mailbox.clone());
    let folders = or_page!(call.run(handler!(folders::list)).await, &user, "/ui/mail");
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
                @for f in items(&folders) {
                    @let name = field(f, "name");
                    @let unread = f["unread"].as_u64().unwrap_or(0);
                    li {
                        a href={ "/ui/mail?mailbox=" (enc(&mailbox)) "&folder=" (enc(&name)) }
                            aria-current=[(name == folder).then_some("true")] {
                            (name)
                            @if unread > 0 { " (" (unread) ")" }
                        }
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
        (pager(&here, cursor.is_some(), next.as_deref()))
    };
    Ok(page(&user, "/ui/mail", "Mail", body))
}

/// Links to the first and the next page of a listing paged by cursor.
pub(super) fn pager(base: &str, paged: bool, next: Option<&str>) -> maud::Markup {
    let sep = if base.contains('?') { '&' } else { '?' };
    html! {
        @if paged || next.is_some() {
            nav.pager aria-label="Pages" {
                @if paged { a href=(base) { "First page" } }
                @if let Some(next) = next { a href={ (base) (sep) "cursor=" (enc(next)) } rel="next" { "Next page" } }
            }
        }
    }
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
            @let here = format!("/ui/mail/{}", enc(&id));
            @if remote(&ctx) {
                p.muted { "Remote images are shown in this view; scripts stay blocked. "
                    a href=(here) { "Block remote content" } }
                iframe.message sandbox="" title="Message content" src={ (here) "/body?remote=1" } {}
            } @else {
                p.muted { "Remote content (images, fonts, styles from the web) is blocked in this view. "
                    a.button href={ (here) "?remote=1" } { "Load remote content" } }
                iframe.message sandbox="" title="Message content" src={ (here) "/body" } {}
            }
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
    secure(&mut reply, if remote(&ctx) { BODY_CSP_REMOTE } else { BODY_CSP });
    Ok(reply)
}
