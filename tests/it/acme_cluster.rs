//! ACME on two nodes sharing one PostgreSQL store (a throwaway cluster, `pg_cluster.rs`), against
//! Pebble: node `a` leads and orders; Pebble validates at node `b` only (b holds the port Pebble
//! calls, a listens elsewhere), so a certificate is issued only if b answers the challenge a put
//! in the store. Then b serves the certificate a obtained, and only a ever ordered.

use crate::acme::wait_acme;
use crate::harness::{Seed, Server, TempDir, share_store};
use crate::pebble::Pebble;
use crate::pg_cluster::Cluster;
use crate::tls_check::{https_get, roots_from_pem};

/// Nodes `a` (started first, so it takes the leader's lease) and `b` on one fresh database
/// hosting `domain`, with the org-wide key.
fn two_nodes(
    domain: &str,
    args: [&[&str]; 2],
    env: &[(&str, &str)],
) -> (Server, Server, String, [TempDir; 2]) {
    let url = Cluster::shared().database();
    let dirs = [TempDir::new("acme-a"), TempDir::new("acme-b")];
    dirs.iter().for_each(|d| share_store(&d.0, &url));
    let seed = Seed::open(&dirs[0].0);
    seed.domain(domain);
    let org = seed.key(None);
    seed.close();
    let pebble = Pebble::shared();
    let ca = pebble.ca_file.display().to_string();
    let start = |dir: &TempDir, node: &str, args: &[&str]| {
        let mut all = vec![
            ("EDGEMAIL_ACME_DIRECTORY", pebble.directory.as_str()),
            ("EDGEMAIL_ACME_CA_FILE", ca.as_str()),
            ("EDGEMAIL_ACME_RETRY_INITIAL", "1s"),
            ("EDGEMAIL_CLUSTER_LEASE", "3s"),
            ("EDGEMAIL_CLUSTER_NODE", node),
        ];
        all.extend_from_slice(env);
        Server::start_with(&dir.0, args, &all)
    };
    let a = start(&dirs[0], "a", args[0]);
    let b = start(&dirs[1], "b", args[1]);
    (a, b, org, dirs)
}

/// Both nodes list the certificate; only `a` ordered; `b` serves it on HTTPS by `name`.
fn check_shared(a: &Server, b: &Server, org: &str, names: &[&str]) {
    let on_b = wait_acme(&b.client(Some(org)), b, names, 0);
    let on_a = wait_acme(&a.client(Some(org)), a, names, 0);
    assert_eq!(on_a, on_b, "both nodes serve the same certificate");
    let roots = roots_from_pem(&Pebble::shared().root());
    let https = b.listener("https").expect("https="); // ok: test
    let (status, head, _) = https_get(https, names[0], &roots, "/healthz");
    assert_eq!(status, 200, "{head}");
    let (log_a, log_b) = (a.log(), b.log());
    assert!(log_a.contains("certificate obtained over ACME"), "a orders:\n{log_a}");
    assert!(!log_b.contains("certificate obtained over ACME"), "b never orders:\n{log_b}");
}

#[test]
fn http01_answered_by_the_node_the_ca_reaches_and_served_by_both() {
    let pebble = Pebble::shared();
    let _port = pebble.take_http_port();
    let names = ["mx.gamma.test"];
    pebble.resolve_here(&names);
    let on_b = format!("127.0.0.1:{}", pebble.http_port);
    let a: &[&str] = &["--http-challenge", "127.0.0.1:0", "--https", "127.0.0.1:0"];
    let b: &[&str] = &["--http-challenge", &on_b, "--https", "127.0.0.1:0"];
    let env =
        [("EDGEMAIL_SMTP_HOSTNAME", "mx.gamma.test"), ("EDGEMAIL_ACME_NAMES", "mx.gamma.test")];
    let (a, b, org, _dirs) = two_nodes("gamma.test", [a, b], &env);
    check_shared(&a, &b, &org, &names);
}

#[test]
fn tls_alpn01_answered_by_the_node_the_ca_reaches_and_served_by_both() {
    let pebble = Pebble::shared();
    let _port = pebble.take_tls_port();
    let names = ["secure.delta.test"];
    pebble.resolve_here(&names);
    let on_b = format!("127.0.0.1:{}", pebble.tls_port);
    let a: &[&str] = &["--https", "127.0.0.1:0"];
    let b: &[&str] = &["--https", &on_b];
    let env = [("EDGEMAIL_ACME_NAMES", "secure.delta.test")];
    let (a, b, org, _dirs) = two_nodes("delta.test", [a, b], &env);
    check_shared(&a, &b, &org, &names);
}
