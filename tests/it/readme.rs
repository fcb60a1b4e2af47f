//! The documentation's commands run: every ```sh block of README.md and of docs/*.md is run with
//! `bash -euo pipefail`, in order, against a temporary install (the built `edgemail` first on
//! `PATH`, a real server on real sockets, a nameserver of its own so nothing leaves the machine),
//! so the documentation cannot drift from what the server does.
//!
//! The blocks of one page share a working directory, which is also their `HOME` (but for blocks in
//! the source tree, whose cargo needs the real one), and see `URL`,
//! `SMTP`, `DATA` (the server's data directory), `KEY` (a domain key), and on docs pages
//! `SUBMISSION`, `SUBMISSIONS`, `IMAP` and `IMAPS` (`127.0.0.1:PORT` of each listener). A block
//! that names `cargo`, `scripts/` or `dist/` runs in the source tree instead (it may write only
//! ignored files: the test fails when `git status` changes). HTML comments just before a fence
//! say how to treat it:
//!
//! - `<!-- readme-test -->`: run it (as every unmarked ```sh block is);
//! - `<!-- docs-server -->`: a server that runs in the foreground: run with its HTTP and SMTP
//!   listeners on port 0 and its default data directory in the working directory, wait for
//!   `ready`, ask `/healthz`, stop it with SIGTERM;
//! - `<!-- docs-file: PATH -->`: a file a later block uses, written to `HOME/PATH` with the
//!   server's real addresses put in: `mail.example.com` becomes 127.0.0.1 and the standard ports
//!   (587, 465, 143, 993, as `:PORT` or on a `port` line) those of the listeners;
//! - `<!-- docs-needs: TOOL -->`: the block and the page's later blocks are run only when TOOL is
//!   installed (otherwise they are listed as not run);
//! - `<!-- docs-skip: REASON -->`: never run; listed with its reason, and kept to `MAX_SKIPPED`.

use std::collections::BTreeMap;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::dns::Dns;
use crate::harness::{BIN, Seed, Server, TempDir};

/// Blocks that no test can run (a whole build for another target, root and systemd, a container
/// engine, the test suite itself, a PostgreSQL server): at most this many.
const MAX_SKIPPED: usize = 6;

const REPO: &str = env!("CARGO_MANIFEST_DIR");

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Run,
    Server,
    File(String),
    Skip(String),
}

#[derive(Debug, Clone)]
struct Block {
    line: usize,
    lang: String,
    body: String,
    kind: Kind,
    needs: Vec<String>,
}

/// The fenced blocks of a Markdown text, with the markers before each.
fn parse(text: &str) -> Result<Vec<Block>, String> {
    let mut blocks = Vec::new();
    let mut kind = None;
    let mut needs = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((at, line)) = lines.next() {
        let trimmed = line.trim();
        if let Some(marker) = trimmed.strip_prefix("<!--").and_then(|m| m.strip_suffix("-->")) {
            let marker = marker.trim();
            let (name, value) = marker.split_once(':').unwrap_or((marker, ""));
            let value = value.trim().to_owned();
            match name.trim() {
                "readme-test" => kind = Some(Kind::Run),
                "docs-server" => kind = Some(Kind::Server),
                "docs-file" if !value.is_empty() => kind = Some(Kind::File(value)),
                "docs-skip" if !value.is_empty() => kind = Some(Kind::Skip(value)),
                "docs-needs" if !value.is_empty() => needs.push(value),
                _ => continue,
            }
            continue;
        }
        let Some(lang) = trimmed.strip_prefix("```") else {
            if (kind.is_some() || !needs.is_empty()) && !trimmed.is_empty() {
                return Err(format!("line {}: a marker must come just before a fence", at + 1));
            }
            continue;
        };
        if lang.is_empty() {
            return Err(format!("line {}: a fence without a language", at + 1));
        }
        let body: Vec<&str> =
            lines.by_ref().map(|(_, l)| l).take_while(|l| l.trim() != "```").collect();
        let kind = match kind.take() {
            Some(k) => k,
            None if lang == "sh" => Kind::Run,
            None => {
                needs.clear();
                continue;
            }
        };
        if lang != "sh" && !matches!(kind, Kind::File(_)) {
            return Err(format!("line {}: only ```sh blocks run", at + 1));
        }
        let needs = std::mem::take(&mut needs);
        blocks.push(Block {
            line: at + 1,
            lang: lang.to_owned(),
            body: body.join("\n"),
            kind,
            needs,
        });
    }
    Ok(blocks)
}

