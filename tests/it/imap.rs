//! Mail clients reading mail over IMAP (`--imap` with STARTTLS, `--imaps`): Python's imaplib
//! pinned to the server's self-signed certificate, and mbsync as a real sync client. The same
//! store as the API: received mail in INBOX, sent mail in Sent, and changes made on either side
//! seen on the other.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::A;
use crate::mail_world::MailWorld;
use crate::smtp_client::Talk;

/// Helpers every script starts with. Arguments: STARTTLS port, TLS port, pinned certificate,
/// user, password, then the script's own.
pub const PRELUDE: &str = r#"
import imaplib, ssl, sys, socket, re
plain, secure, cafile, user, password = sys.argv[1:6]
args = sys.argv[6:]
ctx = ssl.create_default_context(cafile=cafile)
def tls(login=True):
    m = imaplib.IMAP4_SSL('127.0.0.1', int(secure), ssl_context=ctx, timeout=30)
    if login:
        m.login(user, password)
    return m
def starttls():
    m = imaplib.IMAP4('127.0.0.1', int(plain), timeout=30)
    m.starttls(ssl_context=ctx)
    m.login(user, password)
    return m
def out(*a):
    print(*a, flush=True)
"#;

pub struct Fixture {
    pub world: MailWorld,
    pub cert: std::path::PathBuf,
    pub password: String,
}

impl Fixture {
    pub fn start() -> Fixture {
        Fixture::start_with(&[])
    }

    /// `start` with these settings (`EDGEMAIL_*` variables).
    pub fn start_with(env: &[(&str, &str)]) -> Fixture {
        let args = ["--imap", "127.0.0.1:0", "--imaps", "127.0.0.1:0"];
        let world = MailWorld::start_with(env, &args);
        let made = world
            .api()
            .post("/v1/mailboxes/sales/passwords", json!({"name": "imap"}))
            .expect(201)
            .json();
        let password = made["password"].as_str().expect("password").to_owned();
        let cert = world.dir.0.join("imap-cert.pem");
        let f = Fixture { world, cert, password };
        let fetch = format!(
            "import ssl; open({:?}, 'w').write(ssl.get_server_certificate(('127.0.0.1', {})))",
            f.cert.display().to_string(),
            f.port("imaps")
        );
        let out = Command::new("python3").args(["-c", &fetch]).output().expect("python3");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        f
    }

    pub fn port(&self, name: &str) -> u16 {
        self.world.server.listener(name).expect("listener on the start line").port()
    }

    pub fn command(&self, script: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new("python3");
        cmd.arg("-c")
            .arg(format!("{PRELUDE}\n{script}"))
            .args([self.port("imap").to_string(), self.port("imaps").to_string()])
            .arg(&self.cert)
            .args([format!("sales@{A}"), self.password.clone()])
            .args(args);
        cmd
    }

