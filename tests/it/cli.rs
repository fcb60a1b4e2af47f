//! The command line works on a stopped data directory and, through the admin socket, while
//! `serve` runs on it; key changes take effect at once.

use serde_json::json;

use crate::harness::{A, Seed, Server, TempDir, cli};

fn run(args: &[&str], dir: &TempDir) -> String {
    let mut all = args.to_vec();
    let data = dir.0.to_str().expect("utf-8 path");
    all.extend(["--data", data]);
    let (ok, out, err) = cli(&all);
    assert!(ok, "edgemail {args:?} failed: {err}");
    out
}

/// The secret is alone on the last line of `key create`; the id is the third word of the first.
fn key_of(output: &str) -> (String, String) {
    let secret = output.lines().last().expect("a line").trim().to_owned();
    let id = output.split_whitespace().nth(2).expect("an id").to_owned();
    assert!(secret.starts_with("em_"), "{output}");
    (id, secret)
}

#[test]
fn domain_and_key_commands_work_while_the_server_runs() {
    let dir = TempDir::new("cli");
    Seed::open(&dir.0).close();
    let server = Server::start(&dir.0);

    let added = run(&["domain", "add", "Gamma.Test"], &dir);
    for needle in [
        "gamma.test.\t3600\tIN\tMX\t10 mail.gamma.test.",
        "gamma.test.\t3600\tIN\tTXT\t\"v=spf1 mx -all\"",
        "._domainkey.gamma.test.\t3600\tIN\tTXT\t\"v=DKIM1; k=rsa; p=MIIB",
        "\"v=DKIM1; k=ed25519; p=",
        "_dmarc.gamma.test.\t3600\tIN\tTXT\t\"v=DMARC1; p=quarantine",
    ] {
        assert!(added.contains(needle), "missing {needle:?} in:\n{added}");
    }
    assert!(run(&["domain", "list"], &dir).contains("gamma.test"));

    let (id, secret) =
        key_of(&run(&["key", "create", "--name", "ci", "--domain", "gamma.test"], &dir));
    let c = server.client(Some(&secret));
    let mailbox = c.post("/v1/mailboxes", json!({"address": "ops"})).expect(201).json();
    assert_eq!(mailbox["address"], "ops@gamma.test");
    let listed = run(&["key", "list"], &dir);
    assert!(listed.contains(&id) && listed.contains("active"), "{listed}");
    assert!(!listed.contains(&secret), "key list must never show a secret");

    run(&["key", "revoke", &id], &dir);
    c.get("/v1/mailboxes").expect_error(401, "unauthorized");
    assert!(run(&["key", "list"], &dir).contains("revoked"));

    let (_, second) =
        key_of(&run(&["key", "create", "--name", "ci2", "--domain", "gamma.test"], &dir));
    server.client(Some(&second)).get("/v1/mailboxes").expect(200);
    let removed = run(&["domain", "remove", "gamma.test"], &dir);
    assert!(removed.contains("1 mailboxes") && removed.contains("1 keys revoked"), "{removed}");
    server.client(Some(&second)).get("/v1/mailboxes").expect_error(401, "unauthorized");
    assert!(!run(&["domain", "list"], &dir).contains("gamma.test"));
}

#[test]
fn commands_work_on_a_stopped_data_directory() {
    let dir = TempDir::new("cli-offline");
    run(&["domain", "add", "offline.test"], &dir);
    let (_, secret) =
        key_of(&run(&["key", "create", "--name", "n", "--domain", "offline.test"], &dir));
    let (_, org) = key_of(&run(&["key", "create", "--name", "o", "--org"], &dir));
    let server = Server::start(&dir.0);
    server.client(Some(&secret)).post("/v1/mailboxes", json!({"address": "a"})).expect(201);
    server.client(Some(&org)).get("/v1/mailboxes").expect_error(403, "forbidden");
}

#[test]
fn bad_commands_fail_with_a_message() {
    let dir = TempDir::new("cli-bad");
    let data = dir.0.to_str().expect("utf-8");
    let (ok, _, err) = cli(&["domain", "add", "not a domain", "--data", data]);
    assert!(!ok && err.contains("invalid domain"), "{err}");
    let (ok, _, err) =
        cli(&["key", "create", "--name", "k", "--domain", "missing.test", "--data", data]);
    assert!(!ok && err.contains("not found"), "{err}");
    let (ok, _, _) = cli(&["key", "create", "--name", "k", "--data", data]);
    assert!(!ok, "a key needs --domain or --org");
    let (ok, _, err) = cli(&["key", "revoke", "key_nope", "--data", data]);
    assert!(!ok && err.contains("not found"), "{err}");
    let seed = Seed::open(&dir.0);
    seed.domain(A);
    seed.close();
    let (ok, _, err) = cli(&["domain", "add", A, "--data", data]);
    assert!(!ok && err.contains("already exists"), "{err}");
}

