//! The server's life cycle, and nothing else: build the state and the engines from their parts,
//! bind, serve, drain, close. Every engine gets the narrow handles it uses.

use std::sync::Arc;

use tokio::net::TcpListener;

use crate::auth::KeyTable;
use crate::config::Config;
use crate::dns::Dns;
use crate::error::{Error, Result};
use crate::http::Router;
use crate::mail::sign::Signers;
use crate::queue::Queue;
use crate::ratelimit::{ApiLimits, ToolLimits};
use crate::shutdown::Shutdown;
use crate::smtp::server::Endpoint;
use crate::state::{App, AppState};
use crate::store::Store;
use crate::tracking::Tokens;
use crate::wake::Wake;

mod listeners;
pub use listeners::{Listeners, bind};

pub use crate::api::meta::{OPENAPI_JSON, OPENAPI_YAML};

/// A server ready to run: the shared state, the route table and the engines' handles.
pub struct Server {
    pub state: App,
    router: Router,
    queue: Arc<crate::queue::Deps>,
    sequences: Arc<crate::sequences::Deps>,
    warmup: Arc<crate::warmup::Deps>,
    webhooks: Arc<crate::webhooks::Deps>,
    node: Arc<crate::cluster::Node>,
}

impl Server {
    /// Builds everything from the configuration and the opened store.
    pub fn new(config: Config, store: Store) -> Result<Server> {
        let config = Arc::new(config);
        let store = Arc::new(store);
        let keys = KeyTable::default();
        keys.reload(&store)?;
        let router = Router::new(routes()).map_err(Error::internal)?;
        crate::metrics::http_routes(router.routes().iter().map(|r| r.path));
        let dns = Arc::new(Dns::new(config.delivery.nameserver, config.delivery.dns_timeout)?);
        let tokens = Arc::new(Tokens::new(&store.read_blocking(|r| r.secret("tracking"))?));
        let signers = Arc::new(Signers::default());
        let (queue_wake, sequences_wake) = (Wake::default(), Wake::default());
        let node = crate::cluster::Node::new(&config.cluster, store.is_shared());
        let queue = Arc::new(crate::queue::Deps {
            store: store.clone(),
            queue: Arc::new(Queue::new(&config, dns.clone(), queue_wake.clone())),
            dns: dns.clone(),
            tokens: tokens.clone(),
            signers: signers.clone(),
            delivery: config.delivery.clone(),
            public_url: config.public_url(),
            grace: config.http.shutdown_grace,
            node: node.clone(),
            sequences: sequences_wake.clone(),
        });
        let sequences = Arc::new(crate::sequences::Deps {
            store: store.clone(),
            queue: queue_wake.clone(),
            wake: sequences_wake.clone(),
            node: node.clone(),
        });
        let warmup = Arc::new(crate::warmup::Deps {
            store: store.clone(),
            queue: queue_wake.clone(),
            config: config.warmup.clone(),
            node: node.clone(),
        });
        let webhooks = Arc::new(crate::webhooks::Deps {
            store: store.clone(),
            dns: dns.clone(),
            config: config.webhooks.clone(),
            wake: store.events(),
            node: node.clone(),
        });
        let certs = crate::certs::Certs::new(config.smtp.host());
        let state = Arc::new(AppState {
            tool_limits: ToolLimits::new(
                config.tools.rate_per_minute,
                config.tools.burst,
                config.http.trusted_proxies.clone(),
            ),
            api_limits: ApiLimits::new(config.api.rate_per_second, config.api.burst),
            documentation_url: format!("{}/openapi.json", config.public_url()),
            openapi_json: bytes::Bytes::from_static(OPENAPI_JSON.as_bytes()),
            config,
            store,
            keys,
            dns,
            queue: queue_wake,
            sequences: sequences_wake,
            tokens,
            signers,
            junk: crate::junk::Models::new(),
            certs,
            bound: std::sync::OnceLock::new(),
        });
        Ok(Server { state, router, queue, sequences, warmup, webhooks, node })
    }
}

/// Every route the HTTP listener answers: the REST API (documented in `schema/openapi.yaml`)
/// and the dashboard's HTML pages under `/` and `/ui/` (not part of the API document).
pub fn routes() -> Vec<crate::http::Route> {
    let mut routes = crate::api::routes();
    routes.extend(crate::ui::routes());
    routes
}

