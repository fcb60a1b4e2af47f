//! The HTTP listener (`http.*`), the dashboard's sessions (`ui.*`) and the tracking links'
//! limits (`tracking.*`): the settings of the web side, with their defaults.

use std::net::SocketAddr;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Http {
    pub listen: SocketAddr,
    /// The same routes over TLS (HTTP/1.1 and HTTP/2), when set (`--https`).
    pub tls_listen: Option<SocketAddr>,
    /// Base of links we hand out (documentation, later tracking); defaults to `http://<listen>`.
    pub public_url: Option<String>,
    pub body_limit: usize,
    /// The body limit of a request that carries no valid key or dashboard session (the login
    /// form, the public tools, tracking links): anyone can send those, so they stay small.
    pub anonymous_body_limit: usize,
    /// Request body bytes all connections together may hold in memory; a body that would pass
    /// it is refused with 503 (the budget comes back as requests finish).
    pub max_buffered_bytes: usize,
    pub header_timeout: Duration,
    pub keep_alive: bool,
    pub max_connections: usize,
    /// Open connections per client address (peers in `trusted_proxies` are exempt).
    pub max_connections_per_ip: usize,
    /// How long a request body may take to arrive, in total.
    pub body_timeout: Duration,
    pub shutdown_grace: Duration,
    /// Peers whose `X-Forwarded-For` names the real client (a reverse proxy in front of us).
    pub trusted_proxies: Vec<std::net::IpAddr>,
}

impl Default for Http {
    fn default() -> Self {
        Http {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            tls_listen: None,
            public_url: None,
            body_limit: 1024 * 1024,
            // 100 addresses of the longest kind for validate-emails fit, with room to spare.
            anonymous_body_limit: 32 * 1024,
            max_buffered_bytes: 256 * 1024 * 1024,
            header_timeout: Duration::from_secs(10),
            keep_alive: true,
            max_connections: 10_000,
            max_connections_per_ip: 256,
            body_timeout: Duration::from_secs(30),
            shutdown_grace: Duration::from_secs(10),
            trusted_proxies: Vec::new(),
        }
    }
}

/// Dashboard sessions, kept in memory (`ui::session`).
#[derive(Debug, Clone)]
pub struct Ui {
    /// Sessions of the whole process; past it the oldest session of the key holding the most
    /// goes first.
    pub max_sessions: usize,
    /// Sessions of one API key; its next login ends its own oldest session.
    pub sessions_per_key: usize,
}

impl Default for Ui {
    fn default() -> Self {
        Ui { max_sessions: 10_000, sessions_per_key: 50 }
    }
}

/// The open pixel, click redirects and unsubscribe links (`api::tracking`).
#[derive(Debug, Clone)]
pub struct Tracking {
    /// Hits counted per client address and minute, with a burst on top; past them a pixel or
    /// a redirect is still answered, but not counted, and an unsubscribe post gets 429.
    pub rate_per_minute: u32,
    pub burst: u32,
}

impl Default for Tracking {
    fn default() -> Self {
        Tracking { rate_per_minute: 600, burst: 300 }
    }
}
