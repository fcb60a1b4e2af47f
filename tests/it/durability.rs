//! A 2xx on a write means the write is on disk: SIGKILL right after it loses nothing, and SIGTERM
//! drains and closes cleanly.

use std::collections::BTreeSet;

use serde_json::json;

use crate::harness::{A, Seed, Server, TempDir};

fn world() -> (TempDir, String) {
    let dir = TempDir::new("durable");
    let seed = Seed::open(&dir.0);
    seed.domain(A);
    let key = seed.key(Some(A));
    seed.close();
    (dir, key)
}

#[test]
fn a_created_resource_survives_sigkill_right_after_201() {
    let (dir, key) = world();
    let mut server = Server::start(&dir.0);
    let created = server
        .client(Some(&key))
        .post("/v1/contacts", json!({"email": "kept@example.com", "name": "Kept"}))
        .expect(201)
        .json();
    server.kill9();
    let server = Server::start(&dir.0);
    let list = server.client(Some(&key)).get("/v1/contacts").expect(200).json();
    assert_eq!(list.as_array().map(Vec::len), Some(1));
    assert_eq!(list[0]["id"], created["id"]);
}

#[test]
fn concurrent_writes_answered_201_all_survive_sigkill() {
    let (dir, key) = world();
    let mut server = Server::start(&dir.0);
    let addr = server.addr;
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let key = key.clone();
            std::thread::spawn(move || {
                let c = crate::client::Client::new(addr, Some(key));
                (0..25)
                    .map(|i| {
                        let body = json!({"email": format!("u{t}-{i}@example.com"), "name": "U"});
                        c.post("/v1/contacts", body).expect(201).json()["id"]
                            .as_str()
                            .map(str::to_owned)
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let created: BTreeSet<String> =
        threads.into_iter().flat_map(|t| t.join().expect("thread")).flatten().collect();
    assert_eq!(created.len(), 200);
    server.kill9();
    let server = Server::start(&dir.0);
    let list = server.client(Some(&key)).get("/v1/contacts?limit=500").expect(200).json();
    let found: BTreeSet<String> = list
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(found, created);
}

#[test]
fn sigterm_shuts_down_cleanly_and_releases_the_data_directory() {
    let (dir, key) = world();
    let mut server = Server::start(&dir.0);
    server.client(Some(&key)).post("/v1/mailboxes", json!({"address": "kept"})).expect(201);
    let status = server.terminate();
    assert!(status.success(), "exit status {status}");
    assert!(server.log().contains("store closed"), "{}", server.log());
    assert!(!dir.0.join("admin.sock").exists(), "the admin socket was left behind");
    // The file is free again: the CLI opens it directly.
    let (ok, out, err) =
        crate::harness::cli(&["key", "list", "--data", dir.0.to_str().unwrap_or("")]);
    assert!(ok, "{err}");
    assert!(out.contains("alpha.test"), "{out}");
    let server = Server::start(&dir.0);
    let list = server.client(Some(&key)).get("/v1/mailboxes").expect(200).json();
    assert_eq!(list[0]["address"], "kept@alpha.test");
}
