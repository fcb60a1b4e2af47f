//! Progress of an import: the importer counts what each folder gives and hands out a `Tick` at
//! most once a second and at the end of each folder; `Terminal` shows ticks on stderr. A running
//! server sends its ticks over the admin socket, so the command line shows them either way.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

/// How often a folder's count is handed out while it runs.
const EVERY: Duration = Duration::from_secs(1);
/// How often a terminal that is not a TTY (a log file, a pipe) gets a line while a folder runs.
const EVERY_UNATTENDED: Duration = Duration::from_secs(10);

/// Where one folder stands.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Tick {
    pub folder: String,
    pub done: u64,
    /// 0 when the source does not say beforehand (an mbox file).
    pub total: u64,
    /// Messages per second in this folder so far.
    pub rate: f64,
    /// The folder is finished.
    pub end: bool,
}

impl Tick {
    pub fn line(&self) -> String {
        let count = if self.total > 0 {
            format!("{}/{}", self.done, self.total)
        } else {
            self.done.to_string()
        };
        let end = if self.end { ", done" } else { "" };
        format!("{}: {count} messages, {:.0} msgs/s{end}", self.folder, self.rate)
    }
}

/// Where ticks go.
pub type Sink = Box<dyn FnMut(Tick) + Send>;

/// Counts the messages of the folder being imported and hands ticks to a sink.
pub struct Meter {
    sink: Option<Sink>,
    folder: Option<String>,
    done: u64,
    total: u64,
    started: Instant,
    last: Instant,
}

impl Meter {
    pub fn new(sink: Option<Sink>) -> Meter {
        let now = Instant::now();
        Meter { sink, folder: None, done: 0, total: 0, started: now, last: now }
    }

    /// The folder of the next messages; a new one ends the one before. `total`: the messages
    /// it will give, when known (0 otherwise).
    pub fn folder(&mut self, name: &str, total: u64) {
        if self.folder.as_deref() == Some(name) {
            if total > 0 {
                self.total = total;
            }
            return;
        }
        self.end();
        let now = Instant::now();
        (self.folder, self.done, self.total, self.started, self.last) =
            (Some(name.to_owned()), 0, total, now, now);
    }

    /// One message of `folder` handled (stored, skipped or failed).
    pub fn step(&mut self, folder: &str) {
        self.folder(folder, 0);
        self.done += 1;
        if self.last.elapsed() >= EVERY {
            self.last = Instant::now();
            self.emit(false);
        }
    }

    /// Ends the current folder.
    pub fn end(&mut self) {
        if self.folder.is_some() {
            self.emit(true);
        }
        self.folder = None;
    }

    fn emit(&mut self, end: bool) {
        let (Some(sink), Some(folder)) = (self.sink.as_mut(), self.folder.as_ref()) else {
            return;
        };
        let seconds = self.started.elapsed().as_secs_f64().max(1e-3);
        #[allow(clippy::cast_precision_loss)] // ok: a rate to show
        let rate = self.done as f64 / seconds;
        sink(Tick { folder: folder.clone(), done: self.done, total: self.total, rate, end });
    }
}

/// Shows ticks on stderr: a TTY gets one line rewritten in place and kept at each folder's end;
/// anything else gets a line per finished folder and one per folder every ten seconds, so a
/// log is not flooded.
pub struct Terminal {
    tty: bool,
    last: Option<Instant>,
}

impl Default for Terminal {
    fn default() -> Self {
        Terminal { tty: std::io::stderr().is_terminal(), last: None }
    }
}

impl Terminal {
    pub fn show(&mut self, tick: &Tick) {
        let mut err = std::io::stderr().lock();
        // A failed write to stderr has nowhere to be reported; the import goes on.
        let _ = if self.tty {
            let end = if tick.end { "\n" } else { "" };
            write!(err, "\r\x1b[K{}{end}", tick.line())
        } else if tick.end || self.last.is_none_or(|t| t.elapsed() >= EVERY_UNATTENDED) {
            self.last = (!tick.end).then(Instant::now);
            writeln!(err, "{}", tick.line())
        } else {
            Ok(())
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    #[test]
    fn a_folder_ends_with_its_count_and_the_next_starts_from_zero() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let into = Arc::clone(&seen);
        let mut meter = Meter::new(Some(Box::new(move |t: Tick| {
            into.lock().expect("lock").push(t); // ok: test
        })));
        meter.folder("INBOX", 3);
        for _ in 0..3 {
            meter.step("INBOX");
        }
        meter.step("Sent");
        meter.end();
        let seen = seen.lock().expect("lock").clone(); // ok: test
        let ends: Vec<_> = seen.iter().filter(|t| t.end).collect();
        assert_eq!(ends.len(), 2);
        assert_eq!((ends[0].folder.as_str(), ends[0].done, ends[0].total), ("INBOX", 3, 3));
        assert_eq!((ends[1].folder.as_str(), ends[1].done, ends[1].total), ("Sent", 1, 0));
        assert_eq!(ends[0].line().split(',').next(), Some("INBOX: 3/3 messages"));
    }
}
