//! The shared state of a running server: the parts that HTTP handlers and the admin socket
//! reach through one handle. It is assembled from parts built elsewhere (`app` wires them) and
//! holds no life cycle of its own; engines get the narrow handles they use, not this.

use std::sync::Arc;

use bytes::Bytes;

use crate::auth::KeyTable;
use crate::config::Config;
use crate::dns::Dns;
use crate::mail::sign::Signers;
use crate::ratelimit::{ApiLimits, ToolLimits};
use crate::store::Store;
use crate::tracking::Tokens;
use crate::wake::Wake;

pub struct AppState {
    pub config: Arc<Config>,
    pub store: Arc<Store>,
    pub keys: KeyTable,
    pub dns: Arc<Dns>,
    /// Wakes the delivery queue's scheduler.
    pub queue: Wake,
    /// Wakes the sequence engine.
    pub sequences: Wake,
    pub tokens: Arc<Tokens>,
    pub signers: Arc<Signers>,
    pub tool_limits: ToolLimits,
    pub api_limits: ApiLimits,
    /// Where error objects point for reference.
    pub documentation_url: String,
    /// The OpenAPI document as JSON.
    pub openapi_json: Bytes,
}

pub type App = Arc<AppState>;

/// The parts the state is made of, built by the caller.
pub struct Parts {
    pub config: Arc<Config>,
    pub store: Arc<Store>,
    pub keys: KeyTable,
    pub dns: Arc<Dns>,
    pub queue: Wake,
    pub sequences: Wake,
    pub tokens: Arc<Tokens>,
    pub signers: Arc<Signers>,
    pub openapi_json: Bytes,
}

impl AppState {
    pub fn new(parts: Parts) -> App {
        let Parts { config, store, keys, dns, queue, sequences, tokens, signers, openapi_json } =
            parts;
        let tool_limits = ToolLimits::new(
            config.tools.rate_per_minute,
            config.tools.burst,
            config.http.trusted_proxies.clone(),
        );
        let api_limits = ApiLimits::new(config.api.rate_per_second, config.api.burst);
        let documentation_url = format!("{}/openapi.json", config.public_url());
        Arc::new(AppState {
            config,
            store,
            keys,
            dns,
            queue,
            sequences,
            tokens,
            signers,
            tool_limits,
            api_limits,
            documentation_url,
            openapi_json,
        })
    }
}
