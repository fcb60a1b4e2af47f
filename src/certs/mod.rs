//! The certificates every TLS listener serves (SMTP STARTTLS, submission, IMAP, ManageSieve,
//! HTTPS), from one table that can be replaced while they run: a listener's rustls
//! configuration holds a resolver over the table, so a renewed certificate is served by the next
//! handshake, without a restart.
//!
//! Sources, first wins: a configured certificate file (`smtp.tls_cert`/`smtp.tls_key`), then
//! certificates obtained over ACME (`acme.rs`, kept in the store), then the self-signed
//! certificate made on first start (`self_signed.rs`), the offline fallback.

mod acme;
mod challenge;
mod info;
mod self_signed;
mod shared;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use serde::Serialize;

use crate::config::Config;
use crate::error::{Error, Result};
use crate::store::Store;

pub use acme::{Role, run};
pub use challenge::serve_http_challenges;
pub use info::Info;

/// The ALPN protocol of TLS-ALPN-01 challenges (RFC 8737).
pub const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// Where a served certificate comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Source {
    Acme,
    File,
    SelfSigned,
}

/// One served certificate: the key rustls signs with, and what `GET /v1/certificates` says.
#[derive(Debug, Clone)]
pub struct Served {
    pub key: Arc<CertifiedKey>,
    pub info: Info,
    pub source: Source,
}

/// What the listeners serve now: certificates in the order they are tried for a name, and the
/// one served when no name matches (or the client sends none).
#[derive(Debug, Default)]
struct Table {
    served: Vec<Served>,
    default: Option<usize>,
}

/// The shared handle: the table, the challenges in flight, and what the listeners describe.
#[derive(Debug)]
pub struct Certs {
    table: RwLock<Arc<Table>>,
    /// TLS-ALPN-01: name -> the challenge certificate proving it (RFC 8737).
    alpn: Mutex<HashMap<String, Arc<CertifiedKey>>>,
    /// HTTP-01: token -> key authorization.
    tokens: Mutex<HashMap<String, String>>,
    /// The configured file or the self-signed fallback, set once by `load`.
    fixed: RwLock<Vec<Served>>,
    /// `smtp.hostname`: the name whose certificate is the default.
    host: String,
}

impl Certs {
    /// An empty table for `smtp.hostname`: nothing is served before `load`.
    pub fn new(host: &str) -> Arc<Certs> {
        Arc::new(Certs {
            table: RwLock::default(),
            alpn: Mutex::default(),
            tokens: Mutex::default(),
            fixed: RwLock::default(),
            host: host.to_owned(),
        })
    }

    /// Loads the configured file or the self-signed certificate (made and stored on first
    /// start), and the ACME certificates already in the store. Blocking: it reads the store.
    pub fn load(&self, config: &Config, store: &Store) -> Result<()> {
        let fixed = match (&config.smtp.tls_cert, &config.smtp.tls_key) {
            (Some(cert), Some(key)) => from_files(cert, key)?,
            _ => self_signed::load(config.smtp.host(), store)?,
        };
        *self.fixed.write().unwrap_or_else(|p| p.into_inner()) = vec![fixed];
        let stored = store.read_blocking(|r| r.certificates())?;
        self.install(stored.iter().filter_map(|(group, c)| shared::served(group, c)).collect());
        Ok(())
    }

    /// Whether a certificate file is configured (it wins over ACME, which then does not run).
    pub fn from_file(&self) -> bool {
        self.fixed().iter().any(|s| s.source == Source::File)
    }

    /// Replaces the ACME certificates served; the next handshake of every listener sees them.
    pub fn install(&self, acme: Vec<Served>) {
        let fixed = self.fixed();
        let mut served: Vec<Served> = Vec::new();
        served.extend(fixed.iter().filter(|s| s.source == Source::File).cloned());
        served.extend(acme);
        served.extend(fixed.iter().filter(|s| s.source == Source::SelfSigned).cloned());
        let host = self.host.as_str();
        // The default: the first source that names the host, else the first there is.
        let default = served.iter().position(|s| s.source == Source::File).or_else(|| {
            served.iter().position(|s| s.info.names.iter().any(|n| n == host)).or(Some(0))
        });
        let table = Arc::new(Table { served, default });
        *self.table.write().unwrap_or_else(|p| p.into_inner()) = table;
    }

