//! The README's commands run: every ```sh block preceded by a `<!-- readme-test -->` line is run
//! with bash, in order, against a temporary install (the built `edgemail` first on `PATH`, a
//! server holding the demo data, a nameserver of its own so nothing leaves the machine), so the
//! README cannot drift from what the server does. Blocks see `URL`, `SMTP`, `DATA` (the server's
//! data directory) and `KEY` (the demo domain's key), and share a working directory.

use std::process::Command;

use crate::dns::Dns;
use crate::harness::{BIN, Seed, Server, TempDir};

/// The marked shell blocks of README.md.
fn marked_blocks() -> Vec<String> {
    let path = format!("{}/README.md", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("README.md");
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "<!-- readme-test -->" {
            continue;
        }
        assert_eq!(lines.next().map(str::trim), Some("```sh"), "a marker must precede ```sh");
        let body: Vec<&str> = lines.by_ref().take_while(|l| l.trim() != "```").collect();
        blocks.push(body.join("\n"));
    }
    blocks
}

#[test]
fn the_readme_tour_runs_against_a_real_server() {
    let blocks = marked_blocks();
    assert!(!blocks.is_empty(), "README.md has no block marked readme-test");
    let dir = TempDir::new("readme");
    let seed = Seed::open(&dir.0);
    seed.domain(edgemail::demo::DOMAIN);
    let key = seed.key(Some(edgemail::demo::DOMAIN));
    seed.close();
    let dns = Dns::start();
    let nameserver = dns.addr().to_string();
    let server = Server::start_with(&dir.0, &["--demo", "--nameserver", &nameserver], &[]);
    let work = TempDir::new("readme-work");
    let bin_dir = std::path::Path::new(BIN).parent().expect("the binary's directory");
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    for block in blocks {
        let out = Command::new("bash")
            .args(["-euo", "pipefail", "-c", &block])
            .current_dir(&work.0)
            .env("PATH", &path)
            .env("KEY", &key)
            .env("URL", format!("http://{}", server.addr))
            .env("SMTP", server.smtp.to_string())
            .env("DATA", &dir.0)
            .output()
            .expect("bash");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "README block failed:\n{block}\nstdout:\n{stdout}\nstderr:\n{}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            server.log()
        );
        if block.contains("domain add") {
            assert!(stdout.contains("_domainkey.example.com."), "no DKIM record: {stdout}");
        }
        if block.contains("smtp://") {
            for subject in ["\"First\"", "\"From outside\""] {
                assert!(stdout.contains(subject), "{subject} is not in the inbox: {stdout}");
            }
        }
        if block.contains("/attachments/0") {
            assert!(stdout.contains("hello, file"), "{stdout}");
            let eml = std::fs::read_to_string(work.0.join("notes.eml")).expect("notes.eml");
            assert!(eml.contains("Subject: Notes") && eml.contains("DKIM-Signature"), "{eml}");
        }
    }
}
