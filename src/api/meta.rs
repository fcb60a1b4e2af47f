//! Health and the API description.

/// The OpenAPI document, exactly as written.
pub const OPENAPI_YAML: &str = include_str!("../../schema/openapi.yaml");
/// The OpenAPI document as JSON (generated from the YAML by `build.rs`).
pub const OPENAPI_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.json"));

use bytes::Bytes;

use crate::error::{Error, Result};
use crate::http::{Ctx, Reply};

/// Healthy means the store answers a read, not merely that the process is up.
pub async fn health(ctx: Ctx) -> Result<Reply> {
    ctx.app
        .store
        .read(|r| r.ping())
        .await
        .map_err(|e| Error::Unavailable(format!("store unavailable: {e}")))?;
    Reply::ok(&serde_json::json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") }))
}

pub async fn openapi_json(ctx: Ctx) -> Result<Reply> {
    Ok(Reply::raw("application/json", ctx.app.openapi_json.clone()))
}

pub async fn openapi_yaml(_: Ctx) -> Result<Reply> {
    Ok(Reply::raw("application/yaml", Bytes::from_static(OPENAPI_YAML.as_bytes())))
}
