//! Mailbox warmup. An enrolled mailbox sends a small daily volume of natural-looking mail to the
//! other warmup mailboxes of this instance and to the configured peers, ramping from a start
//! limit to a target over a number of days; partners answer some of it. Every message goes
//! through the normal queue (DKIM-signed, MX delivery, retries), carries the `X-Edgemail-Warmup`
//! header, and lives in the hidden warmup folder on both sides, so it never shows in folders or
//! campaign statistics.
//!
//! - `mod`      the ramp, the counters' day rollover, the status view, composing
//! - `engine`   the sending rounds: settle deliveries, prune old mail, start conversations
//! - `receive`  recognizing warmup mail at our MX, counting it, answering it
//! - `text`     the message generator

mod engine;
pub mod receive;
pub mod text;

pub use engine::{Deps, run};

use rand::RngExt;
use serde::Serialize;

use crate::mail::outbound::Outbound;
use crate::store::{Email, MessageStatus, SendType, Warmup};

pub use crate::queue::compose::WARMUP_HEADER as HEADER;
const DAY_MS: u64 = 86_400_000;
/// Sent messages tracked until their delivery is final; older ones are forgotten beyond this.
const MAX_PENDING: usize = 2_000;

/// The daily limit on ramp day `day` (1 on the day of enrollment): `start` on day 1, rising in a
/// straight line to `target` on day `ramp_days`, and `target` from then on.
pub fn daily_limit(start: u32, target: u32, ramp_days: u32, day: u32) -> u32 {
    if day == 0 {
        return 0;
    }
    if target <= start || ramp_days <= 1 || day >= ramp_days {
        return target;
    }
    let span = f64::from(target - start);
    let progress = f64::from(day - 1) / f64::from(ramp_days - 1);
    start + (span * progress).round() as u32
}

/// Days since the Unix epoch, in UTC.
pub fn utc_day(ms: u64) -> u64 {
    ms / DAY_MS
}

impl Warmup {
    /// The ramp day at `now`: 1 on the UTC day of enrollment.
    pub fn day(&self, now: u64) -> u32 {
        let days = utc_day(now).saturating_sub(utc_day(self.enrolled_at)) + 1;
        u32::try_from(days).unwrap_or(u32::MAX)
    }

    pub fn limit(&self, now: u64) -> u32 {
        daily_limit(self.start_limit, self.target_limit, self.ramp_days, self.day(now))
    }

    /// Starts a new day's counters when the UTC day has changed.
    pub fn roll(&mut self, now: u64) {
        let today = utc_day(now);
        if self.today != today {
            self.today = today;
            self.sent_today = 0;
            self.received_today = 0;
            self.replied_today = 0;
            // The first message of a day may go at once.
            self.next_send_at = 0;
        }
    }

    /// Whether the mailbox may send one more message today (a new one or a reply).
    pub fn can_send(&self, now: u64) -> bool {
        self.enabled && self.sent_today < self.limit(now)
    }

    /// Counts a message just queued.
    pub fn count_sent(&mut self, email_id: &str, reply: bool) {
        self.sent_today = self.sent_today.saturating_add(1);
        self.sent_total += 1;
        if reply {
            self.replied_today = self.replied_today.saturating_add(1);
            self.replied_total += 1;
        }
        self.pending.push(email_id.to_owned());
        if self.pending.len() > MAX_PENDING {
            self.pending.remove(0);
        }
    }

    /// Counts the final delivery status of a sent message.
    /// `None`: the message is gone (deleted with its mailbox).
    fn settle(&mut self, email_id: &str, status: Option<MessageStatus>) {
        let Some(at) = self.pending.iter().position(|p| p == email_id) else {
            return;
        };
        self.pending.remove(at);
        match status {
            Some(MessageStatus::Delivered) => self.delivered_total += 1,
            Some(MessageStatus::Bounced | MessageStatus::Failed) => self.bounced_total += 1,
            _ => {}
        }
    }
}

