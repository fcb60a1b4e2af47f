//! The general configuration keys (storage, cluster, HTTP, health, inbound, tools, API, warmup,
//! webhooks, logs), as `section.key`, with the function that parses and sets each; the mail
//! side's keys are in `mail_keys.rs`, and sections with their own file keep theirs there.

use std::path::PathBuf;
use std::time::Duration;

use super::Config;
use super::parse::*;

pub(super) type Setter = fn(&mut Config, &str) -> Result<(), String>;

/// Every key, as `section.key`, with the function that parses and sets it.
pub(super) const KEYS: &[(&str, Setter)] = &[
    ("storage.data_dir", |c, v| {
        c.data_dir = PathBuf::from(v);
        Ok(())
    }),
    ("storage.cache_size", |c, v| {
        c.cache_size = parse_size(v)?;
        Ok(())
    }),
    ("store.url", |c, v| {
        if !(v.starts_with("postgres://") || v.starts_with("postgresql://")) {
            return Err("expected a postgres:// URL".into());
        }
        c.cluster.store_url = Some(v.to_owned());
        Ok(())
    }),
    ("store.connections", |c, v| {
        c.cluster.connections = positive(v)?;
        Ok(())
    }),
    ("cluster.node", |c, v| {
        let ok = |ch: char| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.');
        if v.is_empty() || v.len() > 64 || !v.chars().all(ok) {
            return Err("expected 1-64 letters, digits, '-', '_' or '.'".into());
        }
        c.cluster.node = v.to_owned();
        Ok(())
    }),
    ("cluster.lease", |c, v| {
        let lease = parse_duration(v)?;
        if lease < Duration::from_secs(1) {
            return Err("expected at least 1s".into());
        }
        c.cluster.lease = lease;
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
    ("http.anonymous_body_limit", |c, v| {
        c.http.anonymous_body_limit = parse_size(v)?;
        Ok(())
    }),
    ("http.max_buffered_bytes", |c, v| {
        c.http.max_buffered_bytes = parse_size(v)?;
        Ok(())
    }),
    ("ui.max_sessions", |c, v| {
        c.ui.max_sessions = positive(v)?;
        Ok(())
    }),
    ("ui.sessions_per_key", |c, v| {
        c.ui.sessions_per_key = positive(v)?;
        Ok(())
    }),
    ("tracking.rate_per_minute", |c, v| {
        c.tracking.rate_per_minute = positive(v)?;
        Ok(())
    }),
    ("tracking.burst", |c, v| {
        c.tracking.burst = positive(v)?;
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
    ("http.trusted_proxies", |c, v| {
        c.http.trusted_proxies = parse_ips(v)?;
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
    ("inbound.dmarc_reject", |c, v| {
        c.inbound.dmarc_reject = match v {
            "refuse" => super::DmarcReject::Refuse,
            "junk" => super::DmarcReject::Junk,
            _ => return Err("expected \"refuse\" or \"junk\"".into()),
        };
        Ok(())
    }),
    ("inbound.arc_trusted", |c, v| {
        c.inbound.arc_trusted = list(v)
            .map(|d| crate::address::normalize_domain(d).map_err(|e| format!("{d:?}: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(())
    }),
    ("inbound.dnsbl", |c, v| {
        c.inbound.dnsbl = list(v)
            .map(|d| crate::address::normalize_domain(d).map_err(|e| format!("{d:?}: {e}")))
            .collect::<Result<_, _>>()?;
        Ok(())
    }),
    ("inbound.greylisting", |c, v| {
        c.inbound.greylisting = parse_bool(v)?;
        Ok(())
    }),
    ("inbound.greylist_delay", |c, v| {
        c.inbound.greylist_delay = parse_duration(v)?;
        Ok(())
    }),
    ("inbound.greylist_keep", |c, v| {
        c.inbound.greylist_keep = parse_duration(v)?;
        Ok(())
    }),
    ("inbound.dnsbl_timeout", |c, v| {
        c.inbound.dnsbl_timeout = parse_duration(v)?;
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
    ("webhooks.retry_initial", |c, v| {
        c.webhooks.retry_initial = parse_duration(v)?.max(Duration::from_millis(10));
        Ok(())
    }),
    ("webhooks.max_age", |c, v| {
        c.webhooks.max_age = parse_duration(v)?;
        Ok(())
    }),
    ("webhooks.allow_private", |c, v| {
        c.webhooks.allow_private = parse_bool(v)?;
        Ok(())
    }),
    ("webhooks.concurrency", |c, v| {
        c.webhooks.concurrency = positive(v)?;
        Ok(())
    }),
    ("webhooks.per_endpoint", |c, v| {
        c.webhooks.per_endpoint = positive(v)?;
        Ok(())
    }),
    ("log.level", |c, v| {
        c.log.level = v.to_owned();
        Ok(())
    }),
    ("log.format", |c, v| {
        c.log.format = match v {
            "text" => super::LogFormat::Text,
            "json" => super::LogFormat::Json,
            _ => return Err("expected `text` or `json`".into()),
        };
        Ok(())
    }),
    ("metrics.token", |c, v| {
        c.metrics.token = (!v.is_empty()).then(|| v.to_owned());
        Ok(())
    }),
    ("testing.clock_offset", |c, v| {
        c.clock_offset = parse_duration(v)?;
        Ok(())
    }),
];
