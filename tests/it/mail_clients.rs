//! A mail client's whole world: the server with submission and IMAP listeners (STARTTLS and
//! implicit TLS each), the sending fixture's DNS and sink, an app password of sales@alpha.test,
//! and Python's smtplib and imaplib pinned to the server's certificate.

use std::process::Command;

use serde_json::json;

use crate::harness::A;
use crate::mail_world::MailWorld;

/// What every script starts with. Arguments: submission port, submissions port, IMAP port,
/// IMAPS port, pinned certificate, user, password, then the script's own (`args`).
const PRELUDE: &str = r#"
import imaplib, re, smtplib, ssl, sys, time
sub, subs, imap_plain, imaps, cafile, user, password = sys.argv[1:8]
args = sys.argv[8:]
ctx = ssl.create_default_context(cafile=cafile)
def out(*a):
    print(*a, flush=True)
def submit(login=True):
    s = smtplib.SMTP_SSL('127.0.0.1', int(subs), context=ctx, timeout=30)
    s.ehlo('client.test')
    if login:
        s.login(user, password)
    return s
def imap(login=True):
    m = imaplib.IMAP4_SSL('127.0.0.1', int(imaps), ssl_context=ctx, timeout=30)
    if login:
        m.login(user, password)
    return m
"#;

pub struct Clients {
    pub world: MailWorld,
    pub cert: std::path::PathBuf,
    pub password: String,
}

impl Clients {
    pub fn start() -> Clients {
        let args = [
            "--submission",
            "127.0.0.1:0",
            "--submissions",
            "127.0.0.1:0",
            "--imap",
            "127.0.0.1:0",
            "--imaps",
            "127.0.0.1:0",
        ];
        let world = MailWorld::start_with(&[], &args);
        let password = new_password(&world, "client");
        let cert = world.dir.0.join("clients-cert.pem");
        let fetch = format!(
            "import ssl; open({:?}, 'w').write(ssl.get_server_certificate(('127.0.0.1', {})))",
            cert.display().to_string(),
            world.server.listener("imaps").expect("imaps listener").port()
        );
        let out = Command::new("python3").args(["-c", &fetch]).output().expect("python3");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        Clients { world, cert, password }
    }

    fn port(&self, name: &str) -> String {
        let listener = self.world.server.listener(name).expect("listener on the start line");
        listener.port().to_string()
    }

    /// `script` after the prelude, as sales@alpha.test with `password`, not started yet.
    pub fn command(&self, password: &str, script: &str, args: &[&str]) -> Command {
        let mut command = Command::new("python3");
        command
            .arg("-c")
            .arg(format!("{PRELUDE}\n{script}"))
            .args(["submission", "submissions", "imap", "imaps"].map(|n| self.port(n)))
            .arg(&self.cert)
            .args([format!("sales@{A}"), password.to_owned()])
            .args(args);
        command
    }

    /// Runs `script` after the prelude as sales@alpha.test with `password`; its output lines.
    pub fn py_as(&self, password: &str, script: &str, args: &[&str]) -> Vec<String> {
        let out = self.command(password, script, args).output().expect("python3");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "script failed: {}\n{stdout}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.world.server.log()
        );
        stdout.lines().map(str::to_owned).collect()
    }

    /// `py_as` with the fixture's password.
    pub fn py(&self, script: &str, args: &[&str]) -> Vec<String> {
        self.py_as(&self.password, script, args)
    }

    /// The API's view of a folder of sales@: (id, subject) pairs, newest first.
    pub fn listed(&self, folder: &str) -> Vec<(String, String)> {
        let path = format!("/v1/emails?mailbox=sales&folder={folder}");
        let list = self.world.api().get(&path).expect(200).json();
        let items = list.as_array().expect("array").clone();
        items
            .iter()
            .map(|e| {
                let field = |name: &str| e[name].as_str().unwrap_or("").to_owned();
                (field("id"), field("subject"))
            })
            .collect()
    }

    /// Polls `folder` until it lists `n` messages; panics after 20 s.
    pub fn wait_listed(&self, folder: &str, n: usize) -> Vec<(String, String)> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            let listed = self.listed(folder);
            if listed.len() >= n {
                return listed;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{folder} never listed {n}: {listed:?}\n{}",
                self.world.server.log()
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// A fresh app password of sales@alpha.test.
pub fn new_password(world: &MailWorld, name: &str) -> String {
    let made =
        world.api().post("/v1/mailboxes/sales/passwords", json!({"name": name})).expect(201).json();
    made["password"].as_str().expect("password").to_owned()
}

/// A message from sales@alpha.test with CRLF line ends.
pub fn message(to: &str, subject: &str, message_id: &str) -> String {
    format!(
        "From: Sales <sales@{A}>\r\nTo: {to}\r\nSubject: {subject}\r\nMessage-ID: <{message_id}>\r\n\
         Date: Mon, 23 Nov 2026 10:00:00 +0000\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\nHello: {subject}.\r\n"
    )
}
