//! Training from directories of messages (one RFC 5322 message per file), for
//! `edgemail train`: run by the CLI on the store, or by a running server that the CLI reached
//! through its admin socket. A server's cached models see the new generation on their next
//! classification.

use std::path::{Path, PathBuf};

use super::tokens::features;
use crate::store::{JunkTraining, Result, Store};

/// Messages written per store write: one fsync for many, where one per message would make a
/// corpus of thousands take minutes.
const BATCH: usize = 64;
/// Files larger than this are skipped: no message worth training on is that large, and the
/// tokenizer reads only its start anyway.
const MAX_FILE: u64 = 64 << 20;

/// What a training run did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Trained {
    pub spam: usize,
    pub ham: usize,
    /// A line per file that could not be read.
    pub warnings: Vec<String>,
}

impl Trained {
    /// What `edgemail train` prints.
    pub fn describe(&self, scope: Option<&str>) -> String {
        let mut out = String::new();
        for w in &self.warnings {
            out.push_str(&format!("warning: {w}\n"));
        }
        out.push_str(&format!(
            "trained {} spam and {} ham messages into {}\n",
            self.spam,
            self.ham,
            scope.map_or("the global model".to_owned(), |m| format!("the model of {m}"))
        ));
        out
    }
}

/// Trains the files of `spam` as spam and of `ham` as ham into `scope` (a mailbox, `None` for
/// the global model). Files are read in name order; hidden files and directories are passed
/// over, unreadable files skipped with a warning.
pub fn train_dirs(
    store: &Store,
    scope: Option<&str>,
    spam: Option<&Path>,
    ham: Option<&Path>,
) -> Result<Trained> {
    let mut trained = Trained::default();
    let scope = scope.unwrap_or("").to_owned();
    for (dir, is_spam) in [(spam, true), (ham, false)] {
        let Some(dir) = dir else { continue };
        let files = list(dir).map_err(|source| crate::store::Error::Io {
            context: format!("cannot list {}", dir.display()),
            source,
        })?;
        for chunk in files.chunks(BATCH) {
            let mut batch = Vec::with_capacity(chunk.len());
            for path in chunk {
                match read(path) {
                    Ok(raw) => batch.push(features(&raw).hashes),
                    Err(e) => trained.warnings.push(format!("skipped {}: {e}", path.display())),
                }
            }
            let (at, n) = (scope.clone(), batch.len());
            let training = JunkTraining { learn: Some(is_spam), unlearn: None };
            store.write_blocking(move |w| -> Result<()> {
                for hashes in &batch {
                    w.train_junk(&at, hashes, training)?;
                }
                Ok(())
            })?;
            if is_spam {
                trained.spam += n;
            } else {
                trained.ham += n;
            }
        }
    }
    Ok(trained)
}

fn list(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let hidden = entry.file_name().to_string_lossy().starts_with('.');
        if !hidden && entry.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()) {
            files.push(entry.path());
        }
    }
    files.sort();
    Ok(files)
}

fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    let size = std::fs::metadata(path)?.len();
    if size > MAX_FILE {
        return Err(std::io::Error::other(format!("larger than {} MiB", MAX_FILE >> 20)));
    }
    std::fs::read(path)
}