/// Where a page's blocks run.
struct Sandbox<'a> {
    server: &'a Server,
    data: &'a Path,
    key: &'a str,
    work: &'a Path,
}

impl Sandbox<'_> {
    fn listener(&self, name: &str) -> String {
        self.server.listener(name).map(|a| a.to_string()).unwrap_or_default()
    }

    fn command(&self, body: &str) -> Command {
        let bin_dir = Path::new(BIN).parent().expect("the binary's directory");
        let target = bin_dir.parent().expect("the target directory");
        let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
        let source_tree = in_source_tree(body);
        let mut cmd = Command::new("bash");
        cmd.args(["-euo", "pipefail", "-c", body]).current_dir(if source_tree {
            Path::new(REPO)
        } else {
            self.work
        });
        // Cargo and rustup find their homes through HOME: a block in the source tree keeps it.
        if !source_tree {
            cmd.env("HOME", self.work);
        }
        // What cargo sets for this test process would make a nested cargo rebuild the tree.
        for (var, _) in std::env::vars_os() {
            let name = var.to_string_lossy();
            if (name.starts_with("CARGO") && name != "CARGO_HOME") || name == "OUT_DIR" {
                cmd.env_remove(&var);
            }
        }
        cmd.env("PATH", path)
            .env("CARGO_NET_OFFLINE", "true")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("RUST_LOG")
            .env("CARGO_TARGET_DIR", target)
            .env("KEY", self.key)
            .env("URL", format!("http://{}", self.server.addr))
            .env("SMTP", self.server.smtp.to_string())
            .env("DATA", self.data);
        for (var, name) in [
            ("SUBMISSION", "submission"),
            ("SUBMISSIONS", "submissions"),
            ("IMAP", "imap"),
            ("IMAPS", "imaps"),
        ] {
            cmd.env(var, self.listener(name));
        }
        cmd
    }

    /// A file block's text with this server's addresses in place of the standard ones.
    fn localise(&self, text: &str) -> String {
        let mut text = text.replace("mail.example.com", "127.0.0.1");
        for (port, name) in
            [("587", "submission"), ("465", "submissions"), ("143", "imap"), ("993", "imaps")]
        {
            let real = self.listener(name);
            let real = real.rsplit(':').next().unwrap_or_default().to_owned();
            text = text.replace(&format!(":{port}"), &format!(":{real}"));
            text = text
                .lines()
                .map(|l| {
                    let words: Vec<&str> = l.split_whitespace().collect();
                    if words.len() == 2 && words[0].eq_ignore_ascii_case("port") && words[1] == port
                    {
                        format!("{} {real}", words[0])
                    } else {
                        l.to_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n");
        }
        text + "\n"
    }
}

fn in_source_tree(body: &str) -> bool {
    body.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("cargo ") || l.starts_with("scripts/") || l.contains(" dist/")
    })
}

