//! Compose: a transactional message through `POST /v1/send`.

use maud::html;
use serde_json::json;

use super::call::{Call, done, field, items};
use super::layout::{csrf_field, page, redirect};
use super::session::refill;
use super::{act_form, gate, or_page, posted, visitor};
use crate::api::{mailboxes, send};
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

pub async fn form(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let boxes =
        or_page!(Call::new(&ctx, &user).run(handler!(mailboxes::list)).await, &user, "/ui/compose");
    let again = refill(&user.id, "/ui/compose", &["from", "to", "cc", "subject", "text"]);
    let body = html! {
        form.card method="post" action="/ui/compose" {
            (csrf_field(&user.csrf))
            label for="from" { "From" }
            select #from name="from" required aria-invalid=[again.invalid("from")]
                aria-describedby=[again.described("from")] autofocus[again.focus("from")] {
                @for m in items(&boxes) {
                    @let address = field(m, "address");
                    option selected[again.chose("from", &address)] { (address) }
                }
            }
            (again.error("from"))
            (again.input("text", "to", "To (comma-separated)", true))
            (again.input("text", "cc", "Cc (optional)", false))
            (again.input("text", "subject", "Subject", true))
            label for="text" { "Message" }
            textarea #text name="text" required aria-invalid=[again.invalid("text")]
                aria-describedby=[again.described("text")] autofocus[again.focus("text")] {
                (again.value("text").unwrap_or_default())
            }
            (again.error("text"))
            button type="submit" { "Send" }
        }
    };
    Ok(page(&user, "/ui/compose", "Compose", body))
}

/// A comma-separated list as the API's array.
fn list(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned).collect()
}

pub async fn send(ctx: Ctx) -> Result<Reply> {
    let (user, form) = gate!(posted(&ctx));
    let mut body = json!({
        "from": form.text("from"),
        "to": list(&form.text("to")),
        "subject": form.text("subject"),
        "text": form.get("text").unwrap_or_default(),
    });
    let cc = list(&form.text("cc"));
    if !cc.is_empty() {
        body["cc"] = json!(cc);
    }
    let outcome = Call::new(&ctx, &user).body(&body).run(handler!(send::send)).await;
    let sent = outcome.is_ok();
    act_form(&user, ("/ui/compose", &form), outcome, |r| {
        let blocked = items(&r["blocked"]).len();
        let note = if blocked > 0 {
            format!(" {blocked} recipient(s) were refused.")
        } else {
            String::new()
        };
        done(format!("Message {} queued.{note}", field(r, "messageId")))
    })
    .await;
    Ok(redirect(if sent { "/ui/outbox" } else { "/ui/compose" }))
}
