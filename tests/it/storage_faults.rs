//! A full disk, for real: the data directory is a small tmpfs filled with a ballast file. Writes
//! are refused with 503 `storage_unavailable` and `Retry-After` (HTTP) or 452 4.3.1 (SMTP), reads
//! are served, nothing acknowledged is lost, and once the ballast goes the server takes writes
//! again by itself, without a restart. Mounting needs root: as another user the test says why it
//! skips and passes.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::client::Client;
use crate::harness::{A, TempDir};
use crate::mail_world::{MailWorld, header};
use crate::smtp_client::{Talk, send_one};

/// A tmpfs mounted for the test, unmounted when dropped (also when the test fails).
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(megabytes: u32) -> Option<Tmpfs> {
        let uid = Command::new("id").arg("-u").output().map(|o| o.stdout).unwrap_or_default();
        if String::from_utf8_lossy(&uid).trim() != "0" {
            eprintln!("storage_faults: skipped: mounting a tmpfs to fill needs root");
            return None;
        }
        let at = std::env::temp_dir().join(format!(
            "em-full-{}-{}",
            std::process::id(),
            crate::harness::unique()
        ));
        std::fs::create_dir_all(&at).expect("mount point");
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={megabytes}m,mode=0700"), "tmpfs"])
            .arg(&at)
            .status()
            .expect("run mount");
        if !status.success() {
            eprintln!(
                "storage_faults: skipped: `mount -t tmpfs` failed ({status}) in this sandbox"
            );
            let _ = std::fs::remove_dir(&at);
            return None;
        }
        Some(Tmpfs(at))
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazy: a server still holding files (a failed test) must not keep the mount behind.
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        let _ = std::fs::remove_dir(&self.0);
    }
}

/// Fills the file system under `dir` until a write fails; returns the ballast file.
fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("ballast");
    let mut file = std::fs::File::create(&path).expect("ballast");
    for chunk in [1 << 20, 64 << 10, 4 << 10, 512] {
        let bytes = vec![0xA5u8; chunk];
        while file.write_all(&bytes).is_ok() {}
    }
    let _ = file.sync_all();
    path
}

fn contact(api: &Client, n: usize) -> crate::client::Resp {
    let name = format!("{n:06} {}", "x".repeat(190));
    api.post("/v1/contacts", json!({"email": format!("c{n}@example.com"), "name": name}))
}

/// Creates contacts until one is refused; returns the ids of those created and the refusal.
fn write_until_refused(api: &Client, kept: &mut Vec<String>) -> crate::client::Resp {
    for n in 0..50_000 {
        let resp = contact(api, n);
        match resp.status {
            201 => kept.push(resp.json()["id"].as_str().expect("id").to_owned()),
            503 => return resp,
            other => panic!("a write on a filling disk answered {other}: {}", resp.text()),
        }
    }
    panic!("the disk never filled");
}

/// Every contact id, following `Link: <...>; rel="next"` when the list is paged.
fn contact_ids(api: &Client) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut path = "/v1/contacts?limit=500".to_owned();
    loop {
        let resp = api.get(&path).expect(200);
        let list = resp.json();
        let items = list.as_array().cloned().unwrap_or_default();
        ids.extend(items.iter().filter_map(|c| c["id"].as_str().map(str::to_owned)));
        let next = resp.header("link").and_then(|l| {
            let url = l.split(';').next()?.trim().trim_start_matches('<').trim_end_matches('>');
            let at = url.find("/v1/")?;
            l.contains("rel=\"next\"").then(|| url[at..].to_owned())
        });
        match next {
            Some(next) if !items.is_empty() => path = next,
            _ => return ids,
        }
    }
}

const MESSAGE: &str = "From: Ada <ada@example.org>\r\nTo: sales@alpha.test\r\n\
Subject: During the outage\r\nMessage-ID: <full@example.org>\r\n\r\nAre you there?";

