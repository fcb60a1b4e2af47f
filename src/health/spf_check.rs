//! The SPF check of a report: one valid record, within the lookup limit, ending in `-all` or
//! `~all`, and (for a hosted domain) passing for every address this server sends from.

use std::net::IpAddr;

use super::lookup::Resolve;
use super::spf::{self, LOOKUP_LIMIT, Published, Qualifier, Verdict};
use super::{Context, Findings, RecordCheck, join_all};

/// What the record's `all` term says about unlisted senders.
fn ending(ending: Option<Qualifier>, f: &mut Findings) {
    match ending {
        Some(Qualifier::Fail) => f.fact("ends in -all"),
        Some(Qualifier::SoftFail) => f.fact("ends in ~all"),
        Some(Qualifier::Pass) => f.fail(
            "+all authorizes every host on the Internet to send as the domain",
            "End the record with -all (or ~all while testing).",
        ),
        Some(Qualifier::Neutral) => f.warn(
            "?all makes every other sender neutral: the record protects nothing",
            "End the record with -all (or ~all while testing).",
        ),
        None => f.warn(
            "the record has no `all`: unlisted senders are neutral",
            "End the record with -all (or ~all while testing).",
        ),
    }
}

pub async fn check<R: Resolve>(r: &R, ctx: &Context<'_>) -> RecordCheck {
    let domain = ctx.domain;
    let mut f = Findings::default();
    let suggested = suggestion(ctx);
    let text = match spf::fetch(r, domain).await {
        Published::One(text) => text,
        Published::None => {
            f.fail(
                format!("{domain} publishes no SPF record (a TXT record starting v=spf1)"),
                format!("Publish TXT at {domain}: \"{suggested}\"."),
            );
            return f.record(None);
        }
        Published::Many(n) => {
            f.fail(
                format!("{domain} publishes {n} SPF records; receivers treat that as an error"),
                "Merge them into one TXT record starting v=spf1.",
            );
            return f.record(None);
        }
        Published::Failed(e) => {
            f.warn(
                format!("could not look up SPF: {e}"),
                "Check that the domain's nameservers answer, then run the check again.",
            );
            return f.record(None);
        }
    };
    let record = match spf::parse(&text) {
        Ok(record) => record,
        Err(e) => {
            f.fail(
                format!("the SPF record is invalid: {e}"),
                format!("Fix the record's syntax, for example \"{suggested}\"."),
            );
            return f.record(Some(text));
        }
    };
    let tree = spf::walk(r, domain, &record).await;
    if tree.lookups > LOOKUP_LIMIT {
        f.fail(
            format!(
                "the record needs {}{} DNS lookups (include, a, mx, ptr, exists, redirect); the \
                 limit is {LOOKUP_LIMIT}",
                tree.lookups,
                if tree.lookups > LOOKUP_LIMIT + 1 { " or more" } else { "" }
            ),
            "Replace a, mx and nested include terms with ip4:/ip6: ranges, or drop includes of \
             services you no longer use.",
        );
    } else {
        f.fact(format!("{} of {LOOKUP_LIMIT} DNS lookups", tree.lookups));
    }
    for problem in &tree.problems {
        f.fail(problem.clone(), "Fix or remove the include or redirect that names it.");
    }
    for e in &tree.unanswered {
        f.warn(
            format!("an included record could not be looked up: {e}"),
            "Check the included domain's nameservers, then run the check again.",
        );
    }
    ending(tree.ending, &mut f);
    if ctx.hosted.is_some() {
        authorizes(r, ctx, &mut f, &suggested).await;
    }
    f.record(Some(text))
}

/// Evaluates the record for every sending address of this server.
async fn authorizes<R: Resolve>(r: &R, ctx: &Context<'_>, f: &mut Findings, suggested: &str) {
    for note in &ctx.sending_notes {
        f.warn(
            format!("sending addresses: {note}"),
            "Check delivery.relay, or list the addresses in delivery.sending_ips.",
        );
    }
    if ctx.sending_ips.is_empty() {
        if ctx.sending_notes.is_empty() {
            f.fact(
                "no sending addresses are configured (delivery.sending_ips), so whether SPF \
                 authorizes this server was not checked",
            );
        }
        return;
    }
    let verdicts = join_all(
        ctx.sending_ips.iter().map(|ip| spf::check_host(r, *ip, ctx.domain, ctx.helo)).collect(),
    )
    .await;
    let mut passing: Vec<String> = Vec::new();
    for (ip, verdict) in ctx.sending_ips.iter().zip(verdicts) {
        match verdict {
            Verdict::Pass => passing.push(ip.to_string()),
            Verdict::TempError => f.warn(
                format!("whether SPF authorizes {ip} could not be decided: a lookup failed"),
                "Check the nameservers of the domains the record names, then run again.",
            ),
            other => f.fail(
                format!("SPF does not authorize {ip}, an address this server sends from (result: {other})"),
                format!("Add {} to the record, as in \"{suggested}\".", term(*ip)),
            ),
        }
    }
    if !passing.is_empty() {
        f.fact(format!("authorizes {}", passing.join(", ")));
    }
}

fn term(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => format!("ip4:{v4}"),
        IpAddr::V6(v6) => format!("ip6:{v6}"),
    }
}

/// A record to publish: this server's addresses, or the domain's MX hosts.
fn suggestion(ctx: &Context<'_>) -> String {
    let mut terms = vec!["v=spf1".to_owned()];
    if ctx.hosted.is_some() && !ctx.sending_ips.is_empty() {
        terms.extend(ctx.sending_ips.iter().map(|ip| term(*ip)));
    } else {
        terms.push("mx".into());
    }
    terms.push("-all".into());
    terms.join(" ")
}