/// `GET /v1/warmup` item; the default is a mailbox never enrolled.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    pub mailbox: String,
    pub enabled: bool,
    pub day: u32,
    pub daily_limit: u32,
    pub sent_today: u32,
    pub received_today: u32,
    pub replied_today: u32,
    pub inbox_rate: f64,
    pub health_score: u32,
    pub sent_total: u64,
    pub received_total: u64,
    pub replied_total: u64,
    pub delivered_total: u64,
    pub bounced_total: u64,
    pub landed_total: u64,
    pub start_limit: Option<u32>,
    pub target_limit: Option<u32>,
    pub ramp_days: Option<u32>,
    pub reply_rate: Option<f64>,
    pub enrolled_at: Option<u64>,
}

/// Fraction of delivered warmup mail that landed in the partner's inbox (0 before any delivery).
pub fn inbox_rate(landed: u64, delivered: u64) -> f64 {
    if delivered == 0 {
        return 0.0;
    }
    let rate = (landed as f64 / delivered as f64).min(1.0);
    (rate * 10_000.0).round() / 10_000.0
}

/// `round(100 * (0.6 * inboxRate + 0.4 * (1 - bounceRate)))` where bounceRate is bounced (or
/// failed) over finished sends; 0 until a send has finished.
pub fn health_score(inbox_rate: f64, delivered: u64, bounced: u64) -> u32 {
    let finished = delivered + bounced;
    if finished == 0 {
        return 0;
    }
    let bounce_rate = bounced as f64 / finished as f64;
    (100.0 * (0.6 * inbox_rate + 0.4 * (1.0 - bounce_rate))).round().clamp(0.0, 100.0) as u32
}

/// The status of `mailbox`, enrolled (`record`) or not.
pub fn status(mailbox: &str, record: Option<&Warmup>, now: u64) -> Status {
    let Some(rec) = record else {
        return Status { mailbox: mailbox.to_owned(), ..Status::default() };
    };
    let mut rec = rec.clone();
    rec.roll(now);
    let inbox = inbox_rate(rec.landed_total, rec.delivered_total);
    Status {
        mailbox: mailbox.to_owned(),
        enabled: rec.enabled,
        day: rec.day(now),
        daily_limit: if rec.enabled { rec.limit(now) } else { 0 },
        sent_today: rec.sent_today,
        received_today: rec.received_today,
        replied_today: rec.replied_today,
        inbox_rate: inbox,
        health_score: health_score(inbox, rec.delivered_total, rec.bounced_total),
        sent_total: rec.sent_total,
        received_total: rec.received_total,
        replied_total: rec.replied_total,
        delivered_total: rec.delivered_total,
        bounced_total: rec.bounced_total,
        landed_total: rec.landed_total,
        start_limit: Some(rec.start_limit),
        target_limit: Some(rec.target_limit),
        ramp_days: Some(rec.ramp_days),
        reply_rate: Some(rec.reply_rate),
        enrolled_at: Some(rec.enrolled_at),
    }
}

/// `local@domain` into `(domain, local)`, the key order of the tables.
pub fn key_of(address: &str) -> (&str, &str) {
    match address.rsplit_once('@') {
        Some((local, domain)) => (domain, local),
        None => ("", address),
    }
}

/// A warmup message from `from` (with its display name) to `to`, queued for `due`.
pub fn compose(
    from: &str,
    display_name: Option<&str>,
    to: &str,
    text: text::Text,
    in_reply_to: Option<String>,
    now: u64,
    due: u64,
) -> Email {
    Outbound {
        kind: SendType::Warmup,
        mailbox: from.to_owned(),
        from: crate::mail::build::from_header(display_name, from),
        to: vec![to.to_owned()],
        subject: text.subject,
        text: text.text,
        html: Some(text.html),
        in_reply_to,
        batch_id: None,
        sequence: None,
        scheduled_at: None,
        due,
        now,
    }
    .into_email()
}

