//! Aliases: the list (with the catch-all, `*`), creating and deleting one. Reached from the
//! mailboxes page, whose navigation entry it shares.

use maud::html;
use serde_json::json;

use super::call::{Call, done, enc, field, items, time_field};
use super::layout::{csrf_field, page, redirect};
use super::session::refill;
use super::{act, act_form, gate, or_page, posted, visitor};
use crate::api::aliases;
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let found = or_page!(
        Call::new(&ctx, &user).query("limit=500".into()).run(handler!(aliases::list)).await,
        &user,
        "/ui/aliases"
    );
    let again = refill(&user.id, "/ui/aliases", &["address", "targets"]);
    let body = html! {
        table {
            caption.muted { "Aliases of " (user.domain) " (" code { "*" } " is the catch-all)" }
            thead { tr { th { "Address" } th { "Targets" } th { "Created" } th { "Actions" } } }
            tbody {
                @for a in items(&found) {
                    @let address = field(a, "address");
                    @let targets: Vec<String> = a["targets"].as_array().map_or(Vec::new(), |t| {
                        t.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()
                    });
                    tr {
                        td { (address) }
                        td { (targets.join(", ")) }
                        td { (time_field(a, "createdAt")) }
                        td {
                            form.inline method="post" action={ "/ui/aliases/" (enc(&address)) "/delete" } {
                                (csrf_field(&user.csrf))
                                button type="submit" aria-label={ "Delete " (address) } { "Delete" }
                            }
                        }
                    }
                }
            }
        }
        h2 { "New alias" }
        form.card method="post" action="/ui/aliases" {
            (csrf_field(&user.csrf))
            (again.input("text", "address", "Address (local part, or * for the catch-all)", true))
            (again.input("text", "targets", "Targets (addresses, separated by commas)", true))
            button type="submit" { "Create alias" }
        }
    };
    Ok(page(&user, "/ui/mailboxes", "Aliases", body))
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let targets: Vec<String> = form
        .text("targets")
        .split([',', ' ', '\n'])
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect();
    let body = json!({ "address": form.text("address"), "targets": targets });
    let outcome = Call::new(&ctx, &user).body(&body).run(handler!(aliases::create)).await;
    act_form(&user, ("/ui/aliases", &form), outcome, |a| {
        done(format!("Alias {} created.", field(a, "address")))
    })
    .await;
    Ok(redirect("/ui/aliases"))
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let (user, _) = gate!(posted(&ctx));
    let address = ctx.param("address").to_owned();
    let call = Call::new(&ctx, &user).param("address", address.clone());
    let outcome = call.run(handler!(aliases::delete)).await;
    act(&user, outcome, |_| done(format!("Alias {address} deleted."))).await;
    Ok(redirect("/ui/aliases"))
}
