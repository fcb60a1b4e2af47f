//! Tracing to stderr through a background thread. A request formats its log line into a buffer and
//! hands it over; the thread writes whole batches, so logging costs no syscall on the request path.
//! When the queue is full, lines are dropped (and counted) rather than slowing requests down.
//!
//! The thread gathers lines for `GATHER` after the first one of a batch rather than draining at
//! once: a line handed to a thread that waits in `recv` wakes it (a futex call and a switch to
//! that thread, per request under load), one handed to a thread that sleeps does not.

use std::io::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::time::Duration;

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime;

const QUEUE: usize = 16_384;
/// How long lines gather before a write: short enough to read as live, long enough that a busy
/// server's lines go out in batches of hundreds.
const GATHER: Duration = Duration::from_millis(5);
static DROPPED: AtomicU64 = AtomicU64::new(0);

enum Msg {
    Line(Vec<u8>),
    Flush(SyncSender<()>),
}

#[derive(Clone)]
struct Queue(SyncSender<Msg>);

pub struct LineWriter {
    buf: Vec<u8>,
    queue: SyncSender<Msg>,
}

impl Write for LineWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let line = std::mem::take(&mut self.buf);
        if let Err(TrySendError::Full(_)) = self.queue.try_send(Msg::Line(line)) {
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

impl<'a> MakeWriter<'a> for Queue {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> LineWriter {
        LineWriter { buf: Vec::with_capacity(160), queue: self.0.clone() }
    }
}

/// Flushes queued lines when dropped; keep it alive for the life of the process.
pub struct Guard(SyncSender<Msg>);

impl Drop for Guard {
    fn drop(&mut self) {
        let (done, wait) = sync_channel(1);
        if self.0.send(Msg::Flush(done)).is_ok() {
            let _ = wait.recv_timeout(Duration::from_secs(2));
        }
    }
}

/// Installs the global subscriber with `filter` (e.g. `info`); `RUST_LOG` overrides it. With
/// `json`, each event is one JSON object on its own line: `timestamp`, `level`, `target`,
/// `message` and the event's fields at the top level (their names are listed in the README).
pub fn init(filter: &str, json: bool) -> Guard {
    let (tx, rx) = sync_channel(QUEUE);
    let _ = std::thread::Builder::new().name("log-writer".into()).spawn(move || drain(rx));
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(filter))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Queue(tx.clone()))
        .with_timer(Clock)
        .with_ansi(false);
    let _ = if json {
        builder.json().flatten_event(true).with_current_span(false).with_span_list(false).try_init()
    } else {
        builder.try_init()
    };
    Guard(tx)
}

/// The RFC 3339 UTC timestamp with microseconds that the default timer writes, for a fraction of
/// its cost: the date and time of day are formatted once a second per thread, not per line (on
/// the API's read path the default's calendar arithmetic was a fifth of logging's cost).
struct Clock;

impl FormatTime for Clock {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        thread_local! {
            static SECOND: std::cell::RefCell<(u64, String)> =
                const { std::cell::RefCell::new((u64::MAX, String::new())) };
        }
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        let seconds = now.as_secs();
        SECOND.with_borrow_mut(|(cached, text)| {
            if *cached != seconds {
                let at =
                    i64::try_from(seconds).ok().and_then(|s| jiff::Timestamp::from_second(s).ok());
                *text =
                    at.map_or_else(String::new, |t| t.strftime("%Y-%m-%dT%H:%M:%S").to_string());
                *cached = seconds;
            }
            write!(w, "{text}.{:06}Z", now.subsec_micros())
        })
    }
}

fn drain(rx: Receiver<Msg>) {
    // Not `stderr().lock()`: holding the lock would block every other stderr writer for good.
    let mut out = std::io::BufWriter::with_capacity(64 * 1024, std::io::stderr());
    let mut reported = 0;
    while let Ok(msg) = rx.recv() {
        // Lines and flush requests that arrive meanwhile find this thread asleep, not waiting.
        if matches!(msg, Msg::Line(_)) {
            std::thread::sleep(GATHER);
        }
        let mut next = Some(msg);
        while let Some(msg) = next.take() {
            match msg {
                Msg::Line(line) => {
                    let _ = out.write_all(&line);
                }
                Msg::Flush(done) => {
                    let _ = out.flush();
                    let _ = done.send(());
                }
            }
            next = rx.try_recv().ok();
        }
        let dropped = DROPPED.load(Ordering::Relaxed);
        if dropped != reported {
            let _ = writeln!(out, "WARN log queue full: {} lines dropped", dropped - reported);
            reported = dropped;
        }
        let _ = out.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cached_clock_writes_what_the_default_timer_writes() {
        let (mut ours, mut theirs) = (String::new(), String::new());
        Clock.format_time(&mut Writer::new(&mut ours)).expect("formatted"); // ok: test
        let default = tracing_subscriber::fmt::time::SystemTime;
        default.format_time(&mut Writer::new(&mut theirs)).expect("formatted"); // ok: test
        // Same shape, `2026-11-25T00:13:22.251996Z`, and the same second unless one just turned.
        assert_eq!(ours.len(), theirs.len(), "{ours} / {theirs}");
        assert_eq!(ours.len(), 27, "{ours}");
        assert!(ours.ends_with('Z') && ours.as_bytes()[19] == b'.', "{ours}");
        let second = |s: &str| s[..19].to_owned();
        let again = {
            let mut s = String::new();
            Clock.format_time(&mut Writer::new(&mut s)).expect("formatted"); // ok: test
            s
        };
        assert!(second(&ours) == second(&theirs) || second(&again) == second(&theirs));
    }
}
