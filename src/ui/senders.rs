//! "Who sends as you": the sources DMARC aggregate reports name for the user's domain over the
//! last 30 days, busiest first, with what receivers made of their mail. Reached from the domain
//! page, whose navigation entry it shares; read through `GET /v1/dmarc-reports`.

use maud::{Markup, html};
use serde_json::Value;

use super::call::{Call, field, items};
use super::layout::page;
use super::{gate, or_page, visitor};
use crate::api::reports;
use crate::error::Result;
use crate::handler;
use crate::http::{Ctx, Reply};

pub async fn page_of(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let found = or_page!(
        Call::new(&ctx, &user).query("days=30".into()).run(handler!(reports::dmarc)).await,
        &user,
        "/ui/senders"
    );
    let count = |v: &Value, a: &str, b: &str| v[a][b].as_u64().unwrap_or(0);
    let body = html! {
        p.muted {
            (field(&found, "reports")) " reports from receivers over the last 30 days, about "
            (field(&found, "messages")) " messages. Receivers send them to dmarc-reports@"
            (user.domain) " (the rua= of the DMARC record the domain page lists)."
        }
        @if items(&found["reporters"]).is_empty() {
            p { "No report yet. They come once a day from each receiver that got mail from the domain." }
        } @else {
            p {
                "Reported by: "
                @for (i, r) in items(&found["reporters"]).iter().enumerate() {
                    @if i > 0 { ", " }
                    (field(r, "org")) " (" (field(r, "reports")) ")"
                }
            }
        }
        table {
            caption.muted { "Sources of mail with From: " (user.domain) }
            thead { tr {
                th { "Source IP" } th { "Messages" } th { "SPF pass/fail" } th { "DKIM pass/fail" }
                th { "DMARC pass/fail" } th { "Quarantined" } th { "Rejected" } th { "Verdict" }
            } }
            tbody {
                @for s in items(&found["sources"]) {
                    tr {
                        td { code { (field(s, "sourceIp")) } }
                        td { (field(s, "count")) }
                        td { (count(s, "spf", "pass")) " / " (count(s, "spf", "fail")) }
                        td { (count(s, "dkim", "pass")) " / " (count(s, "dkim", "fail")) }
                        td { (count(s, "dmarc", "pass")) " / " (count(s, "dmarc", "fail")) }
                        td { (count(s, "disposition", "quarantine")) }
                        td { (count(s, "disposition", "reject")) }
                        td { (verdict(s)) }
                    }
                }
            }
        }
    };
    Ok(page(&user, "/ui/domain", "Who sends as you", body))
}

/// A word on a source: aligned mail is fine; failing mail is either a sender of yours to fix
/// or someone else using the domain.
fn verdict(s: &Value) -> Markup {
    let fail = s["dmarc"]["fail"].as_u64().unwrap_or(0);
    html! {
        @if fail == 0 {
            span.pass { "aligned" }
        } @else {
            span.fail { (fail) " failing: yours? fix SPF/DKIM; not yours? it is spoofing" }
        }
    }
}
