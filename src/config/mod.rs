//! Configuration: defaults, then a TOML file, then `EDGEMAIL_<SECTION>_<KEY>` variables, then
//! command-line flags; the later wins. Every key is known by name, so a typo is an error, and all
//! problems are reported together rather than one per start attempt.

mod acme;
mod cluster;
mod http;
mod inbound;
mod keys;
mod mail_keys;
mod mta_sts;
mod parse;
mod published;
mod reports;
mod shaping;
mod smtp;
#[cfg(test)]
mod tests;

pub use acme::Acme;
pub use cluster::Cluster;
pub use http::{Http, Tracking, Ui};
pub use inbound::{DEFAULT_DNSBL, DmarcReject, Inbound};
use keys::{KEYS, Setter};
pub use mta_sts::MtaSts;
pub use parse::{parse_duration, parse_size};
pub use published::{Autoconfig, PolicyMode, StsPolicy};
pub use reports::Reports;
pub use shaping::{DEFAULT_GROUP, Group, Shaping};
pub use smtp::{Mailbox, Smtp};

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    /// Memory for the data file's page cache (`storage.cache_size`). What was read or written
    /// stays resident up to this, so it bounds the server's memory as much as any limit here.
    pub cache_size: usize,
    /// The store and this node's place among the nodes sharing it.
    pub cluster: Cluster,
    pub http: Http,
    /// The dashboard's sessions (`ui.*`).
    pub ui: Ui,
    /// The tracking links' limits (`tracking.*`).
    pub tracking: Tracking,
    pub smtp: Smtp,
    /// What every mailbox gets unless it says otherwise.
    pub mailbox: Mailbox,
    pub submission: Submission,
    pub imap: Imap,
    pub managesieve: ManageSieve,
    pub delivery: Delivery,
    pub shaping: Shaping,
    pub mta_sts: MtaSts,
    /// Certificates over ACME (`acme.*`).
    pub acme: Acme,
    /// What mail clients are told (`autoconfig.*`).
    pub autoconfig: Autoconfig,
    /// DMARC aggregate reports we send (`reports.*`).
    pub reports: Reports,
    /// The MTA-STS policy hosted domains serve (`mta_sts.policy_*`, `mta_sts.max_age`).
    pub sts_policy: StsPolicy,
    /// What received mail is checked against (`inbound.*`).
    pub inbound: Inbound,
    pub tools: Tools,
    pub api: Api,
    pub health: Health,
    pub log: Log,
    pub warmup: Warmup,
    pub webhooks: Webhooks,
    pub metrics: Metrics,
    /// `testing.clock_offset`: how far the server's clock runs ahead (a testing aid).
    pub clock_offset: Duration,
}

#[derive(Debug, Clone, Default)]
pub struct Metrics {
    /// When set, `GET /metrics` needs `Authorization: Bearer <token>`.
    pub token: Option<String>,
}

#[derive(Debug, Clone)]
pub struct Webhooks {
    /// The wait before the first retry of a failed delivery; each retry doubles it.
    pub retry_initial: Duration,
    /// A delivery still failing this long after its event is `failed`.
    pub max_age: Duration,
    /// Post to endpoints at loopback, private, link-local or unspecified addresses. Off by
    /// default: a webhook URL is chosen by an API caller, and following it inward would let
    /// them reach the private network (checked again on every connection, after DNS).
    pub allow_private: bool,
    /// Deliveries in flight at once, over all endpoints, and to one endpoint.
    pub concurrency: usize,
    pub per_endpoint: usize,
}

