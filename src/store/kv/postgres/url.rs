//! The store URL. libpq's TLS parameters (`sslmode` with its `verify-ca` and `verify-full`,
//! `sslrootcert`, `sslcert`, `sslkey`) are taken off it here: tokio-postgres knows only three
//! modes and refuses parameters it does not know, so it parses the rest, with `sslmode` told as
//! much as it needs (whether to ask for TLS, and whether to insist). What those parameters mean
//! follows libpq's documentation, so a URL that works with `psql` works here alike.

use super::super::super::error::{Error, Result};
use super::tls::{Check, Roots, Settings};

const HINT: &str = "use postgres://user@host/db, with sslmode=disable|prefer|require|verify-ca|\
    verify-full and sslrootcert=/path/ca.pem (or sslrootcert=system) for TLS";

/// A parsed store URL.
pub struct Target {
    pub config: tokio_postgres::Config,
    pub tls: Settings,
    /// The hosts and ports, for errors: the URL itself may hold a password.
    pub hosts: String,
}

/// Parses `url`; its errors never repeat the URL (it may hold a password).
pub fn parse(url: &str) -> Result<Target> {
    let (rest, tls) = split(url).map_err(|e| Error::invalid(format!("store URL: {e}"), HINT))?;
    let config: tokio_postgres::Config =
        rest.parse().map_err(|e| Error::invalid(format!("store URL: {}", whole(&e)), HINT))?;
    let hosts = hosts(&config);
    Ok(Target { config, tls, hosts })
}

fn hosts(config: &tokio_postgres::Config) -> String {
    let ports = config.get_ports();
    let port = |i: usize| ports.get(i).or(ports.first()).copied().unwrap_or(5432);
    let names: Vec<String> = config
        .get_hosts()
        .iter()
        .enumerate()
        .map(|(i, host)| match host {
            tokio_postgres::config::Host::Tcp(name) => format!("{name}:{}", port(i)),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    if names.is_empty() { "the default host".to_owned() } else { names.join(",") }
}

/// The whole text of a connection's failure.
pub fn failure(hosts: &str, e: &tokio_postgres::Error) -> String {
    format!("cannot connect to PostgreSQL at {hosts}: {}", whole(e))
}

/// tokio-postgres' own text of an error names only its kind ("error performing TLS
/// handshake", "invalid connection string"): the reason is in its sources.
fn whole(e: &tokio_postgres::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = std::error::Error::source(cause);
    }
    text
}

/// `url` without our parameters (and with `sslmode` as tokio-postgres reads it), and the TLS
/// settings they make.
fn split(url: &str) -> std::result::Result<(String, Settings), String> {
    let (base, query) = url.split_once('?').unwrap_or((url, ""));
    let (mut mode, mut root, mut cert, mut key) = (None, None, None, None);
    let mut kept: Vec<&str> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let slot = match name {
            "sslmode" => &mut mode,
            "sslrootcert" => &mut root,
            "sslcert" => &mut cert,
            "sslkey" => &mut key,
            _ => {
                kept.push(pair);
                continue;
            }
        };
        *slot = Some(decode(value).ok_or_else(|| format!("{name}: a bad %-escape"))?);
    }
    let roots = root.map(|r| if r == "system" { Roots::System } else { Roots::File(r) });
    let (passed, check) = mode_and_check(mode.as_deref(), roots.as_ref())?;
    let client = match (cert, key) {
        (Some(cert), Some(key)) => Some((cert, key)),
        (None, None) => None,
        _ => return Err("sslcert and sslkey go together".into()),
    };
    kept.push(passed);
    let url = format!("{base}?{}", kept.join("&"));
    let roots = if check == Check::Nothing { None } else { roots };
    Ok((url, Settings { check, roots, client }))
}