fn installed(tool: &str) -> bool {
    Command::new("bash")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// What running a page left out.
#[derive(Default)]
struct Report {
    ran: usize,
    not_run: Vec<String>,
    skipped: Vec<String>,
}

/// Runs a page's blocks in order; the first failure ends it with the block, its output and the
/// server's log.
fn run_page(name: &str, text: &str, sandbox: &Sandbox) -> Result<Report, String> {
    let mut report = Report::default();
    let mut missing: Option<String> = None;
    for block in parse(text).map_err(|e| format!("{name}: {e}"))? {
        let at = format!("{name}:{}", block.line);
        if let Kind::Skip(reason) = &block.kind {
            report.skipped.push(format!("{at}: {reason}"));
            continue;
        }
        if missing.is_none() {
            missing = block.needs.iter().find(|t| !installed(t)).cloned();
        }
        if let Some(tool) = &missing {
            report.not_run.push(format!("{at}: {tool} is not installed"));
            continue;
        }
        match &block.kind {
            Kind::File(path) => {
                let file = sandbox.work.join(path);
                std::fs::create_dir_all(file.parent().expect("a parent")).expect("mkdir");
                std::fs::write(&file, sandbox.localise(&block.body)).expect("write");
                set_private(&file);
            }
            Kind::Server => run_server(&at, &block.body, sandbox)?,
            _ => {
                let out = sandbox.command(&block.body).output().expect("bash");
                let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
                if !out.status.success() {
                    return Err(format!(
                        "{at} ({}) failed:\n{}\nstdout:\n{stdout}\nstderr:\n{}\nserver log:\n{}",
                        block.lang,
                        block.body,
                        String::from_utf8_lossy(&out.stderr),
                        sandbox.server.log()
                    ));
                }
                check_output(&at, &block.body, &stdout, sandbox.work)?;
            }
        }
        report.ran += 1;
    }
    Ok(report)
}

fn set_private(file: &Path) {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o600));
}

/// What some blocks must have shown, beyond succeeding.
fn check_output(at: &str, block: &str, stdout: &str, work: &Path) -> Result<(), String> {
    let fail = |what: &str| Err(format!("{at}: {what}:\n{stdout}"));
    if block.contains("domain add example.com --data \"$DATA\"")
        && !stdout.contains("_domainkey.example.com.")
    {
        return fail("no DKIM record");
    }
    if block.contains("smtp://$SMTP") {
        for subject in ["\"First\"", "\"From outside\""] {
            if !stdout.contains(subject) {
                return fail(&format!("{subject} is not in the inbox"));
            }
        }
    }
    if block.contains("/attachments/0") {
        if !stdout.contains("hello, file") {
            return fail("no attachment");
        }
        let eml = std::fs::read_to_string(work.join("notes.eml")).unwrap_or_default();
        if !(eml.contains("Subject: Notes") && eml.contains("DKIM-Signature")) {
            return fail("notes.eml is not the signed message");
        }
    }
    Ok(())
}

