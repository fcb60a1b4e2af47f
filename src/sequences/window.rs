//! Sending windows: the local days and hours in which a sequence's messages may go, in an IANA
//! time zone from the database compiled into the binary (the container image carries none). A
//! step due outside its window waits until the window next opens.

use jiff::civil::{Date, Weekday};
use jiff::tz::TimeZone;
use jiff::{Timestamp, ZonedDateTime};

use crate::store::SendingWindow;

/// Day names as the API writes them, Monday first.
pub const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

/// The zone named `name`, or `None` when the bundled database does not know it.
pub fn zone(name: &str) -> Option<TimeZone> {
    if name.is_empty() || name.len() > 64 {
        return None;
    }
    TimeZone::get(name).ok()
}

/// Minutes after midnight of `HH:MM` (00:00 to 24:00).
pub fn minutes(text: &str) -> Option<u32> {
    let (h, m) = text.split_once(':')?;
    if h.len() != 2 || m.len() != 2 || !(h.bytes().chain(m.bytes())).all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (h, m): (u32, u32) = (h.parse().ok()?, m.parse().ok()?);
    let total = h * 60 + m;
    (m < 60 && total <= 24 * 60).then_some(total)
}

fn day_name(day: Weekday) -> &'static str {
    DAYS[day.to_monday_zero_offset() as usize]
}

/// The earliest time at or after `now` (Unix ms) inside `window`, read in `zone`.
pub fn next_open(window: &SendingWindow, zone: &TimeZone, now: u64) -> u64 {
    let (Some(start), Some(end)) = (minutes(&window.start), minutes(&window.end)) else {
        return now;
    };
    let Ok(at) = Timestamp::from_millisecond(i64::try_from(now).unwrap_or(i64::MAX)) else {
        return now;
    };
    let local = at.to_zoned_datetime(zone.clone());
    let allowed = |d: Date| window.days.iter().any(|n| n == day_name(d.weekday()));
    let minute = (local.hour() as u32) * 60 + local.minute() as u32;
    let mut date = local.date();
    // Eight days cover a week of day names; an empty list (refused at the edge) never opens.
    for offset in 0..8 {
        if allowed(date) {
            if offset == 0 && (start..end).contains(&minute) {
                return now;
            }
            if offset > 0 || minute < start {
                return opening(date, start, zone).unwrap_or(now).max(now);
            }
        }
        let Ok(next) = date.tomorrow() else { return now };
        date = next;
    }
    now
}

/// `date` at `minute` after midnight in `zone`, as Unix ms; a time that a clock change skips is
/// taken as the instant after the gap.
fn opening(date: Date, minute: u32, zone: &TimeZone) -> Option<u64> {
    let (h, m) = ((minute / 60) as i8, (minute % 60) as i8);
    let local = date.at(h.min(23), m, 0, 0);
    let zoned: ZonedDateTime = local.to_zoned_datetime(zone.clone()).ok()?;
    u64::try_from(zoned.timestamp().as_millisecond()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(days: &[&str], start: &str, end: &str) -> SendingWindow {
        SendingWindow {
            days: days.iter().map(|d| d.to_string()).collect(),
            start: start.into(),
            end: end.into(),
            timezone: "UTC".into(),
        }
    }

    /// 2026-11-23 is a Monday.
    fn ms(date: &str) -> u64 {
        let ts: Timestamp = date.parse().expect("timestamp"); // ok: test
        ts.as_millisecond() as u64
    }

    #[test]
    fn times_parse_and_bad_ones_do_not() {
        assert_eq!(minutes("09:30"), Some(570));
        assert_eq!(minutes("24:00"), Some(1440));
        for bad in ["9:30", "24:01", "12:60", "ab:cd", "1200", "", "+1:00"] {
            assert_eq!(minutes(bad), None, "{bad}");
        }
        assert!(zone("Europe/Berlin").is_some());
        assert!(zone("Mars/Olympus").is_none());
    }

    #[test]
    fn inside_the_window_is_now_outside_waits_for_the_next_opening() {
        let w = window(&["mon", "tue"], "09:00", "17:00");
        let utc = TimeZone::UTC;
        let inside = ms("2026-11-23T10:00:00Z");
        assert_eq!(next_open(&w, &utc, inside), inside);
        assert_eq!(next_open(&w, &utc, ms("2026-11-23T07:00:00Z")), ms("2026-11-23T09:00:00Z"));
        assert_eq!(next_open(&w, &utc, ms("2026-11-23T17:00:00Z")), ms("2026-11-24T09:00:00Z"));
        // Tuesday evening: the next Monday.
        assert_eq!(next_open(&w, &utc, ms("2026-11-24T18:00:00Z")), ms("2026-11-30T09:00:00Z"));
    }

    #[test]
    fn the_window_is_read_in_its_zone_across_a_clock_change() {
        let w = window(&["sun"], "02:30", "04:00");
        let berlin = zone("Europe/Berlin").expect("zone"); // ok: test
        // Saturday 2026-03-28 noon in Berlin; on Sunday 02:30 does not exist (clocks jump to 03:00).
        let open = next_open(&w, &berlin, ms("2026-03-28T11:00:00Z"));
        assert_eq!(open, ms("2026-03-29T01:30:00Z"), "03:30 CEST, after the gap");
        let tokyo = zone("Asia/Tokyo").expect("zone"); // ok: test
        let w = window(&["mon"], "09:00", "17:00");
        // Sunday 23:00 UTC is Monday 08:00 in Tokyo: the window opens an hour later.
        assert_eq!(next_open(&w, &tokyo, ms("2026-11-22T23:00:00Z")), ms("2026-11-23T00:00:00Z"));
    }
}
