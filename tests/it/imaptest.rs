//! Dovecot's own IMAP compliance suite, imaptest, against the real binary (issue 34): every
//! scripted test file runs over implicit TLS against a fresh mailbox, and each file that must
//! pass (`MUST_PASS`) does. The peer is built from the source kept beside the workspace
//! (`../shared/peers/imaptest`, or `IMAPTEST_PEERS`), as `scripts/test.sh` does before the tests.

use std::path::PathBuf;
use std::process::Command;

use crate::harness::A;
use crate::imap::Fixture;

/// The files edgemail passes today. Dovecot 2.3.19 passes 67 of the 71 and skips 4; a file
/// joins this list when it passes, and never leaves it.
const MUST_PASS: &[&str] = &[
    "append",
    "append-binary",
    "atoms",
    "close",
    "copy",
    "expunge",
    "expunge2",
    "fetch",
    "fetch-body",
    "fetch-body-message-rfc822",
    "fetch-body-message-rfc822-mime",
    "fetch-body-message-rfc822-x2",
    "fetch-binary-mime",
    "fetch-body-mime",
    "fetch-bodystructure",
    "fetch-envelope",
    "id",
    "list",
    "logout",
    "move",
    "mutf7",
    "nil",
    "pipeline",
    "search-addresses",
    "search-body",
    "search-date",
    "search-flags",
    "search-header",
    "search-sets",
    "search-size",
    "select",
    "sort-addresses",
    "sort-arrival",
    "sort-date",
    "sort-display-from",
    "sort-display-to",
    "sort-size",
    "sort-subject",
    "store",
    "subscribe",
    "thread",
    "thread-orderedsubject",
    "thread-orderedsubject2",
    "thread2",
    "thread3",
    "thread4",
    "thread5",
    "thread6",
    "thread7",
    "thread8",
    "uidplus",
    "uidvalidity",
    "uidvalidity-rename",
];

fn peers() -> PathBuf {
    if let Some(dir) = std::env::var_os("IMAPTEST_PEERS") {
        return PathBuf::from(dir);
    }
    let beside = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/peers");
    if beside.is_dir() { beside } else { PathBuf::from("/work/shared/peers") }
}

/// Runs the suite; (file, verdict, first failure) per file.
fn run(f: &Fixture) -> Vec<(String, String, String)> {
    let script = peers().join("imaptest/run.sh");
    assert!(script.is_file(), "imaptest's run.sh not found at {}", script.display());
    // The logs go with the test's data directory, or where IMAPTEST_LOGS says (kept).
    let out_dir = std::env::var_os("IMAPTEST_LOGS")
        .map_or_else(|| f.world.dir.0.join("imaptest-logs"), PathBuf::from);
    let out = Command::new("bash")
        .arg(&script)
        .args(["127.0.0.1", &f.port("imaps").to_string(), &format!("sales@{A}"), &f.password])
        .arg(&out_dir)
        .output()
        .expect("bash");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    println!("{text}");
    let mut rows = Vec::new();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(file), Some(verdict)) = (parts.next(), parts.next()) else { continue };
        if matches!(verdict, "pass" | "FAIL" | "skip") {
            let rest = parts.collect::<Vec<_>>().join(" ");
            rows.push((file.to_owned(), verdict.to_owned(), rest));
        }
    }
    assert!(
        rows.len() > 60,
        "imaptest ran too few files:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    rows
}

#[test]
fn imaptest_files_pass() {
    let f = Fixture::start();
    let rows = run(&f);
    let passed: Vec<&str> =
        rows.iter().filter(|(_, v, _)| v == "pass").map(|(file, _, _)| file.as_str()).collect();
    let missing: Vec<String> = MUST_PASS
        .iter()
        .filter(|file| !passed.contains(file))
        .map(|file| {
            let row = rows.iter().find(|(f, _, _)| f == file);
            format!(
                "{file}: {}",
                row.map_or("not run", |(_, v, why)| if why.is_empty() { v } else { why })
            )
        })
        .collect();
    assert!(missing.is_empty(), "imaptest files that must pass failed:\n{}", missing.join("\n"));
}

/// imaptest's stress mode: clients log in, select, fetch, store, expunge, append and log out at
/// random for a while, each checking what the server says against its own model of the mailbox
/// (with `checkpoint`, all clients stop and compare their views). Any protocol error or
/// inconsistency is an `Error:` line.
#[test]
fn imaptest_stress_finds_no_errors() {
    let f = Fixture::start();
    let built = Command::new(peers().join("imaptest/build.sh")).output().expect("build.sh");
    let bin = String::from_utf8_lossy(&built.stdout).lines().last().unwrap_or("").to_owned();
    let mbox = PathBuf::from(&bin).with_file_name("tests").join("default.mbox");
    // checkpoint first, on the fresh mailbox: imaptest 924f619 itself can panic (array.c) in a
    // checkpoint run on a mailbox that earlier runs left, against Dovecot as well.
    for profile in ["checkpoint=3", "logout=1", "logout=0"] {
        let out = Command::new(&bin)
            .args(["host=127.0.0.1", &format!("port={}", f.port("imaps")), "ssl=any-cert"])
            .arg(format!("user=sales@{A}"))
            .arg(format!("pass={}", f.password))
            .arg(format!("mbox={}", mbox.display()))
            .args(["clients=10", "secs=8", profile])
            .output()
            .expect("imaptest");
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        let errors: Vec<&str> =
            text.lines().filter(|l| l.starts_with("Error:") || l.starts_with("Panic")).collect();
        assert!(errors.is_empty(), "{profile}: imaptest reported errors:\n{}", errors.join("\n"));
        assert!(text.contains("Totals:"), "{profile}: imaptest did not finish:\n{text}");
    }
}
