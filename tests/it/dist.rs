//! The files in `dist/`: the systemd unit passes `systemd-analyze verify` (when the tool is on
//! the machine), the container listens on every interface, and the install script keeps the
//! configuration and data to the service user.

use std::process::Command;

fn dist(name: &str) -> String {
    let path = format!("{}/dist/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_systemd_unit_verifies() {
    if Command::new("systemd-analyze").arg("--version").output().is_err() {
        eprintln!("systemd-analyze is not installed; the unit is not verified");
        return;
    }
    // The unit as installed, but for the binary's path: verify checks that it is executable.
    let unit = dist("edgemail.service").replace("/usr/local/bin/edgemail", crate::harness::BIN);
    let dir = crate::harness::TempDir::new("unit");
    let path = dir.0.join("edgemail.service");
    std::fs::write(&path, unit).expect("write unit");
    let out = Command::new("systemd-analyze").arg("verify").arg(&path).output().expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let ours: Vec<&str> = stderr.lines().filter(|l| l.contains("edgemail.service")).collect();
    assert!(out.status.success() && ours.is_empty(), "systemd-analyze verify:\n{stderr}");
}

#[test]
fn the_container_listens_on_every_interface() {
    let file = dist("Containerfile");
    for setting in ["EDGEMAIL_HTTP_LISTEN=0.0.0.0:8080", "EDGEMAIL_SMTP_LISTEN=0.0.0.0:25"] {
        assert!(file.contains(setting), "{setting} missing from the Containerfile");
    }
    assert!(file.contains("EXPOSE 8080 25"), "the exposed ports");
    assert!(file.contains("USER 65532:65532"), "an unprivileged user");
}

#[test]
fn the_install_script_keeps_secrets_to_the_service_user() {
    let script = dist("install.sh");
    let syntax = Command::new("sh")
        .arg("-n")
        .arg(format!("{}/dist/install.sh", env!("CARGO_MANIFEST_DIR")))
        .status();
    assert!(syntax.expect("sh").success(), "install.sh does not parse");
    for line in [
        "useradd --system",
        "-m 0700 /etc/edgemail /var/lib/edgemail",
        "-m 0600 \"$here/edgemail.toml\"",
        "chmod 0600 /etc/edgemail/edgemail.toml",
        "chmod 0700 /etc/edgemail /var/lib/edgemail",
    ] {
        assert!(script.contains(line), "install.sh lacks {line:?}");
    }
    let unit = dist("edgemail.service");
    for line in ["User=edgemail", "StateDirectoryMode=0700", "UMask=0077"] {
        assert!(unit.contains(line), "the unit lacks {line}");
    }
}
