//! One sequence: its settings, the counters of each email step (`stats.steps` of
//! `GET /v1/sequences/{id}`), and its enrollments with status and lead label, the label set
//! here through `PATCH /v1/sequences/{id}/enrollments/{enrollmentId}`.

use maud::{Markup, html};
use serde_json::{Value, json};

use super::call::{Call, done, enc, field, items, time_field};
use super::layout::{csrf_field, page, redirect};
use super::session::User;
use super::{act, gate, or_page, posted, visitor};
use crate::api::{replies, sequences};
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

/// The counters of a step row, in the order the table shows them.
pub const STEP_COUNTERS: [&str; 6] =
    ["sent", "delivered", "opened", "clicked", "replied", "bounced"];

/// The per-step table: one row per email step, numbered as the builder numbers emails.
pub fn step_table(rows: &[Value], subject_of: impl Fn(&Value) -> String) -> Markup {
    html! {
        table.steps {
            caption { "Per step" }
            thead { tr { th { "Step" } th { "Subject" } @for c in STEP_COUNTERS { th { (c) } } } }
            tbody {
                @for (n, row) in rows.iter().enumerate() {
                    tr {
                        th scope="row" { (n + 1) }
                        td { (subject_of(row)) }
                        @for c in STEP_COUNTERS { td { (field(row, c)) } }
                    }
                }
            }
        }
    }
}

fn subject_at(s: &Value, row: &Value) -> String {
    let index = row["index"].as_u64().unwrap_or(0) as usize;
    let step = &s["steps"][index];
    field(step, "subject")
}

fn enrollments_table(user: &User, id: &str, list: &Value) -> Markup {
    html! {
        table.enrollments {
            thead { tr { th { "Lead" } th { "Status" } th { "Next step" } th { "Next send" } th { "Label" } } }
            tbody {
                @for e in items(list) {
                    @let email = field(e, "email");
                    @let action = format!("/ui/sequences/{}/enrollments/{}/label", enc(id), enc(&field(e, "id")));
                    tr {
                        td { (email) }
                        td { (field(e, "status")) }
                        td { (field(e, "step")) }
                        td { (time_field(e, "nextSendAt")) }
                        td {
                            form.inline method="post" action=(action) {
                                (csrf_field(&user.csrf))
                                input type="text" name="label" list="labels" maxlength="40"
                                    value=(field(e, "label")) aria-label={ "Label of " (email) };
                                button type="submit" aria-label={ "Save the label of " (email) } { "Save" }
                            }
                        }
                    }
                }
            }
        }
        datalist #labels { @for l in replies::LABELS { option value=(l) {} } }
        @if items(list).is_empty() { p.muted { "Nobody is enrolled yet." } }
    }
}

pub async fn show(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let id = ctx.param("id").to_owned();
    let call = Call::new(&ctx, &user).param("id", id.clone());
    let s = or_page!(call.run(handler!(sequences::get)).await, &user, "/ui/sequences");
    let mut query = "limit=100".to_owned();
    let cursor = ctx.query_value("cursor");
    if let Some(cursor) = &cursor {
        query.push_str(&format!("&cursor={}", enc(cursor)));
    }
    let call = Call::new(&ctx, &user).param("id", id.clone()).query(query);
    let (list, next) =
        or_page!(call.run_page(handler!(sequences::enrollments)).await, &user, "/ui/sequences");
    let stats = &s["stats"];
    let sender = match s["senderGroupId"].as_str() {
        Some(g) => format!("sender group {g}"),
        None => field(&s, "from"),
    };
    let here = format!("/ui/sequences/{}", enc(&id));
    let body = html! {
        p { a href={ (here) "/edit" } { "Edit this sequence" } }
        dl {
            dt { "Status" } dd { (field(&s, "status")) }
            dt { "Sends from" } dd { (sender) }
            dt { "Enrolled" } dd { (field(stats, "total")) " (" (field(stats, "active")) " active, " (field(stats, "replied")) " replied)" }
        }
        (step_table(items(&stats["steps"]), |row| subject_at(&s, row)))
        h2 { "Enrollments" }
        (enrollments_table(&user, &id, &list))
        (super::mail::pager(&here, cursor.is_some(), next.as_deref()))
    };
    Ok(page(&user, "/ui/sequences", &format!("Sequence {}", field(&s, "name")), body))
}

pub async fn label(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let (id, enrollment) = (ctx.param("id").to_owned(), ctx.param("enrollmentId").to_owned());
    let text = form.text("label");
    let label = if text.is_empty() { Value::Null } else { json!(text) };
    let call = Call::new(&ctx, &user).param("id", id.clone()).param("enrollmentId", enrollment);
    let outcome = call.body(&json!({ "label": label })).run(handler!(replies::label)).await;
    act(&user, outcome, |e| {
        let label = field(e, "label");
        let label = if label.is_empty() { "no label".to_owned() } else { label };
        done(format!("{} now has {label}.", field(e, "email")))
    })
    .await;
    Ok(redirect(&format!("/ui/sequences/{}", enc(&id))))
}
