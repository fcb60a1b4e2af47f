//! Pebble, the ACME test server Let's Encrypt publishes (Debian's `pebble` package), for the
//! ACME tests: one per test binary, on free ports of 127.0.0.1, resolving names through a test
//! DNS server and validating challenges for real against our listeners (its `httpPort` and
//! `tlsPort` are the ports our `--http-challenge` and `--https` listeners take). Certificates
//! it issues are valid for `VALIDITY_SECS`, so a renewal (two thirds in) happens within a test.

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use crate::dns::Dns;
use crate::harness::TempDir;

/// Seconds an issued certificate is valid; renewal comes after two thirds of it.
pub const VALIDITY_SECS: u64 = 15;

pub struct Pebble {
    /// The ACME directory URL.
    pub directory: String,
    /// The PEM certificate of Pebble's own HTTPS (`acme.ca_file`).
    pub ca_file: PathBuf,
    /// The ports Pebble validates HTTP-01 and TLS-ALPN-01 challenges on.
    pub http_port: u16,
    pub tls_port: u16,
    /// The DNS server Pebble resolves names with; tests add the names they order.
    pub dns: Dns,
    management: SocketAddr,
    /// Held by a test while one of its servers listens on `http_port` / `tls_port`.
    http_taken: Mutex<()>,
    tls_taken: Mutex<()>,
    _dir: TempDir,
}

/// A port free now on 127.0.0.1 (bound and let go).
///
/// The port is taken below the kernel's ephemeral range (32768 up): every other listener of
/// the tests binds port 0 and gets an ephemeral one, so none of them can take this port in
/// the time between this probe and the server that is started on it later (a port from the
/// ephemeral range was once taken that way, and the server could not listen).
pub fn free_port() -> u16 {
    static NEXT: std::sync::atomic::AtomicU16 = std::sync::atomic::AtomicU16::new(0);
    const LOW: u16 = 20_000;
    const SPAN: u16 = 12_000;
    let start = (std::process::id() % u32::from(SPAN)) as u16;
    for _ in 0..SPAN {
        let offset = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let port = LOW + (start.wrapping_add(offset) % SPAN);
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port in {LOW}..{}", LOW + SPAN);
}

impl Pebble {
    pub fn shared() -> &'static Pebble {
        static PEBBLE: OnceLock<Pebble> = OnceLock::new();
        PEBBLE.get_or_init(Pebble::start)
    }

    fn start() -> Pebble {
        let dir = TempDir::new("pebble");
        // Pebble's own HTTPS certificate, for 127.0.0.1 (the package ships none).
        let names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
        let key = rcgen::KeyPair::generate().expect("key"); // ok: test
        let cert = rcgen::CertificateParams::new(names)
            .expect("params") // ok: test
            .self_signed(&key)
            .expect("self-signed"); // ok: test
        let ca_file = dir.0.join("pebble-cert.pem");
        let key_file = dir.0.join("pebble-key.pem");
        std::fs::write(&ca_file, cert.pem()).expect("write cert"); // ok: test
        std::fs::write(&key_file, key.serialize_pem()).expect("write key"); // ok: test
        let (acme, management) = (free_port(), free_port());
        let (http_port, tls_port) = (free_port(), free_port());
        let config = serde_json::json!({ "pebble": {
            "listenAddress": format!("127.0.0.1:{acme}"),
            "managementListenAddress": format!("127.0.0.1:{management}"),
            "certificate": ca_file,
            "privateKey": key_file,
            "httpPort": http_port,
            "tlsPort": tls_port,
            "ocspResponderURL": "",
            "externalAccountBindingRequired": false,
            "certificateValidityPeriod": VALIDITY_SECS,
        }});
        let config_file = dir.0.join("pebble-config.json");
        std::fs::write(&config_file, config.to_string()).expect("write config"); // ok: test
        let dns = Dns::start();
        let log = dir.0.join("pebble.log");
        // Pebble runs under a watchdog that stops it when this test process ends. Validation is
        // real: PEBBLE_VA_ALWAYS_VALID stays unset; only the VA's random sleep and the nonce
        // rejections are turned off, for speed and determinism.
        let script = format!(
            "pebble -config {config} -dnsserver {dns} >{log} 2>&1 & p=$!; \
             while kill -0 {pid} 2>/dev/null && kill -0 $p 2>/dev/null; do sleep 1; done; kill $p",
            config = config_file.display(),
            dns = dns.addr(),
            log = log.display(),
            pid = std::process::id(),
        );
        // The watchdog shell is not waited for: it ends with this process (as pg_cluster's).
        let _ = Command::new("sh")
            .args(["-c", &script])
            .env("PEBBLE_VA_NOSLEEP", "1")
            .env("PEBBLE_WFE_NONCEREJECT", "0")
            .env_remove("PEBBLE_VA_ALWAYS_VALID")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn();
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", acme)).is_err()
            || TcpStream::connect(("127.0.0.1", management)).is_err()
        {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(
                Instant::now() < deadline,
                "pebble did not start (apt-get install pebble; scripts/test.sh installs it):\n{log}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Pebble {
            directory: format!("https://127.0.0.1:{acme}/dir"),
            ca_file,
            http_port,
            tls_port,
            dns,
            management: SocketAddr::from((Ipv4Addr::LOCALHOST, management)),
            http_taken: Mutex::new(()),
            tls_taken: Mutex::new(()),
            _dir: dir,
        }
    }

    /// Waits until no other test listens on `http_port`, and keeps it so while held: the tests
    /// of one binary run in parallel, and only one server can take the port.
    pub fn take_http_port(&self) -> MutexGuard<'_, ()> {
        self.http_taken.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The same for `tls_port`.
    pub fn take_tls_port(&self) -> MutexGuard<'_, ()> {
        self.tls_taken.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Makes `names` resolve to 127.0.0.1 for Pebble's validation.
    pub fn resolve_here(&self, names: &[&str]) {
        for name in names {
            self.dns.add_a(name, Ipv4Addr::LOCALHOST);
        }
    }

    /// The root Pebble issues under (PEM), from its management interface: what clients trust.
    pub fn root(&self) -> String {
        let roots =
            crate::tls_check::roots_from_pem(&std::fs::read_to_string(&self.ca_file).expect("ca")); // ok: test
        let (status, _, body) =
            crate::tls_check::https_get(self.management, "127.0.0.1", &roots, "/roots/0");
        assert_eq!(status, 200, "pebble's root: {body}");
        body
    }
}