#[derive(Debug, Clone)]
pub struct Warmup {
    /// How often the warmup engine looks for sends that are due.
    pub tick: Duration,
    /// The time over which a day's sends are spread (a send every `spread / dailyLimit`, with
    /// jitter).
    pub spread: Duration,
    /// Replies go out after a random delay up to this.
    pub reply_delay: Duration,
    /// Warmup messages (hidden from users) are deleted this long after they were sent or
    /// received.
    pub keep: Duration,
    /// Warmup addresses on other edgemail instances: partners to send to, and senders whose
    /// warmup mail is recognized. Lower-cased.
    pub peers: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Api {
    /// Sustained requests per second per API key, and the burst allowed on top.
    pub rate_per_second: u32,
    pub burst: u32,
}

#[derive(Debug, Clone)]
pub struct Health {
    /// DNS blacklists asked by the domain health check: `zone` for an IP list, `domain:zone` for
    /// a list of domain names.
    pub dnsbl_zones: Vec<String>,
}

#[derive(Debug, Clone)]
pub struct Tools {
    /// Sustained calls per minute per client IP, and the burst allowed on top.
    pub rate_per_minute: u32,
    pub burst: u32,
}

#[derive(Debug, Clone)]
pub struct Delivery {
    /// Send everything through this smarthost instead of the recipients' MX.
    pub relay: Option<String>,
    pub relay_username: Option<String>,
    pub relay_password: Option<String>,
    /// Send every DNS query to this server instead of the system's resolvers.
    pub nameserver: Option<SocketAddr>,
    /// The port of recipients' mail exchangers (25; tests point it at a local sink).
    pub port: u16,
    pub retry_initial: Duration,
    pub retry_max_interval: Duration,
    /// A message still undelivered this long after it was due is `failed`.
    pub max_age: Duration,
    /// Delivery attempts in flight at once.
    pub concurrency: usize,
    /// Connections at once to one destination domain.
    pub per_domain: usize,
    pub connect_timeout: Duration,
    pub command_timeout: Duration,
    pub dns_timeout: Duration,
    /// The public addresses this server's mail leaves from; SPF must authorize them.
    pub sending_ips: Vec<std::net::IpAddr>,
    /// Deliver to mail exchangers at loopback, private, link-local or other non-public
    /// addresses. Off by default: an MX record is chosen by whoever owns the recipient domain,
    /// and following it inward would let API callers probe the private network.
    pub allow_private: bool,
    /// PEM file of the CA certificates that may sign the relay's certificate (default: the
    /// system's trust store).
    pub relay_ca: Option<PathBuf>,
}

/// Mail clients sending through us (RFC 6409): the listeners, and how hard logins are guarded.
/// The session limits and the certificate are the SMTP listener's.
#[derive(Debug, Clone)]
pub struct Submission {
    /// Submission with STARTTLS (port 587 in production); off when absent.
    pub listen: Option<SocketAddr>,
    /// Submission over implicit TLS (RFC 8314, port 465 in production); off when absent.
    pub tls_listen: Option<SocketAddr>,
    /// Failed logins allowed per client address and mailbox (five times as many per address,
    /// whatever the mailbox) before its logins are refused; one more is allowed every minute.
    pub failed_logins: u32,
}

/// Mail clients reading mail (IMAP4rev2 and rev1): the listeners and the session limits. Logins
/// are the submission's (`submission.failed_logins`); the certificate is the SMTP listener's.
#[derive(Debug, Clone)]
pub struct Imap {
    /// IMAP with STARTTLS (port 143 in production); off when absent.
    pub listen: Option<SocketAddr>,
    /// IMAP over implicit TLS (port 993 in production); off when absent.
    pub tls_listen: Option<SocketAddr>,
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    /// How long a logged-in client may stay silent, IDLE included (RFC 9051: at least 30 min).
    pub idle_timeout: Duration,
    /// How long a client that has not logged in may stay silent.
    pub login_timeout: Duration,
    /// Bytes of literals all sessions together may hold while receiving them (`NO [LIMIT]`).
    pub max_inflight_bytes: usize,
    /// `login_timeout` while a listener holds 3/4 of `max_connections` or more.
    pub stress_timeout: Duration,
}

/// ManageSieve (RFC 5804) for mail clients managing a mailbox's Sieve scripts: the listener
/// (STARTTLS, the certificate the other TLS listeners serve; logins are the submission's).
#[derive(Debug, Clone, Default)]
pub struct ManageSieve {
    /// Off when absent (port 4190 in production).
    pub listen: Option<SocketAddr>,
}

#[derive(Debug, Clone)]
pub struct Log {
    /// A `tracing` filter such as `info` or `edgemail=debug,warn`.
    pub level: String,
    /// `text` (one human-readable line per event) or `json` (one JSON object per line).
    pub format: LogFormat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("./edgemail-data"),
            cache_size: DEFAULT_CACHE_SIZE,
            cluster: Cluster::default(),
            http: Http::default(),
            ui: Ui::default(),
            tracking: Tracking::default(),
            smtp: Smtp::default(),
            mailbox: Mailbox::default(),
            submission: Submission { listen: None, tls_listen: None, failed_logins: 10 },
            imap: Imap {
                listen: None,
                tls_listen: None,
                max_connections: 1000,
                max_connections_per_ip: 20,
                idle_timeout: Duration::from_secs(31 * 60),
                login_timeout: Duration::from_secs(60),
                max_inflight_bytes: 128 * 1024 * 1024,
                stress_timeout: Duration::from_secs(10),
            },
            managesieve: ManageSieve::default(),
            delivery: Delivery {
                relay: None,
                relay_username: None,
                relay_password: None,
                nameserver: None,
                port: 25,
                retry_initial: Duration::from_secs(5 * 60),
                retry_max_interval: Duration::from_secs(2 * 3600),
                max_age: Duration::from_secs(3 * 86_400),
                concurrency: 64,
                per_domain: 8,
                connect_timeout: Duration::from_secs(30),
                command_timeout: Duration::from_secs(120),
                dns_timeout: Duration::from_secs(5),
                sending_ips: Vec::new(),
                allow_private: false,
                relay_ca: None,
            },
            shaping: Shaping::default(),
            mta_sts: MtaSts::default(),
            acme: Acme::default(),
            autoconfig: Autoconfig::default(),
            reports: Reports::default(),
            sts_policy: StsPolicy::default(),
            inbound: Inbound::default(),
            tools: Tools { rate_per_minute: 30, burst: 10 },
            api: Api { rate_per_second: 2_000, burst: 4_000 },
            health: Health {
                dnsbl_zones: [
                    "zen.spamhaus.org",
                    "bl.spamcop.net",
                    "b.barracudacentral.org",
                    "dnsbl.sorbs.net",
                    "domain:dbl.spamhaus.org",
                ]
                .map(str::to_owned)
                .to_vec(),
            },
            log: Log { level: "info".into(), format: LogFormat::Text },
            metrics: Metrics::default(),
            clock_offset: Duration::ZERO,
            warmup: Warmup {
                tick: Duration::from_secs(60),
                spread: Duration::from_secs(86_400),
                reply_delay: Duration::from_secs(30 * 60),
                keep: Duration::from_secs(7 * 86_400),
                peers: Vec::new(),
            },
            webhooks: Webhooks {
                retry_initial: Duration::from_secs(5),
                max_age: Duration::from_secs(3 * 86_400),
                allow_private: false,
                concurrency: 256,
                per_endpoint: 32,
            },
        }
    }
}

