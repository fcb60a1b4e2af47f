//! Administrative commands (domains and keys) and the channel the command line uses to reach a
//! running server. redb admits one process per file, so while `serve` runs, the CLI sends its
//! command over a Unix socket in the data directory (mode 0600: only the owner can administer) and
//! the server executes it; otherwise the CLI opens the file itself. Both run `execute`.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::Store;

/// Name of the socket inside the data directory.
pub const SOCKET: &str = "admin.sock";

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Command {
    DomainAdd {
        name: String,
    },
    DomainList,
    DomainRemove {
        name: String,
    },
    KeyCreate {
        name: String,
        domain: Option<String>,
    },
    KeyList,
    KeyRevoke {
        id: String,
    },
    /// Write a consistent copy of the data to this (absolute) path, replacing a file there only
    /// when `force`.
    Backup {
        to: PathBuf,
        #[serde(default)]
        force: bool,
    },
    /// Check the integrity of what is committed (on a copy: the live file cannot be checked).
    Check,
    /// Train the junk filter of `mailbox` (`None`: the global model) on the messages of the
    /// (absolute) directories `spam` and `ham`.
    Train {
        mailbox: Option<String>,
        spam: Option<PathBuf>,
        ham: Option<PathBuf>,
    },
    /// Import mail into `mailbox` (`edgemail import`).
    Import {
        mailbox: String,
        source: crate::mailmove::Source,
    },
    /// Export every folder of `mailbox` (`edgemail export`) to an (absolute) path.
    Export {
        mailbox: String,
        mbox: Option<PathBuf>,
        maildir: Option<PathBuf>,
    },
}

impl Command {
    /// Whether the command changes which keys are valid.
    pub fn changes_keys(&self) -> bool {
        matches!(
            self,
            Command::DomainRemove { .. } | Command::KeyCreate { .. } | Command::KeyRevoke { .. }
        )
    }
}

/// A line of progress the server sends before its answer.
#[derive(Debug, Serialize, Deserialize)]
struct Progress {
    progress: crate::mailmove::progress::Tick,
}

#[derive(Debug, Serialize, Deserialize)]
struct Answer {
    ok: bool,
    output: String,
}

pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(SOCKET)
}

/// Runs a command against an open store and returns what to print.
/// `bound`: the ports of the mail client listeners (the configured ones when no server runs),
/// for the SRV records of the zone `domain add` prints. `progress`: where an import's progress
/// goes.
pub fn execute(
    store: &Store,
    command: Command,
    config: &crate::config::Config,
    bound: crate::hosting::Bound,
    progress: Option<crate::mailmove::progress::Sink>,
) -> Result<String> {
    match command {
        Command::DomainAdd { name } => {
            let name = crate::address::normalize_domain(&name).map_err(|e| {
                Error::invalid(format!("invalid domain: {e}"), "pass a name such as example.com")
            })?;
            let domain = crate::dkim::generate(&name)?;
            let lines = crate::dkim::full_zone(&domain, config, bound);
            store.write_blocking(move |w| w.add_domain(&domain))?;
            Ok(format!("added {name}\n{}\n", lines.join("\n")))
        }
        Command::DomainList => {
            let domains = store.read_blocking(|r| r.domains())?;
            let mut out = String::new();
            for d in domains {
                let selectors: Vec<_> = d.dkim.iter().map(|k| k.selector.as_str()).collect();
                out.push_str(&format!("{}\tdkim={}\n", d.name, selectors.join(",")));
            }
            Ok(out)
        }
        Command::Train { mailbox, spam, ham } => {
            let mailbox = mailbox.map(|m| m.trim().to_ascii_lowercase());
            let trained = crate::junk::train_dirs(
                store,
                mailbox.as_deref(),
                spam.as_deref(),
                ham.as_deref(),
            )?;
            Ok(trained.describe(mailbox.as_deref()))
        }
        Command::Import { mailbox, source } => {
            let quota = config.mailbox.quota_bytes;
            Ok(crate::mailmove::import(store, &mailbox, quota, &source, progress)?.describe())
        }
        Command::Export { mailbox, mbox, maildir } => {
            use crate::mailmove::export::{Target, export};
            let target = match (mbox, maildir) {
                (Some(file), _) => Target::Mbox(file),
                (None, Some(dir)) => Target::Maildir(dir),
                (None, None) => {
                    return Err(Error::invalid("nothing to export to", "--mbox or --maildir"));
                }
            };
            Ok(export(store, &mailbox, &target)?.describe())
        }
        Command::DomainRemove { name } => {
            let name = name.trim().to_ascii_lowercase();
            let owned = name.clone();
            let r = store.write_blocking(move |w| w.remove_domain(&owned))?;
            Ok(format!(
                "removed {name}: {} mailboxes, {} emails, {} contacts, {} sender groups, {} keys \
                 revoked\n",
                r.mailboxes, r.emails, r.contacts, r.sender_groups, r.keys_revoked
            ))
        }
        Command::KeyCreate { name, domain } => {
            let name = name.trim().to_owned();
            if name.is_empty() {
                return Err(Error::invalid("the key needs a name", "pass --name"));
            }
            let domain = domain.map(|d| d.trim().to_ascii_lowercase());
            let (key, hash, secret) = crate::auth::new_key(&name, domain);
            let scope = key.domain.clone().unwrap_or_else(|| "org-wide".into());
            let id = key.id.clone();
            store.write_blocking(move |w| w.create_key(&key, &hash))?;
            Ok(format!(
                "created key {id} ({scope}); it is shown only now, store it safely:\n{secret}\n"
            ))
        }
        Command::KeyList => {
            let keys = store.read_blocking(|r| r.keys())?;
            let mut out = String::new();
            for k in keys {
                let scope = k.domain.as_deref().unwrap_or("org-wide");
                let state = if k.revoked_at.is_some() { "revoked" } else { "active" };
                out.push_str(&format!("{}\t{}\t{}\t{}…\t{state}\n", k.id, k.name, scope, k.prefix));
            }
            Ok(out)
        }
        Command::Backup { to, force } => {
            let checked = store.backup(&to, force)?;
            Ok(format!("backed up to {} ({})\n", to.display(), describe(&checked)))
        }
        Command::Check if store.is_shared() => {
            // PostgreSQL checks its own pages; what is ours to check is that the store answers.
            store.read_blocking(|r| r.ping())?;
            Ok("the PostgreSQL store answers (its integrity is PostgreSQL's to check)\n".into())
        }
        Command::Check => {
            let copy = store.path().with_extension("redb.check");
            let checked = store.backup(&copy, true);
            let _ = std::fs::remove_file(&copy);
            Ok(format!("{}: ok ({})\n", store.path().display(), describe(&checked?)))
        }
        Command::KeyRevoke { id } => {
            let key =
                store.write_blocking(move |w| w.revoke_key(id.trim(), crate::ids::now_ms()))?;
            Ok(format!("revoked {}\n", key.id))
        }
    }
}

