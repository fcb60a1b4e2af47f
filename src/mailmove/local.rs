//! Importing from local files: an mbox (a file, or the body of the import route) and a Maildir
//! tree, each message offered to the importer as it is read.

use std::io::BufRead;
use std::path::Path;

use super::import::{Importer, Incoming};
use super::maildir;
use super::mbox::{MboxReader, take_bookkeeping};
use crate::error::{Error, Result};

/// Imports every message of an mbox into `folder`, or, without one, into the folder each
/// message's `X-Edgemail-Folder` names (INBOX when it names none).
pub fn import_mbox(
    importer: &mut Importer,
    input: impl BufRead,
    folder: Option<&str>,
) -> Result<()> {
    let mut reader = MboxReader::new(input, super::MAX_MESSAGE);
    let mut index = 0;
    let now = crate::ids::now_ms();
    loop {
        let message = match reader.next_message() {
            Ok(Some(m)) => m,
            Ok(None) => break,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
                return Err(Error::invalid(
                    e.to_string(),
                    "send an mbox file: messages each after a `From ` line",
                ));
            }
            Err(e) => return Err(e.into()),
        };
        let mut raw = message.raw;
        let kept = take_bookkeeping(&mut raw);
        let folder = folder.map(str::to_owned).or(kept.folder).unwrap_or_else(|| "INBOX".into());
        if message.over {
            // Offered empty with its size known: the importer fails it with the limit.
            let reason = format!(
                "message of {} bytes is over the import limit of {} bytes",
                message.size,
                super::MAX_MESSAGE
            );
            importer.fail(index, &folder, reason)?;
        } else {
            let internal = message.date.unwrap_or(now);
            importer
                .offer(index, Incoming { folder, raw, flags: kept.flags, internal, key: None })?;
        }
        index += 1;
    }
    Ok(())
}

/// Imports every folder of a Maildir++ tree.
pub fn import_maildir(importer: &mut Importer, root: &Path) -> Result<()> {
    let folders = maildir::folders(root).map_err(|e| {
        Error::invalid(
            e.to_string(),
            "pass the Maildir's root (the directory holding cur, new and tmp)",
        )
    })?;
    let mut index = 0;
    for folder in folders {
        // Every folder is made, also one without messages.
        let _made = importer.folder(&folder.name)?;
        let files = maildir::files(&folder)?;
        importer.announce(&folder.name, files.len() as u64);
        for file in files {
            let at = index;
            index += 1;
            if file.size > super::MAX_MESSAGE as u64 {
                let reason = format!(
                    "{}: {} bytes is over the import limit of {} bytes",
                    file.path.display(),
                    file.size,
                    super::MAX_MESSAGE
                );
                importer.fail(at, &folder.name, reason)?;
                continue;
            }
            let raw = match std::fs::read(&file.path) {
                Ok(raw) => raw,
                // A file taken away while we read (a client expunged it) is not an error.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    importer.fail(at, &folder.name, format!("{}: {e}", file.path.display()))?;
                    continue;
                }
            };
            let incoming = Incoming {
                folder: folder.name.clone(),
                raw,
                flags: file.flags,
                internal: file.internal,
                key: None,
            };
            importer.offer(at, incoming)?;
        }
    }
    Ok(())
}
