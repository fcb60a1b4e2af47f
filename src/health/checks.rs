//! The DKIM, DMARC and MX checks of a report.

use super::lookup::{Answer, Resolve};
use super::{Context, Findings, RecordCheck, RecordsCheck, join_all};

/// Selectors tried on a domain not hosted here, whose selectors we cannot know.
pub const COMMON_SELECTORS: &[&str] =
    &["default", "google", "selector1", "selector2", "k1", "mail", "dkim", "s1", "s2"];

const RETRY: &str = "Check that the domain's nameservers answer, then run the check again.";

/// `tag=value` pairs of a DKIM or DMARC record (RFC 6376 3.2); names keep their case.
pub fn tags(text: &str) -> Vec<(String, String)> {
    text.split(';')
        .filter_map(|part| part.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

fn tag<'a>(tags: &'a [(String, String)], name: &str) -> Option<&'a str> {
    tags.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

/// A DKIM key record's public key, or why the record is not a usable key.
pub fn dkim_key(text: &str) -> Result<String, String> {
    let tags = tags(text);
    if let Some(v) = tag(&tags, "v")
        && v != "DKIM1"
    {
        return Err(format!("v={v} is not DKIM1"));
    }
    if let Some(k) = tag(&tags, "k")
        && !matches!(k, "rsa" | "ed25519")
    {
        return Err(format!("unknown key type k={k}"));
    }
    let p: String = tag(&tags, "p").ok_or("no p= tag")?.split_whitespace().collect();
    if p.is_empty() {
        return Err("p= is empty: the key is revoked".into());
    }
    if !p.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')) {
        return Err("p= is not base64".into());
    }
    Ok(p)
}

/// A DKIM record among the TXT answers at a selector name.
fn published_key(answer: Answer<Vec<String>>) -> Answer<Result<String, String>> {
    match answer {
        Answer::Found(texts) => {
            let keys: Vec<Result<String, String>> = texts.iter().map(|t| dkim_key(t)).collect();
            let best = keys.iter().position(Result::is_ok).unwrap_or(0);
            match keys.into_iter().nth(best) {
                Some(k) => Answer::Found(k),
                None => Answer::Nothing,
            }
        }
        Answer::Nothing => Answer::Nothing,
        Answer::Failed(e) => Answer::Failed(e),
    }
}

pub async fn dkim<R: Resolve>(r: &R, ctx: &Context<'_>) -> RecordsCheck {
    let domain = ctx.domain;
    let mut f = Findings::default();
    let mut found = Vec::new();
    let Some(hosted) = ctx.hosted else {
        let names: Vec<String> =
            COMMON_SELECTORS.iter().map(|s| format!("{s}._domainkey.{domain}")).collect();
        let answers = join_all(names.iter().map(|n| r.txt(n)).collect()).await;
        let mut failed = 0;
        for (selector, answer) in COMMON_SELECTORS.iter().zip(answers) {
            match published_key(answer) {
                Answer::Found(Ok(_)) => found.push((*selector).to_owned()),
                Answer::Failed(_) => failed += 1,
                _ => {}
            }
        }
        if found.is_empty() {
            let tried = COMMON_SELECTORS.join(", ");
            let why =
                if failed > 0 { format!(" ({failed} lookups failed)") } else { String::new() };
            f.warn(
                format!(
                    "no DKIM key found at the common selectors {tried}{why}; the domain may use \
                     another selector"
                ),
                format!(
                    "Sign outgoing mail with DKIM and publish the key as TXT \
                     <selector>._domainkey.{domain} \"v=DKIM1; k=rsa; p=<public key>\"."
                ),
            );
        } else {
            f.fact(format!("DKIM keys published at selector {}", found.join(", ")));
        }
        return f.records(found);
    };
    if hosted.dkim.is_empty() {
        f.fail(format!("{domain} has no DKIM keys here"), "Remove and add the domain again.");
        return f.records(found);
    }
    let names: Vec<String> =
        hosted.dkim.iter().map(|k| format!("{}._domainkey.{domain}", k.selector)).collect();
    let answers = join_all(names.iter().map(|n| r.txt(n)).collect()).await;
    for ((key, name), answer) in hosted.dkim.iter().zip(&names).zip(answers) {
        let kind = if key.algorithm.starts_with("ed25519") { "ed25519" } else { "rsa" };
        let publish = format!(
            "Publish TXT {name} \"v=DKIM1; k={kind}; p={}\" (as printed by `edgemail domain add`).",
            key.public_key
        );
        match published_key(answer) {
            Answer::Found(Ok(p)) if p == key.public_key => {
                found.push(key.selector.clone());
            }
            Answer::Found(Ok(_)) => f.fail(
                format!("{name} publishes a different {kind} key than this server signs with"),
                publish,
            ),
            Answer::Found(Err(why)) => f.fail(format!("{name}: {why}"), publish),
            Answer::Nothing => f.fail(format!("{name} is not published"), publish),
            Answer::Failed(e) => f.warn(format!("could not look up {name}: {e}"), RETRY),
        }
    }
    if !found.is_empty() {
        f.fact(format!("published and matching: selector {}", found.join(", ")));
    }
    f.records(found)
}