/// One line about a checked file.
pub fn describe(checked: &crate::store::Checked) -> String {
    let repaired = if checked.repaired { ", repaired after an unclean shutdown" } else { "" };
    format!("{} bytes, schema version {}{repaired}", checked.bytes, checked.schema_version)
}

/// Sends `command` to the server listening on `socket`. `Ok(None)` when no server listens there.
pub fn send(socket: &Path, command: &Command) -> Result<Option<String>> {
    let mut stream = match UnixStream::connect(socket) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e.into()),
    };
    let mut line = serde_json::to_vec(command).map_err(Error::internal)?;
    line.push(b'\n');
    stream.write_all(&line)?;
    let mut reader = BufReader::new(stream);
    let mut terminal = crate::mailmove::progress::Terminal::default();
    loop {
        let mut reply = String::new();
        reader.read_line(&mut reply)?;
        // An import's progress comes as lines before the answer.
        if let Ok(Progress { progress }) = serde_json::from_str::<Progress>(&reply) {
            terminal.show(&progress);
            continue;
        }
        let answer: Answer = serde_json::from_str(&reply)
            .map_err(|e| Error::internal(format!("unreadable answer from the server: {e}")))?;
        return if answer.ok {
            Ok(Some(answer.output))
        } else {
            Err(Error::Unavailable(answer.output))
        };
    }
}

/// Serves the admin socket until shutdown. `after` runs after each command that changed keys.
pub async fn serve_socket(
    listener: tokio::net::UnixListener,
    app: crate::state::App,
    mut shutdown: crate::shutdown::Shutdown,
) {
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!(error = %e, "admin accept failed");
                    continue;
                }
            },
            _ = shutdown.wait() => break,
        };
        let app = app.clone();
        tokio::spawn(async move {
            if let Err(e) = answer(stream, app).await {
                tracing::warn!(error = %e, "admin command failed");
            }
        });
    }
}

async fn answer(stream: tokio::net::UnixStream, app: crate::state::App) -> Result<()> {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
    let (read, mut write) = stream.into_split();
    let mut line = String::new();
    tokio::io::BufReader::new(read.take(64 * 1024)).read_line(&mut line).await?;
    let outcome = match serde_json::from_str::<Command>(&line) {
        Ok(command) => {
            tracing::info!(?command, "admin command");
            // Progress lines go out while the command runs (a tick a second at most).
            let (ticks, mut sent) = tokio::sync::mpsc::unbounded_channel();
            let sink: crate::mailmove::progress::Sink = Box::new(move |progress| {
                let _ = ticks.send(progress);
            });
            let mut job = tokio::task::spawn_blocking(move || {
                let refresh = command.changes_keys();
                let bound = app.bound.get().copied().unwrap_or_default();
                let out = execute(&app.store, command, &app.config, bound, Some(sink));
                if refresh && out.is_ok() {
                    app.keys.reload(&app.store)?;
                }
                out
            });
            loop {
                tokio::select! {
                    done = &mut job => break done.map_err(Error::internal)?,
                    Some(progress) = sent.recv() => {
                        let mut bytes = serde_json::to_vec(&Progress { progress })
                            .map_err(Error::internal)?;
                        bytes.push(b'\n');
                        // A client gone away does not stop the command.
                        let _ = write.write_all(&bytes).await;
                    }
                }
            }
        }
        Err(e) => Err(Error::invalid(format!("unknown admin command: {e}"), "")),
    };
    let answer = match outcome {
        Ok(output) => Answer { ok: true, output },
        Err(e) => Answer { ok: false, output: e.to_string() },
    };
    let mut bytes = serde_json::to_vec(&answer).map_err(Error::internal)?;
    bytes.push(b'\n');
    write.write_all(&bytes).await?;
    Ok(())
}
