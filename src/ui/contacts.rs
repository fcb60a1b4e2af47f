//! Contacts: the contact book, adding (or renaming) and deleting a contact.

use maud::html;
use serde_json::json;

use super::call::{Call, done, enc, field, items, time_field};
use super::layout::{csrf_field, page, redirect};
use super::session::refill;
use super::{act, act_form, gate, or_page, posted, visitor};
use crate::api::contacts;
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let mut query = "limit=100".to_owned();
    let cursor = ctx.query_value("cursor");
    if let Some(cursor) = &cursor {
        query.push_str(&format!("&cursor={}", enc(cursor)));
    }
    let call = Call::new(&ctx, &user).query(query);
    let (found, next) =
        or_page!(call.run_page(handler!(contacts::list)).await, &user, "/ui/contacts");
    let again = refill(&user.id, "/ui/contacts", &["email", "name"]);
    let body = html! {
        p { a href="/ui/contacts/import" { "Import contacts from a CSV file" } }
        table {
            thead { tr { th { "Email" } th { "Name" } th { "Updated" } th { "Actions" } } }
            tbody {
                @for c in items(&found) {
                    @let email = field(c, "email");
                    tr {
                        td { (email) }
                        td { (field(c, "name")) }
                        td { (time_field(c, "updatedAt")) }
                        td {
                            form.inline method="post" action={ "/ui/contacts/" (enc(&field(c, "id"))) "/delete" } {
                                (csrf_field(&user.csrf))
                                button type="submit" aria-label={ "Delete " (email) } { "Delete" }
                            }
                        }
                    }
                }
            }
        }
        @if items(&found).is_empty() { p.muted { "No contacts yet." } }
        (super::mail::pager("/ui/contacts", cursor.is_some(), next.as_deref()))
        h2 { "Add a contact" }
        form.card method="post" action="/ui/contacts" {
            (csrf_field(&user.csrf))
            (again.input("email", "email", "Email", true))
            (again.input("text", "name", "Name", true))
            button type="submit" { "Save contact" }
        }
    };
    Ok(page(&user, "/ui/contacts", "Contacts", body))
}

pub async fn upsert(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let body = json!({ "email": form.text("email"), "name": form.text("name") });
    let outcome = Call::new(&ctx, &user).body(&body).run(handler!(contacts::upsert)).await;
    act_form(&user, ("/ui/contacts", &form), outcome, |c| {
        done(format!("Contact {} saved.", field(c, "email")))
    })
    .await;
    Ok(redirect("/ui/contacts"))
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let (user, _) = gate!(posted(&ctx));
    let call = Call::new(&ctx, &user).param("id", ctx.param("id"));
    let outcome = call.run(handler!(contacts::delete)).await;
    act(&user, outcome, |_| done("Contact deleted.")).await;
    Ok(redirect("/ui/contacts"))
}
