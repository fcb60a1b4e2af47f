//! Moving mail in and out of a hosted mailbox: import from an mbox file, a Maildir or a running
//! IMAP server, export to an mbox file or a Maildir (`edgemail import` / `edgemail export`, and
//! `POST /v1/mailboxes/{address}/import`).
//!
//! An imported message is stored mail, as an IMAP APPEND stores it: its bytes as the source had
//! them, its folder, flags, keywords and internal date; it never passes the spam filter, Sieve,
//! webhooks or reply linking, which are for mail that arrives. The quota applies to each message
//! alone: one that does not fit fails with its reason and the rest go on. What was copied is
//! recorded in the store under a key per message (Message-ID and date, or the source's
//! UIDVALIDITY and UID), so a second run copies only what is new.
//!
//! The readers are ours, not mail-parser's `mailbox` iterators: those hold a whole message (or a
//! line) in memory however long it grows, drop Dovecot's keyword letters and carry no mbox
//! flags; ours bound every line and message and read the flags both formats carry.
//!
//! - `import`   the importer: folders made as needed, messages stored in batches, the report
//! - `local`    importing an mbox (a file or an upload) and a Maildir tree
//! - `mbox`     reading and writing mboxrd (From-line dates, `>From ` quoting, status headers)
//! - `maildir`  reading Maildir++ (cur/new, flags in names, `.Sub.Folder`, dovecot-keywords)
//! - `imap`     an IMAP source: its URL, TLS trust, a client session (imap-next's client)
//! - `imap_fetch` importing every folder of an IMAP source, in pipelined UID batches
//! - `progress` the count per folder an import shows on the terminal
//! - `export`   writing every folder of a mailbox to an mbox file or a Maildir
//! - `flags`    IMAP flags in Maildir letters and mbox status headers
//! - `utf7`     modified UTF-7 (RFC 3501 5.1.3): IMAP's and Maildir++'s non-ASCII folder names

pub mod export;
pub mod flags;
pub mod imap;
pub mod imap_fetch;
pub mod import;
pub mod local;
pub mod maildir;
pub mod mbox;
pub mod progress;
pub mod utf7;

pub use import::{Importer, Incoming, Report};

use serde::{Deserialize, Serialize};

/// Where an import reads from (paths absolute: a running server reads them).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Source {
    Mbox { path: std::path::PathBuf },
    Maildir { path: std::path::PathBuf },
    Imap(imap::ImapSource),
}

/// Imports everything `source` holds into `mailbox`; `quota`: the server's default quota.
pub fn import(
    store: &crate::store::Store,
    mailbox: &str,
    quota: u64,
    source: &Source,
    progress: Option<progress::Sink>,
) -> crate::error::Result<Report> {
    let mut importer = Importer::new(store, mailbox, quota)?;
    if let Some(sink) = progress {
        importer.set_progress(sink);
    }
    match source {
        Source::Mbox { path } => {
            let file = std::fs::File::open(path).map_err(|e| {
                crate::error::Error::invalid(format!("{}: {e}", path.display()), "")
            })?;
            local::import_mbox(&mut importer, std::io::BufReader::new(file), None)?;
        }
        Source::Maildir { path } => local::import_maildir(&mut importer, path)?,
        Source::Imap(imap) => imap_fetch::import_imap(&mut importer, imap)?,
    }
    importer.finish()
}

/// The largest message an import takes; a larger one fails alone, with its size as reason.
pub const MAX_MESSAGE: usize = 64 << 20;

/// The source's special-use names that mean one of our system folders, compared without case
/// (`Sent`, `Drafts`, `Trash`, `Junk` and `Archive` themselves are the store's own names).
const SPECIAL_NAMES: [(&str, &str); 10] = [
    ("sent items", "Sent"),
    ("sent messages", "Sent"),
    ("sent mail", "Sent"),
    ("deleted items", "Trash"),
    ("deleted messages", "Trash"),
    ("spam", "Junk"),
    ("junk e-mail", "Junk"),
    ("junk email", "Junk"),
    ("bulk mail", "Junk"),
    ("archives", "Archive"),
];

/// Our folder name for a source folder: a special-use attribute (`\Sent`, from IMAP's LIST)
/// or a well-known name maps onto our system folder; any other name stays as it is.
pub fn our_folder_name(name: &str, special_use: Option<&str>) -> String {
    let by_use = special_use.and_then(|u| match u.to_ascii_lowercase().as_str() {
        "\\sent" => Some("Sent"),
        "\\drafts" => Some("Drafts"),
        "\\trash" => Some("Trash"),
        "\\junk" => Some("Junk"),
        "\\archive" => Some("Archive"),
        _ => None,
    });
    if let Some(ours) = by_use {
        return ours.to_owned();
    }
    let lower = name.to_lowercase();
    SPECIAL_NAMES
        .iter()
        .find(|(theirs, _)| *theirs == lower)
        .map_or_else(|| name.to_owned(), |(_, ours)| (*ours).to_owned())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's civil algorithm).
pub(crate) fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date (year, month, day) of a day count since 1970-01-01.
pub(crate) fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let month = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (if month <= 2 { yoe + era * 400 + 1 } else { yoe + era * 400 }, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn special_use_and_well_known_names_map_onto_ours() {
        assert_eq!(our_folder_name("Gesendet", Some("\\Sent")), "Sent");
        assert_eq!(our_folder_name("Spam", None), "Junk");
        assert_eq!(our_folder_name("Deleted Items", None), "Trash");
        assert_eq!(our_folder_name("Projects/2024", None), "Projects/2024");
    }

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for days in [-1000, 0, 59, 11_016, 20_000, 30_000] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}