    fn fixed(&self) -> Vec<Served> {
        self.fixed.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn current(&self) -> Arc<Table> {
        self.table.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The certificates the listeners serve now: each one a handshake can get, in the order
    /// they are tried (the self-signed one only while it is still the default or a name's).
    pub fn describe(&self) -> Vec<(Info, Source)> {
        let table = self.current();
        let mut out = Vec::new();
        for (at, s) in table.served.iter().enumerate() {
            let reachable = table.default == Some(at)
                || s.info.names.iter().any(|n| first_for(&table, n) == Some(at));
            if reachable {
                out.push((s.info.clone(), s.source));
            }
        }
        out
    }

    /// The certificate for `name` (exact, then a wildcard one level up), else the default.
    fn pick(&self, name: Option<&str>) -> Option<Arc<CertifiedKey>> {
        let table = self.current();
        let at = name.and_then(|n| first_for(&table, &n.to_ascii_lowercase())).or(table.default)?;
        table.served.get(at).map(|s| s.key.clone())
    }

    pub(crate) fn set_alpn_challenge(&self, name: &str, key: Option<Arc<CertifiedKey>>) {
        let mut alpn = self.alpn.lock().unwrap_or_else(|p| p.into_inner());
        match key {
            Some(key) => alpn.insert(name.to_owned(), key),
            None => alpn.remove(name),
        };
    }

    /// The challenge certificate of a TLS-ALPN-01 name in flight.
    pub(crate) fn alpn_challenge(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        self.alpn.lock().unwrap_or_else(|p| p.into_inner()).get(name).cloned()
    }

    pub(crate) fn set_token(&self, token: &str, authorization: Option<String>) {
        let mut tokens = self.tokens.lock().unwrap_or_else(|p| p.into_inner());
        match authorization {
            Some(a) => tokens.insert(token.to_owned(), a),
            None => tokens.remove(token),
        };
    }

    /// The key authorization of an HTTP-01 token in flight.
    pub(crate) fn token(&self, token: &str) -> Option<String> {
        self.tokens.lock().unwrap_or_else(|p| p.into_inner()).get(token).cloned()
    }

    /// A rustls configuration over this table for the mail listeners, resumable.
    pub fn server_config(self: &Arc<Self>) -> Result<Arc<ServerConfig>> {
        let resolver = Resolver { certs: self.clone(), challenges: false };
        let mut config =
            ServerConfig::builder().with_no_client_auth().with_cert_resolver(Arc::new(resolver));
        resumption(&mut config)?;
        Ok(Arc::new(config))
    }

    /// The HTTPS listener's configuration: HTTP/2 and HTTP/1.1 by ALPN, and TLS-ALPN-01. Its own
    /// ticket key, so a mail listener's ticket does not resume here.
    pub fn https_config(self: &Arc<Self>) -> Result<Arc<ServerConfig>> {
        let resolver = Resolver { certs: self.clone(), challenges: true };
        let mut config =
            ServerConfig::builder().with_no_client_auth().with_cert_resolver(Arc::new(resolver));
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec(), ACME_TLS_ALPN.to_vec()];
        resumption(&mut config)?;
        Ok(Arc::new(config))
    }
}

/// TLS 1.2 session IDs a configuration remembers, oldest forgotten first. An entry is a few
/// hundred bytes, so a full cache holds about a megabyte; clients with tickets do not use it.
pub const SESSION_IDS: usize = 4096;

/// Session resumption as every listener has it (and the bare reference of `benches/tls.sh`, so
/// the two are compared like for like). rustls' default remembers 256 sessions in memory, and
/// each TLS 1.3 handshake stores two tickets there: past about a hundred clients between two
/// visits, a returning client paid the full handshake (the certificate signature and a key
/// exchange) again. Tickets sealed by a key of this configuration (rotated every six hours by
/// rustls) cost the server no memory per client, in TLS 1.3 and 1.2 alike; the bounded cache
/// serves TLS 1.2 clients that resume by session ID only.
pub fn resumption(config: &mut ServerConfig) -> Result<()> {
    config.ticketer = rustls::crypto::ring::Ticketer::new()
        .map_err(|e| Error::internal(format!("TLS ticket key: {e}")))?;
    config.session_storage = rustls::server::ServerSessionMemoryCache::new(SESSION_IDS);
    Ok(())
}

/// The first certificate naming `name`, or a wildcard for its parent.
fn first_for(table: &Table, name: &str) -> Option<usize> {
    let wildcard = name.split_once('.').map(|(_, parent)| format!("*.{parent}"));
    let names = |s: &Served, n: &str| s.info.names.iter().any(|x| x.eq_ignore_ascii_case(n));
    table.served.iter().position(|s| names(s, name)).or_else(|| {
        let w = wildcard?;
        table.served.iter().position(|s| names(s, &w))
    })
}

/// Picks by SNI; on the HTTPS listener a client asking only for `acme-tls/1` (an ACME server
/// validating) gets the challenge certificate of the name, and nothing else.
#[derive(Debug)]
struct Resolver {
    certs: Arc<Certs>,
    challenges: bool,
}

impl ResolvesServerCert for Resolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        let name = hello.server_name().map(str::to_owned);
        let acme = hello.alpn().is_some_and(|mut p| p.any(|p| p == ACME_TLS_ALPN));
        if acme {
            if !self.challenges {
                return None;
            }
            return self.certs.alpn_challenge(&name?.to_ascii_lowercase());
        }
        self.certs.pick(name.as_deref())
    }
}

/// A served certificate from a PEM chain and key.
pub(crate) fn served_from_pem(chain: &[u8], key: &[u8], source: Source) -> Result<Served> {
    let certs = CertificateDer::pem_slice_iter(chain)
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(|e| Error::internal(format!("certificate: {e}")))?;
    let key =
        PrivateKeyDer::from_pem_slice(key).map_err(|e| Error::internal(format!("key: {e}")))?;
    served_from_der(certs, &key, source)
}

pub(crate) fn served_from_der(
    certs: Vec<CertificateDer<'static>>,
    key: &PrivateKeyDer<'_>,
    source: Source,
) -> Result<Served> {
    let leaf = certs.first().ok_or_else(|| Error::internal("an empty certificate chain"))?;
    let info = Info::read(leaf)?;
    let signing = rustls::crypto::ring::sign::any_supported_type(key)
        .map_err(|e| Error::internal(format!("TLS key: {e}")))?;
    Ok(Served { key: Arc::new(CertifiedKey::new(certs, signing)), info, source })
}

fn from_files(cert: &std::path::Path, key: &std::path::Path) -> Result<Served> {
    let read = |p: &std::path::Path| {
        std::fs::read(p).map_err(|e| Error::internal(format!("{}: {e}", p.display())))
    };
    served_from_pem(&read(cert)?, &read(key)?, Source::File)
        .map_err(|e| Error::internal(format!("{}: {e}", cert.display())))
}

#[cfg(test)]
mod tests;
