//! Certificates and HTTPS (`acme.*`, `http.tls_listen`): the ACME directory certificates are
//! ordered from, and the listeners that answer its challenges and serve HTTPS.

use std::path::PathBuf;
use std::time::Duration;

use super::keys::Setter;
use super::parse::*;

#[derive(Debug, Clone)]
pub struct Acme {
    /// The ACME directory URL; certificates are ordered only when it is set.
    pub directory: Option<String>,
    /// The account's contact address (`mailto:`), when given.
    pub email: Option<String>,
    /// PEM CA certificate trusted for the directory's own HTTPS (a private or test CA).
    pub ca_file: Option<PathBuf>,
    /// The names to order; empty means `smtp.hostname` and each hosted domain's `mail.`,
    /// `autoconfig.` and `mta-sts.` names.
    pub names: Vec<String>,
    /// The plain HTTP listener answering HTTP-01 challenges (`--http-challenge`).
    pub http_challenge_listen: Option<std::net::SocketAddr>,
    /// The wait after a failed order; each failure in a row doubles it, up to `retry_max`.
    pub retry_initial: Duration,
    pub retry_max: Duration,
}

impl Default for Acme {
    fn default() -> Self {
        Acme {
            directory: None,
            email: None,
            ca_file: None,
            names: Vec::new(),
            http_challenge_listen: None,
            retry_initial: Duration::from_secs(60),
            retry_max: Duration::from_secs(6 * 3600),
        }
    }
}

/// The keys of this section, beside those of `keys.rs`.
pub(super) const KEYS: &[(&str, Setter)] = &[
    ("acme.directory", |c, v| {
        if !(v.starts_with("https://") || v.starts_with("http://")) {
            return Err(
                "expected a URL such as https://acme-v02.api.letsencrypt.org/directory".into()
            );
        }
        c.acme.directory = Some(v.to_owned());
        Ok(())
    }),
    ("acme.email", |c, v| {
        c.acme.email = (!v.is_empty()).then(|| v.trim_start_matches("mailto:").to_owned());
        Ok(())
    }),
    ("acme.ca_file", |c, v| {
        c.acme.ca_file = (!v.is_empty()).then(|| PathBuf::from(v));
        Ok(())
    }),
    ("acme.names", |c, v| {
        let names: Result<Vec<String>, String> = list(v)
            .map(|n| crate::address::normalize_domain(n).map_err(|e| format!("{n:?}: {e}")))
            .collect();
        c.acme.names = names?;
        if c.acme.names.len() > 100 {
            return Err("at most 100 names (one certificate holds them all)".into());
        }
        Ok(())
    }),
    ("acme.http_challenge_listen", |c, v| {
        c.acme.http_challenge_listen = Some(parse_addr(v)?);
        Ok(())
    }),
    ("acme.retry_initial", |c, v| {
        c.acme.retry_initial = parse_duration(v)?;
        Ok(())
    }),
    ("acme.retry_max", |c, v| {
        c.acme.retry_max = parse_duration(v)?;
        Ok(())
    }),
    ("http.tls_listen", |c, v| {
        c.http.tls_listen = Some(parse_addr(v)?);
        Ok(())
    }),
];
