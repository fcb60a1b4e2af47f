//! Configuration: defaults, then a TOML file, then `EDGEMAIL_<SECTION>_<KEY>` variables, then
//! command-line flags; the later wins. Every key is known by name, so a typo is an error, and all
//! problems are reported together rather than one per start attempt.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Config {
    pub data_dir: PathBuf,
    /// Memory for the data file's page cache (`storage.cache_size`). What was read or written
    /// stays resident up to this, so it bounds the server's memory as much as any limit here.
    pub cache_size: usize,
    pub http: Http,
    pub smtp: Smtp,
    pub delivery: Delivery,
    pub tools: Tools,
    pub api: Api,
    pub health: Health,
    pub log: Log,
    pub warmup: Warmup,
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

#[derive(Debug, Clone)]
pub struct Http {
    pub listen: SocketAddr,
    /// Base of links we hand out (documentation, later tracking); defaults to `http://<listen>`.
    pub public_url: Option<String>,
    pub body_limit: usize,
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

#[derive(Debug, Clone)]
pub struct Smtp {
    /// The inbound listener (this server is the MX of its domains).
    pub listen: SocketAddr,
    /// The name this server answers to as a mail exchanger; MX records point at it.
    pub hostname: Option<String>,
    pub max_message_size: usize,
    pub max_recipients: usize,
    pub max_connections: usize,
    pub max_connections_per_ip: usize,
    /// RFC 5321 4.5.3.2: at least 5 minutes for a command, 10 for the end of DATA.
    pub command_timeout: Duration,
    pub data_timeout: Duration,
    /// Bad commands tolerated before the connection is closed.
    pub max_errors: usize,
    /// Bytes of message data all sessions together may hold in memory while receiving; a
    /// message that would pass it is refused with a temporary error.
    pub max_inflight_bytes: usize,
    /// The pause before answering a refused recipient, from the third one in a session on: it
    /// slows down address harvesting.
    pub error_delay: Duration,
    /// Domains whose authenticated feedback reports (ARF) are trusted even when the report's
    /// From domain is another one (feedback-loop services that sign with their own domain).
    pub feedback_senders: Vec<String>,
    /// PEM certificate chain and key for STARTTLS; a self-signed pair is made when absent.
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
}

impl Smtp {
    /// The host name used in greetings and headers.
    pub fn host(&self) -> &str {
        self.hostname.as_deref().unwrap_or("localhost")
    }
}

#[derive(Debug, Clone)]
pub struct Log {
    /// A `tracing` filter such as `info` or `edgemail=debug,warn`.
    pub level: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            data_dir: PathBuf::from("./edgemail-data"),
            cache_size: DEFAULT_CACHE_SIZE,
            http: Http {
                listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
                public_url: None,
                body_limit: 1024 * 1024,
                header_timeout: Duration::from_secs(10),
                keep_alive: true,
                max_connections: 10_000,
                max_connections_per_ip: 256,
                body_timeout: Duration::from_secs(30),
                shutdown_grace: Duration::from_secs(10),
                trusted_proxies: Vec::new(),
            },
            smtp: Smtp {
                listen: SocketAddr::from(([127, 0, 0, 1], 2525)),
                hostname: None,
                max_message_size: 25 * 1024 * 1024,
                max_recipients: 100,
                max_connections: 1000,
                max_connections_per_ip: 20,
                command_timeout: Duration::from_secs(300),
                data_timeout: Duration::from_secs(600),
                max_errors: 10,
                max_inflight_bytes: 256 * 1024 * 1024,
                error_delay: Duration::from_secs(1),
                feedback_senders: Vec::new(),
                tls_cert: None,
                tls_key: None,
            },
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
            log: Log { level: "info".into() },
            warmup: Warmup {
                tick: Duration::from_secs(60),
                spread: Duration::from_secs(86_400),
                reply_delay: Duration::from_secs(30 * 60),
                keep: Duration::from_secs(7 * 86_400),
                peers: Vec::new(),
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

type Setter = fn(&mut Config, &str) -> Result<(), String>;

/// Every key, as `section.key`, with the function that parses and sets it.
const KEYS: &[(&str, Setter)] = &[
    ("storage.data_dir", |c, v| {
        c.data_dir = PathBuf::from(v);
        Ok(())
    }),
    ("storage.cache_size", |c, v| {
        c.cache_size = parse_size(v)?;
        Ok(())
    }),
    ("http.listen", |c, v| {
        c.http.listen = parse_addr(v)?;
        Ok(())
    }),
    ("http.public_url", |c, v| {
        if !(v.starts_with("http://") || v.starts_with("https://")) {
            return Err("expected a URL starting with http:// or https://".into());
        }
        c.http.public_url = Some(v.to_owned());
        Ok(())
    }),
    ("http.body_limit", |c, v| {
        c.http.body_limit = parse_size(v)?;
        Ok(())
    }),
    ("http.header_timeout", |c, v| {
        c.http.header_timeout = parse_duration(v)?;
        Ok(())
    }),
    ("http.keep_alive", |c, v| {
        c.http.keep_alive = parse_bool(v)?;
        Ok(())
    }),
    ("http.max_connections", |c, v| {
        c.http.max_connections = positive(v)?;
        Ok(())
    }),
    ("http.max_connections_per_ip", |c, v| {
        c.http.max_connections_per_ip = positive(v)?;
        Ok(())
    }),
    ("http.body_timeout", |c, v| {
        c.http.body_timeout = parse_duration(v)?;
        Ok(())
    }),
    ("http.shutdown_grace", |c, v| {
        c.http.shutdown_grace = parse_duration(v)?;
        Ok(())
    }),
    ("smtp.listen", |c, v| {
        c.smtp.listen = parse_addr(v)?;
        Ok(())
    }),
    ("smtp.max_message_size", |c, v| {
        c.smtp.max_message_size = parse_size(v)?;
        Ok(())
    }),
    ("smtp.max_recipients", |c, v| {
        c.smtp.max_recipients = positive(v)?;
        Ok(())
    }),
    ("smtp.max_connections", |c, v| {
        c.smtp.max_connections = positive(v)?;
        Ok(())
    }),
    ("smtp.max_connections_per_ip", |c, v| {
        c.smtp.max_connections_per_ip = positive(v)?;
        Ok(())
    }),
    ("smtp.command_timeout", |c, v| {
        c.smtp.command_timeout = parse_duration(v)?;
        Ok(())
    }),
    ("smtp.data_timeout", |c, v| {
        c.smtp.data_timeout = parse_duration(v)?;
        Ok(())
    }),
    ("smtp.max_errors", |c, v| {
        c.smtp.max_errors = positive(v)?;
        Ok(())
    }),
    ("smtp.max_inflight_bytes", |c, v| {
        c.smtp.max_inflight_bytes = parse_size(v)?;
        Ok(())
    }),
    ("smtp.error_delay", |c, v| {
        c.smtp.error_delay = parse_duration(v)?;
        Ok(())
    }),
    ("smtp.feedback_senders", |c, v| {
        c.smtp.feedback_senders = list(v)
            .map(|d| crate::address::normalize_domain(d).map_err(|e| format!("{d:?}: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(())
    }),
    ("smtp.tls_cert", |c, v| {
        c.smtp.tls_cert = Some(PathBuf::from(v));
        Ok(())
    }),
    ("smtp.tls_key", |c, v| {
        c.smtp.tls_key = Some(PathBuf::from(v));
        Ok(())
    }),
    ("smtp.hostname", |c, v| {
        c.smtp.hostname = Some(crate::address::normalize_domain(v)?);
        Ok(())
    }),
    ("delivery.relay", |c, v| {
        let (host, port) = v.rsplit_once(':').ok_or("expected HOST:PORT")?;
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err("expected HOST:PORT, such as smtp.example.com:587".into());
        }
        c.delivery.relay = Some(v.to_owned());
        Ok(())
    }),
    ("delivery.relay_username", |c, v| {
        c.delivery.relay_username = Some(v.to_owned());
        Ok(())
    }),
    ("delivery.relay_password", |c, v| {
        c.delivery.relay_password = Some(v.to_owned());
        Ok(())
    }),
    ("delivery.allow_private", |c, v| {
        c.delivery.allow_private = parse_bool(v)?;
        Ok(())
    }),
    ("delivery.relay_ca", |c, v| {
        c.delivery.relay_ca = Some(PathBuf::from(v));
        Ok(())
    }),
    ("delivery.nameserver", |c, v| {
        c.delivery.nameserver = Some(parse_addr(v)?);
        Ok(())
    }),
    ("delivery.port", |c, v| {
        c.delivery.port = v.parse().ok().filter(|p| *p > 0).ok_or("expected a port number")?;
        Ok(())
    }),
    ("delivery.retry_initial", |c, v| {
        c.delivery.retry_initial = parse_duration(v)?;
        Ok(())
    }),
    ("delivery.retry_max_interval", |c, v| {
        c.delivery.retry_max_interval = parse_duration(v)?;
        Ok(())
    }),
    ("delivery.max_age", |c, v| {
        c.delivery.max_age = parse_duration(v)?;
        Ok(())
    }),
    ("delivery.concurrency", |c, v| {
        c.delivery.concurrency = positive(v)?;
        Ok(())
    }),
    ("delivery.per_domain", |c, v| {
        c.delivery.per_domain = positive(v)?;
        Ok(())
    }),
    ("delivery.connect_timeout", |c, v| {
        c.delivery.connect_timeout = parse_duration(v)?;
        Ok(())
    }),
    ("delivery.command_timeout", |c, v| {
        c.delivery.command_timeout = parse_duration(v)?;
        Ok(())
    }),
    ("delivery.dns_timeout", |c, v| {
        c.delivery.dns_timeout = parse_duration(v)?;
        Ok(())
    }),
    ("http.trusted_proxies", |c, v| {
        c.http.trusted_proxies = parse_ips(v)?;
        Ok(())
    }),
    ("delivery.sending_ips", |c, v| {
        c.delivery.sending_ips = parse_ips(v)?;
        Ok(())
    }),
    ("health.dnsbl_zones", |c, v| {
        c.health.dnsbl_zones = list(v)
            .map(|entry| {
                let zone = entry.strip_prefix("domain:").unwrap_or(entry);
                crate::address::normalize_domain(zone)
                    .map(|z| if zone.len() == entry.len() { z } else { format!("domain:{z}") })
                    .map_err(|e| format!("{entry:?}: {e}"))
            })
            .collect::<Result<_, _>>()?;
        Ok(())
    }),
    ("tools.rate_per_minute", |c, v| {
        c.tools.rate_per_minute = positive(v)?;
        Ok(())
    }),
    ("tools.burst", |c, v| {
        c.tools.burst = positive(v)?;
        Ok(())
    }),
    ("api.rate_per_second", |c, v| {
        c.api.rate_per_second = positive(v)?;
        Ok(())
    }),
    ("api.burst", |c, v| {
        c.api.burst = positive(v)?;
        Ok(())
    }),
    ("warmup.tick", |c, v| {
        c.warmup.tick = parse_duration(v)?.max(Duration::from_millis(10));
        Ok(())
    }),
    ("warmup.spread", |c, v| {
        c.warmup.spread = parse_duration(v)?;
        Ok(())
    }),
    ("warmup.reply_delay", |c, v| {
        c.warmup.reply_delay = parse_duration(v)?;
        Ok(())
    }),
    ("warmup.keep", |c, v| {
        c.warmup.keep = parse_duration(v)?;
        Ok(())
    }),
    ("warmup.peers", |c, v| {
        c.warmup.peers = v
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(|s| match crate::address::parse(s) {
                Ok(a) => Ok(format!("{}@{}", a.local.to_ascii_lowercase(), a.domain)),
                Err(why) => Err(format!("{s:?} is not an email address: {why}")),
            })
            .collect::<Result<_, _>>()?;
        Ok(())
    }),
    ("log.level", |c, v| {
        c.log.level = v.to_owned();
        Ok(())
    }),
];

/// The environment variable of a key: `http.body_limit` -> `EDGEMAIL_HTTP_BODY_LIMIT`.
pub fn env_name(key: &str) -> String {
    format!("EDGEMAIL_{}", key.replace('.', "_").to_ascii_uppercase())
}

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
        if !name.starts_with("EDGEMAIL_") {
            continue;
        }
        match KEYS.iter().find(|(key, _)| env_name(key) == name) {
            Some((key, set)) => apply(&mut config, key, *set, &value, &name, &mut problems),
            None => problems.push(format!("{name}: not a configuration variable")),
        }
    }
    for (key, value) in flags {
        if let Some((_, set)) = KEYS.iter().find(|(k, _)| k == key) {
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
            let text = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                toml::Value::Float(f) => f.to_string(),
                _ => {
                    problems.push(format!("{origin}: {key} must be a string, number or boolean"));
                    continue;
                }
            };
            match KEYS.iter().find(|(k, _)| *k == key) {
                Some((_, set)) => apply(config, &key, *set, &text, origin, problems),
                None => problems.push(format!("{origin}: unknown key {key}")),
            }
        }
    }
}

/// A comma-separated list; empty entries are skipped, so `""` is the empty list.
fn list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

fn parse_ips(v: &str) -> Result<Vec<std::net::IpAddr>, String> {
    list(v).map(|s| s.parse().map_err(|_| format!("{s:?} is not an IP address"))).collect()
}

fn parse_addr(v: &str) -> Result<SocketAddr, String> {
    v.parse().map_err(|_| "expected an address such as 127.0.0.1:8080 or [::]:8080".into())
}

/// A whole number greater than zero (counts, limits, rates).
fn positive<T: std::str::FromStr + PartialOrd + Default>(v: &str) -> Result<T, String> {
    v.parse().ok().filter(|n| *n > T::default()).ok_or_else(|| "expected a positive integer".into())
}

fn parse_bool(v: &str) -> Result<bool, String> {
    match v {
        "true" | "yes" | "on" | "1" => Ok(true),
        "false" | "no" | "off" | "0" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

/// `500ms`, `30s`, `5m`, `2h`, `3d`.
pub fn parse_duration(v: &str) -> Result<Duration, String> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let n: u64 =
        number.parse().map_err(|_| "expected a duration such as 500ms, 30s, 5m, 2h or 3d")?;
    let ms = match unit {
        "ms" => Some(n),
        "s" => n.checked_mul(1_000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        "d" => n.checked_mul(86_400_000),
        _ => return Err("expected a duration unit: ms, s, m, h or d".into()),
    };
    ms.map(Duration::from_millis).ok_or_else(|| "the duration is too long".into())
}

/// `1048576`, `512KiB`, `1MiB`, `25MiB`, `1GiB`.
pub fn parse_size(v: &str) -> Result<usize, String> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let n: usize = number.parse().map_err(|_| "expected a size such as 1048576, 512KiB or 1MiB")?;
    let factor = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "K" | "KB" => 1 << 10,
        "MiB" | "M" | "MB" => 1 << 20,
        "GiB" | "G" | "GB" => 1 << 30,
        _ => return Err("expected a size unit: KiB, MiB or GiB".into()),
    };
    n.checked_mul(factor).filter(|n| *n > 0).ok_or_else(|| "the size is out of range".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_apply_in_order_and_flags_win() {
        let dir = std::env::temp_dir().join(format!("edgemail-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).ok();
        let file = dir.join("c.toml");
        std::fs::write(&file, "[http]\nlisten = \"127.0.0.1:1\"\nbody_limit = \"2MiB\"\n")
            .expect("write"); // ok: test
        let env = vec![("EDGEMAIL_HTTP_LISTEN".to_owned(), "127.0.0.1:2".to_owned())];
        let flags = [("http.listen", "127.0.0.1:3".to_owned())];
        let c = load(Some(&file), env, &flags).expect("valid"); // ok: test
        assert_eq!(c.http.listen.port(), 3);
        assert_eq!(c.cache_size, DEFAULT_CACHE_SIZE);
        let env = vec![("EDGEMAIL_STORAGE_CACHE_SIZE".to_owned(), "16MiB".to_owned())];
        assert_eq!(load(None, env, &[]).map(|c| c.cache_size), Ok(16 << 20));
        assert_eq!(c.http.body_limit, 2 << 20);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn every_problem_is_reported() {
        let env = vec![
            ("EDGEMAIL_HTTP_LISTEN".to_owned(), "nowhere".to_owned()),
            ("EDGEMAIL_HTTP_BODY_LIMT".to_owned(), "1".to_owned()),
            ("EDGEMAIL_HTTP_HEADER_TIMEOUT".to_owned(), "10 parsecs".to_owned()),
        ];
        let problems = load(None, env, &[]).expect_err("invalid");
        assert_eq!(problems.len(), 3, "{problems:?}");
    }

    #[test]
    fn the_shipped_example_configuration_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/edgemail.toml");
        let c = load(Some(&path), Vec::new(), &[]).expect("dist/edgemail.toml is valid"); // ok: test
        assert_eq!(c.delivery.retry_initial, Duration::from_secs(300));
        assert_eq!(c.cache_size, DEFAULT_CACHE_SIZE);
        assert_eq!(c.smtp.hostname.as_deref(), Some("mail.example.com"));
        assert_eq!(c.delivery.sending_ips.len(), 2);
        assert_eq!(
            c.health.dnsbl_zones.last().map(String::as_str),
            Some("domain:dbl.spamhaus.org")
        );
    }

    #[test]
    fn lists_of_addresses_and_zones() {
        let env = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
        let c = load(None, env("EDGEMAIL_HEALTH_DNSBL_ZONES", "BL.test, domain:dbl.test."), &[])
            .expect("valid"); // ok: test
        assert_eq!(c.health.dnsbl_zones, ["bl.test", "domain:dbl.test"]);
        let c = load(None, env("EDGEMAIL_HEALTH_DNSBL_ZONES", ""), &[]).expect("empty"); // ok: test
        assert!(c.health.dnsbl_zones.is_empty());
        assert!(load(None, env("EDGEMAIL_HEALTH_DNSBL_ZONES", "bad zone"), &[]).is_err());
        assert!(load(None, env("EDGEMAIL_DELIVERY_SENDING_IPS", "192.0.2.1, x"), &[]).is_err());
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("3d"), Ok(Duration::from_secs(3 * 86_400)));
        assert!(parse_duration("5").is_err());
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("64MiB"), Ok(DEFAULT_CACHE_SIZE));
        assert!(parse_size("0").is_err());
    }
}
