//! Probes (liveness, readiness) and the API description.

/// The OpenAPI document, exactly as written.
pub const OPENAPI_YAML: &str = include_str!("../../schema/openapi.yaml");
/// The OpenAPI document as JSON (generated from the YAML by `build.rs`).
pub const OPENAPI_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.json"));

use bytes::Bytes;

use crate::error::Result;
use crate::http::{Ctx, Reply};

/// Liveness: the process serves requests. Nothing below HTTP is asked, so a full disk or a slow
/// store never gets the process restarted.
pub async fn health(_: Ctx) -> Result<Reply> {
    Ok(Reply::raw("application/json", Bytes::from_static(br#"{"status":"ok"}"#)))
}

/// Readiness: the store takes writes (and is not shutting down). While the disk is full or
/// failing the answer is the 503 a write would get.
pub async fn ready(ctx: Ctx) -> Result<Reply> {
    ctx.app.store.read(|r| r.ping()).await?;
    ctx.app.store.takes_writes()?;
    Ok(Reply::raw("application/json", Bytes::from_static(br#"{"status":"ok"}"#)))
}

/// The Prometheus exposition (the route's access checks `metrics.token`). The gauges that
/// describe the store are read now, for this scrape.
pub async fn metrics(ctx: Ctx) -> Result<Reply> {
    let now = crate::ids::now_ms();
    let (due, waiting, oldest) = ctx.app.store.read(move |r| r.queue_depth(now)).await?;
    let age = oldest.filter(|&at| at <= now).map_or(0, |at| now - at);
    crate::metrics::queue(due, waiting, std::time::Duration::from_millis(age));
    let text = crate::metrics::encode().map_err(crate::error::Error::internal)?;
    Ok(Reply::raw(crate::metrics::CONTENT_TYPE, Bytes::from(text)))
}

pub async fn openapi_json(ctx: Ctx) -> Result<Reply> {
    Ok(Reply::raw("application/json", ctx.app.openapi_json.clone()))
}

pub async fn openapi_yaml(_: Ctx) -> Result<Reply> {
    Ok(Reply::raw("application/yaml", Bytes::from_static(OPENAPI_YAML.as_bytes())))
}