/// What tokio-postgres is told, and what we check of the server's certificate.
fn mode_and_check(
    mode: Option<&str>,
    roots: Option<&Roots>,
) -> std::result::Result<(&'static str, Check), String> {
    // libpq: the system roots make verify-full the default, and refuse weaker modes (any
    // publicly trusted certificate would pass them).
    let system = roots == Some(&Roots::System);
    let mode = mode.unwrap_or(if system { "verify-full" } else { "prefer" });
    if system && mode != "verify-full" && mode != "disable" {
        return Err(format!("sslrootcert=system needs sslmode=verify-full, not {mode}"));
    }
    // libpq: with a root certificate, require (and prefer) check the chain as verify-ca does.
    let chain = if roots.is_some() { Check::Chain } else { Check::Nothing };
    match mode {
        "disable" => Ok(("sslmode=disable", Check::Nothing)),
        "prefer" => Ok(("sslmode=prefer", chain)),
        "require" => Ok(("sslmode=require", chain)),
        "verify-ca" | "verify-full" if roots.is_none() => Err(format!(
            "sslmode={mode} needs sslrootcert=FILE (the CA that issued the server's certificate) \
             or sslrootcert=system"
        )),
        "verify-ca" => Ok(("sslmode=require", Check::Chain)),
        "verify-full" => Ok(("sslmode=require", Check::Full)),
        other => Err(format!(
            "sslmode={other} is not one of disable, prefer, require, verify-ca, verify-full"
        )),
    }
}

/// A URL parameter's value with its %-escapes decoded (a path may hold any byte).
fn decode(value: &str) -> Option<String> {
    let bytes = value.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(url: &str) -> (String, Settings) {
        split(url).expect("a URL we take") // ok: test
    }

    #[test]
    fn our_parameters_are_taken_off_and_the_rest_kept() {
        let (url, tls) = ok("postgres://u:pw@db.internal/x?application_name=a&sslmode=verify-full\
            &sslrootcert=/etc/ca%20file.pem&connect_timeout=5");
        assert_eq!(
            url,
            "postgres://u:pw@db.internal/x?application_name=a&connect_timeout=5&sslmode=require"
        );
        assert_eq!(tls.check, Check::Full);
        assert_eq!(tls.roots, Some(Roots::File("/etc/ca file.pem".into())));
        assert_eq!(tls.client, None);
    }

    #[test]
    fn the_modes_check_as_libpq_does() {
        let check = |url: &str| ok(url).1.check;
        assert_eq!(ok("postgres://h/x").0, "postgres://h/x?sslmode=prefer");
        assert_eq!(check("postgres://h/x"), Check::Nothing);
        assert_eq!(check("postgres://h/x?sslmode=require"), Check::Nothing);
        assert_eq!(check("postgres://h/x?sslmode=require&sslrootcert=ca.pem"), Check::Chain);
        assert_eq!(check("postgres://h/x?sslmode=verify-ca&sslrootcert=ca.pem"), Check::Chain);
        assert_eq!(check("postgres://h/x?sslrootcert=system"), Check::Full);
        assert_eq!(ok("postgres://h/x?sslmode=disable&sslrootcert=ca.pem").1.roots, None);
    }

    #[test]
    fn what_libpq_refuses_is_refused() {
        for url in [
            "postgres://h/x?sslmode=verify-full",
            "postgres://h/x?sslmode=verify-ca",
            "postgres://h/x?sslmode=require&sslrootcert=system",
            "postgres://h/x?sslmode=allow",
            "postgres://h/x?sslcert=c.pem",
            "postgres://h/x?sslrootcert=%zz",
        ] {
            assert!(split(url).is_err(), "{url}");
        }
    }

    #[test]
    fn errors_name_the_hosts_and_not_the_password() {
        let target = parse("postgres://u:secret@db.internal:6432/x?sslmode=require").expect("URL"); // ok: test
        assert_eq!(target.hosts, "db.internal:6432");
        let Err(e) = parse("postgres://u:secret@h/x?sslmode=verify-full") else {
            panic!("verify-full without a root certificate") // ok: test
        };
        assert!(!e.to_string().contains("secret"), "{e}");
    }
}
