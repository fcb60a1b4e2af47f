//! Importing from a running IMAP server (issue 41's Done-when): Debian's Dovecot, started here
//! unprivileged-style in a temporary directory (passwd-file users, Maildir, a self-signed
//! certificate, IMAPS on a free port, its log in a file), is the old provider. Its Maildir holds
//! INBOX, a `\Sent` folder named `Gesendet`, Trash, Junk and `Arbeit/Ärger`, flags, a keyword,
//! old internal dates and a 20 MB message. `edgemail import --imap` copies it; the mailbox is
//! exported to a Maildir which a second Dovecot user reads; the two users' views over IMAP
//! (fetched by Python's imaplib, not our client) must be the same folders, bytes, flags and
//! internal dates, and so must what our own IMAP server serves of the imported mailbox. A second
//! import copies 0 messages; after two new ones arrive, exactly 2.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::harness::{A, Seed, Server, TempDir, cli};

/// Folder -> sorted (sha256 of the bytes, size, flags, INTERNALDATE) as Dovecot shows them.
type View = BTreeMap<String, Vec<(String, u64, Vec<String>, String)>>;

const NOBODY: u32 = 65_534;

/// Python's imaplib lists every folder and fetches every message of `user`.
const VIEW_PY: &str = r#"
import hashlib, imaplib, json, re, ssl, sys
port, user, password = int(sys.argv[1]), sys.argv[2], sys.argv[3]
c = imaplib.IMAP4_SSL('127.0.0.1', port, ssl_context=ssl._create_unverified_context())
c.login(user, password)
out = {}
for line in c.list()[1]:
    m = re.match(rb'\((.*?)\) "(.)" (.*)', line)
    name = m.group(3).strip(b'"').decode()
    if b'\\Noselect' in m.group(1):
        continue
    typ, data = c.select('"' + name + '"', readonly=True)
    msgs = []
    if int(data[0]) > 0:
        typ, data = c.fetch('1:*', '(FLAGS INTERNALDATE BODY.PEEK[])')
        for part in data:
            if not isinstance(part, tuple):
                continue
            head, body = part
            flags = re.search(rb'FLAGS \((.*?)\)', head).group(1).decode().split()
            flags = sorted(f for f in flags if f != '\\Recent')
            date = re.search(rb'INTERNALDATE "(.*?)"', head).group(1).decode()
            msgs.append([hashlib.sha256(body).hexdigest(), len(body), flags, date])
    out[name] = sorted(msgs)
print(json.dumps(out))
"#;

struct Dovecot {
    dir: std::path::PathBuf,
    port: u16,
}

impl Drop for Dovecot {
    fn drop(&mut self) {
        let conf = self.dir.join("dovecot.conf");
        let _ = Command::new("/usr/sbin/dovecot").arg("-c").arg(&conf).arg("stop").status();
    }
}

impl Dovecot {
    /// Dovecot with users `old` (Maildir `old`) and `back` (Maildir `back`), IMAPS only.
    fn start(dir: &Path) -> Dovecot {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("free port") // ok: test
            .port();
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).expect("cert"); // ok: test
        std::fs::write(dir.join("cert.pem"), cert.cert.pem()).expect("cert"); // ok: test
        std::fs::write(dir.join("key.pem"), cert.signing_key.serialize_pem()).expect("key"); // ok: test
        let d = dir.display();
        let users = format!(
            "old:{{PLAIN}}pw-old:{NOBODY}:{NOBODY}::{d}/home::userdb_mail=maildir:{d}/old\n\
             back:{{PLAIN}}pw-back:{NOBODY}:{NOBODY}::{d}/home::userdb_mail=maildir:{d}/back\n"
        );
        std::fs::write(dir.join("passwd"), users).expect("passwd"); // ok: test
        let conf = format!(
            "base_dir = {d}/run\nstate_dir = {d}/run\nlog_path = {d}/dovecot.log\n\
             protocols = imap\nlisten = 127.0.0.1\nssl = required\n\
             ssl_cert = <{d}/cert.pem\nssl_key = <{d}/key.pem\n\
             default_login_user = dovenull\ndefault_internal_user = dovecot\n\
             default_internal_group = dovecot\ndisable_plaintext_auth = no\n\
             passdb {{\n driver = passwd-file\n args = {d}/passwd\n}}\n\
             userdb {{\n driver = passwd-file\n args = {d}/passwd\n}}\n\
             namespace inbox {{\n inbox = yes\n separator = .\n\
             mailbox Gesendet {{\n  special_use = \\Sent\n }}\n\
             mailbox Trash {{\n  special_use = \\Trash\n }}\n\
             mailbox Junk {{\n  special_use = \\Junk\n }}\n}}\n\
             service imap-login {{\n inet_listener imap {{\n  port = 0\n }}\n\
             inet_listener imaps {{\n  port = {port}\n }}\n chroot =\n}}\n\
             service anvil {{\n chroot =\n}}\n"
        );
        std::fs::write(dir.join("dovecot.conf"), conf).expect("conf"); // ok: test
        // The login process runs as dovenull and must reach its socket under the directory.
        set_mode(dir, 0o755);
        let status = Command::new("/usr/sbin/dovecot")
            .arg("-c")
            .arg(dir.join("dovecot.conf"))
            .status()
            .expect("run dovecot"); // ok: test
        assert!(status.success(), "dovecot did not start");
        let dovecot = Dovecot { dir: dir.to_path_buf(), port };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return dovecot;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!(
            "dovecot does not listen: {}",
            std::fs::read_to_string(dir.join("dovecot.log")).unwrap_or_default()
        );
    }

    fn view(&self, user: &str, password: &str) -> View {
        view(self.port, user, password)
    }
}

