//! A throwaway PostgreSQL cluster for tests: `initdb` and `pg_ctl` from the machine's PostgreSQL,
//! run as an unprivileged user (`postgres` when the tests run as root, which PostgreSQL refuses
//! to run as), listening on 127.0.0.1 at a free port with its socket in its own directory. One
//! cluster per test process, started on first use; each caller takes its own database. A watcher
//! stops the cluster and removes its files once the test process is gone.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

pub struct Cluster {
    pub port: u16,
    /// Holds the data directory and the socket; removed when the test process is gone.
    pub root: PathBuf,
    bin: PathBuf,
    owner: Option<&'static str>,
}

/// The bin directory of the newest PostgreSQL installed.
fn bin_dir() -> PathBuf {
    let mut found: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|dir| dir.filter_map(|e| e.ok()).map(|e| e.path().join("bin")).collect())
        .unwrap_or_default();
    found.retain(|p| p.join("initdb").is_file());
    found.sort();
    found.pop().expect("PostgreSQL's initdb under /usr/lib/postgresql/*/bin")
}

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .map(|s| {
            s.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

fn free_port() -> u16 {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a free port");
    socket.local_addr().expect("local addr").port()
}

impl Cluster {
    /// The cluster of this test process.
    pub fn shared() -> &'static Cluster {
        static CLUSTER: OnceLock<Cluster> = OnceLock::new();
        CLUSTER.get_or_init(Cluster::start)
    }

    fn run(&self, program: &str, args: &[&str]) -> std::process::Output {
        let path = self.bin.join(program);
        let mut command = match self.owner {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&path);
                c
            }
            None => Command::new(&path),
        };
        let out = command.args(args).stdin(Stdio::null()).output().expect("run a PostgreSQL tool");
        assert!(
            out.status.success(),
            "{program} {args:?} failed: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    fn start() -> Cluster {
        Cluster::start_with(&[], &[])
    }

    /// A cluster of its own (not the shared one), with `files` written into its data directory
    /// after `initdb` (owned by the server's user and private to it: PostgreSQL refuses a key
    /// file others may read) and each of `settings` passed as a `-c` option.
    pub fn start_with(files: &[(&str, &[u8])], settings: &[&str]) -> Cluster {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        let owner = is_root().then_some("postgres");
        let root = std::env::temp_dir().join(format!("em-pg-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(&root).expect("cluster dir");
        let chown = |path: &Path| {
            if let Some(user) = owner {
                let chown = Command::new("chown").arg(user).arg(path).status().expect("chown");
                assert!(chown.success(), "chown {} to {user}", path.display());
            }
        };
        chown(&root);
        let cluster = Cluster { port: free_port(), root: root.clone(), bin: bin_dir(), owner };
        let data = root.join("data");
        let data_s = data.to_string_lossy().into_owned();
        cluster.run("initdb", &["-A", "trust", "-U", "postgres", "-D", &data_s, "--no-sync"]);
        for (name, contents) in files {
            let path = data.join(name);
            std::fs::write(&path, contents).expect("write a cluster file");
            use std::os::unix::fs::PermissionsExt;
            let private = std::fs::Permissions::from_mode(0o600);
            std::fs::set_permissions(&path, private).expect("chmod a cluster file");
            chown(&path);
        }
        let mut options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c max_connections=400 \
             -c shared_buffers=32MB -c fsync=off -c synchronous_commit=off",
            cluster.port,
            root.display()
        );
        for setting in settings {
            options.push_str(&format!(" -c {setting}"));
        }
        let log = root.join("log").to_string_lossy().into_owned();
        cluster.run("pg_ctl", &["-D", &data_s, "-o", &options, "-l", &log, "-w", "start"]);
        watch(&cluster, &root, &data);
        cluster
    }

    /// Runs `sql` as the superuser on `database`; returns psql's unaligned output.
    pub fn sql(&self, database: &str, sql: &str) -> String {
        let port = self.port.to_string();
        let args = ["-h", "127.0.0.1", "-p", &port, "-U", "postgres", "-d", database, "-Atc", sql];
        String::from_utf8_lossy(&self.run("psql", &args).stdout).trim().to_owned()
    }

    /// A new, empty database; returns its URL.
    pub fn database(&self) -> String {
        static N: AtomicU32 = AtomicU32::new(0);
        let name = format!("t{}_{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let port = self.port.to_string();
        self.run("createdb", &["-h", "127.0.0.1", "-p", &port, "-U", "postgres", &name]);
        format!("postgres://postgres@127.0.0.1:{}/{name}", self.port)
    }
}

/// Stops the cluster once this process has exited, however it exits.
fn watch(cluster: &Cluster, root: &Path, data: &Path) {
    let pg_ctl = cluster.bin.join("pg_ctl");
    let stop = match cluster.owner {
        Some(user) => format!(
            "runuser -u {user} -- {} -D {} -m immediate stop",
            pg_ctl.display(),
            data.display()
        ),
        None => format!("{} -D {} -m immediate stop", pg_ctl.display(), data.display()),
    };
    let script = format!(
        "while kill -0 {pid} 2>/dev/null; do sleep 1; done; {stop} >/dev/null 2>&1; rm -rf {root}",
        pid = std::process::id(),
        root = root.display()
    );
    let _ = Command::new("sh")
        .args(["-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
}
