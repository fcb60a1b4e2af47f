//! Domain: the DNS records to publish, and the health checks with their hints.

use maud::{Markup, html};
use serde_json::Value;

use super::call::{Call, field, items};
use super::layout;
use super::{gate, or_page, visitor};
use crate::api::health;
use crate::error::{Error, Result};
use crate::handler;
use crate::http::{Ctx, Reply};

const CHECKS: [(&str, &str); 5] = [
    ("spf", "SPF"),
    ("dkim", "DKIM"),
    ("dmarc", "DMARC"),
    ("mx", "MX"),
    ("blacklists", "Blacklists"),
];

pub async fn page(ctx: Ctx) -> Result<Reply> {
    let user = gate!(visitor(&ctx));
    let name = user.domain.clone();
    let found = ctx.app.store.read(move |r| r.domain(&name)).await?;
    let domain = or_page!(found.ok_or_else(|| Error::not_found("domain")), &user, "/ui/domain");
    let bound = ctx.app.bound.get().copied().unwrap_or_default();
    let zone = crate::dkim::full_zone(&domain, &ctx.app.config, bound);
    let report = Call::new(&ctx, &user).run(handler!(health::domain_health)).await;
    let body = html! {
        p { a href="/ui/senders" { "Who sends as you" } ": the sources receivers' DMARC reports name." }
        h2 { "DNS records to publish" }
        pre.zone { (zone.join("\n")) }
        h2 { "Health checks" }
        @match &report {
            Ok(r) => {
                p { "Score: " span.score { (field(r, "score")) } " / 100" }
                table {
                    thead { tr { th { "Check" } th { "Result" } th { "Found" } th { "Detail" } th { "Hint" } } }
                    tbody { @for (key, label) in CHECKS { (check_row(label, &r[key])) } }
                }
            }
            Err(e) => { p.fail { (super::call::failure(e).text) } }
        }
    };
    Ok(layout::page(&user, "/ui/domain", &format!("Domain {}", user.domain), body))
}

fn check_row(label: &str, c: &Value) -> Markup {
    let status = field(c, "status");
    let found: Vec<String> = match c.get("record") {
        Some(Value::String(r)) => vec![r.clone()],
        _ => items(&c["records"])
            .iter()
            .chain(items(&c["listedOn"]))
            .filter_map(|r| r.as_str().map(str::to_owned))
            .collect(),
    };
    html! {
        tr {
            th scope="row" { (label) }
            td class=(status) { (status) }
            td { @for r in &found { code { (r) } br; } }
            td { (field(c, "detail")) }
            td { (field(c, "hint")) }
        }
    }
}
