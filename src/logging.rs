//! Tracing to stderr through a background thread. A request formats its log line into a buffer and
//! hands it over; the thread writes whole batches, so logging costs no syscall on the request path.
//! When the queue is full, lines are dropped (and counted) rather than slowing requests down.
//!
//! The thread gathers lines for `GATHER` after the first one of a batch rather than draining at
//! once: a line handed to a thread that waits in `recv` wakes it (a futex call and a switch to
//! that thread, per request under load), one handed to a thread that sleeps does not.

use std::io::Write;
use std::sync::OnceLock;
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
        if !self.buf.is_empty() {
            enqueue(&self.queue, std::mem::take(&mut self.buf));
        }
    }
}

fn enqueue(queue: &SyncSender<Msg>, line: Vec<u8>) {
    if let Err(TrySendError::Full(_)) = queue.try_send(Msg::Line(line)) {
        DROPPED.fetch_add(1, Ordering::Relaxed);
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

/// The subscriber's formatter, writing to `writer`.
fn formatter<W: for<'w> MakeWriter<'w> + Send + Sync + 'static>(
    writer: W,
) -> tracing_subscriber::fmt::SubscriberBuilder<
    tracing_subscriber::fmt::format::DefaultFields,
    tracing_subscriber::fmt::format::Format<tracing_subscriber::fmt::format::Full, Clock>,
    tracing_subscriber::filter::LevelFilter,
    W,
> {
    tracing_subscriber::fmt().with_writer(writer).with_timer(Clock).with_ansi(false)
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
    let builder = formatter(Queue(tx.clone())).with_env_filter(filter);
    let installed = if json {
        builder.json().flatten_event(true).with_current_span(false).with_span_list(false).try_init()
    } else {
        builder.try_init()
    };
    if installed.is_ok() {
        let _ = REQUESTS.set(Requests { queue: tx.clone(), json });
    }
    Guard(tx)
}

/// Where `request` writes its lines, set by `init`.
static REQUESTS: OnceLock<Requests> = OnceLock::new();

struct Requests {
    queue: SyncSender<Msg>,
    json: bool,
}

/// One answered API request, as its log line shows it.
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub status: u16,
    pub micros: u64,
    pub key: &'a str,
}

/// Logs an answered request at INFO under the target `edgemail::request`, byte for byte the line
/// the subscriber would write (a unit test holds the two together), without tracing's dispatch
/// and field visitor: the read path logs a line per request, and they took about a twentieth of
/// its CPU. Filters (`log.level`, `RUST_LOG`) apply as to any event.
pub fn request(r: &Request<'_>) {
    if !tracing::enabled!(target: "edgemail::request", tracing::Level::INFO) {
        return;
    }
    let Some(sink) = REQUESTS.get() else {
        // No subscriber of ours (a test's, or none): whatever is installed gets the event.
        return request_event(r);
    };
    let mut line = Vec::with_capacity(192);
    now(|second, micros| {
        if sink.json {
            json_line(&mut line, second, micros, r);
        } else {
            text_line(&mut line, second, micros, r);
        }
    });
    enqueue(&sink.queue, line);
}

fn request_event(r: &Request<'_>) {
    tracing::info!(
        target: "edgemail::request",
        method = %r.method, path = %r.path, status = r.status, micros = r.micros, key = %r.key,
    );
}

fn timestamp(out: &mut Vec<u8>, second: &str, micros: u32) {
    out.extend_from_slice(second.as_bytes());
    // Six digits, zero-padded: a million added and its leading 1 replaced by the point.
    let mut digits = itoa::Buffer::new();
    let fraction = digits.format(1_000_000 + micros.min(999_999));
    out.push(b'.');
    out.extend_from_slice(&fraction.as_bytes()[1..]);
    out.push(b'Z');
}

fn text_line(out: &mut Vec<u8>, second: &str, micros: u32, r: &Request<'_>) {
    let mut number = itoa::Buffer::new();
    timestamp(out, second, micros);
    out.extend_from_slice(b"  INFO edgemail::request: method=");
    out.extend_from_slice(r.method.as_bytes());
    out.extend_from_slice(b" path=");
    out.extend_from_slice(r.path.as_bytes());
    out.extend_from_slice(b" status=");
    out.extend_from_slice(number.format(r.status).as_bytes());
    out.extend_from_slice(b" micros=");
    out.extend_from_slice(number.format(r.micros).as_bytes());
    out.extend_from_slice(b" key=");
    out.extend_from_slice(r.key.as_bytes());
    out.push(b'\n');
}

