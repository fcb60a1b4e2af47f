//! Reading a Maildir++ tree as Dovecot and Courier lay it out: the root's `cur` and `new` are
//! INBOX, each `.Name` (levels split by `.`, non-ASCII in modified UTF-7) is a folder; a file's
//! flags are the letters after `:2,` of its name (a-z: the keywords the folder's
//! `dovecot-keywords` file numbers), its internal date its modification time (else the seconds
//! its name starts with). Folders and files are read in name order, files one at a time.

use std::path::{Path, PathBuf};

use super::flags::from_maildir_info;

/// The most folders and files read from one tree (a hostile tree cannot make us list forever).
const MAX_FOLDERS: usize = 10_000;
const MAX_FILES: usize = 10_000_000;

/// One folder of the tree: our name for it, its directory and its keywords by letter.
#[derive(Debug, Clone)]
pub struct MaildirFolder {
    pub name: String,
    pub dir: PathBuf,
    pub keywords: Vec<String>,
}

/// One message file.
#[derive(Debug, Clone)]
pub struct MaildirFile {
    pub path: PathBuf,
    pub flags: Vec<String>,
    /// Unix milliseconds.
    pub internal: u64,
    pub size: u64,
}

/// The folders of a Maildir++ tree, INBOX first.
pub fn folders(root: &Path) -> std::io::Result<Vec<MaildirFolder>> {
    if !root.join("cur").is_dir() && !root.join("new").is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} is not a Maildir (no cur or new directory)", root.display()),
        ));
    }
    let mut out = vec![folder("INBOX".into(), root.to_path_buf())];
    let mut names = Vec::new();
    for entry in std::fs::read_dir(root)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(inner) = name.strip_prefix('.') else { continue };
        let path = entry.path();
        let mail_dir = path.join("cur").is_dir() || path.join("new").is_dir();
        if inner.is_empty() || inner == "." || !mail_dir {
            continue;
        }
        names.push(inner.to_owned());
        if names.len() > MAX_FOLDERS {
            return Err(std::io::Error::other(format!("more than {MAX_FOLDERS} folders")));
        }
    }
    names.sort();
    for inner in names {
        let levels: Vec<String> = inner
            .split('.')
            .map(|l| super::utf7::decode(l).unwrap_or_else(|| l.to_owned()))
            .collect();
        let ours = super::our_folder_name(&levels.join("/"), None);
        out.push(folder(ours, root.join(format!(".{inner}"))));
    }
    Ok(out)
}

fn folder(name: String, dir: PathBuf) -> MaildirFolder {
    let keywords = read_keywords(&dir.join("dovecot-keywords"));
    MaildirFolder { name, dir, keywords }
}

/// Dovecot's `dovecot-keywords`: lines of `N name`, N the letter's number (0 is `a`).
fn read_keywords(path: &Path) -> Vec<String> {
    let Ok(text) = std::fs::read_to_string(path) else { return Vec::new() };
    let mut out = vec![String::new(); super::flags::MAX_LETTER_KEYWORDS];
    for line in text.lines().take(1000) {
        let Some((n, name)) = line.split_once(' ') else { continue };
        let Ok(n) = n.parse::<usize>() else { continue };
        if n < out.len() && super::flags::valid_keyword(name.trim()) {
            out[n] = name.trim().to_owned();
        }
    }
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

/// The message files of a folder: `cur` then `new`, each in name order.
pub fn files(folder: &MaildirFolder) -> std::io::Result<Vec<MaildirFile>> {
    let mut out = Vec::new();
    for sub in ["cur", "new"] {
        let dir = folder.dir.join(sub);
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        let mut found = Vec::new();
        for entry in entries {
            let entry = entry?;
            let meta = entry.metadata()?;
            if !meta.is_file() {
                continue;
            }
            found.push((entry.file_name().to_string_lossy().into_owned(), meta));
            if found.len() + out.len() > MAX_FILES {
                return Err(std::io::Error::other(format!("more than {MAX_FILES} files")));
            }
        }
        found.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, meta) in found {
            let info = name.rsplit_once(":2,").or_else(|| name.rsplit_once("!2,"));
            let flags =
                info.map(|(_, i)| from_maildir_info(i, &folder.keywords)).unwrap_or_default();
            let modified =
                meta.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok());
            let internal = modified
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
                .or_else(|| name_seconds(&name).map(|s| s * 1000))
                .unwrap_or(0);
            out.push(MaildirFile { path: dir.join(&name), flags, internal, size: meta.len() });
        }
    }
    Ok(out)
}

/// The seconds a delivery name starts with (`1700000000.M1P2.host`).
fn name_seconds(name: &str) -> Option<u64> {
    name.split('.').next()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_flags_keywords_and_dates_are_read() {
        let root = std::env::temp_dir().join(crate::ids::new_id("maildir-read"));
        for dir in ["cur", "new", "tmp", ".Sent/cur", ".Arbeit.&AMQ-rger/cur", ".Spam/new"] {
            std::fs::create_dir_all(root.join(dir)).expect("dir"); // ok: test
        }
        std::fs::write(root.join(".Sent/dovecot-keywords"), "0 $Work\n1 later\n").expect("kw"); // ok: test
        std::fs::write(root.join(".Sent/cur/1600000000.M1P1.h,S=5:2,RSb"), "A: b\n").expect("f"); // ok: test
        std::fs::write(root.join("new/1600000001.M2P1.h"), "A: b\n").expect("f"); // ok: test
        let all = folders(&root).expect("folders"); // ok: test
        let names: Vec<&str> = all.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["INBOX", "Arbeit/Ärger", "Sent", "Junk"]);
        let sent = files(&all[2]).expect("files"); // ok: test
        assert_eq!(sent[0].flags, ["\\Answered", "\\Seen", "later"]);
        assert!(sent[0].internal > 1_600_000_000_000);
        assert_eq!(files(&all[0]).expect("files")[0].flags, Vec::<String>::new()); // ok: test
        assert!(folders(&root.join("cur")).is_err());
        let _ = std::fs::remove_dir_all(&root);
    }
}
