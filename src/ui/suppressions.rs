//! Suppressions: addresses the domain never sends to, added and removed by hand.

use maud::html;
use serde_json::json;

use super::call::{Call, done, enc, field, items, time_field};
use super::layout::{csrf_field, page, redirect};
use super::session::refill;
use super::{act, act_form, gate, or_page, posted, visitor};
use crate::api::{analytics, suppressions};
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let mut query = "limit=500".to_owned();
    if let Some(after) = ctx.query_value("after") {
        query.push_str(&format!("&after={}", enc(&after)));
    }
    let call = Call::new(&ctx, &user).query(query);
    let found =
        or_page!(call.run(handler!(analytics::suppressions)).await, &user, "/ui/suppressions");
    let list = items(&found["items"]);
    let again = refill(&user.id, "/ui/suppressions", &["email", "reason"]);
    let body = html! {
        p { (field(&found, "total")) " suppressed addresses." }
        table {
            thead { tr { th { "Email" } th { "Reason" } th { "Source" } th { "Since" } th { "Actions" } } }
            tbody {
                @for s in list {
                    @let email = field(s, "email");
                    tr {
                        td { (email) }
                        td { (field(s, "reason")) }
                        td { (field(s, "source")) }
                        td { (time_field(s, "unsubscribedAt")) }
                        td {
                            form.inline method="post" action="/ui/suppressions/delete" {
                                (csrf_field(&user.csrf))
                                input type="hidden" name="email" value=(email);
                                button type="submit" aria-label={ "Remove " (email) } { "Remove" }
                            }
                        }
                    }
                }
            }
        }
        @if found["hasMore"].as_bool() == Some(true) {
            @if let Some(last) = list.last() {
                p { a href={ "/ui/suppressions?after=" (field(last, "unsubscribedAt")) } { "More" } }
            }
        }
        h2 { "Suppress an address" }
        form.card method="post" action="/ui/suppressions" {
            (csrf_field(&user.csrf))
            (again.input("email", "email", "Email", true))
            (again.input("text", "reason", "Why (optional)", false))
            button type="submit" { "Suppress" }
        }
    };
    Ok(page(&user, "/ui/suppressions", "Suppressions", body))
}

pub async fn add(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let mut body = json!({ "email": form.text("email") });
    let reason = form.text("reason");
    if !reason.is_empty() {
        body["reason"] = json!(reason);
    }
    let outcome = Call::new(&ctx, &user).body(&body).run(handler!(suppressions::create)).await;
    act_form(&user, ("/ui/suppressions", &form), outcome, |s| {
        done(format!("{} is suppressed.", field(s, "email")))
    })
    .await;
    Ok(redirect("/ui/suppressions"))
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let email = form.text("email");
    let call = Call::new(&ctx, &user).param("email", email.clone());
    let outcome = call.run(handler!(suppressions::delete)).await;
    act(&user, outcome, |_| done(format!("{email} may be sent to again."))).await;
    Ok(redirect("/ui/suppressions"))
}