#[test]
fn a_full_disk_refuses_writes_serves_reads_and_recovers_without_a_restart() {
    if crate::harness::on_postgres() {
        return; // the data file's disk: a PostgreSQL store's disk is PostgreSQL's
    }
    let Some(fs) = Tmpfs::mount(8) else { return };
    let data = TempDir(fs.0.join("data"));
    std::fs::create_dir_all(&data.0).expect("data dir");
    let w = MailWorld::start_in(data, &[("EDGEMAIL_LOG_LEVEL", "info")], &[]);
    let api = w.api();

    let sent: Vec<String> = (0..10)
        .map(|i| {
            let body = json!({"from": "sales@alpha.test", "to": ["ann@example.org"],
                "subject": format!("before {i}"), "text": "hello"});
            w.send(body).expect(200).json()["messageId"].as_str().expect("id").to_owned()
        })
        .collect();
    // A session whose recipient was accepted before the disk filled meets it at DATA.
    let (mut early, _) = Talk::open(w.server.smtp);
    assert!(early.cmd("EHLO client.example.org").starts_with("250"));
    assert!(early.cmd("MAIL FROM:<ada@example.org>").starts_with("250"));
    assert!(early.cmd(&format!("RCPT TO:<sales@{A}>")).starts_with("250"));

    let ballast = fill(&fs.0);
    let mut kept = Vec::new();
    let refused = write_until_refused(&api, &mut kept);
    let retry = refused.header("retry-after").and_then(|v| v.parse::<u64>().ok());
    assert!(retry.is_some_and(|s| s > 0), "Retry-After missing: {:?}", refused.headers);
    refused.expect_error(503, "storage_unavailable");
    // Degraded: refused at once, the same way, and said so by the readiness probe.
    contact(&api, 999_999).expect_error(503, "storage_unavailable");
    let ready = w.server.client(None).get("/readyz");
    assert!(ready.header("retry-after").is_some());
    ready.expect_error(503, "storage_unavailable");
    w.server.client(None).get("/healthz").expect(200);

    // Reads go on, and show every acknowledged write.
    let seen = contact_ids(&api);
    assert!(kept.iter().all(|id| seen.contains(id)), "an acknowledged contact is missing");
    for id in &sent {
        api.get(&format!("/v1/emails/{id}")).expect(200);
    }

    // SMTP: 452 at DATA for the early session, at RCPT for a new one; unknown stays 550.
    assert!(early.cmd("DATA").starts_with("354"));
    early.send(&format!("{MESSAGE}\r\n.\r\n"));
    let data_reply = early.reply();
    assert!(data_reply.starts_with("452 4.3.1"), "{data_reply}");
    let (mut late, _) = Talk::open(w.server.smtp);
    assert!(late.cmd("EHLO client.example.org").starts_with("250"));
    assert!(late.cmd("MAIL FROM:<ada@example.org>").starts_with("250"));
    let rcpt = late.cmd(&format!("RCPT TO:<sales@{A}>"));
    assert!(rcpt.starts_with("452 4.3.1"), "{rcpt}");
    assert!(late.cmd(&format!("RCPT TO:<nobody@{A}>")).starts_with("550"));
    late.cmd("QUIT");

    // Space returns: ready again within 10 s, without a restart.
    std::fs::remove_file(&ballast).expect("remove ballast");
    let freed = Instant::now();
    while w.server.client(None).get("/readyz").status != 200 {
        assert!(freed.elapsed() < Duration::from_secs(10), "not ready 10 s after space returned");
        std::thread::sleep(Duration::from_millis(100));
    }
    let after = contact(&api, 1_000_000).expect(201).json();
    kept.push(after["id"].as_str().expect("id").to_owned());
    let reply = send_one(w.server.smtp, "ada@example.org", &format!("sales@{A}"), MESSAGE);
    assert!(reply.starts_with("250"), "{reply}");

    let seen = contact_ids(&api);
    assert!(kept.iter().all(|id| seen.contains(id)), "an acknowledged contact is missing");
    // Every message accepted before the fault is delivered, and exactly once.
    for id in &sent {
        w.wait_status(id, "delivered");
    }
    let mut subjects: BTreeMap<String, usize> = BTreeMap::new();
    for m in w.sink.messages() {
        *subjects.entry(header(&m.data, "Subject").unwrap_or_default()).or_default() += 1;
    }
    assert_eq!(subjects.len(), sent.len(), "{subjects:?}");
    assert!(subjects.values().all(|n| *n == 1), "a message was delivered twice: {subjects:?}");
    drop(w);
}
