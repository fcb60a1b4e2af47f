//! Moving in and out (`edgemail import` / `edgemail export`): a Maildir++ tree with flags,
//! keywords, old internal dates and a non-ASCII folder name is imported (server stopped), a
//! second run copies nothing, then the running server exports it to mbox and Maildir, and each
//! export imported into a fresh mailbox and exported again gives the same bytes, flags and dates.

use std::collections::BTreeMap;
use std::path::Path;

use crate::harness::{A, Seed, Server, TempDir, cli};

/// (folder directory, sorted (text, flags, mtime seconds)) of the folders of a Maildir++ tree
/// that hold messages (an export writes every folder, the empty ones too).
type View = BTreeMap<String, Vec<(String, Vec<String>, u64)>>;

const LETTERS: [(char, &str); 6] = [
    ('D', "\\Draft"),
    ('F', "\\Flagged"),
    ('P', "$Forwarded"),
    ('R', "\\Answered"),
    ('S', "\\Seen"),
    ('T', "\\Deleted"),
];

fn view(root: &Path) -> View {
    let mut out = View::new();
    let mut dirs = vec![(".".to_owned(), root.to_path_buf())];
    for e in std::fs::read_dir(root).expect("read root") {
        let e = e.expect("entry");
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') && e.path().join("cur").is_dir() {
            dirs.push((name, e.path()));
        }
    }
    for (name, dir) in dirs {
        let keywords: Vec<String> = std::fs::read_to_string(dir.join("dovecot-keywords"))
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.split_once(' ').map(|(_, k)| k.to_owned()))
            .collect();
        let mut messages = Vec::new();
        for sub in ["cur", "new"] {
            for e in std::fs::read_dir(dir.join(sub)).expect("read folder") {
                let e = e.expect("entry");
                let file = e.file_name().to_string_lossy().into_owned();
                let info = file.rsplit_once(":2,").map_or("", |(_, i)| i).to_owned();
                let mut flags: Vec<String> = info
                    .chars()
                    .filter_map(|c| match c {
                        'a'..='z' => keywords.get(c as usize - 'a' as usize).cloned(),
                        _ => LETTERS.iter().find(|(l, _)| *l == c).map(|(_, f)| (*f).to_owned()),
                    })
                    .collect();
                flags.sort();
                let modified = e.metadata().expect("meta").modified().expect("mtime");
                let secs = modified.duration_since(std::time::UNIX_EPOCH).expect("after").as_secs();
                let bytes = std::fs::read(e.path()).expect("read message");
                messages.push((String::from_utf8(bytes).expect("utf-8 fixture"), flags, secs));
            }
        }
        messages.sort();
        if !messages.is_empty() {
            out.insert(name, messages);
        }
    }
    out
}

fn message(n: usize, extra: &str) -> Vec<u8> {
    format!(
        "From: Old Host <old{n}@example.org>\r\nTo: src@{A}\r\nSubject: moved {n} {extra}\r\n\
         Message-ID: <moved-{n}@example.org>\r\nDate: Mon, 5 Jan 2015 10:00:0{} +0000\r\n\r\n\
         From the old host, line one\r\n>From quoted already\r\nbody {n}\r\n",
        n % 10
    )
    .into_bytes()
}

/// A Maildir++ tree as Dovecot writes one: INBOX, Sent, Junk and `Arbeit/Ärger`.
fn fixture(root: &Path) {
    let put = |dir: &str, name: &str, bytes: &[u8], secs: u64| {
        let path = root.join(dir);
        for sub in ["cur", "new", "tmp"] {
            std::fs::create_dir_all(path.join(sub)).expect("mkdir");
        }
        let file = path.join(name);
        std::fs::write(&file, bytes).expect("write");
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
        std::fs::File::options()
            .write(true)
            .open(&file)
            .expect("open")
            .set_modified(at)
            .expect("mtime");
    };
    put(".", "cur/1420452000.M1P1.old,S=1:2,S", &message(1, "seen"), 1_420_452_000);
    put(".", "cur/1420452001.M2P1.old:2,FRa", &message(2, "flagged"), 1_420_452_001);
    put(".", "new/1420452002.M3P1.old", &message(3, "new"), 1_420_452_002);
    std::fs::write(root.join("dovecot-keywords"), "0 $Work\n").expect("keywords");
    put(".Sent", "cur/1300000000.M4P1.old:2,S", &message(4, "sent"), 1_300_000_000);
    put(".Junk", "cur/1300000001.M5P1.old:2,", &message(5, "junk"), 1_300_000_001);
    put(
        ".Arbeit.&AMQ-rger",
        "cur/1200000000.M6P1.old:2,DS",
        &message(6, "draft ärger"),
        1_200_000_000,
    );
    std::fs::write(root.join(".Arbeit.&AMQ-rger/maildirfolder"), "").expect("marker");
}

fn run(args: &[&str]) -> String {
    let (ok, out, err) = cli(args);
    assert!(ok, "edgemail {args:?} failed: {err}\n{out}");
    out
}