fn json_line(out: &mut Vec<u8>, second: &str, micros: u32, r: &Request<'_>) {
    let mut number = itoa::Buffer::new();
    // Strings from the request are escaped as JSON; writing to a Vec cannot fail.
    let string = |out: &mut Vec<u8>, s: &str| {
        let _ = serde_json::to_writer(&mut *out, s);
    };
    out.extend_from_slice(b"{\"timestamp\":\"");
    timestamp(out, second, micros);
    out.extend_from_slice(b"\",\"level\":\"INFO\",\"method\":");
    string(out, r.method);
    out.extend_from_slice(b",\"path\":");
    string(out, r.path);
    out.extend_from_slice(b",\"status\":");
    out.extend_from_slice(number.format(r.status).as_bytes());
    out.extend_from_slice(b",\"micros\":");
    out.extend_from_slice(number.format(r.micros).as_bytes());
    out.extend_from_slice(b",\"key\":");
    string(out, r.key);
    out.extend_from_slice(b",\"target\":\"edgemail::request\"}\n");
}

/// The RFC 3339 UTC timestamp with microseconds that the default timer writes, for a fraction of
/// its cost: the date and time of day are formatted once a second per thread, not per line (on
/// the API's read path the default's calendar arithmetic was a fifth of logging's cost).
struct Clock;

impl FormatTime for Clock {
    fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
        now(|second, micros| write!(w, "{second}.{micros:06}Z"))
    }
}

/// Calls `f` with the current second as `YYYY-MM-DDTHH:MM:SS` (UTC) and the microseconds.
fn now<R>(f: impl FnOnce(&str, u32) -> R) -> R {
    thread_local! {
        static SECOND: std::cell::RefCell<(u64, String)> =
            const { std::cell::RefCell::new((u64::MAX, String::new())) };
    }
    let now =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let seconds = now.as_secs();
    SECOND.with_borrow_mut(|(cached, text)| {
        if *cached != seconds {
            let at = i64::try_from(seconds).ok().and_then(|s| jiff::Timestamp::from_second(s).ok());
            *text = at.map_or_else(String::new, |t| t.strftime("%Y-%m-%dT%H:%M:%S").to_string());
            *cached = seconds;
        }
        f(text, now.subsec_micros())
    })
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

    #[test]
    fn a_request_line_is_the_line_the_subscriber_writes() {
        let requests = [
            Request { method: "GET", path: "/v1/mailboxes", status: 200, micros: 91, key: "k_1" },
            Request { method: "PATCH", path: "/v1/a\"b\\c", status: 404, micros: 0, key: "-" },
        ];
        for json in [false, true] {
            for (r, micros) in requests.iter().zip([51, 999_999]) {
                let mut ours = Vec::new();
                let second = "2026-11-25T00:13:22";
                if json {
                    json_line(&mut ours, second, micros, r);
                } else {
                    text_line(&mut ours, second, micros, r);
                }
                let theirs = through_tracing(json, &format!("{second}.{micros:06}Z"), r);
                assert_eq!(String::from_utf8_lossy(&ours), theirs);
            }
        }
    }

    struct Fixed(String);

    impl FormatTime for Fixed {
        fn format_time(&self, w: &mut Writer<'_>) -> std::fmt::Result {
            w.write_str(&self.0)
        }
    }

    #[derive(Clone, Default)]
    struct Capture(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Capture {
        fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
            self.0.lock().expect("not poisoned").extend_from_slice(data); // ok: test
            Ok(data.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// What the installed subscriber writes for `r`, with the time fixed to `at`.
    fn through_tracing(json: bool, at: &str, r: &Request<'_>) -> String {
        let out = Capture::default();
        let writer = {
            let out = out.clone();
            move || out.clone()
        };
        let builder = formatter(writer).with_timer(Fixed(at.to_owned()));
        let dispatch = if json {
            let json = builder.json().flatten_event(true).with_current_span(false);
            tracing::Dispatch::new(json.with_span_list(false).finish())
        } else {
            tracing::Dispatch::new(builder.finish())
        };
        tracing::dispatcher::with_default(&dispatch, || request_event(r));
        let bytes = out.0.lock().expect("not poisoned").clone(); // ok: test
        String::from_utf8(bytes).expect("utf-8") // ok: test
    }
}
