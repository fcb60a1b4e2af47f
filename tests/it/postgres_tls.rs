//! TLS to PostgreSQL (issue 39): one throwaway cluster with `ssl=on`, its certificate for
//! `db.test` issued by a CA made here, and logins by SCRAM over TLS only. URLs name a host for
//! the certificate check and reach 127.0.0.1 through `hostaddr`, as libpq's do. The modes check
//! what libpq's do: verify-full the chain and the name, verify-ca the chain, require nothing
//! (unless a root certificate is given), and prefer does without TLS where the server has none.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use serde_json::json;

use crate::harness::{BIN, Server, TempDir, cli, share_store, unique};
use crate::pg_cluster::Cluster;

/// The login's password: no error may show it.
const PASSWORD: &str = "pg-tls-secret-7";

/// Logins as `edgemail` only over TLS, by SCRAM; as `certuser` by a client certificate the CA
/// issued; the superuser (for setting up) without.
const HBA: &str = "local all all trust
hostssl all edgemail 127.0.0.1/32 scram-sha-256
hostssl all certuser 127.0.0.1/32 cert
host all postgres 127.0.0.1/32 trust
";

struct Tls {
    cluster: Cluster,
    /// The CA that issued the server's certificate, and one that did not (PEM files).
    ca: String,
    other_ca: String,
    /// A client certificate for `certuser` and its key (PEM files).
    client: (String, String),
}

fn authority(name: &str) -> (String, Issuer<'static, KeyPair>) {
    let key = KeyPair::generate().expect("ca key"); // ok: test
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params"); // ok: test
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.distinguished_name.push(DnType::CommonName, name);
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let pem = params.self_signed(&key).expect("ca cert").pem(); // ok: test
    (pem, Issuer::new(params, key))
}

/// The cluster of this module, started on first use.
fn tls() -> &'static Tls {
    static TLS: OnceLock<Tls> = OnceLock::new();
    TLS.get_or_init(|| {
        let (ca, issuer) = authority("edgemail test CA");
        let (other_ca, _) = authority("another test CA");
        let key = KeyPair::generate().expect("server key"); // ok: test
        let params = CertificateParams::new(vec!["db.test".to_owned()]).expect("params"); // ok: test
        let cert = params.signed_by(&key, &issuer).expect("server cert"); // ok: test
        let (cert, key) = (cert.pem(), key.serialize_pem());
        let files: [(&str, &[u8]); 4] = [
            ("server.crt", cert.as_bytes()),
            ("server.key", key.as_bytes()),
            ("root.crt", ca.as_bytes()),
            ("pg_hba.conf", HBA.as_bytes()),
        ];
        let cluster = Cluster::start_with(&files, &["ssl=on", "ssl_ca_file=root.crt"]);
        cluster.sql("postgres", &format!("CREATE ROLE edgemail LOGIN PASSWORD '{PASSWORD}'"));
        cluster.sql("postgres", "CREATE ROLE certuser LOGIN");
        let client_key = KeyPair::generate().expect("client key"); // ok: test
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("params"); // ok: test
        params.distinguished_name.push(DnType::CommonName, "certuser");
        let client = params.signed_by(&client_key, &issuer).expect("client cert"); // ok: test
        let write = |name: &str, pem: &str| {
            let path = cluster.root.join(name);
            std::fs::write(&path, pem).expect("write a CA file"); // ok: test
            path.to_string_lossy().into_owned()
        };
        let (ca, other_ca) = (write("ca.pem", &ca), write("other-ca.pem", &other_ca));
        let client =
            (write("client.pem", &client.pem()), write("client.key", &client_key.serialize_pem()));
        Tls { cluster, ca, other_ca, client }
    })
}

impl Tls {
    /// A new database owned by `edgemail`; returns its name.
    fn database(&self) -> String {
        self.database_of("edgemail")
    }

    fn database_of(&self, owner: &str) -> String {
        let name = format!("tls{}_{}", std::process::id(), unique());
        self.cluster.sql("postgres", &format!("CREATE DATABASE {name} OWNER {owner}"));
        name
    }

    /// The URL of `database`, naming `host` (for the certificate) and reaching 127.0.0.1.
    fn url(&self, host: &str, database: &str, params: &str) -> String {
        let port = self.cluster.port;
        format!(
            "postgres://edgemail:{PASSWORD}@{host}:{port}/{database}?hostaddr=127.0.0.1&{params}"
        )
    }
}

/// `edgemail domain list` on the store at `url`: whether it worked, and what it printed.
fn domain_list(url: &str) -> (bool, String) {
    let dir = TempDir::new("pgtls-cli");
    let data = dir.0.to_str().expect("utf-8 path"); // ok: test
    // Through the harness, which passes the store's URL (and only once on a PostgreSQL run).
    share_store(&dir.0, url);
    let (ok, out, err) = cli(&["domain", "list", "--data", data]);
    let text = format!("{out}{err}");
    assert!(!text.contains(PASSWORD), "the password was shown: {text}");
    (ok, text)
}

