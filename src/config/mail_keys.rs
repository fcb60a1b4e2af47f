//! The keys of the mail side (`smtp.*`, `mailbox.*`, `submission.*`, `imap.*`,
//! `managesieve.*`, `delivery.*`, `mta_sts.*`, `shaping.*`), kept apart from `keys.rs` so each
//! file stays one screenful of a concern; searched after `keys::KEYS`.

use std::path::PathBuf;

use super::keys::Setter;
use super::parse::*;

pub(super) const KEYS: &[(&str, Setter)] = &[
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
    ("smtp.stress_timeout", |c, v| {
        c.smtp.stress_timeout = parse_duration(v)?;
        Ok(())
    }),
    ("smtp.max_bytes_per_ip_per_minute", |c, v| {
        c.smtp.max_bytes_per_ip_per_minute = size_or_zero(v)?;
        Ok(())
    }),
    ("smtp.max_refused_recipients_per_ip_per_minute", |c, v| {
        c.smtp.max_refused_recipients_per_ip_per_minute =
            v.parse().map_err(|_| "expected a whole number (0 for no limit)")?;
        Ok(())
    }),
    ("mailbox.quota_bytes", |c, v| {
        c.mailbox.quota_bytes = size_or_zero(v)? as u64;
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
    ("smtp.subaddress_separator", |c, v| {
        // One character (or none): a longer one would make tags ambiguous to read.
        if v.chars().count() > 1 || v.chars().any(|ch| ch == '@' || ch.is_whitespace()) {
            return Err(format!("{v:?}: give one character such as \"+\", or \"\" for none"));
        }
        c.smtp.subaddress_separator = v.to_owned();
        Ok(())
    }),
    ("smtp.hostname", |c, v| {
        c.smtp.hostname = Some(crate::address::normalize_domain(v)?);
        Ok(())
    }),
    ("submission.listen", |c, v| {
        c.submission.listen = Some(parse_addr(v)?);
        Ok(())
    }),
    ("submission.tls_listen", |c, v| {
        c.submission.tls_listen = Some(parse_addr(v)?);
        Ok(())
    }),
    ("imap.listen", |c, v| {
        c.imap.listen = Some(parse_addr(v)?);
        Ok(())
    }),
    ("managesieve.listen", |c, v| {
        c.managesieve.listen = Some(parse_addr(v)?);
        Ok(())
    }),
    ("imap.tls_listen", |c, v| {
        c.imap.tls_listen = Some(parse_addr(v)?);
        Ok(())
    }),
    ("imap.max_connections", |c, v| {
        c.imap.max_connections = positive(v)?;
        Ok(())
    }),
    ("imap.stress_timeout", |c, v| {
        c.imap.stress_timeout = parse_duration(v)?;
        Ok(())
    }),
    ("imap.max_connections_per_ip", |c, v| {
        c.imap.max_connections_per_ip = positive(v)?;
        Ok(())
    }),
    ("submission.failed_logins", |c, v| {
        c.submission.failed_logins = positive(v)?;
        Ok(())
    }),
    ("imap.max_inflight_bytes", |c, v| {
        c.imap.max_inflight_bytes = parse_size(v)?;
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
    ("mta_sts.enabled", |c, v| {
        c.mta_sts.enabled = parse_bool(v)?;
        Ok(())
    }),
    ("mta_sts.ca_file", |c, v| {
        c.mta_sts.ca_file = (!v.is_empty()).then(|| PathBuf::from(v));
        Ok(())
    }),
    ("mta_sts.policy_port", |c, v| {
        c.mta_sts.policy_port = positive(v)?;
        Ok(())
    }),
    ("shaping.pause_initial", |c, v| super::shaping::set_pause(&mut c.shaping, false, v)),
    ("shaping.pause_max", |c, v| super::shaping::set_pause(&mut c.shaping, true, v)),
    ("delivery.sending_ips", |c, v| {
        c.delivery.sending_ips = parse_ips(v)?;
        Ok(())
    }),
];

/// A size, or `0` for "no limit".
fn size_or_zero(v: &str) -> Result<usize, String> {
    if v == "0" { Ok(0) } else { parse_size(v) }
}
