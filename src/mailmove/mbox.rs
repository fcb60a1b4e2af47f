//! mbox, read and written as mboxrd: each message follows a `From ` line that carries its date,
//! a body line that would start with `>*From ` gets one more `>` (mboxo's `>From ` reads back
//! the same), and a blank line ends each message. The status headers mbox tools keep (`Status`,
//! `X-Status`, `X-Keywords`, and our `X-Edgemail-Folder`) are the mailbox's bookkeeping, not
//! the message: reading takes the flags and folder from them and removes them, writing puts
//! them first in the header, so a message written and read again is the same bytes.

use std::io::{BufRead, Write};

/// The bookkeeping headers, lower-cased.
const STATUS: &str = "status";
const X_STATUS: &str = "x-status";
const X_KEYWORDS: &str = "x-keywords";
/// The folder a message was exported from (one mbox file holds every folder).
pub const X_FOLDER: &str = "x-edgemail-folder";

/// One message of an mbox.
#[derive(Debug, Clone, Default)]
pub struct MboxMessage {
    /// The bytes between the `From ` line and the blank line that ends it, unquoted; empty when
    /// the message was over the limit.
    pub raw: Vec<u8>,
    /// Its size, also when over the limit.
    pub size: usize,
    /// Whether it was over the reader's limit (its bytes were dropped).
    pub over: bool,
    /// The date of its `From ` line, Unix milliseconds, when it has one.
    pub date: Option<u64>,
}

/// Reads the messages of an mbox one at a time, holding at most `limit` bytes of each.
pub struct MboxReader<R> {
    reader: R,
    limit: usize,
    next_from: Option<Vec<u8>>,
    started: bool,
}

impl<R: BufRead> MboxReader<R> {
    pub fn new(reader: R, limit: usize) -> MboxReader<R> {
        MboxReader { reader, limit, next_from: None, started: false }
    }

    /// The next message; `Ok(None)` at the end. Input that does not start with a `From ` line
    /// is not an mbox (`InvalidData`).
    pub fn next_message(&mut self) -> std::io::Result<Option<MboxMessage>> {
        let mut line = Vec::new();
        if !self.started {
            self.started = true;
            if read_line(&mut self.reader, &mut line, 1024)? == 0 {
                return Ok(None);
            }
            if !line.starts_with(b"From ") {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "not an mbox: it must begin with a `From ` line",
                ));
            }
            self.skip_rest(&line)?;
            self.next_from = Some(line.clone());
        }
        let Some(from) = self.next_from.take() else { return Ok(None) };
        let mut message = MboxMessage { date: from_line_date(&from), ..MboxMessage::default() };
        let mut at_line_start = true;
        loop {
            line.clear();
            // A line is read in bounded pieces: a piece that ends without a newline is
            // continued, never taken for the start of a line.
            if read_line(&mut self.reader, &mut line, 64 * 1024)? == 0 {
                break;
            }
            let starts = at_line_start;
            at_line_start = line.ends_with(b"\n");
            if starts && line.starts_with(b"From ") {
                self.skip_rest(&line)?;
                self.next_from = Some(line.clone());
                break;
            }
            let piece = if starts && quoted_from(&line) { &line[1..] } else { &line[..] };
            message.size += piece.len();
            if message.over {
                continue;
            }
            if message.raw.len() + piece.len() <= self.limit {
                message.raw.extend_from_slice(piece);
            } else {
                message.over = true;
                message.raw = Vec::new();
            }
        }
        // The blank line that ends a message is the mbox's, not the message's.
        let raw = &mut message.raw;
        if raw.ends_with(b"\n") && raw[..raw.len() - 1].ends_with(b"\n") {
            raw.pop();
            message.size -= 1;
        }
        Ok(Some(message))
    }

    /// Reads the rest of a `From ` line longer than what was read of it.
    fn skip_rest(&mut self, line: &[u8]) -> std::io::Result<()> {
        let mut rest = Vec::new();
        let mut ended = line.ends_with(b"\n");
        while !ended {
            rest.clear();
            if read_line(&mut self.reader, &mut rest, 1024)? == 0 {
                break;
            }
            ended = rest.ends_with(b"\n");
        }
        Ok(())
    }
}

/// Reads up to and including a newline, or `max` bytes, whichever comes first.
fn read_line(reader: &mut impl BufRead, out: &mut Vec<u8>, max: u64) -> std::io::Result<usize> {
    use std::io::Read;
    reader.take(max).read_until(b'\n', out)
}

/// Whether a line is a quoted `From ` line (`>From `, `>>From `, ...).
fn quoted_from(line: &[u8]) -> bool {
    let quotes = line.iter().take_while(|b| **b == b'>').count();
    quotes > 0 && line[quotes..].starts_with(b"From ")
}

const MONTHS: [&str; 12] =
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];

