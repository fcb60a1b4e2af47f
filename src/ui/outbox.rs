//! Outbox: mail of every mailbox not yet delivered (queued, scheduled or deferred).

use maud::html;

use super::call::{Call, enc, field, items, time_field};
use super::layout::page;
use super::{gate, or_page, visitor};
use crate::api::{emails, mailboxes};
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

pub async fn waiting(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let boxes =
        or_page!(Call::new(&ctx, &user).run(handler!(mailboxes::list)).await, &user, "/ui/outbox");
    let mut waiting = Vec::new();
    for m in items(&boxes) {
        let query = format!("mailbox={}&folder=outbox&limit=100", enc(&field(m, "address")));
        let call = Call::new(&ctx, &user).query(query);
        let found = or_page!(call.run(handler!(emails::list)).await, &user, "/ui/outbox");
        waiting.extend(items(&found).iter().cloned());
    }
    let body = html! {
        table {
            thead { tr { th { "From" } th { "To" } th { "Subject" } th { "Status" } th { "Queued" } } }
            tbody {
                @for m in &waiting {
                    tr {
                        td { (field(m, "mailbox")) }
                        td { (items(&m["to"]).iter().filter_map(|x| x.as_str()).collect::<Vec<_>>().join(", ")) }
                        td { a href={ "/ui/mail/" (enc(&field(m, "id"))) } { (field(m, "subject")) } }
                        td { (field(m, "status")) }
                        td { (time_field(m, "createdAt")) }
                    }
                }
            }
        }
        @if waiting.is_empty() { p.muted { "Nothing waiting: every message has left." } }
    };
    Ok(page(&user, "/ui/outbox", "Outbox", body))
}
