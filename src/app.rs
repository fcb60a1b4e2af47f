//! Shared state and the server's life cycle: open, listen, announce, serve, drain, close.

use std::sync::Arc;

use bytes::Bytes;
use tokio::net::{TcpListener, UnixListener};

use crate::auth::KeyTable;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::http::Router;
use crate::shutdown::Shutdown;
use crate::store::Store;

pub struct AppState {
    pub config: Config,
    pub store: Store,
    pub keys: KeyTable,
    pub router: Router,
    pub dns: Arc<crate::dns::Dns>,
    pub queue: crate::queue::Queue,
    pub sequences: crate::sequences::Engine,
    pub tokens: crate::tracking::Tokens,
    pub signers: crate::mail::sign::Signers,
    pub tool_limits: crate::ratelimit::ToolLimits,
    pub api_limits: crate::ratelimit::ApiLimits,
    /// Where error objects point for reference.
    pub documentation_url: String,
    /// The OpenAPI document as JSON, converted from `schema/openapi.yaml` at build time.
    pub openapi_json: Bytes,
}

pub type App = Arc<AppState>;

/// The OpenAPI document, exactly as written.
pub const OPENAPI_YAML: &str = include_str!("../schema/openapi.yaml");
/// The OpenAPI document as JSON (generated from the YAML by `build.rs`).
pub const OPENAPI_JSON: &str = include_str!(concat!(env!("OUT_DIR"), "/openapi.json"));

impl AppState {
    pub fn new(config: Config, store: Store) -> Result<App> {
        let keys = KeyTable::default();
        keys.reload(&store)?;
        let router = Router::new(crate::api::routes()).map_err(Error::internal)?;
        let documentation_url = format!("{}/openapi.json", config.public_url());
        let dns = Arc::new(crate::dns::Dns::new(
            config.delivery.nameserver,
            config.delivery.dns_timeout,
        )?);
        let tokens = crate::tracking::Tokens::new(&store.read_blocking(|r| r.secret("tracking"))?);
        let queue = crate::queue::Queue::new(&config);
        let (config_tools, config_proxies) =
            (config.tools.clone(), config.http.trusted_proxies.clone());
        let api_limits =
            crate::ratelimit::ApiLimits::new(config.api.rate_per_second, config.api.burst);
        Ok(Arc::new(AppState {
            config,
            store,
            keys,
            router,
            dns,
            queue,
            sequences: crate::sequences::Engine::default(),
            tokens,
            signers: crate::mail::sign::Signers::default(),
            tool_limits: crate::ratelimit::ToolLimits::new(
                config_tools.rate_per_minute,
                config_tools.burst,
                config_proxies,
            ),
            api_limits,
            documentation_url,
            openapi_json: Bytes::from_static(OPENAPI_JSON.as_bytes()),
        }))
    }
}

/// The inbound path behind the MX, with warmup's claim on received mail.
fn receiver(app: &App) -> crate::inbound::Receiver {
    let mut receiver = crate::inbound::Receiver::new(
        app.store.clone(),
        app.tokens.clone(),
        app.dns.clone(),
        &app.config.smtp,
    );
    receiver.register(Box::new(crate::warmup::receive::Arrivals::new(
        app.store.clone(),
        app.queue.waker(),
        &app.config.warmup,
    )));
    receiver
}

/// Bound sockets, so callers (and tests) choose addresses, including port 0.
pub struct Listeners {
    pub http: TcpListener,
    pub smtp: TcpListener,
    pub admin: UnixListener,
}

/// Binds what `config` asks for. The admin socket is replaced if a stale one is left over: the
/// store's file lock, already held, proves no other server uses this directory.
pub async fn bind(config: &Config) -> Result<Listeners> {
    let http = TcpListener::bind(config.http.listen)
        .await
        .map_err(|e| Error::Unavailable(format!("cannot listen on {}: {e}", config.http.listen)))?;
    let smtp = TcpListener::bind(config.smtp.listen)
        .await
        .map_err(|e| Error::Unavailable(format!("cannot listen on {}: {e}", config.smtp.listen)))?;
    let path = crate::admin::socket_path(&config.data_dir);
    let _ = std::fs::remove_file(&path);
    let admin = UnixListener::bind(&path).map_err(|e| {
        Error::Unavailable(format!("cannot create the admin socket {}: {e}", path.display()))
    })?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(Listeners { http, smtp, admin })
}

/// Serves until `shutdown` fires, then drains HTTP, stops the admin socket and closes the store.
pub async fn run(app: App, listeners: Listeners, shutdown: Shutdown) -> Result<()> {
    let admin_path =
        listeners.admin.local_addr().ok().and_then(|a| a.as_pathname().map(|p| p.to_path_buf()));
    let admin =
        tokio::spawn(crate::admin::serve_socket(listeners.admin, app.clone(), shutdown.clone()));
    let queue = tokio::spawn(crate::queue::run(app.clone(), shutdown.clone()));
    let sequences = tokio::spawn(crate::sequences::run(app.clone(), shutdown.clone()));
    let warmup = tokio::spawn(crate::warmup::run(app.clone(), shutdown.clone()));
    let tidy = {
        let app = app.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
            loop {
                every.tick().await;
                app.tool_limits.tidy();
                app.api_limits.tidy();
            }
        })
    };
    let tls = {
        let state = app.clone();
        tokio::task::spawn_blocking(move || {
            crate::smtp::tls::acceptor(&state.config.smtp, &state.store)
        })
        .await
        .map_err(Error::internal)?
    };
    let tls = tls.map_err(|e| tracing::warn!(error = %e, "STARTTLS disabled")).ok();
    let smtp = tokio::spawn(crate::smtp::server::serve(
        listeners.smtp,
        app.config.smtp.clone(),
        tls,
        shutdown.clone(),
        Arc::new(receiver(&app)),
    ));
    crate::http::server::serve(listeners.http, app.clone(), shutdown).await;
    let _ = admin.await;
    let _ = smtp.await;
    // Attempts in flight commit their outcomes before the store closes.
    let _ = queue.await;
    let _ = sequences.await;
    let _ = warmup.await;
    tidy.abort();
    if let Some(path) = admin_path {
        let _ = std::fs::remove_file(path);
    }
    let store_app = app.clone();
    tokio::task::spawn_blocking(move || store_app.store.close()).await.map_err(Error::internal)?;
    tracing::info!("store closed");
    Ok(())
}
