//! Webhooks: endpoints, creating one (its secret shown once), test events and the delivery log.

use maud::html;
use serde_json::json;

use super::call::{Call, done, enc, field, items, time_field};
use super::layout::{csrf_field, page, redirect};
use super::session::refill;
use super::{act, act_form, gate, or_page, posted, visitor};
use crate::api::webhooks;
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};
use crate::store::EventType;

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let found =
        or_page!(Call::new(&ctx, &user).run(handler!(webhooks::list)).await, &user, "/ui/webhooks");
    let again = refill(&user.id, "/ui/webhooks", &["url", "description", "events"]);
    let body = html! {
        table {
            thead { tr { th { "URL" } th { "Description" } th { "Enabled" } th { "Events" } th { "Created" } } }
            tbody {
                @for h in items(&found) {
                    tr {
                        td { a href={ "/ui/webhooks/" (enc(&field(h, "id"))) } { (field(h, "url")) } }
                        td { (field(h, "description")) }
                        td { (field(h, "enabled")) }
                        td { (items(&h["events"]).len()) }
                        td { (time_field(h, "createdAt")) }
                    }
                }
            }
        }
        @if items(&found).is_empty() { p.muted { "No webhooks yet." } }
        h2 { "New webhook" }
        form.card method="post" action="/ui/webhooks" {
            (csrf_field(&user.csrf))
            (again.input("url", "url", "URL (http or https)", true))
            (again.input("text", "description", "Description (optional)", false))
            fieldset aria-describedby=[again.described("events")] {
                legend { "Events (none ticked: every event type)" }
                (again.error("events"))
                @for t in EventType::ALL {
                    label.check {
                        input type="checkbox" name="events" value=(t.name())
                            checked[again.chose("events", t.name())];
                        (t.name())
                    }
                }
            }
            button type="submit" { "Create webhook" }
        }
    };
    Ok(page(&user, "/ui/webhooks", "Webhooks", body))
}

pub async fn create(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let mut body = json!({ "url": form.text("url") });
    let description = form.text("description");
    if !description.is_empty() {
        body["description"] = json!(description);
    }
    let events = form.all("events");
    if !events.is_empty() {
        body["events"] = json!(events);
    }
    let outcome = Call::new(&ctx, &user).body(&body).run(handler!(webhooks::create)).await;
    act_form(&user, ("/ui/webhooks", &form), outcome, |h| {
        let mut notice = done(format!("Webhook {} created; its signing secret:", field(h, "url")));
        notice.secret = Some(field(h, "secret"));
        notice
    })
    .await;
    Ok(redirect("/ui/webhooks"))
}

/// One endpoint and its newest deliveries.
pub async fn show(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let id = ctx.param("id").to_owned();
    let hook = Call::new(&ctx, &user).param("id", id.clone()).run(handler!(webhooks::get)).await;
    let hook = or_page!(hook, &user, "/ui/webhooks");
    let call = Call::new(&ctx, &user).param("id", id.clone()).query("limit=100".into());
    let log = or_page!(call.run(handler!(webhooks::deliveries)).await, &user, "/ui/webhooks");
    let base = format!("/ui/webhooks/{}", enc(&id));
    let body = html! {
        p { "Events: " (items(&hook["events"]).iter().filter_map(|e| e.as_str()).collect::<Vec<_>>().join(", ")) }
        form.inline method="post" action={ (base) "/test" } {
            (csrf_field(&user.csrf))
            button type="submit" { "Send a test event" }
        }
        " "
        form.inline method="post" action={ (base) "/delete" } {
            (csrf_field(&user.csrf))
            button type="submit" { "Delete this webhook" }
        }
        h2 { "Deliveries" }
        table {
            thead { tr { th { "Event" } th { "Status" } th { "Attempts" } th { "Last answer" } th { "Next attempt" } th { "Created" } } }
            tbody {
                @for d in items(&log) {
                    tr {
                        td { (field(d, "type")) }
                        td { (field(d, "status")) }
                        td { (field(d, "attempts")) }
                        td { (field(d, "lastStatusCode")) " " (field(d, "lastError")) }
                        td { (time_field(d, "nextAttemptAt")) }
                        td { (time_field(d, "createdAt")) }
                    }
                }
            }
        }
        @if items(&log).is_empty() { p.muted { "No deliveries yet." } }
        p { a href="/ui/webhooks" { "All webhooks" } }
    };
    Ok(page(&user, "/ui/webhooks", &format!("Webhook {}", field(&hook, "url")), body))
}

pub async fn test(ctx: Ctx) -> Result<Reply> {
    let (user, _) = gate!(posted(&ctx));
    let id = ctx.param("id").to_owned();
    let outcome =
        Call::new(&ctx, &user).param("id", id.clone()).run(handler!(webhooks::test)).await;
    act(&user, outcome, |_| done("A webhook.test event is queued for this endpoint.")).await;
    Ok(redirect(&format!("/ui/webhooks/{}", enc(&id))))
}

pub async fn delete(ctx: Ctx) -> Result<Reply> {
    let (user, _) = gate!(posted(&ctx));
    let outcome =
        Call::new(&ctx, &user).param("id", ctx.param("id")).run(handler!(webhooks::delete)).await;
    act(&user, outcome, |_| done("Webhook deleted.")).await;
    Ok(redirect("/ui/webhooks"))
}