/// What Python's imaplib sees of `user` on the IMAPS server at `port`.
fn view(port: u16, user: &str, password: &str) -> View {
    let out = Command::new("python3")
        .args(["-c", VIEW_PY, &port.to_string(), user, password])
        .output()
        .expect("python3"); // ok: test
    assert!(out.status.success(), "view: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("view json") // ok: test
}

fn set_mode(path: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod"); // ok: test
}

/// Gives a Maildir tree to the user Dovecot runs the mail processes as.
fn hand_over(root: &Path) {
    std::os::unix::fs::chown(root, Some(NOBODY), Some(NOBODY)).expect("chown"); // ok: test
    if root.is_dir() {
        for entry in std::fs::read_dir(root).expect("read dir") {
            // ok: test
            hand_over(&entry.expect("entry").path()); // ok: test
        }
    }
}

fn message(n: usize, extra: &str) -> Vec<u8> {
    format!(
        "From: Old Host <old{n}@example.org>\r\nTo: old@{A}\r\nSubject: old {n} {extra}\r\n\
         Message-ID: <old-{n}@example.org>\r\nDate: Mon, 5 Jan 2015 10:00:00 +0000\r\n\r\n\
         kept since 2015\r\nbody {n}\r\n"
    )
    .into_bytes()
}

/// Writes a message file into `folder` (a Maildir++ directory) with an old mtime.
fn put(root: &Path, folder: &str, name: &str, bytes: &[u8], secs: u64) {
    let path = root.join(folder);
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(path.join(sub)).expect("mkdir"); // ok: test
    }
    let file = path.join(name);
    std::fs::write(&file, bytes).expect("write"); // ok: test
    let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
    let f = std::fs::File::options().write(true).open(&file).expect("open"); // ok: test
    f.set_modified(at).expect("mtime"); // ok: test
}

fn seed(root: &Path) {
    put(root, ".", "cur/1420452000.M1P1.old:2,S", &message(1, "seen"), 1_420_452_000);
    put(root, ".", "cur/1420452001.M2P1.old:2,FRa", &message(2, "flagged work"), 1_420_452_001);
    put(root, ".", "new/1420452002.M3P1.old", &message(3, "new"), 1_420_452_002);
    std::fs::write(root.join("dovecot-keywords"), "0 $Work\n").expect("keywords"); // ok: test
    put(root, ".Gesendet", "cur/1300000000.M4P1.old:2,S", &message(4, "sent"), 1_300_000_000);
    put(root, ".Trash", "cur/1300000002.M7P1.old:2,ST", &message(7, "trash"), 1_300_000_002);
    put(root, ".Junk", "cur/1300000001.M5P1.old:2,", &message(5, "junk"), 1_300_000_001);
    put(
        root,
        ".Arbeit.&AMQ-rger",
        "cur/1200000000.M6P1.old:2,DS",
        &message(6, "ärger"),
        1_200_000_000,
    );
    // A 20 MB message: base64 lines of an attachment.
    let mut big = message(8, "big").to_vec();
    let line = "QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVphYmNkZWZnaGlqa2xtbm9wcXJzdHV2d3h5ejAx\r\n";
    while big.len() < 20 << 20 {
        big.extend_from_slice(line.as_bytes());
    }
    put(root, ".Arbeit.&AMQ-rger", "cur/1200000100.M8P1.old:2,S", &big, 1_200_000_100);
    hand_over(root);
}

