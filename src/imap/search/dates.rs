//! The days the date criteria compare. ON, SINCE and BEFORE take INTERNALDATE's day, in UTC as
//! FETCH shows it. SENTON, SENTSINCE and SENTBEFORE take the Date field's day as written in its
//! own zone (RFC 3501 6.4.4: time and timezone disregarded), so "Mon, 23 Nov 2026 23:30 -0800"
//! is sent on the 23rd although it was the 24th in UTC. A message without a Date field the
//! parser reads, or with an impossible day, matches no SENT* criterion (Dovecot falls back to
//! INTERNALDATE; we do not, so a SENT* answer only ever reflects a Date the message has).

use chrono::NaiveDate;
use mail_parser::Message;

/// How a day compares to the criterion's.
#[derive(Clone, Copy, Debug)]
pub enum Cmp {
    Before,
    On,
    Since,
}

impl Cmp {
    pub fn holds(self, day: NaiveDate, criterion: NaiveDate) -> bool {
        match self {
            Cmp::Before => day < criterion,
            Cmp::On => day == criterion,
            Cmp::Since => day >= criterion,
        }
    }
}

/// The UTC day of an INTERNALDATE kept in milliseconds.
pub fn internal_day(ms: u64) -> Option<NaiveDate> {
    let ms = i64::try_from(ms).ok()?;
    chrono::DateTime::from_timestamp_millis(ms).map(|d| d.date_naive())
}

/// The day of the message's Date field, as written.
pub fn sent_day(message: &Message<'_>) -> Option<NaiveDate> {
    let d = message.date()?;
    NaiveDate::from_ymd_opt(d.year.into(), d.month.into(), d.day.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(y: i32, m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(y, m, d).expect("a day") // ok: test
    }

    fn sent(date: &str) -> Option<NaiveDate> {
        let raw = format!("{date}Subject: x\r\n\r\nbody\r\n");
        let m = mail_parser::MessageParser::default().parse(raw.as_bytes())?;
        sent_day(&m)
    }

    #[test]
    fn the_sent_day_is_the_one_written_whatever_the_zone() {
        assert_eq!(sent("Date: Mon, 23 Nov 2026 23:30:00 -0800\r\n"), Some(day(2026, 11, 23)));
        assert_eq!(sent("Date: Tue, 24 Nov 2026 00:30:00 +0900\r\n"), Some(day(2026, 11, 24)));
        assert_eq!(sent(""), None);
        assert_eq!(sent("Date: yesterday, probably\r\n"), None);
    }

    #[test]
    fn internal_days_are_utc_and_comparisons_take_whole_days() {
        // 2026-11-24T07:30:00Z
        assert_eq!(internal_day(1_795_505_400_000), Some(day(2026, 11, 24)));
        assert_eq!(internal_day(u64::MAX), None);
        let (d, c) = (day(2026, 11, 23), day(2026, 11, 23));
        assert!(Cmp::On.holds(d, c) && Cmp::Since.holds(d, c) && !Cmp::Before.holds(d, c));
        assert!(Cmp::Before.holds(day(2026, 11, 22), c) && !Cmp::Since.holds(day(2026, 11, 22), c));
    }
}