    /// Runs a script; its output lines.
    pub fn py(&self, script: &str, args: &[&str]) -> Vec<String> {
        let out = self.command(script, args).output().expect("python3");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "script failed: {}\n{stdout}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.world.server.log()
        );
        stdout.lines().map(str::to_owned).collect()
    }

    /// Delivers a message to sales@ through the MX, as any sender would.
    pub fn receive(&self, message: &str) {
        let (mut s, _) = Talk::open(self.world.server.smtp);
        s.cmd("EHLO sender.example.org");
        let done = s.mail("ann@example.org", &[&format!("sales@{A}")], message);
        assert!(done.starts_with("250"), "{done}");
    }

    /// The API's view of the INBOX-like folder `folder`: (id, subject) pairs.
    pub fn listed(&self, folder: &str) -> Vec<(String, String)> {
        let list = self
            .world
            .api()
            .get(&format!("/v1/emails?mailbox=sales&folder={folder}"))
            .expect(200)
            .json();
        let items = list.as_array().expect("array").clone();
        items
            .iter()
            .map(|e| {
                (
                    e["id"].as_str().unwrap_or("").to_owned(),
                    e["subject"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect()
    }
}

pub fn plain(subject: &str) -> String {
    format!(
        "From: Ann <ann@example.org>\r\nTo: sales@{A}\r\nSubject: {subject}\r\n\
         Message-ID: <{subject}@example.org>\r\nDate: Mon, 23 Nov 2026 10:00:00 +0000\r\n\r\n\
         Hello, this is {subject}.\r\n"
    )
}

pub fn with_attachment(subject: &str) -> String {
    format!(
        "From: Ann <ann@example.org>\r\nTo: sales@{A}\r\nSubject: {subject}\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=\"sep\"\r\n\r\n--sep\r\n\
         Content-Type: text/plain; charset=utf-8\r\n\r\nSee the attached report.\r\n--sep\r\n\
         Content-Type: application/pdf; name=\"report.pdf\"\r\n\
         Content-Disposition: attachment; filename=\"report.pdf\"\r\n\
         Content-Transfer-Encoding: base64\r\n\r\nJVBERi0xLjQK\r\n--sep--\r\n"
    )
}

const READING: &str = r#"
m = tls()
out('caps', ' '.join(sorted(m.capabilities)))
typ, boxes = m.list()
out('list', ' | '.join(b.decode() for b in boxes))
typ, data = m.select('INBOX')
out('exists', data[0].decode())
typ, data = m.uid('FETCH', '1:*', '(UID FLAGS RFC822.SIZE)')
out('meta', ' | '.join(d.decode() for d in data))
typ, data = m.fetch('1', '(BODY.PEEK[HEADER.FIELDS (SUBJECT)])')
out('subject', repr(data[0][1]))
typ, data = m.fetch('1', '(BODY.PEEK[]<0.12>)')
out('partial', repr(data[0][1]), data[0][0].decode())
typ, data = m.fetch('2', '(BODYSTRUCTURE ENVELOPE)')
out('structure', data[0].decode())
typ, data = m.fetch('2', '(BODY[1] BODY.PEEK[2.MIME])')
out('part1', repr(data[0][1]))
out('part2mime', repr(data[1][1]))
typ, data = m.fetch('1:2', '(FLAGS)')
out('flags', ' | '.join(d.decode() for d in data))
typ, data = m.fetch('1', '(RFC822)')
out('whole', repr(data[0][1]))
m.logout()
"#;

#[test]
fn imap_clients_list_fetch_search_and_change_mail_the_api_sees() {
    let f = Fixture::start();
    f.receive(&plain("first"));
    f.receive(&with_attachment("report"));
    let lines = f.py(READING, &[]);
    let line = |prefix: &str| -> String {
        let p = format!("{prefix} ");
        lines
            .iter()
            .find_map(|l| l.strip_prefix(p.as_str()))
            .unwrap_or_else(|| panic!("{prefix} in {lines:?}"))
            .to_owned()
    };
    let caps = line("caps");
    for cap in [
        "IMAP4REV1",
        "IMAP4REV2",
        "IDLE",
        "MOVE",
        "NAMESPACE",
        "ID",
        "UNSELECT",
        "SPECIAL-USE",
        "AUTH=PLAIN",
    ] {
        assert!(caps.contains(cap), "{cap} in {caps}");
    }
    let list = line("list");
    for folder in
        ["\"/\" INBOX", "\\Sent) \"/\" Sent", "\\Drafts) \"/\" Drafts", "\\Trash) \"/\" Trash"]
    {
        assert!(list.contains(folder), "{folder} in {list}");
    }
    assert_eq!(line("exists"), "2");
    let meta = line("meta");
    assert!(meta.contains("UID 1 ") && meta.contains("UID 2 "), "{meta}");
    assert!(meta.contains("FLAGS (\\Recent)"), "received mail starts unseen, and recent: {meta}");
    assert_eq!(line("subject"), "b'Subject: first\\r\\n\\r\\n'");
    assert!(
        line("partial").starts_with("b'Received: fr' 1 (BODY[]<0> {12}"),
        "{}",
        line("partial")
    );
    let structure = line("structure");
    assert!(
        structure.contains("((\"TEXT\" \"plain\" (\"charset\" \"utf-8\") NIL NIL \"7BIT\" 24 1 "),
        "{structure}"
    );
    assert!(
        structure
            .contains("\"application\" \"pdf\" (\"name\" \"report.pdf\") NIL NIL \"BASE64\" 12"),
        "{structure}"
    );
    assert!(structure.contains("\"mixed\""), "{structure}");
    assert!(structure.contains("(\"attachment\" (\"filename\" \"report.pdf\"))"), "{structure}");
    assert!(
        structure.contains("ENVELOPE (\"Mon") || structure.contains("ENVELOPE (NIL \"report\""),
        "{structure}"
    );
    assert!(structure.contains("((\"Ann\" NIL \"ann\" \"example.org\"))"), "{structure}");
    assert_eq!(line("part1"), "b'See the attached report.'");
    assert!(line("part2mime").contains("Content-Type: application/pdf"), "{}", line("part2mime"));
    let flags = line("flags");
    assert!(
        flags.contains("1 (FLAGS (\\Recent))") && flags.contains("2 (FLAGS (\\Seen \\Recent))"),
        "BODY[1] marked it seen: {flags}"
    );
    let whole = line("whole");
    assert!(whole.contains("Hello, this is first."), "{whole}");
    assert!(whole.contains("Received: from"), "our trace header prepended: {whole}");

    // The API sees what IMAP did, and IMAP what the API does.
    let inbox = f.listed("inbox");
    assert_eq!(inbox.len(), 2, "{inbox:?}");
    let report = inbox.iter().find(|(_, s)| s == "report").expect("report").0.clone();
    let first = inbox.iter().find(|(_, s)| s == "first").expect("first").0.clone();
    let got = f.world.api().get(&format!("/v1/emails/{report}")).expect(200).json();
    assert_eq!(got["flags"], json!(["\\Seen"]), "{got}");

    changes(&f, &first, &report);
}

/// STORE, SEARCH, COPY, MOVE, EXPUNGE, APPEND, and the API's deletes.
fn changes(f: &Fixture, first: &str, report: &str) {
    let lines = f.py(
        r#"
m = starttls()
m.select('INBOX')
typ, data = m.store('1', '+FLAGS', '(\\Flagged work)')
out('stored', data[0].decode())
out('unseen', m.search(None, 'UNSEEN')[1][0].decode())
out('subject', m.search(None, 'SUBJECT', 'REPORT')[1][0].decode())
out('flagged', m.uid('SEARCH', 'FLAGGED')[1][0].decode())
out('body', m.search(None, 'BODY', 'attached')[1][0].decode())
out('notflagged', m.search(None, 'NOT', 'FLAGGED', 'UID', '1:*')[1][0].decode())
out('copy', m.copy('1', 'Drafts')[0])
out('move', m.uid('MOVE', '2', 'Trash')[0])
out('after-move', m.select('INBOX')[1][0].decode())
m.logout()
"#,
        &[],
    );
    let expect = |prefix: &str, value: &str| {
        let want = format!("{prefix} {value}");
        assert!(lines.contains(&want), "{want} in {lines:?}");
    };
    expect("stored", "1 (FLAGS (\\Seen \\Flagged work))");
    expect("unseen", "");
    expect("subject", "2");
    expect("flagged", "1");
    expect("body", "2");
    expect("notflagged", "2");
    expect("copy", "OK");
    expect("move", "OK");
    expect("after-move", "1");
    let api = f.world.api();
    let moved = api.get(&format!("/v1/emails/{report}")).expect(200).json();
    assert_eq!(moved["folder"], "trash", "MOVE shows in the API: {moved}");
    let flagged = api.get(&format!("/v1/emails/{first}")).expect(200).json();
    assert_eq!(flagged["flags"], json!(["\\Seen", "\\Flagged", "work"]), "{flagged}");
    assert_eq!(f.listed("drafts").len(), 1, "the copy is in Drafts");

    // EXPUNGE removes for good; an API delete is an EXPUNGE to a client.
    let lines = f.py(
        r#"
m = tls()
m.select('Trash')
m.store('1', '+FLAGS', '\\Deleted')
typ, data = m.expunge()
out('expunged', typ, data[0].decode() if data[0] else '-')
"#,
        &[],
    );
    assert!(lines.contains(&"expunged OK 1".to_owned()), "{lines:?}");
    f.world.api().get(&format!("/v1/emails/{report}")).expect_error(404, "not_found");
    let _ = first;
}

#[test]
fn api_deletes_show_as_expunges_and_appends_keep_their_bytes() {
    let f = Fixture::start();
    f.receive(&plain("one"));
    f.receive(&plain("two"));
    let mut child = f
        .command(
            r#"
m = tls()
m.select('INBOX')
out('ready')
sys.stdin.readline()
m.noop()
out('expunge', repr(m.untagged_responses.get('EXPUNGE')))
raw = b'From: sales@alpha.test\r\nSubject: draft\r\n\r\nexact  bytes\r\n  kept\r\n'
typ, data = m.append('Drafts', '(\\Draft)', None, raw)
out('append', typ, data[0].decode())
m.select('Drafts')
typ, data = m.fetch('1', '(BODY.PEEK[] FLAGS)')
out('same', data[0][1] == raw, repr(data))
"#,
            &[],
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut line = String::new();
    stdout.read_line(&mut line).expect("ready");
    assert_eq!(line.trim(), "ready");
    let one = f.listed("inbox").into_iter().find(|(_, s)| s == "one").expect("one").0;
    f.world.api().delete(&format!("/v1/emails/{one}")).expect(200);
    use std::io::Write;
    child.stdin.take().expect("stdin").write_all(b"go\n").expect("go");
    let rest: Vec<String> = stdout.lines().map_while(Result::ok).collect();
    let status = child.wait().expect("wait");
    assert!(status.success(), "{rest:?}\n{}", f.world.server.log());
    assert!(rest.contains(&"expunge [b'1']".to_owned()), "{rest:?}");
    assert!(rest.iter().any(|l| l.starts_with("append OK [APPENDUID ")), "{rest:?}");
    assert!(rest.iter().any(|l| l.starts_with("same True") && l.contains("\\Draft")), "{rest:?}");
    let drafts = f.listed("drafts");
    assert_eq!(drafts.iter().map(|d| d.1.as_str()).collect::<Vec<_>>(), ["draft"]);
}

#[test]
fn idle_announces_new_mail_and_uids_survive_a_restart() {
    let mut f = Fixture::start();
    f.receive(&plain("before"));
    let mut child = f
        .command(
            r#"
m = tls()
typ, data = m.select('INBOX')
out('uidvalidity', m.untagged_responses['UIDVALIDITY'][0].decode())
tag = m._new_tag()
m.send(tag + b' IDLE\r\n')
out('cont', m.readline().decode().strip())
out('idling')
m.sock.settimeout(20)
line = m.readline().decode().strip()
out('news', line)
m.send(b'DONE\r\n')
while True:
    line = m.readline()
    if line.startswith(tag):
        out('done', line.decode().strip())
        break
"#,
            &[],
        )
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout"));
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        stdout.read_line(&mut line).expect("line");
        assert!(!line.is_empty(), "script ended early: {seen:?}");
        seen.push(line.trim().to_owned());
        if line.trim() == "idling" {
            break;
        }
    }
    let started = Instant::now();
    f.receive(&plain("during"));
    let rest: Vec<String> = stdout.lines().map_while(Result::ok).collect();
    assert!(child.wait().expect("wait").success(), "{rest:?}");
    assert!(started.elapsed() < Duration::from_secs(20));
    assert!(seen.iter().any(|l| l.starts_with("cont +")), "{seen:?}");
    assert!(rest.contains(&"news * 2 EXISTS".to_owned()), "{rest:?}");
    assert!(rest.iter().any(|l| l.starts_with("done ") && l.contains("OK")), "{rest:?}");
    let validity =
        seen.iter().find_map(|l| l.strip_prefix("uidvalidity ")).expect("uidvalidity").to_owned();

    let uids = r#"
m = tls()
m.select('INBOX')
out('uidvalidity', m.untagged_responses['UIDVALIDITY'][0].decode())
out('uids', m.uid('SEARCH', 'ALL')[1][0].decode())
"#;
    let before = f.py(uids, &[]);
    f.world.crash_and_restart();
    let after = f.py(uids, &[]);
    assert_eq!(before, after, "UIDVALIDITY and UIDs are stored");
    assert!(before.contains(&format!("uidvalidity {validity}")), "{before:?}");
    assert!(before.contains(&"uids 1 2".to_owned()), "{before:?}");
}

#[test]
fn logins_need_tls_and_a_password_and_garbage_gets_bad() {
    let f = Fixture::start();
    let lines = f.py(
        r#"
m = imaplib.IMAP4('127.0.0.1', int(plain), timeout=30)
out('caps', ' '.join(sorted(m.capabilities)))
try:
    m.login(user, password)
    out('login', 'accepted')
except imaplib.IMAP4.error as e:
    out('login', 'refused')
m.logout()
m = tls(login=False)
try:
    m.login(user, 'wrong-password')
    out('bad-password', 'accepted')
except imaplib.IMAP4.error as e:
    out('bad-password', 'refused')
m.login(user, password)
tag = m._new_tag()
m.send(tag + b' FROBNICATE everything\r\n')
out('garbage', m.readline().decode().strip())
m.send(b'garbage without a tag\r\n')
out('garbage2', m.readline().decode().strip())
out('noop', m.noop()[0])
typ, data = m.select('INBOX')
out('select', typ)
typ, data = m.status('Sent', '(MESSAGES UIDNEXT UIDVALIDITY UNSEEN)')
out('status', data[0].decode())
m.send(m._new_tag() + b' NAMESPACE\r\n')
out('namespace', m.readline().decode().strip())
"#,
        &[],
    );
    let get = |p: &str| {
        lines.iter().find_map(|l| l.strip_prefix(&format!("{p} "))).unwrap_or("").to_owned()
    };
    assert!(get("caps").contains("LOGINDISABLED") && get("caps").contains("STARTTLS"), "{lines:?}");
    assert!(!get("caps").contains("AUTH=PLAIN"), "{lines:?}");
    assert_eq!(get("login"), "refused");
    assert_eq!(get("bad-password"), "refused");
    assert!(get("garbage").contains(" BAD "), "{lines:?}");
    assert!(get("garbage2").contains("BAD"), "{lines:?}");
    assert_eq!(get("noop"), "OK", "the session goes on");
    assert_eq!(get("select"), "OK");
    assert!(get("status").starts_with("Sent (MESSAGES 0 UIDNEXT 1 UIDVALIDITY "), "{lines:?}");
    assert_eq!(get("namespace"), "* NAMESPACE ((\"\" \"/\")) NIL NIL");
}

#[test]
fn mail_sent_through_the_api_is_in_sent() {
    let f = Fixture::start();
    let sent = f
        .world
        .send(json!({"from": format!("sales@{A}"), "to": ["bob@example.org"], "subject": "quote", "text": "Our quote."}))
        .expect(200)
        .json();
    let id = sent["messageId"].as_str().expect("id").to_owned();
    f.world.wait_status(&id, "delivered");
    let lines = f.py(
        r#"
m = tls()
m.select('Sent')
typ, data = m.fetch('1', '(FLAGS RFC822.SIZE BODY.PEEK[])')
out('meta', data[0][0].decode())
out('has', b'Our quote.' in data[0][1], len(data[0][1]))
typ, again = m.fetch('1', '(RFC822.SIZE)')
out('again', again[0].decode())
"#,
        &[],
    );
    assert!(lines.iter().any(|l| l.starts_with("has True")), "{lines:?}");
    let meta = lines.iter().find_map(|l| l.strip_prefix("meta ")).expect("meta");
    assert!(meta.contains("\\Seen"), "{meta}");
    let size: String = meta
        .split("RFC822.SIZE ")
        .nth(1)
        .expect("size")
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let again = lines.iter().find_map(|l| l.strip_prefix("again ")).expect("again");
    assert!(
        again.contains(&format!("RFC822.SIZE {size}")),
        "the rendering is kept: {again} vs {size}"
    );
}

/// mbsync's configuration: INBOX pulled over IMAPS (certificate pinned) into a Maildir.
fn mbsync_config(f: &Fixture, home: &std::path::Path) -> std::path::PathBuf {
    let maildir = home.join("mail");
    std::fs::create_dir_all(&maildir).expect("maildir");
    std::fs::write(home.join("pass"), &f.password).expect("password file");
    let config = format!(
        "IMAPAccount edgemail\nHost 127.0.0.1\nPort {port}\nUser sales@{A}\n\
         PassCmd \"cat {pass}\"\nSSLType IMAPS\nCertificateFile {cert}\n\n\
         IMAPStore remote\nAccount edgemail\n\n\
         MaildirStore local\nPath {maildir}/\nInbox {maildir}/INBOX\n\n\
         Channel inbox\nFar :remote:\nNear :local:\nPatterns INBOX\nCreate Near\nSync Pull\n\
         SyncState *\n",
        port = f.port("imaps"),
        pass = home.join("pass").display(),
        cert = f.cert.display(),
        maildir = maildir.display(),
    );
    let path = home.join("mbsyncrc");
    std::fs::write(&path, config).expect("mbsync config");
    path
}

/// Runs mbsync once; the message files of the local INBOX (new and cur).
fn mbsync(f: &Fixture, home: &std::path::Path, config: &std::path::Path) -> Vec<String> {
    let out = Command::new("mbsync")
        .env("HOME", home)
        .args(["-c", &config.display().to_string(), "inbox"])
        .output()
        .expect("mbsync (isync) is installed by scripts/test.sh");
    assert!(
        out.status.success(),
        "mbsync failed: {}{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        f.world.server.log()
    );
    let inbox = home.join("mail").join("INBOX");
    let mut files = Vec::new();
    for sub in ["new", "cur"] {
        for entry in std::fs::read_dir(inbox.join(sub)).expect("a Maildir") {
            let bytes = std::fs::read(entry.expect("entry").path()).expect("message file");
            // mbsync keeps Maildir files with LF line ends.
            files.push(String::from_utf8_lossy(&bytes).replace("\r\n", "\n"));
        }
    }
    files.sort();
    files
}

#[test]
fn mbsync_pulls_the_inbox_into_a_maildir() {
    let f = Fixture::start();
    f.receive(&plain("synced-one"));
    f.receive(&with_attachment("synced-two"));
    let home = f.world.dir.0.join("mbsync-home");
    let config = mbsync_config(&f, &home);
    let files = mbsync(&f, &home, &config);
    assert_eq!(files.len(), 2, "{files:?}");
    assert!(
        files
            .iter()
            .any(|m| m.contains("Subject: synced-one")
                && m.contains("\n\nHello, this is synced-one.\n")),
        "{files:?}"
    );
    assert!(
        files
            .iter()
            .any(|m| m.contains("Subject: synced-two") && m.contains("JVBERi0xLjQK\n--sep--\n")),
        "{files:?}"
    );
    // A second run fetches only what is new.
    f.receive(&plain("synced-three"));
    let files = mbsync(&f, &home, &config);
    assert_eq!(files.len(), 3, "{files:?}");
    assert_eq!(files.iter().filter(|m| m.contains("Subject: synced-three")).count(), 1);
}

/// Python for `Fixture::py` scripts. `raw(m, command)` sends one command on imaplib's
/// connection and answers the response lines up to and including the tagged one (a literal is
/// read into the line that announced it); `show(name, lines)` prints them under `name`.
pub const PY_RAW: &str = r#"
def raw(m, command):
    tag = m._new_tag()
    m.send(tag + b' ' + command.encode() + b'\r\n')
    lines, cur = [], b''
    while True:
        line = m.readline()
        if not line:
            raise Exception('connection closed')
        cur += line
        lit = re.search(rb'\{(\d+)\}\r\n$', line)
        if lit:
            cur += m.read(int(lit.group(1)))
            continue
        lines.append(cur.decode(errors='replace').rstrip('\r\n'))
        cur = b''
        if line.startswith(tag + b' '):
            return lines
def show(name, lines):
    for l in lines:
        out(name, l)
"#;

/// The lines a script printed under `name`, without it.
pub fn under(lines: &[String], name: &str) -> Vec<String> {
    let p = format!("{name} ");
    lines.iter().filter_map(|l| l.strip_prefix(p.as_str())).map(str::to_owned).collect()
}
