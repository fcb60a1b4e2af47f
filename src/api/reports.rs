//! `GET /v1/dmarc-reports` and `GET /v1/tls-reports`: what other mail systems reported about
//! the key's domain over the last `days` (1-90, default 30), summed (`reporting::summary`).

use crate::error::Result;
use crate::http::request::int_param;
use crate::http::{Ctx, Reply};
use crate::reporting::summary::{self, DmarcSummary};

/// The start of a window of `days` days ending now (Unix ms).
fn since(days: u64) -> u64 {
    crate::ids::now_ms().saturating_sub(days * 86_400_000)
}

fn days(ctx: &Ctx) -> Result<u64> {
    int_param(ctx.query_value("days"), "days", 1, 90, 30)
}

/// The DMARC summary of `domain` over `days` days (the dashboard and the health hint use it).
pub async fn dmarc_summary(ctx: &Ctx, domain: &str, days: u64) -> Result<DmarcSummary> {
    let (domain, since) = (domain.to_owned(), since(days));
    let reports = ctx.app.store.read_long(move |r| r.dmarc_reports(&domain, since)).await?;
    Ok(summary::dmarc(&reports))
}

pub async fn dmarc(ctx: Ctx) -> Result<Reply> {
    let days = days(&ctx)?;
    let domain = ctx.domain()?.to_owned();
    Reply::ok(&dmarc_summary(&ctx, &domain, days).await?)
}

pub async fn tls(ctx: Ctx) -> Result<Reply> {
    let days = days(&ctx)?;
    let (domain, since) = (ctx.domain()?.to_owned(), since(days));
    let reports = ctx.app.store.read_long(move |r| r.tls_reports(&domain, since)).await?;
    Reply::ok(&summary::tls(&reports))
}
