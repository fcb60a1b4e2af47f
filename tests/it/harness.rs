//! Runs the real `edgemail` binary on 127.0.0.1 port 0 with a temporary data directory, seeds that
//! directory through the crate's storage API beforehand, and talks to it over real HTTP.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use edgemail::store::{Domain, Email, Store};

use crate::client::Client;

pub const BIN: &str = env!("CARGO_BIN_EXE_edgemail");

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("em-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create temp dir");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Data directories whose server keeps its data in a PostgreSQL database (by URL).
static STORES: std::sync::Mutex<Vec<(PathBuf, String)>> = std::sync::Mutex::new(Vec::new());

/// The server on `dir` (and its seed) keeps its data in the database at `url`: two directories
/// given one URL are two nodes sharing a store.
pub fn share_store(dir: &Path, url: &str) {
    STORES.lock().unwrap_or_else(|p| p.into_inner()).push((dir.to_owned(), url.to_owned()));
}

/// Data directories whose server keeps its data in the redb file even on PostgreSQL runs.
static ON_REDB: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// The server on `dir` (and its seed) keeps its data in the redb file even when the suite runs
/// on PostgreSQL: for the docs' pages, whose commands act on the default store's data file.
pub fn keep_on_redb(dir: &Path) {
    ON_REDB.lock().unwrap_or_else(|p| p.into_inner()).push(dir.to_owned());
}

/// Whether the whole suite runs on PostgreSQL (`IT_STORE=postgres`): every data
/// directory then gets a database of its own in a throwaway cluster.
pub fn on_postgres() -> bool {
    std::env::var("IT_STORE").is_ok_and(|v| v == "postgres")
}

/// The database the server on `dir` uses, when it uses one.
pub fn store_url(dir: &Path) -> Option<String> {
    let mut stores = STORES.lock().unwrap_or_else(|p| p.into_inner());
    if let Some((_, url)) = stores.iter().find(|(d, _)| d == dir) {
        return Some(url.clone());
    }
    let on_redb = ON_REDB.lock().unwrap_or_else(|p| p.into_inner()).iter().any(|d| d == dir);
    if !on_postgres() || on_redb {
        return None;
    }
    let url = crate::pg_cluster::Cluster::shared().database();
    stores.push((dir.to_owned(), url.clone()));
    Some(url)
}

/// Opens the store of the server on `dir`, wherever it is kept.
pub fn open_store(dir: &Path) -> Store {
    let options = edgemail::store::Options { url: store_url(dir), ..Default::default() };
    Store::open_with(dir, options).expect("open store")
}

/// One generated domain record reused under many names: RSA key generation is slow and the tests
/// here do not depend on distinct keys.
fn template_domain() -> &'static Domain {
    static DOMAIN: OnceLock<Domain> = OnceLock::new();
    DOMAIN.get_or_init(|| edgemail::dkim::generate("template.test").expect("dkim keys"))
}

/// Data prepared in the data directory before the server starts.
pub struct Seed {
    store: Store,
}

impl Seed {
    pub fn open(dir: &Path) -> Seed {
        Seed { store: open_store(dir) }
    }

    pub fn domain(&self, name: &str) {
        let mut domain = template_domain().clone();
        domain.name = name.to_owned();
        self.store.write_blocking(move |w| w.add_domain(&domain)).expect("add domain");
    }

    /// A domain-scoped key (or org-wide with `None`); returns the secret.
    pub fn key(&self, domain: Option<&str>) -> String {
        let (key, hash, secret) = edgemail::auth::new_key("test", domain.map(str::to_owned));
        self.store.write_blocking(move |w| w.create_key(&key, &hash)).expect("create key");
        secret
    }

    /// The stored record of a seeded domain (with its DKIM keys).
    pub fn domain_record(&self, name: &str) -> Domain {
        let name = name.to_owned();
        self.store.read_blocking(move |r| r.domain(&name)).expect("read").expect("domain exists")
    }

    pub fn mailbox(&self, domain: &str, local: &str) {
        let (d, l) = (domain.to_owned(), local.to_owned());
        self.store.write_blocking(move |w| w.create_mailbox(&d, &l, None)).expect("mailbox");
    }

    /// Suppresses `email` for `domain` at time `at` (Unix ms).
    pub fn suppression(&self, domain: &str, email: &str, reason: &str, at: u64) {
        let (d, e, r) = (domain.to_owned(), email.to_owned(), reason.to_owned());
        self.store
            .write_blocking(move |w| w.suppress(&d, &e, &r, "seeded by a test", at))
            .expect("suppress");
    }

    pub fn email(&self, email: Email) {
        self.store.write_blocking(move |w| w.insert_email(&email)).expect("insert email");
    }

    /// Adds to `domain`'s daily counters of the day holding `at`.
    pub fn day_counts(&self, domain: &str, at: u64, counts: edgemail::store::DayCounts) {
        let d = domain.to_owned();
        self.store.write_blocking(move |w| w.add_day_counts(&d, at, &counts)).expect("counts");
    }

    pub fn close(self) {
        self.store.close();
    }
}

pub struct Server {
    pub child: Child,
    pub addr: SocketAddr,
    pub smtp: SocketAddr,
    log: PathBuf,
}

impl Server {
    /// Starts `edgemail serve` on `data` and waits for its `ready` line.
    pub fn start(data: &Path) -> Server {
        Server::start_with(data, &[], &[])
    }