fn import(data: &str, password_file: &str, port: u16) -> String {
    let url = format!("imaps://old@127.0.0.1:{port}/");
    let mailbox = format!("old@{A}");
    let args = [
        "import",
        "--mailbox",
        &mailbox,
        "--imap",
        &url,
        "--insecure",
        "--password-file",
        password_file,
        "--data",
        data,
    ];
    let (ok, out, err) = cli(&args);
    assert!(ok, "import failed: {err}\n{out}");
    out
}

#[test]
fn dovecot_is_imported_and_reads_our_export_with_the_same_view() {
    let dir = TempDir::new("import-imap");
    let data = dir.0.join("data");
    std::fs::create_dir_all(&data).expect("data dir"); // ok: test
    let seed_store = Seed::open(&data);
    seed_store.domain(A);
    seed_store.mailbox(A, "old");
    let key = seed_store.key(Some(A));
    seed_store.close();
    let dove = dir.0.join("dovecot");
    std::fs::create_dir_all(&dove).expect("dovecot dir"); // ok: test
    seed(&dove.join("old"));
    let dovecot = Dovecot::start(&dove);
    let d = data.to_str().expect("utf-8"); // ok: test
    let password = dir.0.join("password");
    std::fs::write(&password, "pw-old\n").expect("password"); // ok: test
    let p = password.to_str().expect("utf-8"); // ok: test
    let server = Server::start_with(&data, &["--imaps", "127.0.0.1:0"], &[]);

    let out = import(d, p, dovecot.port);
    assert!(out.contains("total: 8 imported, 0 skipped, 0 failed"), "{out}");
    assert!(out.contains("Sent: 1 imported"), "the \\Sent folder maps onto ours: {out}");
    assert!(out.contains("Arbeit/Ärger: 2 imported"), "{out}");
    let again = import(d, p, dovecot.port);
    assert!(again.contains("total: 0 imported"), "{again}");

    // Two messages arrive at the old provider.
    let inbox = dove.join("old");
    put(&inbox, ".", "new/1600000000.M9P1.new", &message(9, "late"), 1_600_000_000);
    put(&inbox, ".", "new/1600000001.M10P1.new", &message(10, "later"), 1_600_000_001);
    hand_over(&inbox);
    let third = import(d, p, dovecot.port);
    assert!(third.contains("total: 2 imported, 0 skipped, 0 failed"), "{third}");

    // Our copy, exported to a Maildir that Dovecot's second user reads.
    let back = dove.join("back");
    let b = back.to_str().expect("utf-8"); // ok: test
    let (ok, out, err) =
        cli(&["export", "--mailbox", &format!("old@{A}"), "--maildir", b, "--data", d]);
    assert!(ok, "export: {err}\n{out}");
    hand_over(&back);
    let mut theirs = dovecot.view("old", "pw-old");
    let ours = dovecot.view("back", "pw-back");
    // Our names for their folders: `Gesendet` is their \Sent, levels are joined by `.`.
    let sent = theirs.remove("Gesendet").expect("Gesendet"); // ok: test
    theirs.insert("Sent".into(), sent);
    for (name, messages) in &theirs {
        assert_eq!(ours.get(name), Some(messages), "folder {name}: ours {:?}", ours.keys());
    }
    assert_eq!(theirs.values().map(Vec::len).sum::<usize>(), 10);
    assert!(theirs["Arbeit.&AMQ-rger"].iter().any(|m| m.1 >= 20 << 20));
    assert!(theirs["INBOX"].iter().any(|m| m.2.contains(&"$Work".to_owned())), "{theirs:?}");

    // And our own IMAP server shows the same: folders (levels joined by `/` here), bytes, flags
    // and internal dates.
    let made = server
        .client(Some(&key))
        .post("/v1/mailboxes/old/passwords", serde_json::json!({"name": "check"}));
    let password = made.expect(201).json()["password"].as_str().map(str::to_owned);
    let imaps = server.listener("imaps").expect("imaps= on the start line").port(); // ok: test
    let served = view(imaps, &format!("old@{A}"), &password.expect("a password")); // ok: test
    for (name, messages) in &theirs {
        let here = name.replace('.', "/");
        assert_eq!(served.get(&here), Some(messages), "folder {here}: served {:?}", served.keys());
    }
}
