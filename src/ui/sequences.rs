//! Sequences: each with its enrollment statistics, paused and resumed here.

use maud::html;
use serde_json::json;

use super::call::{Call, done, enc, field, items};
use super::layout::{csrf_field, page, redirect};
use super::{act, gate, or_page, posted, visitor};
use crate::api::sequences;
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

const STATS: [&str; 6] = ["total", "active", "completed", "replied", "bounced", "cancelled"];

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let found = or_page!(
        Call::new(&ctx, &user).run(handler!(sequences::list)).await,
        &user,
        "/ui/sequences"
    );
    let body = html! {
        p { a href="/ui/sequences/new" { "New sequence" } }
        table {
            thead {
                tr {
                    th { "Name" } th { "From" } th { "Status" } th { "Steps" }
                    @for s in STATS { th { (s) } }
                    th { "Actions" }
                }
            }
            tbody {
                @for s in items(&found) {
                    @let status = field(s, "status");
                    @let name = field(s, "name");
                    tr {
                        td { a href={ "/ui/sequences/" (enc(&field(s, "id"))) } { (name) } }
                        td { (field(s, "from")) }
                        td { (status) }
                        td { (field(s, "stepCount")) }
                        @for k in STATS { td { (field(&s["stats"], k)) } }
                        td {
                            @if status == "active" || status == "paused" {
                                @let (to, label) = if status == "active" { ("paused", "Pause") } else { ("active", "Resume") };
                                form.inline method="post" action={ "/ui/sequences/" (enc(&field(s, "id"))) "/status" } {
                                    (csrf_field(&user.csrf))
                                    input type="hidden" name="status" value=(to);
                                    button type="submit" aria-label={ (label) " " (name) } { (label) }
                                }
                            }
                        }
                    }
                }
            }
        }
        @if items(&found).is_empty() { p.muted { "No sequences yet." } }
    };
    Ok(page(&user, "/ui/sequences", "Sequences", body))
}

pub async fn status(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let call = Call::new(&ctx, &user).param("id", ctx.param("id"));
    let outcome =
        call.body(&json!({ "status": form.text("status") })).run(handler!(sequences::update));
    act(&user, outcome.await, |s| done(format!("Sequence is now {}.", field(s, "status")))).await;
    Ok(redirect("/ui/sequences"))
}
