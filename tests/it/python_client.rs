//! The Python client that openapi-python-client (from PyPI) generates from schema/openapi.yaml,
//! run against the real server: `python_client.py` calls every resource through it, and every
//! answer must parse into the generated model the document names. `scripts/test.sh` installs the
//! generator into a venv; without it this test fails and says how to install it.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::dns::Dns;
use crate::harness::{A, TempDir, World};

/// Where `scripts/test.sh` puts the generator (the same venv as benches/openapi-python-client.sh).
const VENV: &str = "/tmp/edgemail-openapi-client-venv";

fn venv() -> PathBuf {
    std::env::var_os("EDGEMAIL_PYTHON_CLIENT_VENV").map_or_else(|| PathBuf::from(VENV), Into::into)
}

/// Runs a command; answers its stdout, or fails the test with everything it said.
fn run(cmd: &mut Command, what: &str) -> String {
    let out = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let (stdout, stderr) =
        (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{what} failed:\nstdout:\n{stdout}\nstderr:\n{stderr}");
    stdout.into_owned()
}

/// Generates the package `edgemail_client` into `dir`.
fn generate(venv: &Path, dir: &Path) {
    let generator = venv.join("bin/openapi-python-client");
    assert!(
        generator.exists(),
        "{} is missing: scripts/test.sh installs it; by hand: python3 -m venv {v} && {v}/bin/pip install \
         openapi-python-client ruff",
        generator.display(),
        v = venv.display()
    );
    let schema = Path::new(env!("CARGO_MANIFEST_DIR")).join("schema/openapi.yaml");
    let path = venv.join("bin").display().to_string();
    let system = std::env::var("PATH").unwrap_or_default();
    run(
        Command::new(&generator)
            .args(["generate", "--meta", "none", "--output-path", "edgemail_client", "--path"])
            .arg(&schema)
            .current_dir(dir)
            .env("PATH", format!("{path}:{system}")),
        "openapi-python-client generate",
    );
}

#[test]
fn the_generated_python_client_parses_every_resource_of_a_running_server() {
    let venv = venv();
    let dir = TempDir::new("python-client");
    generate(&venv, &dir.0);
    // Lookups go to a local nameserver that knows nothing: nothing leaves the machine.
    let dns = Dns::start();
    let nameserver = dns.addr().to_string();
    let world = World::start_with_env(&[
        ("EDGEMAIL_DELIVERY_NAMESERVER", &nameserver),
        ("EDGEMAIL_DELIVERY_DNS_TIMEOUT", "300ms"),
        ("EDGEMAIL_WEBHOOKS_ALLOW_PRIVATE", "true"),
        ("EDGEMAIL_TOOLS_BURST", "100"),
    ]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/it/python_client.py");
    let out = run(
        Command::new(venv.join("bin/python"))
            .arg(&script)
            .arg(&dir.0)
            .arg(format!("http://{}", world.server.addr))
            .args([A, &world.a, &world.org]),
        &format!("python_client.py (server log:\n{})", world.server.log()),
    );
    assert!(out.starts_with("ok: "), "{out}");
    // The script reaches every operation of the document except the tracking links (their
    // tokens are made by sending a campaign; tests/it/send.rs covers them) and the metrics.
    let operations: usize = out
        .split(", ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .map_or(0, |n| n.parse().unwrap_or(0));
    assert!(operations >= 50, "{out}");
}