/// The inbound path behind the MX, with the claims of reports and warmup on received mail.
fn receiver(app: &App) -> crate::inbound::Receiver {
    let mut receiver = crate::inbound::Receiver::new(
        app.store.as_ref().clone(),
        app.tokens.as_ref().clone(),
        app.dns.clone(),
        &app.config.smtp,
    );
    receiver.set_quota_default(app.config.mailbox.quota_bytes);
    receiver.set_queue(app.queue.clone());
    receiver.set_filter(&app.config.inbound, app.junk.clone());
    receiver.set_dmarc_reports(app.config.reports.dmarc_period());
    receiver.register(Box::new(crate::reporting::Reports::new(app.store.as_ref().clone())));
    receiver.register(Box::new(crate::warmup::receive::Arrivals::new(
        app.store.as_ref().clone(),
        app.queue.clone(),
        &app.config.warmup,
    )));
    receiver
}

/// Starts the submission listeners that are configured, with the mail system behind them.
fn serve_submission(
    app: &App,
    logins: Arc<crate::credentials::Logins>,
    listeners: [(Option<TcpListener>, Endpoint); 2],
    tls: Option<tokio_rustls::TlsAcceptor>,
    shutdown: &Shutdown,
) -> Vec<tokio::task::JoinHandle<()>> {
    let submitter = Arc::new(crate::submission::Submitter {
        store: app.store.clone(),
        dns: app.dns.clone(),
        queue: app.queue.clone(),
        logins,
    });
    let running =
        listeners.into_iter().filter_map(|(listener, endpoint)| Some((listener?, endpoint)));
    running
        .map(|(listener, endpoint)| {
            tokio::spawn(crate::smtp::server::serve(
                listener,
                endpoint,
                app.config.smtp.clone(),
                tls.clone(),
                shutdown.clone(),
                submitter.clone(),
            ))
        })
        .collect()
}

/// Starts the IMAP listeners that are configured: `[STARTTLS, implicit TLS]`.
fn serve_imap(
    app: &App,
    logins: Arc<crate::credentials::Logins>,
    listeners: [Option<TcpListener>; 2],
    tls: &Option<tokio_rustls::TlsAcceptor>,
    shutdown: &Shutdown,
) -> Vec<tokio::task::JoinHandle<()>> {
    let deps = Arc::new(crate::imap::Deps {
        store: app.store.clone(),
        logins,
        config: app.config.imap.clone(),
        inflight: crate::imap::budget(app.config.imap.max_inflight_bytes),
        quota_bytes: app.config.mailbox.quota_bytes,
        junk: app.junk.clone(),
        watch: Default::default(),
    });
    let [plain, implicit] = listeners;
    [(plain, false), (implicit, true)]
        .into_iter()
        .filter_map(|(listener, implicit)| Some((listener?, implicit)))
        .map(|(listener, implicit)| {
            let serve =
                crate::imap::serve(listener, implicit, deps.clone(), tls.clone(), shutdown.clone());
            tokio::spawn(serve)
        })
        .collect()
}

/// Loads the certificates, then starts what depends on them: the HTTPS listener, the HTTP-01
/// listener and the ACME engine. Answers the mail listeners' acceptor (`None`, with a warning,
/// when no certificate loads: STARTTLS is then not offered) and the tasks started.
async fn serve_certificates(
    app: &App,
    router: &Arc<Router>,
    [https, challenges]: [Option<TcpListener>; 2],
    (node, shutdown): (&Arc<crate::cluster::Node>, &Shutdown),
) -> Result<(Option<tokio_rustls::TlsAcceptor>, Vec<tokio::task::JoinHandle<()>>)> {
    let loaded = {
        let state = app.clone();
        tokio::task::spawn_blocking(move || state.certs.load(&state.config, &state.store))
            .await
            .map_err(Error::internal)?
    };
    if let Err(e) = loaded {
        tracing::warn!(error = %e, "STARTTLS disabled");
        return Ok((None, Vec::new()));
    }
    let certs = app.certs.clone();
    let mut tasks = Vec::new();
    let https_port = https.as_ref().and_then(|l| l.local_addr().ok()).map(|a| a.port());
    if let Some(listener) = https {
        let (app, router, config) = (app.clone(), router.clone(), certs.https_config()?);
        let serve = crate::http::server::serve_tls(listener, app, router, shutdown.clone(), config);
        tasks.push(tokio::spawn(serve));
    }
    if let Some(listener) = challenges {
        let serve = crate::certs::serve_http_challenges(
            listener,
            certs.clone(),
            https_port,
            shutdown.clone(),
        );
        tasks.push(tokio::spawn(serve));
    }
    let (store, config) = (app.store.clone(), app.config.clone());
    let leader = node.clone();
    let role =
        crate::certs::Role { shared: node.is_shared(), leads: Box::new(move || leader.leads()) };
    let acme = crate::certs::run(certs.clone(), store, config, role, shutdown.clone());
    tasks.push(tokio::spawn(acme));
    Ok((Some(tokio_rustls::TlsAcceptor::from(certs.server_config()?)), tasks))
}

