//! The documents mail clients and other mail servers fetch from us without a key: Thunderbird's
//! autoconfig, Microsoft's Autodiscover and the MTA-STS policy of a hosted domain; and, with the
//! domain's key, a mailbox's Apple configuration profile. Each answers for hosted domains only
//! (404 otherwise), so the server tells nothing about names it does not serve.

use bytes::Bytes;
use hyper::header::{CONTENT_DISPOSITION, HOST};

use crate::error::{Error, Result};
use crate::hosting::{Bound, Endpoints, autoconfig, sts};
use crate::http::{Ctx, Reply};

/// What clients are told now: the listeners bound by this process (or, before they are, the
/// configured ones).
fn endpoints(ctx: &Ctx, domain: &str) -> Endpoints {
    let config = &ctx.app.config;
    let bound = ctx.app.bound.get().copied().unwrap_or_else(|| Bound::configured(config));
    Endpoints::new(config, bound, domain)
}

/// `domain` (A-labels) when it is hosted here; 404 otherwise.
async fn hosted(ctx: &Ctx, domain: String) -> Result<String> {
    if domain.is_empty() || domain.len() > 253 {
        return Err(Error::not_found("domain"));
    }
    let name = domain.clone();
    let found = ctx.app.store.read(move |r| r.hosts(&name)).await?;
    if found { Ok(domain) } else { Err(Error::not_found("domain")) }
}

/// The Host header's name without its port, lower-cased.
fn host_name(ctx: &Ctx) -> String {
    let host = ctx.headers.get(HOST).and_then(|v| v.to_str().ok()).unwrap_or("");
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// `GET /mail/config-v1.1.xml` and `/.well-known/autoconfig/mail/config-v1.1.xml`: the domain of
/// `?emailaddress=`, else of the Host header (`autoconfig.<domain>`).
pub async fn thunderbird(ctx: Ctx) -> Result<Reply> {
    let domain = match ctx.query_value("emailaddress") {
        Some(address) if address.contains('@') => crate::address::domain_key(&address),
        Some(_) => return Err(Error::invalid("emailaddress is not an address", "user@domain")),
        None => {
            let host = host_name(&ctx);
            host.strip_prefix("autoconfig.").unwrap_or(&host).to_owned()
        }
    };
    let domain = hosted(&ctx, domain).await?;
    let doc = autoconfig::thunderbird(&domain, &endpoints(&ctx, &domain));
    Ok(Reply::raw("application/xml", Bytes::from(doc)))
}

/// `POST /autodiscover/autodiscover.xml`: Microsoft's POX Autodiscover for a hosted address.
pub async fn autodiscover(ctx: Ctx) -> Result<Reply> {
    let address = autoconfig::autodiscover_address(&ctx.body).map_err(|e| {
        Error::invalid(format!("autodiscover request: {e}"), "a POX request with EMailAddress")
    })?;
    let domain = hosted(&ctx, crate::address::domain_key(&address)).await?;
    let local = address.rsplit_once('@').map_or("", |(l, _)| l);
    let address = format!("{local}@{domain}");
    let doc = autoconfig::autodiscover(&address, &endpoints(&ctx, &domain));
    Ok(Reply::raw("application/xml", Bytes::from(doc)))
}

/// `GET /v1/mailboxes/{address}/mobileconfig`: a profile for a mailbox of the key's domain.
pub async fn mobileconfig(ctx: Ctx) -> Result<Reply> {
    let domain = ctx.domain()?.to_owned();
    let local = super::mailboxes::local_part_of(ctx.param("address"), &domain)?;
    let (d, l) = (domain.clone(), local.clone());
    let found = ctx.app.store.read(move |r| r.mailbox(&d, &l)).await?;
    if found.is_none() {
        return Err(Error::not_found("mailbox"));
    }
    let address = format!("{local}@{domain}");
    // Without both an IMAP and a submission listener there is no account to configure.
    let doc = autoconfig::mobileconfig(&address, &endpoints(&ctx, &domain))
        .ok_or_else(|| Error::not_found("mail client listener"))?;
    let mut reply = Reply::raw(autoconfig::MOBILECONFIG_TYPE, Bytes::from(doc));
    let name = format!("{local}@{domain}.mobileconfig");
    reply.headers.push((CONTENT_DISPOSITION, crate::api::downloads::disposition(&name)));
    Ok(reply)
}

/// `GET /.well-known/mta-sts.txt` with `Host: mta-sts.<domain>`: that domain's policy.
pub async fn mta_sts(ctx: Ctx) -> Result<Reply> {
    let host = host_name(&ctx);
    let domain = sts::domain_of_host(&host).ok_or_else(|| Error::not_found("policy"))?;
    let domain = hosted(&ctx, domain).await?;
    let text = sts::policy_text(&domain, &ctx.app.config);
    Ok(Reply::raw("text/plain", Bytes::from(text)))
}
