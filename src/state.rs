//! The shared state of a running server: the parts that HTTP handlers and the admin socket
//! reach through one handle. `app` assembles it from parts it built (nothing here reaches for
//! them) and it holds no life cycle of its own; engines get the narrow handles they use, not this.

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
    /// The spam classifier's models, shared with the MX (which classifies) and IMAP (which
    /// trains, as the API does).
    pub junk: crate::junk::Models,
    /// The certificates the TLS listeners serve now (`GET /v1/certificates`).
    pub certs: Arc<crate::certs::Certs>,
    /// The ports the mail client listeners bound, set once they are (autoconfig names them).
    pub bound: std::sync::OnceLock<crate::hosting::Bound>,
}

pub type App = Arc<AppState>;
