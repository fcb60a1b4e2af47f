//! Domain health: `GET /v1/domain-health` for hosted domains (analytics scope) and the public
//! `POST /api/tools/check-deliverability` for any domain. Both answer the report of `health`.

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::health::{Report, join_all, report};
use crate::http::request::parse_json;
use crate::http::{Ctx, Reply};
use crate::store::Domain;

/// The window of DMARC reports the health check looks at.
const HINT_DAYS: u64 = 7;

pub async fn domain_health(ctx: Ctx) -> Result<Reply> {
    let (names, single) = super::analytics::scope(&ctx).await?;
    let domains: Vec<Domain> = ctx
        .app
        .store
        .read(move |r| {
            names
                .iter()
                .map(|n| r.domain(n)?.ok_or_else(|| Error::not_found("domain")))
                .collect::<Result<Vec<Domain>>>()
        })
        .await?;
    let (dns, config) = (&ctx.app.dns, &ctx.app.config);
    let mut reports: Vec<Report> =
        join_all(domains.iter().map(|d| report(dns, config, &d.name, Some(d))).collect()).await;
    for report in &mut reports {
        // What receivers reported lately: sources failing alignment get a hint.
        let summary = super::reports::dmarc_summary(&ctx, &report.domain, HINT_DAYS).await?;
        let failing: Vec<(String, u64)> = summary
            .sources
            .iter()
            .filter(|s| s.dmarc.fail > 0)
            .map(|s| (s.source_ip.clone(), s.dmarc.fail))
            .collect();
        report.note_failing_sources(&failing, HINT_DAYS);
    }
    super::analytics::one_or_all(reports, single)
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckRequest {
    domain: String,
}

/// The normalized domain of a check-deliverability body.
pub fn parse_check(body: &[u8]) -> Result<String> {
    let input: CheckRequest = parse_json(body)?;
    crate::address::normalize_domain(&input.domain).map_err(|why| {
        Error::invalid(
            format!("`domain` is not a domain name: {why}; got {:?}", input.domain),
            "send a bare domain such as example.com, without a scheme, path or address",
        )
    })
}

pub async fn check_deliverability(ctx: Ctx) -> Result<Reply> {
    let domain = parse_check(&ctx.body)?;
    let name = domain.clone();
    // A domain hosted here is checked against its own keys, like GET /v1/domain-health.
    let hosted = ctx.app.store.read(move |r| r.domain(&name)).await?;
    let answer = report(&ctx.app.dns, &ctx.app.config, &domain, hosted.as_ref()).await;
    Reply::ok(&answer)
}
