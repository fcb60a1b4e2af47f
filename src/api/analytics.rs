//! Analytics endpoints: the ones an org-wide key may call. A domain-scoped key gets one object
//! for its own domain; an org-wide key gets an array with one entry per domain (only the one named
//! by `domain` when it is given).

use serde::Serialize;

use crate::error::{Error, Result};
use crate::http::request::int_param;
use crate::http::{Ctx, Reply};
use crate::store::Suppression;

/// The domains a request covers, and whether the answer is a single object.
pub(super) async fn scope(ctx: &Ctx) -> Result<(Vec<String>, bool)> {
    let wanted =
        ctx.query_value("domain").map(|d| d.trim().trim_end_matches('.').to_ascii_lowercase());
    let principal = ctx.principal.as_ref().ok_or(Error::Unauthorized("missing API key"))?;
    match principal.domain.as_deref() {
        Some(own) => match wanted {
            Some(d) if d != own => Err(Error::not_found("domain")),
            _ => Ok((vec![own.to_owned()], true)),
        },
        None => {
            let all: Vec<String> =
                ctx.app.store.read(|r| r.domains()).await?.into_iter().map(|d| d.name).collect();
            match wanted {
                Some(d) if all.contains(&d) => Ok((vec![d], false)),
                Some(_) => Err(Error::not_found("domain")),
                None => Ok((all, false)),
            }
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Page {
    domain: String,
    total: u64,
    items: Vec<Suppression>,
    has_more: bool,
}

pub async fn suppressions(ctx: Ctx) -> Result<Reply> {
    let limit = int_param(ctx.query_value("limit"), "limit", 1, 500, 100)? as usize;
    let after = match ctx.query_value("after") {
        None => None,
        Some(raw) => Some(raw.trim().parse::<u64>().map_err(|_| {
            Error::invalid(
                format!("`after` must be a Unix time in milliseconds; got {raw:?}"),
                "pass the `unsubscribedAt` of the last item of the previous page",
            )
        })?),
    };
    let (domains, single) = scope(&ctx).await?;
    let pages = ctx
        .app
        .store
        .read(move |r| {
            domains
                .into_iter()
                .map(|domain| {
                    let (total, items, has_more) = r.suppressions_page(&domain, after, limit)?;
                    Ok(Page { domain, total, items, has_more })
                })
                .collect::<Result<Vec<Page>>>()
        })
        .await?;
    if single {
        // A domain-scoped key: its one page.
        let page = pages.into_iter().next().ok_or_else(|| Error::not_found("domain"))?;
        Reply::ok(&page)
    } else {
        Reply::ok(&pages)
    }
}