/// A random partner for `mailbox`: another enabled local warmup mailbox or a configured peer,
/// never one its domain has suppressed (warmup must not hammer an address that bounced).
fn partner(
    mailbox: &str,
    local: &[String],
    peers: &[String],
    suppressed: &[String],
) -> Option<String> {
    let candidates: Vec<&String> = local
        .iter()
        .chain(peers.iter())
        .filter(|a| a.as_str() != mailbox && !suppressed.iter().any(|s| s.eq_ignore_ascii_case(a)))
        .collect();
    if candidates.is_empty() {
        return None;
    }
    let at = rand::rng().random_range(0..candidates.len());
    candidates.get(at).map(|s| (*s).clone())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ramp_is_linear_from_start_to_target() {
        assert_eq!(daily_limit(2, 40, 30, 0), 0);
        assert_eq!(daily_limit(2, 40, 30, 1), 2);
        assert_eq!(daily_limit(2, 40, 30, 30), 40);
        assert_eq!(daily_limit(2, 40, 30, 365), 40);
        let mid = daily_limit(2, 40, 30, 15);
        assert!((20..=22).contains(&mid), "{mid}");
        let all: Vec<u32> = (1..=30).map(|d| daily_limit(2, 40, 30, d)).collect();
        assert!(all.windows(2).all(|w| w[0] <= w[1]), "{all:?}");
        assert_eq!(daily_limit(5, 5, 10, 3), 5);
        assert_eq!(daily_limit(3, 9, 1, 1), 9, "one ramp day reaches the target at once");
        assert_eq!(daily_limit(10, 20, 2, 1), 10);
        assert_eq!(daily_limit(10, 20, 2, 2), 20);
    }

    #[test]
    fn days_count_from_enrollment_in_utc_and_counters_roll_over() {
        let enrolled = 20_000 * DAY_MS + DAY_MS - 1; // the last millisecond of a UTC day
        let mut w = Warmup {
            enabled: true,
            start_limit: 2,
            target_limit: 40,
            ramp_days: 30,
            enrolled_at: enrolled,
            ..Warmup::default()
        };
        assert_eq!(w.day(enrolled), 1);
        assert_eq!(w.day(enrolled + 1), 2);
        w.roll(enrolled);
        w.count_sent("em_1", false);
        w.count_sent("em_2", true);
        assert_eq!((w.sent_today, w.replied_today, w.sent_total), (2, 1, 2));
        assert!(!w.can_send(enrolled), "the day-1 limit is 2");
        w.roll(enrolled + 1);
        assert_eq!((w.sent_today, w.replied_today, w.sent_total), (0, 0, 2));
        assert!(w.can_send(enrolled + 1));
        w.settle("em_1", Some(MessageStatus::Delivered));
        w.settle("em_2", Some(MessageStatus::Bounced));
        w.settle("em_2", Some(MessageStatus::Delivered));
        assert_eq!((w.delivered_total, w.bounced_total, w.pending.len()), (1, 1, 0));
    }

    #[test]
    fn rates_and_health() {
        assert_eq!(inbox_rate(0, 0), 0.0);
        assert_eq!(inbox_rate(3, 4), 0.75);
        assert_eq!(inbox_rate(5, 4), 1.0);
        assert_eq!(health_score(0.0, 0, 0), 0);
        assert_eq!(health_score(1.0, 10, 0), 100);
        assert_eq!(health_score(0.5, 5, 5), 50);
        assert_eq!(health_score(0.0, 0, 3), 0);
    }

    #[test]
    fn partners_exclude_the_mailbox_itself_and_suppressed_addresses() {
        let local = vec!["a@x.test".to_owned(), "b@x.test".to_owned()];
        for _ in 0..20 {
            assert_eq!(partner("a@x.test", &local, &[], &[]).as_deref(), Some("b@x.test"));
        }
        assert_eq!(partner("a@x.test", &local[..1], &[], &[]), None);
        let peers = vec!["p@peer.test".to_owned()];
        assert_eq!(partner("a@x.test", &local[..1], &peers, &[]).as_deref(), Some("p@peer.test"));
        let suppressed = vec!["P@peer.test".to_owned()];
        for _ in 0..20 {
            assert_eq!(
                partner("a@x.test", &local, &peers, &suppressed).as_deref(),
                Some("b@x.test")
            );
        }
        assert_eq!(partner("a@x.test", &local[..1], &peers, &suppressed), None);
    }
}
