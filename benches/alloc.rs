//! Heap allocations per HTTP request, counted in the server itself: `cargo bench --bench alloc`.
//!
//! The whole server runs in this process on a throwaway data directory (the same `Server` that
//! `edgemail serve` runs, request log on at `info`), with the global allocator wrapped by a counter.
//! A client on its own thread sends each request over one keep-alive connection from bytes made
//! once and reads each answer into one reused buffer, so it allocates nothing itself: what the
//! counter sees between the first and the last request is the server's work (plus whatever its
//! background tasks did meanwhile, measured over the same time with no requests and printed too).
//!
//! Prints, per scenario, allocations and bytes allocated per request. Figures are in the README's
//! Performance section; compare builds by running this bench on each.

use std::alloc::{GlobalAlloc, Layout};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use edgemail::config::Config;
use edgemail::store::{Options, Store};
use edgemail::{app, shutdown};

/// mimalloc, as `edgemail serve` uses, counting each allocation (a `realloc` counts as one).
struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
static BYTES: AtomicU64 = AtomicU64::new(0);

fn count(size: usize) {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    BYTES.fetch_add(size as u64, Ordering::Relaxed);
}

// A global allocator can only be written with `unsafe`: each method hands the caller's contract
// on to mimalloc unchanged.
#[allow(unsafe_code)]
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { mimalloc::MiMalloc.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size());
        unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { mimalloc::MiMalloc.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size);
        unsafe { mimalloc::MiMalloc.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const DOMAIN: &str = "alloc.test";
/// Requests a scenario times (`ALLOC_REQUESTS` to change it, say for a profiler).
fn request_count() -> u64 {
    std::env::var("ALLOC_REQUESTS").ok().and_then(|n| n.parse().ok()).unwrap_or(20_000)
}

fn must<T, E: std::fmt::Display>(what: &str, r: Result<T, E>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: {e}"),
    }
}

/// A data directory with a domain, 10 mailboxes, 50 messages in one of them and a key.
fn seed(dir: &std::path::Path) -> (Store, String) {
    let store =
        must("open", Store::open_with(dir, Options { cache_size: 16 << 20, ..Options::default() }));
    let domain = must("dkim", edgemail::dkim::generate(DOMAIN));
    must("domain", store.write_blocking(move |w| w.add_domain(&domain)));
    must(
        "mailboxes",
        store.write_blocking(|w| -> edgemail::store::Result<()> {
            for i in 0..10 {
                w.create_mailbox(DOMAIN, &format!("user{i}"), Some(format!("User {i}")))?;
            }
            Ok(())
        }),
    );
    let (key, hash, secret) = edgemail::auth::new_key("alloc", Some(DOMAIN.into()));
    must("key", store.write_blocking(move |w| w.create_key(&key, &hash)));
    (store, secret)
}

/// One keep-alive connection that sends `request` and reads each whole answer.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let stream = must("connect", TcpStream::connect(addr));
        let _ = stream.set_nodelay(true);
        Client { stream, buf: vec![0; 256 * 1024] }
    }

    /// Sends `request` and reads the answer; returns its status line's code.
    fn call(&mut self, request: &[u8]) -> u16 {
        must("write", self.stream.write_all(request));
        let mut have = 0;
        loop {
            let n = must("read", self.stream.read(&mut self.buf[have..]));
            assert!(n > 0, "the server closed the connection");
            have += n;
            let head = &self.buf[..have];
            let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
            let text = std::str::from_utf8(&head[..end]).unwrap_or("");
            let length = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase().strip_prefix("content-length:").map(str::to_owned)
                })
                .and_then(|v| v.trim().parse::<usize>().ok())
                .unwrap_or(0);
            if have >= end + 4 + length {
                return text.get(9..12).and_then(|c| c.parse().ok()).unwrap_or(0);
            }
        }
    }
}

/// Allocations and bytes per request of `requests` sent `request_count()` times (after a warm-up), and the
/// background's allocations over the same time without requests.
fn measure(addr: SocketAddr, name: &str, requests: &[Vec<u8>]) {
    // `ALLOC_ONLY=contacts` runs the scenarios whose name holds that text, say for a profiler.
    if std::env::var("ALLOC_ONLY").is_ok_and(|only| !name.contains(&only)) {
        return;
    }
    let mut client = Client::connect(addr);
    for request in requests.iter().cycle().take(2_000) {
        let status = client.call(request);
        assert!(status < 300, "{name}: status {status}");
    }
    let (a0, b0, t0) =
        (ALLOCATIONS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed), Instant::now());
    let n = request_count();
    for request in requests.iter().cycle().take(n as usize) {
        client.call(request);
    }
    let took = t0.elapsed();
    let (a1, b1) = (ALLOCATIONS.load(Ordering::Relaxed), BYTES.load(Ordering::Relaxed));
    std::thread::sleep(took);
    let idle = ALLOCATIONS.load(Ordering::Relaxed) - a1;
    println!(
        "{name}: {:.1} allocations, {:.0} bytes a request ({n} requests in {took:.2?}; \
         {idle} allocations by the background over the same time without requests)",
        (a1 - a0) as f64 / n as f64,
        (b1 - b0) as f64 / n as f64,
    );
}

fn request(method: &str, path: &str, key: &str, body: Option<&str>) -> Vec<u8> {
    let mut out =
        format!("{method} {path} HTTP/1.1\r\nHost: bench\r\nAuthorization: Bearer {key}\r\n");
    if let Some(body) = body {
        out.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    }
    out.push_str("\r\n");
    out.push_str(body.unwrap_or(""));
    out.into_bytes()
}

fn main() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let _log = edgemail::logging::init("info", false);
    let dir = std::env::temp_dir().join(format!("edgemail-bench-alloc-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (store, key) = seed(&dir);
    let mut config = Config { data_dir: dir.clone(), ..Config::default() };
    config.http.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    config.smtp.listen = SocketAddr::from(([127, 0, 0, 1], 0));
    config.api.rate_per_second = 1_000_000_000;
    config.api.burst = 1_000_000_000;
    let runtime = must("runtime", tokio::runtime::Builder::new_multi_thread().enable_all().build());
    let (trigger, stop) = shutdown::channel();
    let addr = runtime.block_on(async {
        let listeners = must("bind", app::bind(&config).await);
        let addr = must("address", listeners.http.local_addr());
        let server = must("server", app::Server::new(config, store));
        tokio::spawn(app::run(server, listeners, stop));
        addr
    });
    std::thread::sleep(Duration::from_millis(300));
    measure(
        addr,
        "GET /v1/mailboxes (10 mailboxes)",
        &[request("GET", "/v1/mailboxes", &key, None)],
    );
    let contacts: Vec<Vec<u8>> = (0..64)
        .map(|i| {
            let body = format!("{{\"email\":\"c{i}@example.com\",\"name\":\"Contact {i}\"}}");
            request("POST", "/v1/contacts", &key, Some(&body))
        })
        .collect();
    measure(addr, "POST /v1/contacts, durable", &contacts);
    measure(
        addr,
        "GET /v1/contacts?limit=50",
        &[request("GET", "/v1/contacts?limit=50", &key, None)],
    );
    trigger.fire();
    runtime.shutdown_timeout(Duration::from_secs(5));
    let _ = std::fs::remove_dir_all(&dir);
}