#[test]
fn maildir_and_mbox_round_trip_byte_for_byte_with_flags_and_dates() {
    let dir = TempDir::new("import-export");
    let data = dir.0.join("data");
    std::fs::create_dir_all(&data).expect("data dir");
    let seed = Seed::open(&data);
    seed.domain(A);
    for local in ["src", "viambox", "viamaildir"] {
        seed.mailbox(A, local);
    }
    seed.close();
    let d = data.to_str().expect("utf-8");
    let source = dir.0.join("source");
    fixture(&source);
    let mailbox = format!("src@{A}");
    let s = source.to_str().expect("utf-8");

    // Server stopped: the CLI opens the store itself.
    let out = run(&["import", "--mailbox", &mailbox, "--maildir", s, "--data", d]);
    assert!(out.contains("INBOX: 3 imported, 0 skipped, 0 failed"), "{out}");
    assert!(out.contains("Arbeit/Ärger: 1 imported"), "{out}");
    assert!(out.contains("total: 6 imported, 0 skipped, 0 failed"), "{out}");
    let again = run(&["import", "--mailbox", &mailbox, "--maildir", s, "--data", d]);
    assert!(again.contains("total: 0 imported, 6 skipped, 0 failed"), "{again}");

    // Server running: the CLI goes through it.
    let _server = Server::start(&data);
    let mbox = dir.0.join("all.mbox");
    let m = mbox.to_str().expect("utf-8");
    let out = run(&["export", "--mailbox", &mailbox, "--mbox", m, "--data", d]);
    assert!(out.contains("INBOX: 3 exported"), "{out}");
    let exported = dir.0.join("exported");
    let e = exported.to_str().expect("utf-8");
    run(&["export", "--mailbox", &mailbox, "--maildir", e, "--data", d]);
    assert_eq!(view(&exported), view(&source), "the export is the source");
    let (ok, _, err) = cli(&["export", "--mailbox", &mailbox, "--mbox", m, "--data", d]);
    assert!(!ok && err.contains("exists"), "an export never replaces a file: {err}");

    // Each export imported into a fresh mailbox, exported again: the same tree.
    let via_mbox = format!("viambox@{A}");
    let out = run(&["import", "--mailbox", &via_mbox, "--mbox", m, "--data", d]);
    assert!(out.contains("total: 6 imported"), "{out}");
    let again = dir.0.join("again-mbox");
    run(&[
        "export",
        "--mailbox",
        &via_mbox,
        "--maildir",
        again.to_str().expect("utf-8"),
        "--data",
        d,
    ]);
    assert_eq!(view(&again), view(&source), "mbox export, import, export");
    let via_maildir = format!("viamaildir@{A}");
    run(&["import", "--mailbox", &via_maildir, "--maildir", e, "--data", d]);
    let again = dir.0.join("again-maildir");
    run(&[
        "export",
        "--mailbox",
        &via_maildir,
        "--maildir",
        again.to_str().expect("utf-8"),
        "--data",
        d,
    ]);
    assert_eq!(view(&again), view(&source), "Maildir export, import, export");

    let (ok, _, err) =
        cli(&["import", "--mailbox", &format!("nobody@{A}"), "--mbox", m, "--data", d]);
    assert!(!ok && err.contains("not found"), "{err}");
}

#[test]
fn the_import_route_takes_an_mbox_into_a_folder_within_the_quota() {
    use serde_json::json;
    let world = crate::harness::World::start();
    let api = world.alpha();
    api.post("/v1/mailboxes", json!({"address": "up"})).expect(201);
    // Room for the small messages only: the large one fails alone, with its reason.
    api.patch("/v1/mailboxes/up", json!({"quotaBytes": 2000})).expect(200);
    let mut mbox = Vec::new();
    for (n, size) in [(1, 10), (2, 5000), (3, 10)] {
        mbox.extend_from_slice(b"From x@example.org Mon Jan  5 10:00:00 2015\n");
        mbox.extend_from_slice(
            format!("Message-ID: <up-{n}@example.org>\nStatus: RO\n\n").as_bytes(),
        );
        mbox.extend(std::iter::repeat_n(b'a', size));
        mbox.extend_from_slice(b"\n\n");
    }
    let path = format!("/v1/mailboxes/up@{A}/import?folder=Old%2FHost");
    let headers = [("Content-Type", "application/mbox")];
    let first = api.raw("POST", &path, &headers, Some(&mbox)).expect(200).json();
    assert_eq!(first["imported"], 2, "{first}");
    assert_eq!(first["failed"][0]["index"], 1, "{first}");
    assert!(first["failed"][0]["reason"].as_str().is_some_and(|r| r.contains("quota")), "{first}");
    let again = api.raw("POST", &path, &headers, Some(&mbox)).expect(200).json();
    assert_eq!(
        (again["imported"].clone(), again["skipped"].clone()),
        (json!(0), json!(2)),
        "{again}"
    );
    let folders = api.get(&format!("/v1/mailboxes/up@{A}/folders")).expect(200).json();
    let made = folders.as_array().and_then(|f| f.iter().find(|f| f["name"] == "Old/Host")).cloned();
    assert_eq!(made.map(|f| (f["total"].clone(), f["unread"].clone())), Some((json!(2), json!(0))));
    let refused = api.raw("POST", &path, &headers, Some(b"Subject: not an mbox\n\nx\n"));
    refused.expect_error(400, "invalid_request");
    api.raw("POST", &format!("/v1/mailboxes/none@{A}/import"), &headers, Some(&mbox)).expect(404);
}
