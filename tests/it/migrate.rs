//! `edgemail migrate`: a single node's data file moves into an empty PostgreSQL database (a
//! throwaway cluster, `pg_cluster.rs`) and back into an empty data directory; a server on each
//! copy serves every message, both sides' per-table sums agree, and a target holding data is
//! refused.

use serde_json::json;

use crate::harness::{BIN, Server, TempDir, keep_on_redb, share_store};
use crate::mail_world::{MailWorld, basic};
use crate::pg_cluster::Cluster;

/// `edgemail migrate --from FROM --to TO`: success, and stdout with stderr.
fn migrate(from: &str, to: &str) -> (bool, String) {
    let out = std::process::Command::new(BIN)
        .args(["migrate", "--from", from, "--to", to])
        .env_remove("RUST_LOG")
        .output()
        .expect("run edgemail"); // ok: test
    let text =
        format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.success(), text)
}

/// Every message of `ids` is served, with its subject, by `server`.
fn serves(server: &Server, key: &str, ids: &[(String, String)]) {
    let api = server.client(Some(key));
    for (id, subject) in ids {
        let email = api.get(&format!("/v1/emails/{id}")).expect(200).json();
        assert_eq!(email["subject"], subject.as_str(), "{email}");
    }
}

#[test]
fn a_data_file_moves_into_postgres_and_back_with_every_table_summed() {
    let dir = TempDir::new("migrate-file");
    keep_on_redb(&dir.0);
    let mut w = MailWorld::start_in(dir, &[], &[]);
    let mut ids = Vec::new();
    for i in 0..40 {
        let mut body = basic(json!(["ann@example.org"]));
        body["subject"] = json!(format!("moving {i}"));
        let id = w.send(body).expect(200).json()["messageId"].as_str().map(str::to_owned);
        ids.push((id.expect("an id"), format!("moving {i}"))); // ok: test
    }
    let file = w.dir.0.display().to_string();
    // Not while a server runs on the file.
    let (ok, text) = migrate(&file, &Cluster::shared().database());
    assert!(!ok && text.contains("stop it first"), "{text}");
    w.server.terminate();

    let url = Cluster::shared().database();
    let (ok, text) = migrate(&file, &url);
    assert!(ok && text.contains("sums agree"), "{text}");
    assert!(text.contains("emails") && text.contains("sha256"), "{text}");
    let node = TempDir::new("migrate-pg");
    share_store(&node.0, &url);
    let on_postgres = Server::start(&node.0);
    serves(&on_postgres, &w.key, &ids);
    // What is written there comes back too.
    let api = on_postgres.client(Some(&w.key));
    api.post("/v1/mailboxes", json!({"address": "moved"})).expect(201);
    drop(on_postgres);

    // The same database again is refused: it holds data now.
    let (ok, text) = migrate(&file, &url);
    assert!(!ok && text.contains("already holds data"), "{text}");

    let back = TempDir::new("migrate-back");
    keep_on_redb(&back.0);
    let (ok, text) = migrate(&url, &back.0.display().to_string());
    assert!(ok && text.contains("sums agree"), "{text}");
    let on_file = Server::start(&back.0);
    serves(&on_file, &w.key, &ids);
    let mailboxes = on_file.client(Some(&w.key)).get("/v1/mailboxes").expect(200).json();
    assert!(mailboxes.to_string().contains("moved@"), "{mailboxes}");
}
