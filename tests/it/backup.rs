//! `edgemail backup`, `restore` and `check` against the real binary: a backup taken while a send
//! load runs holds every write acknowledged before it started, a server on the restored directory
//! serves that data, restore refuses a non-empty directory without --force, and a truncated file
//! is reported as damaged.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::json;

use crate::harness::{BIN, Server, TempDir};
use crate::mail_world::{MailWorld, basic};

fn edgemail(args: &[&str], data: &Path) -> Output {
    let mut cmd = Command::new(BIN);
    cmd.args(args).arg("--data").arg(data);
    if let Some(url) = crate::harness::store_url(data) {
        cmd.args(["--store", &url]);
    }
    cmd.output().expect("run edgemail")
}

fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

#[test]
fn a_backup_taken_under_load_restores_into_a_server_with_the_same_data() {
    let w = MailWorld::start();
    if crate::harness::on_postgres() {
        // A PostgreSQL store is backed up by PostgreSQL's tools; the command says so.
        let out = edgemail(&["backup", "--to", "/tmp/never"], &w.dir.0);
        assert!(!out.status.success() && text(&out).contains("pg_dump"), "{}", text(&out));
        return;
    }
    let sent = Arc::new(Mutex::new(Vec::<String>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (api, sent, stop) = (w.api(), sent.clone(), stop.clone());
        std::thread::spawn(move || {
            for i in 0.. {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let mut body = basic(json!(["ann@example.org"]));
                body["subject"] = json!(format!("load {i}"));
                let id = api.post("/v1/send", body).expect(200).json()["messageId"].clone();
                sent.lock().expect("lock").push(id.as_str().expect("id").to_owned());
            }
        })
    };
    while sent.lock().expect("lock").len() < 20 {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let acknowledged = sent.lock().expect("lock").clone();
    let backups = TempDir::new("backups");
    let file = backups.0.join("edgemail.backup");
    let out = edgemail(&["backup", "--to", file.to_str().expect("utf-8")], &w.dir.0);
    stop.store(true, Ordering::Relaxed);
    load.join().expect("load thread");
    assert!(out.status.success(), "backup failed: {}", text(&out));
    assert!(text(&out).contains("backed up to"), "{}", text(&out));

    let restored = TempDir::new("restored");
    std::fs::remove_dir(&restored.0).expect("an absent directory is created");
    let from = file.to_str().expect("utf-8");
    let out = edgemail(&["restore", "--from", from], &restored.0);
    assert!(out.status.success(), "restore failed: {}", text(&out));
    let out = edgemail(&["check"], &restored.0);
    assert!(out.status.success() && text(&out).contains("ok"), "{}", text(&out));

    let server = Server::start(&restored.0);
    let api = server.client(Some(&w.key));
    for id in &acknowledged {
        let email = api.get(&format!("/v1/emails/{id}")).expect(200).json();
        assert_eq!(email["id"], id.as_str());
    }
    // A directory with data is not overwritten without --force, and not while a server runs.
    let out = edgemail(&["restore", "--from", from], &restored.0);
    assert!(!out.status.success(), "{}", text(&out));
    drop(server);
    let out = edgemail(&["restore", "--from", from], &restored.0);
    assert!(!out.status.success() && text(&out).contains("--force"), "{}", text(&out));
    let out = edgemail(&["restore", "--force", "--from", from], &restored.0);
    assert!(out.status.success(), "{}", text(&out));
}

#[test]
fn check_reports_a_truncated_file_and_passes_a_sound_or_live_one() {
    let w = MailWorld::start();
    if crate::harness::on_postgres() {
        // PostgreSQL checks its own pages: `check` proves the store answers.
        let out = edgemail(&["check"], &w.dir.0);
        assert!(out.status.success() && text(&out).contains("PostgreSQL"), "{}", text(&out));
        return;
    }
    for i in 0..30 {
        let mut body = basic(json!(["ann@example.org"]));
        body["subject"] = json!(format!("bulk {i}"));
        body["html"] = json!(format!("<p>{}</p>", "padding ".repeat(2000)));
        w.send(body).expect(200);
    }
    let out = edgemail(&["check"], &w.dir.0);
    assert!(out.status.success() && text(&out).contains("ok"), "live check: {}", text(&out));
    let backups = TempDir::new("trunc");
    let file = backups.0.join("copy.redb");
    let out = edgemail(&["backup", "--to", file.to_str().expect("utf-8")], &w.dir.0);
    assert!(out.status.success(), "{}", text(&out));

    let damaged = TempDir::new("damaged");
    let target = damaged.0.join("edgemail.redb");
    std::fs::copy(&file, &target).expect("copy");
    let len = std::fs::metadata(&target).expect("size").len();
    let handle = std::fs::OpenOptions::new().write(true).open(&target).expect("open");
    handle.set_len(len / 2).expect("truncate");
    drop(handle);
    let out = edgemail(&["check"], &damaged.0);
    assert!(!out.status.success(), "a truncated file passed: {}", text(&out));
    assert!(text(&out).contains("damaged"), "{}", text(&out));
    assert_eq!(std::fs::metadata(&target).expect("size").len(), len / 2, "check changed the file");

    let missing = damaged.0.join("nothing-here");
    let out = edgemail(&["backup", "--to", file.to_str().expect("utf-8")], &missing);
    assert!(!out.status.success() && !missing.exists(), "{}", text(&out));
}

/// Issue 33: `backup --to` never replaces an existing file unless told to, and a missing
/// directory is named as such (it was "internal error: cannot copy").
#[test]
fn a_backup_replaces_a_file_only_with_force_and_names_a_missing_directory() {
    if crate::harness::on_postgres() {
        return; // PostgreSQL is backed up with its own tools.
    }
    let dir = TempDir::new("bk-src");
    crate::harness::Seed::open(&dir.0).close();
    let backups = TempDir::new("bk-out");
    let file = backups.0.join("copy.redb");
    std::fs::write(&file, b"an older backup").expect("write");
    let path = file.to_str().expect("utf-8");
    let out = edgemail(&["backup", "--to", path], &dir.0);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(text(&out).contains("--force"), "{}", text(&out));
    assert_eq!(std::fs::read(&file).expect("read"), b"an older backup", "left as it was");
    let out = edgemail(&["backup", "--to", path, "--force"], &dir.0);
    assert!(out.status.success(), "{}", text(&out));
    assert!(std::fs::metadata(&file).expect("size").len() > 1000);

    let nowhere = backups.0.join("no").join("such").join("copy.redb");
    let out = edgemail(&["backup", "--to", nowhere.to_str().expect("utf-8")], &dir.0);
    assert!(!out.status.success(), "{}", text(&out));
    let said = text(&out);
    assert!(said.contains("does not exist") && !said.contains("internal error"), "{said}");
}