#[test]
fn commands_that_read_a_store_refuse_a_data_directory_that_does_not_exist() {
    if crate::harness::on_postgres() {
        // With its data in PostgreSQL (`--store`) a command needs no data directory: the
        // test below holds that.
        return;
    }
    let dir = TempDir::new("cli-missing");
    let missing = dir.0.join("nowhere");
    let data = missing.to_str().expect("utf-8");
    let backup = dir.0.join("b.redb");
    let backup = backup.to_str().expect("utf-8");
    for args in [
        &["domain", "list"][..],
        &["domain", "add", "new.test"],
        &["key", "list"],
        &["key", "create", "--name", "k", "--org"],
        &["backup", "--to", backup],
        &["check"],
    ] {
        let mut all = args.to_vec();
        all.extend(["--data", data]);
        let (ok, out, err) = cli(&all);
        assert!(!ok, "{args:?} succeeded: {out}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains("does not exist") && err.contains(data), "{args:?}: {err}");
        assert!(!missing.exists(), "{args:?} created the directory");
    }
    // The same directory named by a configuration file, as `serve --config` would use it.
    let config = dir.0.join("edgemail.toml");
    std::fs::write(&config, format!("[storage]\ndata_dir = {data:?}\n")).expect("write config");
    let (ok, _, err) = cli(&["domain", "list", "--config", config.to_str().expect("utf-8")]);
    assert!(!ok && err.contains("does not exist") && err.contains(data), "{err}");
    std::fs::create_dir(&missing).expect("create");
    let (ok, out, err) =
        cli(&["domain", "add", "new.test", "--config", config.to_str().expect("utf-8")]);
    assert!(ok, "{err}");
    assert!(out.contains("new.test"), "{out}");
    let (ok, listed, err) = cli(&["domain", "list", "--config", config.to_str().expect("utf-8")]);
    assert!(ok && listed.contains("new.test"), "{listed}{err}");
    drop(TempDir(missing));
}

#[test]
fn listen_addresses_take_host_names_and_a_failed_start_says_why_once() {
    let dir = TempDir::new("cli-host");
    let server = Server::start_smtp_on(&dir.0, "localhost:0", &[], &[]);
    assert!(server.smtp.ip().is_loopback(), "{}", server.smtp);
    drop(server);
    let data = dir.0.to_str().expect("utf-8");
    let (ok, _, err) = cli(&["serve", "--data", data, "--http", "localhost"]);
    assert!(!ok && err.contains("http.listen") && err.contains("has no port"), "{err}");
    // Listening where another server already does: the reason, printed exactly once.
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = taken.local_addr().expect("addr").to_string();
    let (ok, _, err) = cli(&["serve", "--data", data, "--http", &port, "--smtp", "127.0.0.1:0"]);
    assert!(!ok, "{err}");
    let reason = format!("cannot listen on {port}");
    assert_eq!(err.matches(&reason).count(), 1, "{err}");
}

/// Issue 33: a command against a PostgreSQL store (`--store`) needs no data directory.
#[test]
fn commands_against_a_postgres_store_need_no_data_directory() {
    if crate::harness::on_postgres() {
        return; // The redb run holds it; here every data directory already names a store.
    }
    let url = crate::pg_cluster::Cluster::shared().database();
    let dir = TempDir::new("cli-pg");
    let missing = dir.0.join("nowhere");
    let data = missing.to_str().expect("utf-8");
    let (ok, out, err) = cli(&["domain", "add", "pg.test", "--store", &url, "--data", data]);
    assert!(ok, "{err}");
    assert!(out.contains("pg.test"), "{out}");
    let (ok, listed, err) = cli(&["domain", "list", "--store", &url, "--data", data]);
    assert!(ok, "{err}");
    assert!(listed.contains("pg.test"), "{listed}");
    assert!(!missing.exists(), "no data directory made");
}

#[test]
fn train_works_on_a_stopped_data_directory_and_through_a_running_server() {
    let dir = TempDir::new("cli-train");
    Seed::open(&dir.0).close();
    let mail = TempDir::new("cli-train-mail");
    for (class, word) in [("spam", "viagra"), ("ham", "agenda")] {
        std::fs::create_dir_all(mail.0.join(class).join("nested")).expect("dir");
        for i in 0..3 {
            let text = format!("From: a@b.test\r\nSubject: {word} {i}\r\n\r\n{word} text\r\n");
            std::fs::write(mail.0.join(class).join(format!("{i}.eml")), text).expect("write");
        }
    }
    std::os::unix::fs::symlink("/nonexistent/x", mail.0.join("ham/broken")).expect("symlink");
    let spam = mail.0.join("spam");
    let ham = mail.0.join("ham");
    let (spam, ham) = (spam.to_str().expect("utf-8"), ham.to_str().expect("utf-8"));

    let out = run(&["train", "--global", "--spam", spam, "--ham", ham], &dir);
    assert!(out.contains("trained 3 spam and 3 ham messages into the global model"), "{out}");
    assert!(out.contains("warning: skipped ") && out.contains("broken"), "{out}");

    let _server = Server::start(&dir.0);
    let out = run(&["train", "--mailbox", "Ops@X.test", "--spam", spam], &dir);
    assert!(
        out.contains("trained 3 spam and 0 ham messages into the model of ops@x.test"),
        "{out}"
    );
    let (ok, _, err) = cli(&["train", "--spam", spam, "--data", dir.0.to_str().expect("utf-8")]);
    assert!(!ok && err.contains("--mailbox"), "{err}");
}
