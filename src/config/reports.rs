//! DMARC aggregate reports we send (`reports.*`): off unless asked for, as they tell other
//! domains which addresses sent mail in their name to ours.

use std::time::Duration;

use super::keys::Setter;
use super::parse::{parse_bool, parse_duration};

#[derive(Debug, Clone)]
pub struct Reports {
    /// Whether received mail is counted and reported to the `rua` of From domains that ask.
    pub dmarc_send: bool,
    /// The period one report covers (RFC 7489's default `ri`, one day); shorter only for tests
    /// and trials: every period makes one report per domain pair.
    pub dmarc_interval: Duration,
}

impl Default for Reports {
    fn default() -> Self {
        Reports { dmarc_send: false, dmarc_interval: Duration::from_secs(86_400) }
    }
}

impl Reports {
    /// The reporting period when reports are sent.
    pub fn dmarc_period(&self) -> Option<Duration> {
        self.dmarc_send.then_some(self.dmarc_interval)
    }
}

/// The keys of this section, beside those of `keys.rs`.
pub(super) const KEYS: &[(&str, Setter)] = &[
    ("reports.dmarc_send", |c, v| {
        c.reports.dmarc_send = parse_bool(v)?;
        Ok(())
    }),
    ("reports.dmarc_interval", |c, v| {
        let interval = parse_duration(v)?;
        if interval < Duration::from_secs(1) || interval > Duration::from_secs(7 * 86_400) {
            return Err("expected a period from 1s to 7d".into());
        }
        c.reports.dmarc_interval = interval;
        Ok(())
    }),
];