impl Config {
    /// The public base URL without a trailing slash.
    pub fn public_url(&self) -> String {
        match &self.http.public_url {
            Some(url) => url.trim_end_matches('/').to_owned(),
            None => format!("http://{}", self.http.listen),
        }
    }
}

/// The default `storage.cache_size`; redb's own (1 GiB) would keep most of a busy server's
/// recent mail in memory.
pub const DEFAULT_CACHE_SIZE: usize = 64 * 1024 * 1024;

/// Every key: those of `keys.rs`, then those of the sections kept in their own files.
fn all_keys() -> impl Iterator<Item = &'static (&'static str, Setter)> {
    KEYS.iter()
        .chain(mail_keys::KEYS)
        .chain(acme::KEYS.iter())
        .chain(published::KEYS)
        .chain(reports::KEYS)
}

/// The environment variable of a key: `http.body_limit` -> `EDGEMAIL_HTTP_BODY_LIMIT`.
pub fn env_name(key: &str) -> String {
    format!("EDGEMAIL_{}", key.replace('.', "_").to_ascii_uppercase())
}

/// Variables a command reads itself, not configuration (`edgemail import --imap`'s password).
pub const COMMAND_VARIABLES: [&str; 1] = ["EDGEMAIL_IMPORT_PASSWORD"];

