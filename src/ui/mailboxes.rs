//! Mailboxes: the list, creating and deleting one, and a mailbox's app passwords.

use maud::html;
use serde_json::json;

use super::call::{Call, done, enc, field, items, time_field};
use super::layout::{csrf_field, page, redirect};
use super::session::refill;
use super::{act, act_form, gate, or_page, posted, visitor};
use crate::api::{mailboxes, passwords};
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let found = or_page!(
        Call::new(&ctx, &user).run(handler!(mailboxes::list)).await,
        &user,
        "/ui/mailboxes"
    );
    let again = refill(&user.id, "/ui/mailboxes", &["address", "displayName"]);
    let body = html! {
        table {
            caption.muted { "Mailboxes of " (user.domain) }
            thead { tr { th { "Address" } th { "Name" } th { "Created" } th { "Actions" } } }
            tbody {
                @for m in items(&found) {
                    @let address = field(m, "address");
                    tr {
                        td { a href={ "/ui/mailboxes/" (enc(&address)) } { (address) } }
                        td { (field(m, "displayName")) }
                        td { (time_field(m, "createdAt")) }
                        td {
                            form.inline method="post" action={ "/ui/mailboxes/" (enc(&address)) "/delete" } {
                                (csrf_field(&user.csrf))
                                button type="submit" aria-label={ "Delete " (address) } { "Delete" }
                            }
                        }
                    }
                }
            }
        }
        p { a href="/ui/aliases" { "Aliases and the catch-all" } }
        h2 { "New mailbox" }
        form.card method="post" action="/ui/mailboxes" {
            (csrf_field(&user.csrf))
            (again.input("text", "address", "Address (local part or full address)", true))
            (again.input("text", "displayName", "Display name (optional)", false))
            button type="submit" { "Create mailbox" }
        }
    };
    Ok(page(&user, "/ui/mailboxes", "Mailboxes", body))
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let mut body = json!({ "address": form.text("address") });
    let name = form.text("displayName");
    if !name.is_empty() {
        body["displayName"] = json!(name);
    }
    let outcome = Call::new(&ctx, &user).body(&body).run(handler!(mailboxes::create)).await;
    act_form(&user, ("/ui/mailboxes", &form), outcome, |m| {
        done(format!("Mailbox {} created.", field(m, "address")))
    })
    .await;
    Ok(redirect("/ui/mailboxes"))
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let (user, _) = gate!(posted(&ctx));
    let address = ctx.param("address").to_owned();
    let call = Call::new(&ctx, &user).param("address", address.clone());
    let outcome = call.run(handler!(mailboxes::delete)).await;
    act(&user, outcome, |_| done(format!("Mailbox {address} deleted."))).await;
    Ok(redirect("/ui/mailboxes"))
}

/// One mailbox: its app passwords (for IMAP and SMTP submission).
pub async fn show(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let address = ctx.param("address").to_owned();
    let call = Call::new(&ctx, &user).param("address", address.clone());
    let found = or_page!(call.run(handler!(passwords::list)).await, &user, "/ui/mailboxes");
    let base = format!("/ui/mailboxes/{}", enc(&address));
    let again = refill(&user.id, &format!("{base}/passwords"), &["name"]);
    let body = html! {
        p { "Mail clients log in as " code { (address) } " with an app password." }
        p { a href={ (base) "/filters" } { "Filters: vacation reply and Sieve scripts" } }
        h2 { "App passwords" }
        table {
            thead { tr { th { "Name" } th { "Created" } th { "Actions" } } }
            tbody {
                @for p in items(&found) {
                    @let name = field(p, "name");
                    tr {
                        td { (name) }
                        td { (time_field(p, "createdAt")) }
                        td {
                            form.inline method="post" action={ (base) "/passwords/" (enc(&field(p, "id"))) "/delete" } {
                                (csrf_field(&user.csrf))
                                button type="submit" aria-label={ "Revoke " (name) } { "Revoke" }
                            }
                        }
                    }
                }
            }
        }
        form.card method="post" action={ (base) "/passwords" } {
            (csrf_field(&user.csrf))
            (again.input("text", "name", "Name of the new password (the device or app)", true))
            button type="submit" { "Create app password" }
        }
        p { a href="/ui/mailboxes" { "All mailboxes" } }
    };
    Ok(page(&user, "/ui/mailboxes", &format!("Mailbox {address}"), body))
}

pub async fn add_password(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let address = ctx.param("address").to_owned();
    let call = Call::new(&ctx, &user).param("address", address.clone());
    let outcome = call.body(&json!({ "name": form.text("name") })).run(handler!(passwords::create));
    let action = format!("/ui/mailboxes/{}/passwords", enc(&address));
    act_form(&user, (&action, &form), outcome.await, |p| {
        let mut notice = done(format!("App password {} created.", field(p, "name")));
        notice.secret = Some(field(p, "password"));
        notice
    })
    .await;
    Ok(redirect(&format!("/ui/mailboxes/{}", enc(&address))))
}

pub async fn delete_password(ctx: Ctx) -> Result<Reply> {
    let (user, _) = gate!(posted(&ctx));
    let address = ctx.param("address").to_owned();
    let call = Call::new(&ctx, &user).param("address", address.clone());
    let outcome = call.param("id", ctx.param("id")).run(handler!(passwords::delete)).await;
    act(&user, outcome, |_| done("App password revoked.")).await;
    Ok(redirect(&format!("/ui/mailboxes/{}", enc(&address))))
}