/// `edgemail serve` on the store at `url`, which must fail at startup; returns its stderr.
fn serve_fails(url: &str, data: &Path) -> String {
    let log = data.join("serve.log");
    let stderr = std::fs::File::create(&log).expect("log file"); // ok: test
    let mut child = Command::new(BIN)
        .args(["serve", "--data"])
        .arg(data)
        .args(["--http", "127.0.0.1:0", "--smtp", "127.0.0.1:0", "--store", url])
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(stderr)
        .spawn()
        .expect("spawn edgemail"); // ok: test
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            // ok: test
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("serve did not stop: {}", std::fs::read_to_string(&log).unwrap_or_default());
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    assert!(!status.success(), "serve started: {text}");
    assert!(!text.contains(PASSWORD), "the password was shown: {text}");
    text
}

#[test]
fn verify_full_serves_over_tls_with_the_login_bound_to_the_channel() {
    let t = tls();
    let db = t.database();
    // channel_binding=require: the login must be SCRAM-SHA-256-PLUS, which PostgreSQL accepts
    // only when our tls-server-end-point hash is its certificate's.
    let params = format!("sslmode=verify-full&sslrootcert={}&channel_binding=require", t.ca);
    let dir = TempDir::new("pgtls");
    share_store(&dir.0, &t.url("db.test", &db, &params));
    let data = dir.0.to_str().expect("utf-8 path"); // ok: test
    let (ok, _, err) = cli(&["domain", "add", "tls.test", "--data", data]);
    assert!(ok, "domain add: {err}");
    let (ok, out, err) =
        cli(&["key", "create", "--name", "t", "--domain", "tls.test", "--data", data]);
    assert!(ok, "key create: {err}");
    let key = out.lines().last().expect("the key").trim().to_owned(); // ok: test
    let server = Server::start(&dir.0);
    let created = server.client(Some(&key)).post("/v1/mailboxes", json!({"address": "ops"}));
    assert_eq!(created.expect(201).json()["address"], "ops@tls.test");
    let sessions = t.cluster.sql(
        "postgres",
        &format!(
            "SELECT s.ssl, s.version FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) \
             WHERE a.datname = '{db}' AND a.usename = 'edgemail'"
        ),
    );
    assert!(!sessions.is_empty(), "the server holds no connection to {db}");
    for session in sessions.lines() {
        assert!(session.starts_with("t|TLSv1."), "a connection without TLS: {sessions}");
    }
}

#[test]
fn verify_full_refuses_a_certificate_for_another_host_and_verify_ca_takes_it() {
    let t = tls();
    let db = t.database();
    let dir = TempDir::new("pgtls-name");
    let full = t.url("other.test", &db, &format!("sslmode=verify-full&sslrootcert={}", t.ca));
    let refused = serve_fails(&full, &dir.0);
    let port = t.cluster.port;
    for needle in [format!("other.test:{port}"), "not valid for name".to_owned()] {
        assert!(refused.contains(&needle), "no {needle:?} in: {refused}");
    }
    // verify-ca checks the issuer only, as libpq's does.
    let ca = t.url("other.test", &db, &format!("sslmode=verify-ca&sslrootcert={}", t.ca));
    let (ok, text) = domain_list(&ca);
    assert!(ok, "verify-ca with the right CA: {text}");
}

#[test]
fn verify_ca_refuses_a_server_another_ca_issued_and_a_missing_ca_file() {
    let t = tls();
    let db = t.database();
    let port = t.cluster.port;
    let wrong = t.url("db.test", &db, &format!("sslmode=verify-ca&sslrootcert={}", t.other_ca));
    let (ok, text) = domain_list(&wrong);
    assert!(!ok, "verify-ca with another CA worked: {text}");
    assert!(text.contains(&format!("db.test:{port}")) && text.contains("UnknownIssuer"), "{text}");
    // libpq's rule: require with a root certificate checks the chain as verify-ca does.
    let required = t.url("db.test", &db, &format!("sslmode=require&sslrootcert={}", t.other_ca));
    assert!(!domain_list(&required).0, "require with another CA's certificate worked");
    // Without one, require encrypts and checks nothing.
    let (ok, text) = domain_list(&t.url("db.test", &db, "sslmode=require"));
    assert!(ok, "require without a root certificate: {text}");
    let missing = t.url("db.test", &db, "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem");
    let (ok, text) = domain_list(&missing);
    assert!(!ok, "a missing CA file was taken: {text}");
    assert!(text.contains("db.test") && text.contains("/nonexistent/ca.pem"), "{text}");
}

#[test]
fn require_needs_a_server_with_tls_and_prefer_does_without() {
    // The shared cluster has no TLS at all.
    let plain = Cluster::shared().database();
    let (ok, text) = domain_list(&format!("{plain}?sslmode=require"));
    assert!(!ok, "require without TLS on the server worked: {text}");
    assert!(text.contains("does not support TLS"), "{text}");
    for url in [format!("{plain}?sslmode=prefer"), plain.clone()] {
        let (ok, text) = domain_list(&url);
        assert!(ok, "{url}: {text}");
    }
}

#[test]
fn a_client_certificate_logs_in_where_the_server_asks_for_one() {
    let t = tls();
    let db = t.database_of("certuser");
    let port = t.cluster.port;
    let base = format!("postgres://certuser@db.test:{port}/{db}?hostaddr=127.0.0.1");
    let verified = format!("{base}&sslmode=verify-full&sslrootcert={}", t.ca);
    let (cert, key) = &t.client;
    let (ok, text) = domain_list(&format!("{verified}&sslcert={cert}&sslkey={key}"));
    assert!(ok, "with the client certificate: {text}");
    let (ok, text) = domain_list(&verified);
    assert!(!ok, "certuser logged in without a certificate: {text}");
}