/// Serves until `shutdown` fires, then drains HTTP, stops the admin socket and closes the store.
pub async fn run(server: Server, listeners: Listeners, shutdown: Shutdown) -> Result<()> {
    let Server { state: app, router, queue, sequences, warmup, webhooks, node } = server;
    let router = Arc::new(router);
    node.join(&app.store).await?;
    let _ = app.bound.set(listeners.bound());
    let cluster = {
        let reloading = app.clone();
        let keys_changed = move || {
            let app = reloading.clone();
            tokio::task::spawn_blocking(move || {
                if let Err(e) = app.keys.reload(&app.store) {
                    tracing::warn!(error = %e, "API keys not reloaded");
                }
            });
        };
        // A signer holds a domain's parsed keys; each use checks them against the stored ones,
        // so dropping all on a change only frees those of removed or re-keyed domains.
        let signers = app.signers.clone();
        let domains_changed = move || signers.forget();
        let run =
            node.clone().run(app.store.clone(), keys_changed, domains_changed, shutdown.clone());
        tokio::spawn(run)
    };
    let admin_path =
        listeners.admin.local_addr().ok().and_then(|a| a.as_pathname().map(|p| p.to_path_buf()));
    let admin =
        tokio::spawn(crate::admin::serve_socket(listeners.admin, app.clone(), shutdown.clone()));
    // One receiving side for our MX and for mail the queue hands to mailboxes of this server.
    let inbound = Arc::new(receiver(&app));
    queue.queue.register_local(inbound.clone());
    let queue = tokio::spawn(crate::queue::run(queue, shutdown.clone()));
    let sequences = tokio::spawn(crate::sequences::run(sequences, shutdown.clone()));
    let warmup = tokio::spawn(crate::warmup::run(warmup, shutdown.clone()));
    let webhooks = tokio::spawn(crate::webhooks::run(webhooks, shutdown.clone()));
    let reports = app.config.reports.dmarc_period().map(|interval| {
        let deps = crate::reporting::outgoing::Deps {
            store: app.store.as_ref().clone(),
            dns: app.dns.clone(),
            queue: app.queue.clone(),
            node: node.clone(),
            interval,
        };
        tokio::spawn(crate::reporting::outgoing::run(deps, shutdown.clone()))
    });
    let logins = Arc::new(crate::credentials::Logins::new(
        app.store.clone(),
        app.config.submission.failed_logins,
    ));
    let tidy = {
        let (app, logins) = (app.clone(), logins.clone());
        tokio::spawn(async move {
            let mut every = tokio::time::interval(std::time::Duration::from_secs(60));
            loop {
                every.tick().await;
                app.tool_limits.tidy();
                app.api_limits.tidy();
                logins.tidy();
            }
        })
    };
    let (tls, secured) = serve_certificates(
        &app,
        &router,
        [listeners.https, listeners.http_challenge],
        (&node, &shutdown),
    )
    .await?;
    let smtp = tokio::spawn(crate::smtp::server::serve(
        listeners.smtp,
        Endpoint::MX,
        app.config.smtp.clone(),
        tls.clone(),
        shutdown.clone(),
        inbound,
    ));
    let submitted = [
        (listeners.submission, Endpoint::SUBMISSION),
        (listeners.submissions, Endpoint::SUBMISSIONS),
    ];
    let imap = serve_imap(&app, logins.clone(), [listeners.imap, listeners.imaps], &tls, &shutdown);
    let managesieve = listeners.managesieve.map(|listener| {
        let deps =
            Arc::new(crate::managesieve::Deps { store: app.store.clone(), logins: logins.clone() });
        tokio::spawn(crate::managesieve::serve(listener, deps, tls.clone(), shutdown.clone()))
    });
    let submission = serve_submission(&app, logins, submitted, tls, &shutdown);
    crate::http::server::serve(listeners.http, app.clone(), router, shutdown).await;
    for task in secured {
        let _ = task.await;
    }
    let _ = admin.await;
    let _ = smtp.await;
    for listener in submission.into_iter().chain(imap).chain(managesieve) {
        let _ = listener.await;
    }
    // Attempts in flight commit their outcomes before the store closes.
    let _ = queue.await;
    let _ = sequences.await;
    let _ = warmup.await;
    let _ = webhooks.await;
    if let Some(reports) = reports {
        let _ = reports.await;
    }
    let _ = cluster.await;
    if let Err(e) = node.leave(&app.store).await {
        tracing::warn!(error = %e, "leaving the nodes: the others take over after the lease");
    }
    tidy.abort();
    if let Some(path) = admin_path {
        let _ = std::fs::remove_file(path);
    }
    let store = app.store.clone();
    tokio::task::spawn_blocking(move || store.close()).await.map_err(Error::internal)?;
    tracing::info!("store closed");
    Ok(())
}