/// Builds the configuration. `flags` are `(key, value)` pairs from the command line.
pub fn load(
    file: Option<&Path>,
    env: impl IntoIterator<Item = (String, String)>,
    flags: &[(&'static str, String)],
) -> Result<Config, Vec<String>> {
    let mut config = Config::default();
    let mut problems = Vec::new();
    if let Some(path) = file {
        match std::fs::read_to_string(path) {
            Ok(text) => apply_file(&mut config, &text, &path.display().to_string(), &mut problems),
            Err(e) => problems.push(format!("{}: {e}", path.display())),
        }
    }
    for (name, value) in env {
        if !name.starts_with("EDGEMAIL_") || COMMAND_VARIABLES.contains(&name.as_str()) {
            continue;
        }
        match all_keys().find(|(key, _)| env_name(key) == name) {
            Some((key, set)) => apply(&mut config, key, *set, &value, &name, &mut problems),
            None => match Shaping::env_key(&name) {
                Some(key) => apply_group(&mut config, &key, &value, &name, &mut problems),
                None => problems.push(format!("{name}: not a configuration variable")),
            },
        }
    }
    for (key, value) in flags {
        if let Some((_, set)) = all_keys().find(|(k, _)| k == key) {
            apply(&mut config, key, *set, value, "the command line", &mut problems);
        }
    }
    if problems.is_empty() { Ok(config) } else { Err(problems) }
}

fn apply(c: &mut Config, key: &str, set: Setter, value: &str, origin: &str, out: &mut Vec<String>) {
    if let Err(e) = set(c, value.trim()) {
        out.push(format!("{key} = {value:?} (from {origin}): {e}"));
    }
}

/// A `shaping.<group>.<field>` key (the groups are not a fixed list).
fn apply_group(c: &mut Config, key: &str, value: &str, origin: &str, out: &mut Vec<String>) {
    match c.shaping.set(key, value.trim()) {
        Some(Ok(())) => {}
        Some(Err(e)) => out.push(format!("{key} = {value:?} (from {origin}): {e}")),
        None => out.push(format!("{origin}: unknown key {key}")),
    }
}

fn apply_file(config: &mut Config, text: &str, origin: &str, problems: &mut Vec<String>) {
    let table: toml::Table = match text.parse() {
        Ok(t) => t,
        Err(e) => {
            problems.push(format!("{origin}: {e}"));
            return;
        }
    };
    for (section, entries) in &table {
        let Some(entries) = entries.as_table() else {
            problems.push(format!("{origin}: `{section}` must be a [section]"));
            continue;
        };
        for (name, value) in entries {
            let key = format!("{section}.{name}");
            if let (Some(group), "shaping") = (value.as_table(), section.as_str()) {
                for (field, value) in group {
                    let key = format!("{key}.{field}");
                    match scalar(value) {
                        Some(text) => apply_group(config, &key, &text, origin, problems),
                        None => problems.push(format!("{origin}: {key} must be a scalar")),
                    }
                }
                continue;
            }
            let Some(text) = scalar(value) else {
                problems.push(format!("{origin}: {key} must be a string, number or boolean"));
                continue;
            };
            match all_keys().find(|(k, _)| *k == key) {
                Some((_, set)) => apply(config, &key, *set, &text, origin, problems),
                None => problems.push(format!("{origin}: unknown key {key}")),
            }
        }
    }
}

fn scalar(value: &toml::Value) -> Option<String> {
    match value {
        toml::Value::String(s) => Some(s.clone()),
        toml::Value::Integer(i) => Some(i.to_string()),
        toml::Value::Boolean(b) => Some(b.to_string()),
        toml::Value::Float(f) => Some(f.to_string()),
        _ => None,
    }
}
