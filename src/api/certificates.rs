//! `GET /v1/certificates`: the certificates the TLS listeners serve now, and where each comes
//! from. A domain-scoped key sees those naming its domain (or a name under it) and the
//! server's own (`smtp.hostname`, or the default certificate); an org-wide key sees all.

use serde::Serialize;

use crate::certs::{Info, Source};
use crate::error::{Error, Result};
use crate::http::{Ctx, Reply};

#[derive(Serialize)]
struct Certificate {
    #[serde(flatten)]
    info: Info,
    source: Source,
}

pub async fn list(ctx: Ctx) -> Result<Reply> {
    let principal = ctx.principal.as_ref().ok_or(Error::Unauthorized("missing API key"))?;
    let host = ctx.app.config.smtp.host();
    let own = |info: &Info, source: Source| match principal.domain.as_deref() {
        None => true,
        Some(domain) => {
            source != Source::Acme
                || info.names.iter().any(|n| {
                    n == host
                        || n == domain
                        || n.strip_suffix(domain).is_some_and(|p| p.ends_with('.'))
                })
        }
    };
    let served: Vec<Certificate> = ctx
        .app
        .certs
        .describe()
        .into_iter()
        .filter(|(info, source)| own(info, *source))
        .map(|(info, source)| Certificate { info, source })
        .collect();
    Reply::ok(&served)
}