pub async fn dmarc<R: Resolve>(r: &R, ctx: &Context<'_>) -> RecordCheck {
    let name = format!("_dmarc.{}", ctx.domain);
    let mut f = Findings::default();
    // A domain hosted here reads its reports itself (`dmarc-reports@`, see `reporting`).
    let rua = if ctx.hosted.is_some() { "dmarc-reports" } else { "dmarc" };
    let publish = format!(
        "Publish TXT {name} \"v=DMARC1; p=quarantine; rua=mailto:{rua}@{}\", then move to \
         p=reject once the reports show your mail passes.",
        ctx.domain
    );
    let records: Vec<String> = match r.txt(&name).await {
        Answer::Found(texts) => texts.into_iter().filter(|t| is_dmarc(t)).collect(),
        Answer::Nothing => Vec::new(),
        Answer::Failed(e) => {
            f.warn(format!("could not look up DMARC: {e}"), RETRY);
            return f.record(None);
        }
    };
    let text = match records.as_slice() {
        [] => {
            f.fail(format!("no DMARC record at {name}"), publish);
            return f.record(None);
        }
        [one] => one.clone(),
        many => {
            f.fail(
                format!("{} DMARC records at {name}; receivers then apply none", many.len()),
                "Keep exactly one TXT record starting v=DMARC1.",
            );
            return f.record(None);
        }
    };
    let tags = tags(&text);
    let policy = |name: &str| tag(&tags, name).map(str::to_ascii_lowercase);
    match policy("p").as_deref() {
        Some("reject") | Some("quarantine") => {}
        Some("none") => f.warn(
            "p=none only monitors: spoofed mail is still delivered",
            "Move to p=quarantine, then p=reject, once the aggregate reports (rua) show that your \
             own mail passes.",
        ),
        Some(other) => {
            f.fail(format!("p={other} is not none, quarantine or reject"), publish.clone())
        }
        None => f.fail("the record has no p= policy", publish.clone()),
    }
    if let Some(sp) = policy("sp")
        && !matches!(sp.as_str(), "none" | "quarantine" | "reject")
    {
        f.fail(format!("sp={sp} is not none, quarantine or reject"), "Fix the sp= tag.");
    }
    for name in ["adkim", "aspf"] {
        if let Some(v) = policy(name)
            && !matches!(v.as_str(), "r" | "s")
        {
            f.fail(format!("{name}={v} is not r or s"), format!("Set {name}=r or {name}=s."));
        }
    }
    let pct = tag(&tags, "pct");
    if let Some(pct) = pct
        && !pct.parse::<u8>().is_ok_and(|n| n <= 100)
    {
        f.fail(format!("pct={pct} is not 0 to 100"), "Fix or remove the pct= tag.");
    }
    let mut summary = vec![format!("p={}", policy("p").unwrap_or_default())];
    for name in ["sp", "adkim", "aspf", "pct"] {
        if let Some(v) = tag(&tags, name) {
            summary.push(format!("{name}={v}"));
        }
    }
    f.fact(format!("policy {}", summary.join(" ")));
    match tag(&tags, "rua") {
        Some(rua) if !rua.is_empty() => f.fact(format!("aggregate reports go to {rua}")),
        _ => f.fact("no rua: nobody receives aggregate reports"),
    }
    f.record(Some(text))
}

fn is_dmarc(text: &str) -> bool {
    let first = text.split(';').next().unwrap_or("");
    matches!(first.split_once('='), Some((k, v)) if k.trim() == "v" && v.trim() == "DMARC1")
}

pub async fn mx<R: Resolve>(r: &R, ctx: &Context<'_>) -> RecordsCheck {
    let domain = ctx.domain;
    let mut f = Findings::default();
    let ours = ctx.hosted.and(ctx.hostname);
    let target = ours.map_or_else(|| format!("mail.{domain}"), str::to_owned);
    let publish = format!("Publish MX {domain} 10 {target}.");
    let mut hosts = match r.mx(domain).await {
        Answer::Found(hosts) => hosts,
        Answer::Nothing => {
            f.fail(
                format!("{domain} has no MX records: replies and bounces cannot reach it"),
                publish,
            );
            return f.records(Vec::new());
        }
        Answer::Failed(e) => {
            f.warn(format!("could not look up MX: {e}"), RETRY);
            return f.records(Vec::new());
        }
    };
    hosts.sort();
    let records: Vec<String> = hosts
        .iter()
        .map(|(p, h)| if h.is_empty() { format!("{p} .") } else { format!("{p} {h}") })
        .collect();
    let names: Vec<&str> =
        hosts.iter().map(|(_, h)| h.as_str()).filter(|h| !h.is_empty()).collect();
    if names.is_empty() {
        f.fail(
            format!(
                "{domain} publishes a null MX: it accepts no mail, so replies and bounces are lost"
            ),
            publish,
        );
        return f.records(records);
    }
    match ours {
        Some(hostname) if names.iter().any(|h| h.eq_ignore_ascii_case(hostname)) => {
            f.fact(format!("mail is received by this server ({hostname})"));
        }
        Some(hostname) => {
            // The most preferred hosts only, as the blacklist check: the DNS is the domain's.
            let names = &names[..names.len().min(super::dnsbl::MAX_MX_HOSTS)];
            let v4 = join_all(names.iter().map(|h| r.addrs(h, false)).collect());
            let v6 = join_all(names.iter().map(|h| r.addrs(h, true)).collect());
            let (v4, v6) = tokio::join!(v4, v6);
            let here = v4.into_iter().chain(v6).any(|a| match a {
                Answer::Found(ips) => ips.iter().any(|ip| ctx.sending_ips.contains(ip)),
                _ => false,
            });
            if here {
                f.fact("an MX host resolves to an address of this server");
            } else {
                f.warn(
                    format!(
                        "no MX host is this server ({hostname}): mail to the domain's mailboxes, \
                         replies and bounces go elsewhere"
                    ),
                    publish,
                );
            }
        }
        None => f.fact(format!("mail is received by {}", names.join(", "))),
    }
    f.records(records)
}