/// The date of a `From sender Www Mmm dd hh:mm:ss yyyy` line (asctime, taken as UTC; a
/// numeric zone after the time or the year is applied).
pub fn from_line_date(line: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(line).ok()?;
    let words: Vec<&str> = text.split_whitespace().skip(2).collect();
    let m = words.iter().position(|w| MONTHS.iter().any(|m| m.eq_ignore_ascii_case(w)))?;
    let month = MONTHS.iter().position(|x| x.eq_ignore_ascii_case(words[m]))? + 1;
    let day: u32 = words.get(m + 1)?.parse().ok()?;
    let mut clock = words.get(m + 2)?.split(':').map(|p| p.parse::<i64>().ok());
    let (h, min) = (clock.next()??, clock.next()??);
    let s = clock.next().flatten().unwrap_or(0);
    let rest = &words[(m + 3).min(words.len())..];
    let year: i64 = rest
        .iter()
        .find(|w| w.len() == 4 && w.bytes().all(|b| b.is_ascii_digit()))?
        .parse()
        .ok()?;
    let zone = rest.iter().find(|w| w.len() == 5 && (w.starts_with('+') || w.starts_with('-')));
    let offset = zone.and_then(|z| {
        let sign = if z.starts_with('-') { -1 } else { 1 };
        let hh: i64 = z[1..3].parse().ok()?;
        let mm: i64 = z[3..5].parse().ok()?;
        Some(sign * (hh * 3600 + mm * 60))
    });
    let month = u32::try_from(month).ok()?;
    if !(1..=31).contains(&day) || !(0..24).contains(&h) || !(0..60).contains(&min) {
        return None;
    }
    let days = super::days_from_civil(year, month, day);
    let secs = days * 86_400 + h * 3600 + min * 60 + s - offset.unwrap_or(0);
    u64::try_from(secs).ok().map(|s| s * 1000)
}

/// The `From ` line of a message with internal date `ms`.
pub fn from_line(ms: u64) -> String {
    let secs = i64::try_from(ms / 1000).unwrap_or(0);
    let days = secs.div_euclid(86_400);
    let (y, m, d) = super::civil_from_days(days);
    let t = secs.rem_euclid(86_400);
    let weekday = DAYS[usize::try_from(days.rem_euclid(7)).unwrap_or(0)];
    let month = MONTHS[usize::try_from(m.saturating_sub(1)).unwrap_or(0).min(11)];
    let (h, min, s) = (t / 3600, t % 3600 / 60, t % 60);
    format!("From MAILER-DAEMON {weekday} {month} {d:2} {h:02}:{min:02}:{s:02} {y}\n")
}

/// What the bookkeeping headers of a message said, and the message without them.
#[derive(Debug, Default)]
pub struct Bookkeeping {
    pub flags: Vec<String>,
    pub folder: Option<String>,
}

/// Removes the bookkeeping headers from the header of `raw`, returning what they said.
pub fn take_bookkeeping(raw: &mut Vec<u8>) -> Bookkeeping {
    let (mut status, mut x_status, mut keywords, mut folder) = (None, None, None, None);
    let mut kept = Vec::with_capacity(raw.len());
    let mut at = 0;
    let mut dropping = false;
    while at < raw.len() {
        let end = memchr::memchr(b'\n', &raw[at..]).map_or(raw.len(), |i| at + i + 1);
        let line = &raw[at..end];
        if line == b"\n" || line == b"\r\n" {
            break;
        }
        let continued = line.first().is_some_and(|b| *b == b' ' || *b == b'\t');
        if !continued {
            dropping = false;
            let name = line.split(|b| *b == b':').next().unwrap_or(b"");
            let name = String::from_utf8_lossy(name).trim().to_ascii_lowercase();
            let value = line.get(name.len() + 1..).unwrap_or(b"");
            let value = String::from_utf8_lossy(value).trim().to_owned();
            let slot = match name.as_str() {
                STATUS => Some(&mut status),
                X_STATUS => Some(&mut x_status),
                X_KEYWORDS => Some(&mut keywords),
                X_FOLDER => Some(&mut folder),
                _ => None,
            };
            if let Some(slot) = slot {
                slot.get_or_insert(value);
                dropping = true;
            }
        }
        if !dropping {
            kept.extend_from_slice(line);
        }
        at = end;
    }
    if status.is_none() && x_status.is_none() && keywords.is_none() && folder.is_none() {
        return Bookkeeping::default();
    }
    kept.extend_from_slice(&raw[at..]);
    *raw = kept;
    let flags = super::flags::from_mbox_headers(
        status.as_deref().unwrap_or(""),
        x_status.as_deref().unwrap_or(""),
        keywords.as_deref().unwrap_or(""),
    );
    Bookkeeping { flags, folder: folder.filter(|f| !f.is_empty()) }
}

/// Writes one message: its `From ` line, the bookkeeping headers, the bytes quoted, a blank line.
pub fn write_message(
    out: &mut impl Write,
    raw: &[u8],
    flags: &[String],
    folder: &str,
    internal: u64,
) -> std::io::Result<()> {
    out.write_all(from_line(internal).as_bytes())?;
    let eol: &[u8] = if first_line_crlf(raw) { b"\r\n" } else { b"\n" };
    let (status, x_status, keywords) = super::flags::to_mbox_headers(flags);
    let mut header = |name: &str, value: &str| -> std::io::Result<()> {
        out.write_all(format!("{name}: {value}").as_bytes())?;
        out.write_all(eol)
    };
    header("X-Edgemail-Folder", folder)?;
    header("Status", &status)?;
    if !x_status.is_empty() {
        header("X-Status", &x_status)?;
    }
    if !keywords.is_empty() {
        header("X-Keywords", &keywords)?;
    }
    for line in raw.split_inclusive(|b| *b == b'\n') {
        let quotes = line.iter().take_while(|b| **b == b'>').count();
        if line[quotes..].starts_with(b"From ") {
            out.write_all(b">")?;
        }
        out.write_all(line)?;
    }
    if !raw.ends_with(b"\n") {
        out.write_all(b"\n")?;
    }
    out.write_all(b"\n")
}

fn first_line_crlf(raw: &[u8]) -> bool {
    memchr::memchr(b'\n', raw).is_some_and(|i| i > 0 && raw[i - 1] == b'\r')
}

#[cfg(test)]
mod tests;
