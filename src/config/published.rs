//! What we publish about ourselves for hosted domains (`[autoconfig]` and the hosting half of
//! `[mta_sts]`): the host name and ports mail clients are told to use, and the MTA-STS policy
//! our domains announce. Behind NAT or a port forward the public ports differ from the ports
//! the listeners bind, so each can be set; unset, the bound port of a listener that runs is
//! named, and a listener that does not run is never named.

use std::time::Duration;

use super::Config;
use super::keys::Setter;
use super::parse::{list, parse_duration, positive};

/// The settings mail clients are told (`autoconfig.*`).
#[derive(Debug, Clone, Default)]
pub struct Autoconfig {
    /// The host name clients connect to (default: `smtp.hostname`).
    pub host: Option<String>,
    /// Public ports of the IMAP (STARTTLS), IMAPS, submission (STARTTLS) and submissions
    /// listeners, when they differ from the ports bound.
    pub imap_port: Option<u16>,
    pub imaps_port: Option<u16>,
    pub submission_port: Option<u16>,
    pub submissions_port: Option<u16>,
}

/// `mta_sts.policy_mode`: what senders do with a failing MX (RFC 8461 section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyMode {
    Testing,
    Enforce,
}

impl PolicyMode {
    pub fn as_str(self) -> &'static str {
        match self {
            PolicyMode::Testing => "testing",
            PolicyMode::Enforce => "enforce",
        }
    }
}

/// The MTA-STS policy our hosted domains serve (`mta_sts.policy_*`, `mta_sts.max_age`).
#[derive(Debug, Clone)]
pub struct StsPolicy {
    pub mode: PolicyMode,
    /// The `mx:` lines; empty means `smtp.hostname` (or `mail.<domain>` without one).
    pub mx: Vec<String>,
    /// How long senders may cache the policy (RFC 8461: up to 31557600 s).
    pub max_age: Duration,
}

impl Default for StsPolicy {
    fn default() -> Self {
        // Testing first: a new domain whose certificate is not right yet loses no mail.
        StsPolicy {
            mode: PolicyMode::Testing,
            mx: Vec::new(),
            max_age: Duration::from_secs(604_800),
        }
    }
}

fn port(v: &str) -> Result<Option<u16>, String> {
    positive::<u16>(v).map(Some)
}

/// The keys of this file, searched after `keys::KEYS`.
pub(super) const KEYS: &[(&str, Setter)] = &[
    ("autoconfig.host", |c, v| {
        let host = v.trim_end_matches('.').to_ascii_lowercase();
        let ok = |ch: char| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '.');
        if host.is_empty() || host.len() > 253 || !host.chars().all(ok) {
            return Err("expected a host name such as mail.example.com".into());
        }
        c.autoconfig.host = Some(host);
        Ok(())
    }),
    ("autoconfig.imap_port", |c, v| {
        c.autoconfig.imap_port = port(v)?;
        Ok(())
    }),
    ("autoconfig.imaps_port", |c, v| {
        c.autoconfig.imaps_port = port(v)?;
        Ok(())
    }),
    ("autoconfig.submission_port", |c, v| {
        c.autoconfig.submission_port = port(v)?;
        Ok(())
    }),
    ("autoconfig.submissions_port", |c, v| {
        c.autoconfig.submissions_port = port(v)?;
        Ok(())
    }),
    ("mta_sts.policy_mode", |c, v| {
        c.sts_policy.mode = match v {
            "testing" => PolicyMode::Testing,
            "enforce" => PolicyMode::Enforce,
            _ => return Err("expected testing or enforce".into()),
        };
        Ok(())
    }),
    ("mta_sts.policy_mx", |c, v| {
        let ok = |ch: char| ch.is_ascii_alphanumeric() || matches!(ch, '-' | '.' | '*');
        let mut mx = Vec::new();
        for name in list(v) {
            if name.len() > 253 || !name.chars().all(ok) {
                return Err(format!("{name:?} is not a host name (or *.domain pattern)"));
            }
            mx.push(name.to_ascii_lowercase());
        }
        c.sts_policy.mx = mx;
        Ok(())
    }),
    ("mta_sts.max_age", |c, v| {
        let age = parse_duration(v)?;
        // RFC 8461 section 3.2: at most 31557600 seconds.
        if age < Duration::from_secs(1) || age > Duration::from_secs(31_557_600) {
            return Err("expected between 1s and 31557600s".into());
        }
        c.sts_policy.max_age = age;
        Ok(())
    }),
];

impl Config {
    /// The host name mail clients of `domain` are told to connect to: `autoconfig.host`, else
    /// `smtp.hostname`, else the `mail.<domain>` the printed zone points the MX at.
    pub fn client_host(&self, domain: &str) -> String {
        match (&self.autoconfig.host, &self.smtp.hostname) {
            (Some(host), _) | (None, Some(host)) => host.clone(),
            (None, None) => format!("mail.{domain}"),
        }
    }
}
