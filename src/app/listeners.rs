//! Binding what the configuration asks for, before anything is served: every listener (so
//! callers and tests choose addresses, port 0 included) and the admin socket.

use tokio::net::{TcpListener, UnixListener};

use crate::config::Config;
use crate::error::{Error, Result};

/// Bound sockets, so callers (and tests) choose addresses, including port 0.
pub struct Listeners {
    pub http: TcpListener,
    pub smtp: TcpListener,
    /// Submission with STARTTLS, when configured.
    pub submission: Option<TcpListener>,
    /// Submission over implicit TLS, when configured.
    pub submissions: Option<TcpListener>,
    /// IMAP with STARTTLS, when configured.
    pub imap: Option<TcpListener>,
    /// IMAP over implicit TLS, when configured.
    pub imaps: Option<TcpListener>,
    /// ManageSieve with STARTTLS, when configured.
    pub managesieve: Option<TcpListener>,
    /// The HTTP routes over TLS (`--https`), when configured.
    pub https: Option<TcpListener>,
    /// ACME's HTTP-01 answers (`--http-challenge`), when configured.
    pub http_challenge: Option<TcpListener>,
    pub admin: UnixListener,
}

impl Listeners {
    /// The start line's listener list: `http=ADDR smtp=ADDR`, then each optional listener that
    /// runs (scripts and tests read it, so port 0 can be used).
    pub fn describe(&self) -> std::io::Result<String> {
        let mut out = format!("http={} smtp={}", self.http.local_addr()?, self.smtp.local_addr()?);
        let optional = [
            ("submission", &self.submission),
            ("submissions", &self.submissions),
            ("imap", &self.imap),
            ("imaps", &self.imaps),
            ("managesieve", &self.managesieve),
            ("https", &self.https),
            ("http-challenge", &self.http_challenge),
        ];
        for (name, listener) in optional {
            if let Some(l) = listener {
                out.push_str(&format!(" {name}={}", l.local_addr()?));
            }
        }
        Ok(out)
    }

    /// The ports of the mail client listeners that run (what autoconfig names).
    pub fn bound(&self) -> crate::hosting::Bound {
        let port = |l: &Option<TcpListener>| {
            l.as_ref().and_then(|l| l.local_addr().ok()).map(|a| a.port())
        };
        crate::hosting::Bound {
            imap: port(&self.imap),
            imaps: port(&self.imaps),
            submission: port(&self.submission),
            submissions: port(&self.submissions),
        }
    }
}

async fn bind_tcp(addr: std::net::SocketAddr) -> Result<TcpListener> {
    TcpListener::bind(addr)
        .await
        .map_err(|e| Error::Unavailable(format!("cannot listen on {addr}: {e}")))
}

/// Binds what `config` asks for. The admin socket is replaced if a stale one is left over: the
/// store's file lock, already held, proves no other server uses this directory.
pub async fn bind(config: &Config) -> Result<Listeners> {
    let http = bind_tcp(config.http.listen).await?;
    let smtp = bind_tcp(config.smtp.listen).await?;
    let submission = match config.submission.listen {
        Some(addr) => Some(bind_tcp(addr).await?),
        None => None,
    };
    let submissions = match config.submission.tls_listen {
        Some(addr) => Some(bind_tcp(addr).await?),
        None => None,
    };
    let imap = match config.imap.listen {
        Some(addr) => Some(bind_tcp(addr).await?),
        None => None,
    };
    let imaps = match config.imap.tls_listen {
        Some(addr) => Some(bind_tcp(addr).await?),
        None => None,
    };
    let managesieve = match config.managesieve.listen {
        Some(addr) => Some(bind_tcp(addr).await?),
        None => None,
    };
    let https = match config.http.tls_listen {
        Some(addr) => Some(bind_tcp(addr).await?),
        None => None,
    };
    let http_challenge = match config.acme.http_challenge_listen {
        Some(addr) => Some(bind_tcp(addr).await?),
        None => None,
    };
    let path = crate::admin::socket_path(&config.data_dir);
    let _ = std::fs::remove_file(&path);
    let admin = UnixListener::bind(&path).map_err(|e| {
        Error::Unavailable(format!("cannot create the admin socket {}: {e}", path.display()))
    })?;
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(Listeners {
        http,
        smtp,
        submission,
        submissions,
        imap,
        imaps,
        managesieve,
        https,
        http_challenge,
        admin,
    })
}