    pub fn start_with(data: &Path, args: &[&str], env: &[(&str, &str)]) -> Server {
        Server::start_smtp_on(data, "127.0.0.1:0", args, env)
    }

    /// `start_with`, with the SMTP listener on a chosen address (a server that delivers to
    /// itself needs its port before it starts).
    pub fn start_smtp_on(data: &Path, smtp: &str, args: &[&str], env: &[(&str, &str)]) -> Server {
        let log = data.join(format!("server-{}.log", crate::harness::unique()));
        let stderr = std::fs::File::create(&log).expect("log file");
        let mut cmd = Command::new(BIN);
        cmd.args(["serve", "--data"])
            .arg(data)
            .args(["--http", "127.0.0.1:0", "--smtp", smtp])
            .args(args);
        if let Some(url) = store_url(data) {
            cmd.args(["--store", &url]);
        }
        cmd.env_remove("RUST_LOG");
        // Every test peer (SMTP sink, other servers) listens on 127.0.0.1; a test that checks the
        // refusal of private destinations sets this back to false.
        cmd.env("EDGEMAIL_DELIVERY_ALLOW_PRIVATE", "true");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd.stdout(Stdio::null()).stderr(stderr).spawn().expect("spawn edgemail");
        let (addr, smtp) = wait_ready(&log);
        Server { child, addr, smtp, log }
    }

    pub fn client(&self, key: Option<&str>) -> Client {
        Client::new(self.addr, key.map(str::to_owned))
    }

    /// The address of a listener the start line names (`submission`, `submissions`, ...).
    pub fn listener(&self, name: &str) -> Option<SocketAddr> {
        let log = self.log();
        let line = log.lines().find_map(|l| l.strip_prefix("listening "))?;
        let prefix = format!("{name}=");
        line.split_whitespace().find_map(|kv| kv.strip_prefix(prefix.as_str()))?.parse().ok()
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM, then the exit status.
    pub fn terminate(&mut self) -> std::process::ExitStatus {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                return status;
            }
            assert!(Instant::now() < deadline, "server did not stop after SIGTERM");
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

pub fn unique() -> u32 {
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

/// The HTTP and SMTP addresses from the `listening` line, once `ready` follows it.
fn wait_ready(log: &Path) -> (SocketAddr, SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(log) {
            // Only whole lines: stderr is unbuffered, so a line may be read half written (such as
            // `listening http=... smtp=` before its address), and "ready" then follows it.
            let whole = &text[..text.rfind('\n').map_or(0, |at| at + 1)];
            let mut addrs = None;
            for line in whole.lines() {
                if let Some(rest) = line.strip_prefix("listening ") {
                    let field = |name: &str| {
                        rest.split_whitespace()
                            .find_map(|kv| kv.strip_prefix(name))
                            .and_then(|v| v.parse::<SocketAddr>().ok())
                    };
                    addrs = field("http=").zip(field("smtp="));
                }
                if line == "ready" {
                    return addrs.expect("a listening line with http= and smtp= before ready");
                }
            }
        }
        if Instant::now() > deadline {
            panic!("server not ready; log:\n{}", std::fs::read_to_string(log).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Runs the CLI with `args`; returns (success, stdout, stderr).
pub fn cli(args: &[&str]) -> (bool, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args).env_remove("RUST_LOG");
    // A command on a data directory reaches the store its server uses.
    let data = args.iter().position(|a| *a == "--data").and_then(|at| args.get(at + 1));
    if let Some(url) = data.and_then(|d| store_url(Path::new(d))) {
        cmd.args(["--store", &url]);
    }
    let out = cmd.output().expect("run edgemail");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The usual fixture: two domains with a mailbox each, a key for each, and an org-wide key.
pub struct World {
    pub server: Server,
    pub a: String,
    pub b: String,
    pub org: String,
    pub _dir: TempDir,
}

pub const A: &str = "alpha.test";
pub const B: &str = "beta.test";

impl World {
    pub fn start() -> World {
        World::start_seeded(|_| {})
    }

    /// Like `start`, with these `EDGEMAIL_*` settings.
    pub fn start_with_env(env: &[(&str, &str)]) -> World {
        World::start_seeded_with(|_| {}, env)
    }

    /// Like `start`, with more data seeded before the server starts.
    pub fn start_seeded(more: impl FnOnce(&Seed)) -> World {
        World::start_seeded_with(more, &[])
    }

    fn start_seeded_with(more: impl FnOnce(&Seed), env: &[(&str, &str)]) -> World {
        let dir = TempDir::new("world");
        let seed = Seed::open(&dir.0);
        seed.domain(A);
        seed.domain(B);
        let a = seed.key(Some(A));
        let b = seed.key(Some(B));
        let org = seed.key(None);
        more(&seed);
        seed.close();
        let server = Server::start_with(&dir.0, &[], env);
        World { server, a, b, org, _dir: dir }
    }

    pub fn alpha(&self) -> Client {
        self.server.client(Some(&self.a))
    }

    pub fn beta(&self) -> Client {
        self.server.client(Some(&self.b))
    }

    pub fn org(&self) -> Client {
        self.server.client(Some(&self.org))
    }

    pub fn anonymous(&self) -> Client {
        self.server.client(None)
    }
}

/// A stored status from its wire spelling, for seeding data (`"delivered"`, `"received"`...).
pub fn status<T: serde::de::DeserializeOwned>(spelling: &str) -> T {
    serde_json::from_value(serde_json::Value::String(spelling.to_owned())).expect("a known status")
}