/// Runs a foreground server block with a time limit: it must print `ready` and answer
/// `/healthz`, then stop on SIGTERM.
fn run_server(at: &str, body: &str, sandbox: &Sandbox) -> Result<(), String> {
    let logs = sandbox.work.join(format!("server-block-{}", crate::harness::unique()));
    std::fs::create_dir_all(&logs).expect("mkdir");
    let mut cmd = sandbox.command(body);
    cmd.env("EDGEMAIL_HTTP_LISTEN", "127.0.0.1:0")
        .env("EDGEMAIL_SMTP_LISTEN", "127.0.0.1:0")
        .env("EDGEMAIL_STORAGE_DATA_DIR", sandbox.work.join("edgemail-data"))
        .stdout(std::fs::File::create(logs.join("out")).expect("stdout"))
        .stderr(std::fs::File::create(logs.join("err")).expect("stderr"))
        .process_group(0);
    let mut child = cmd.spawn().expect("bash");
    let group = format!("-{}", child.id());
    let stop = |signal: &str| {
        let _ = Command::new("kill").args([signal, "--", &group]).status();
    };
    let read = |name: &str| std::fs::read_to_string(logs.join(name)).unwrap_or_default();
    // `cargo run` may have to check the build first.
    let deadline = Instant::now() + Duration::from_secs(180);
    let result = loop {
        let err = read("err");
        if err.lines().any(|l| l == "ready") {
            let http = err
                .lines()
                .find_map(|l| l.strip_prefix("listening http="))
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_default()
                .to_owned();
            break healthz(&http).map_err(|e| format!("{at}: /healthz on {http}: {e}\n{err}"));
        }
        if let Ok(Some(status)) = child.try_wait() {
            break Err(format!("{at}: the server exited ({status}) before ready:\n{err}"));
        }
        if Instant::now() > deadline {
            break Err(format!("{at}: no ready line in time:\n{err}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    stop("-TERM");
    let deadline = Instant::now() + Duration::from_secs(20);
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > deadline {
            stop("-KILL");
            let _ = child.wait();
            return Err(format!("{at}: the server did not stop on SIGTERM"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    result?;
    if body.contains("demo") && !read("out").contains("API key (shown once)") {
        return Err(format!("{at}: demo printed no key:\n{}", read("out")));
    }
    Ok(())
}

fn healthz(addr: &str) -> Result<(), String> {
    use std::io::Write;
    let mut stream = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).map_err(|e| e.to_string())?;
    write!(stream, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .map_err(|e| e.to_string())?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).map_err(|e| e.to_string())?;
    if answer.starts_with("HTTP/1.1 200") && answer.contains("\"ok\"") {
        Ok(())
    } else {
        Err(answer)
    }
}

/// Background processes a page started and named in `*.pid` files of its working directory.
struct Reaper<'a>(&'a Path);

impl Drop for Reaper<'_> {
    fn drop(&mut self) {
        reap(self.0, 3);
    }
}

/// Kills the processes named by `*.pid` files in `dir` and its subdirectories, `depth` deep.
fn reap(dir: &Path, depth: u32) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && depth > 0 {
            reap(&path, depth - 1);
        } else if path.extension().is_some_and(|e| e == "pid") {
            let pid = std::fs::read_to_string(&path).unwrap_or_default();
            if let Ok(pid) = pid.trim().parse::<u32>() {
                let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            }
        }
    }
}

fn git_status() -> String {
    let out = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=all"])
        .current_dir(REPO)
        .output()
        .expect("git");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A server for a docs page: the domain example.com with a key, every mail client listener, and
/// a nameserver of its own.
fn docs_server(dir: &Path, dns: &Dns) -> (Server, String) {
    // The pages describe the default store (backup and check act on its data file), also when
    // the suite runs on PostgreSQL; docs/postgresql-and-clusters.md is for the other.
    crate::harness::keep_on_redb(dir);
    let seed = Seed::open(dir);
    seed.domain("example.com");
    let key = seed.key(Some("example.com"));
    seed.close();
    let nameserver = dns.addr().to_string();
    let args = [
        "--nameserver",
        &nameserver,
        "--submission",
        "127.0.0.1:0",
        "--submissions",
        "127.0.0.1:0",
        "--imap",
        "127.0.0.1:0",
        "--imaps",
        "127.0.0.1:0",
    ];
    let env = [("EDGEMAIL_SMTP_HOSTNAME", "mail.example.com")];
    (Server::start_with(dir, &args, &env), key)
}

fn docs_pages() -> BTreeMap<String, String> {
    let mut pages = BTreeMap::new();
    for entry in std::fs::read_dir(format!("{REPO}/docs")).expect("docs/") {
        let path: PathBuf = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "md") {
            let name = format!("docs/{}", path.file_name().expect("name").to_string_lossy());
            pages.insert(name, std::fs::read_to_string(&path).expect("read page"));
        }
    }
    pages
}

fn print_report(report: &Report) {
    for line in &report.skipped {
        eprintln!("not run (marked docs-skip): {line}");
    }
    for line in &report.not_run {
        eprintln!("not run: {line}");
    }
}

#[test]
fn the_readme_tour_runs_against_a_real_server() {
    let before = git_status();
    let text = std::fs::read_to_string(format!("{REPO}/README.md")).expect("README.md");
    assert!(text.contains("<!-- readme-test -->"), "the tour blocks keep their marker");
    let dir = TempDir::new("readme");
    let seed = Seed::open(&dir.0);
    seed.domain(edgemail::demo::DOMAIN);
    let key = seed.key(Some(edgemail::demo::DOMAIN));
    seed.close();
    let dns = Dns::start();
    let nameserver = dns.addr().to_string();
    let server = Server::start_with(&dir.0, &["--demo", "--nameserver", &nameserver], &[]);
    let work = TempDir::new("readme-work");
    let _reaper = Reaper(&work.0);
    let sandbox = Sandbox { server: &server, data: &dir.0, key: &key, work: &work.0 };
    let report = run_page("README.md", &text, &sandbox).unwrap_or_else(|e| panic!("{e}"));
    print_report(&report);
    assert!(report.ran >= 6, "README.md ran {} blocks", report.ran);
    assert_eq!(git_status(), before, "a README block wrote into the source tree");
}

#[test]
fn readme_docs_pages_run_against_a_real_server() {
    let before = git_status();
    let mut total = Report::default();
    for (name, text) in docs_pages() {
        let dir = TempDir::new("docs");
        let dns = Dns::start();
        let (server, key) = docs_server(&dir.0, &dns);
        let work = TempDir::new("docs-work");
        let _reaper = Reaper(&work.0);
        let sandbox = Sandbox { server: &server, data: &dir.0, key: &key, work: &work.0 };
        let report = run_page(&name, &text, &sandbox).unwrap_or_else(|e| panic!("{e}"));
        total.ran += report.ran;
        total.not_run.extend(report.not_run);
        total.skipped.extend(report.skipped);
    }
    print_report(&total);
    eprintln!("docs pages: {} blocks run, {} not run", total.ran, total.not_run.len());
    assert!(total.ran >= 10, "only {} blocks ran", total.ran);
    assert_eq!(git_status(), before, "a docs block wrote into the source tree");
}

#[test]
fn readme_skips_few_blocks_and_links_every_docs_page() {
    let readme = std::fs::read_to_string(format!("{REPO}/README.md")).expect("README.md");
    let index = std::fs::read_to_string(format!("{REPO}/docs/README.md")).expect("index");
    let mut skipped = Vec::new();
    let mut pages = docs_pages();
    pages.insert("README.md".into(), readme.clone());
    for (name, text) in &pages {
        for block in parse(text).unwrap_or_else(|e| panic!("{name}: {e}")) {
            if let Kind::Skip(reason) = block.kind {
                skipped.push(format!("{name}:{}: {reason}", block.line));
            }
        }
        let Some(page) = name.strip_prefix("docs/") else { continue };
        if page != "README.md" {
            assert!(index.contains(&format!("]({page})")), "docs/README.md does not list {page}");
            assert!(readme.contains(&format!("](docs/{page})")), "README.md does not link {page}");
        }
        // Links between pages point at pages that exist.
        for link in text.split("](").skip(1) {
            let target = link.split([')', '#']).next().unwrap_or_default();
            if target.ends_with(".md") && !target.contains("://") {
                let base =
                    if name == "README.md" { REPO.to_owned() } else { format!("{REPO}/docs") };
                assert!(Path::new(&base).join(target).exists(), "{name} links to {target}");
            }
        }
    }
    eprintln!("blocks marked docs-skip ({}):\n{}", skipped.len(), skipped.join("\n"));
    assert!(skipped.len() <= MAX_SKIPPED, "too many blocks are not run: {skipped:#?}");
}

#[test]
fn readme_runner_fails_on_a_wrong_command_or_a_bad_marker() {
    let dir = TempDir::new("docs-fail");
    let dns = Dns::start();
    let (server, key) = docs_server(&dir.0, &dns);
    let work = TempDir::new("docs-fail-work");
    let sandbox = Sandbox { server: &server, data: &dir.0, key: &key, work: &work.0 };
    let cases = [
        "```sh\ncurl -fsS \"$URL/healthz\"\nedgemail domian list --data \"$DATA\"\n```\n",
        "```sh\ncurl -fsS \"$URL/v1/nothing-here\"\n```\n",
        "<!-- docs-server -->\n```sh\nedgemail serve --http not-an-address\n```\n",
        "<!-- docs-file: x.conf -->\n\ntext in between\n```text\nx\n```\n",
        "```\nedgemail --version\n```\n",
    ];
    for case in cases {
        assert!(run_page("case", case, &sandbox).is_err(), "this should fail:\n{case}");
    }
    let good = "<!-- docs-file: a/b.conf -->\n```text\nhost mail.example.com\nport 993\n```\n\
                ```sh\ngrep -x 'host 127.0.0.1' a/b.conf\ngrep -x \"port ${IMAPS##*:}\" a/b.conf\n```\n";
    let report = run_page("case", good, &sandbox).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(report.ran, 2);
}
