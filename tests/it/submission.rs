//! Mail clients sending through us: app passwords (`/v1/mailboxes/{address}/passwords`) and SMTP
//! submission on both listeners (STARTTLS and implicit TLS), driven by Python's smtplib and by
//! msmtp, with the message checked where it lands: DKIM-verified at the receiving sink, and in
//! the mailbox's `sent` folder.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::{A, B, World};
use crate::mail_world::{MailWorld, header, verify_dkim};

#[test]
fn app_passwords_are_made_listed_without_secrets_and_deleted() {
    let w = World::start_seeded(|s| s.mailbox(A, "sales"));
    let c = w.alpha();
    let made = c
        .post("/v1/mailboxes/sales@alpha.test/passwords", json!({"name": "Thunderbird"}))
        .expect(201)
        .json();
    let password = made["password"].as_str().expect("password");
    assert!(password.len() >= 16, "{password}");
    assert_eq!(made["name"], "Thunderbird");
    let id = made["id"].as_str().expect("id");
    let second = c.post("/v1/mailboxes/sales/passwords", json!({"name": "phone"})).expect(201);
    assert_ne!(second.json()["password"], made["password"], "each password is random");

    let listed = c.get("/v1/mailboxes/sales/passwords").expect(200);
    let text = listed.text();
    assert!(!text.contains(password), "a listing never shows a password: {text}");
    assert!(!text.contains("argon2"), "nor its hash: {text}");
    let names: Vec<_> =
        listed.json().as_array().expect("array").iter().map(|p| p["name"].clone()).collect();
    assert_eq!(names, [json!("Thunderbird"), json!("phone")]);

    c.delete(&format!("/v1/mailboxes/sales/passwords/{id}")).expect(200);
    c.delete(&format!("/v1/mailboxes/sales/passwords/{id}")).expect_error(404, "not_found");
    assert_eq!(
        c.get("/v1/mailboxes/sales/passwords").expect(200).json().as_array().map(Vec::len),
        Some(1)
    );

    // Bad input and other people's mailboxes.
    c.post("/v1/mailboxes/sales/passwords", json!({})).expect_error(400, "invalid_request");
    c.post("/v1/mailboxes/sales/passwords", json!({"name": " "}))
        .expect_error(400, "invalid_request");
    c.post("/v1/mailboxes/sales/passwords", json!({"name": "x", "extra": 1}))
        .expect_error(400, "invalid_request");
    c.post("/v1/mailboxes/nobody/passwords", json!({"name": "x"})).expect_error(404, "not_found");
    w.beta().get("/v1/mailboxes/sales@alpha.test/passwords").expect_error(404, "not_found");
    w.beta().get("/v1/mailboxes/sales/passwords").expect_error(404, "not_found");
    w.org().get("/v1/mailboxes/sales/passwords").expect_error(403, "forbidden");
    let _ = B;

    // The mailbox takes its passwords with it: a new mailbox of the same name starts with none.
    c.delete("/v1/mailboxes/sales").expect(200);
    c.get("/v1/mailboxes/sales/passwords").expect_error(404, "not_found");
    c.post("/v1/mailboxes", json!({"address": "sales"})).expect(201);
    assert_eq!(c.get("/v1/mailboxes/sales/passwords").expect(200).json(), json!([]));
}

/// One SMTP session with Python's smtplib, as a mail client runs it. Arguments: mode
/// (`plain`: no TLS at all, `starttls`, `tls`: implicit TLS with AUTH LOGIN), port, the pinned
/// certificate, user, password, envelope sender, recipients (comma-separated), message file.
/// Prints one line per step: `auth-offered yes|no`, `login CODE`, `mail CODE`, `rcpt ADDR CODE
/// TEXT`, `data CODE TEXT`.
const SMTPLIB: &str = r#"
import base64, smtplib, ssl, sys
mode, port, cafile, user, password, sender, rcpts, msgfile = sys.argv[1:9]
ctx = ssl.create_default_context(cafile=cafile)
if mode == 'tls':
    s = smtplib.SMTP_SSL('127.0.0.1', int(port), context=ctx, timeout=30)
else:
    s = smtplib.SMTP('127.0.0.1', int(port), timeout=30)
s.ehlo('client.test')
if mode == 'starttls':
    s.starttls(context=ctx)
    s.ehlo('client.test')
print('auth-offered', 'yes' if s.has_extn('auth') else 'no')
if user:
    if not s.has_extn('auth'):
        token = base64.b64encode(('\0%s\0%s' % (user, password)).encode()).decode()
        print('login', s.docmd('AUTH', 'PLAIN ' + token)[0])
    else:
        s.user, s.password = user, password
        mechanism = ('LOGIN', s.auth_login) if mode == 'tls' else ('PLAIN', s.auth_plain)
        try:
            print('login', s.auth(*mechanism, initial_response_ok=(mode != 'tls'))[0])
        except smtplib.SMTPAuthenticationError as e:
            print('login', e.smtp_code)
print('mail', s.mail(sender)[0])
accepted = False
for r in rcpts.split(','):
    code, text = s.rcpt(r)
    print('rcpt', r, code, text.decode(errors='replace'))
    accepted = accepted or code == 250
if accepted and msgfile:
    code, text = s.data(open(msgfile, 'rb').read())
    print('data', code, text.decode(errors='replace'))
s.quit()
"#;

struct Clients {
    world: MailWorld,
    submission: u16,
    submissions: u16,
    /// The server's certificate, fetched once and pinned from then on.
    cert: std::path::PathBuf,
}

impl Clients {
    fn start(env: &[(&str, &str)]) -> Clients {
        let args = ["--submission", "127.0.0.1:0", "--submissions", "127.0.0.1:0"];
        let world = MailWorld::start_with(env, &args);
        let port = |name| world.server.listener(name).expect("listener on the start line").port();
        let (submission, submissions) = (port("submission"), port("submissions"));
        let cert = world.dir.0.join("server-cert.pem");
        let fetch = format!(
            "import ssl; open({:?}, 'w').write(ssl.get_server_certificate(('127.0.0.1', {submissions})))",
            cert.display().to_string()
        );
        let out = Command::new("python3").args(["-c", &fetch]).output().expect("python3");
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        Clients { world, submission, submissions, cert }
    }

    fn password(&self, name: &str) -> (String, String) {
        let made = self
            .world
            .api()
            .post("/v1/mailboxes/sales/passwords", json!({"name": name}))
            .expect(201)
            .json();
        (made["id"].as_str().expect("id").into(), made["password"].as_str().expect("pw").into())
    }

    /// Runs `SMTPLIB`; its lines.
    fn smtplib(
        &self,
        mode: &str,
        login: Option<(&str, &str)>,
        from: &str,
        rcpts: &str,
        message: &str,
    ) -> Vec<String> {
        let port = if mode == "tls" { self.submissions } else { self.submission };
        let file = self.world.dir.0.join(format!("message-{}.eml", crate::harness::unique()));
        std::fs::write(&file, message.replace('\n', "\r\n")).expect("write message");
        let (user, password) = login.unwrap_or(("", ""));
        let out = Command::new("python3")
            .args(["-c", SMTPLIB, mode, &port.to_string()])
            .arg(&self.cert)
            .args([user, password, from, rcpts])
            .arg(&file)
            .output()
            .expect("python3");
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "smtplib failed: {}\n{stdout}\nserver log:\n{}",
            String::from_utf8_lossy(&out.stderr),
            self.world.server.log()
        );
        stdout.lines().map(str::to_owned).collect()
    }
}

fn message(from: &str, to: &str, subject: &str) -> String {
    format!(
        "From: Sales Team <{from}>\nTo: {to}\nBcc: secret@example.net\nSubject: {subject}\n\
         MIME-Version: 1.0\nContent-Type: text/plain; charset=utf-8\n\nHello from a mail client: {subject}.\n"
    )
}

/// The SHA-256 fingerprint of a PEM certificate, as msmtp's `--tls-fingerprint` takes it.
fn fingerprint(pem: &std::path::Path) -> String {
    let out = Command::new("openssl")
        .args(["x509", "-noout", "-fingerprint", "-sha256", "-in"])
        .arg(pem)
        .output()
        .expect("openssl");
    let text = String::from_utf8_lossy(&out.stdout);
    text.trim().rsplit('=').next().expect("a fingerprint").to_owned()
}

#[test]
fn mail_clients_send_over_both_listeners_signed_delivered_and_kept_in_sent() {
    let c = Clients::start(&[]);
    let details = Command::new("openssl")
        .args(["x509", "-noout", "-text", "-in"])
        .arg(&c.cert)
        .output()
        .expect("openssl");
    let details = String::from_utf8_lossy(&details.stdout);
    assert!(
        details.contains("DNS:localhost") && details.contains("IP Address:127.0.0.1"),
        "{details}"
    );
    assert!(details.contains("IP Address:0:0:0:0:0:0:0:1"), "{details}");
    assert!(!details.contains("CA:TRUE"), "a leaf certificate, not a CA: {details}");
    let (_, password) = c.password("laptop");
    let login = Some(("sales@alpha.test", password.as_str()));

    let starttls = c.smtplib(
        "starttls",
        login,
        "sales@alpha.test",
        "a@example.org",
        &message("sales@alpha.test", "a@example.org", "over STARTTLS"),
    );
    assert_eq!(starttls[..3], ["auth-offered yes", "login 235", "mail 250"], "{starttls:?}");
    assert!(starttls[4].starts_with("data 250 2.0.0 queued as em_"), "{starttls:?}");
    let implicit = c.smtplib(
        "tls",
        Some(("Sales@Alpha.test", &password)),
        "sales@alpha.test",
        "b@example.net",
        &message("sales@alpha.test", "b@example.net", "over implicit TLS"),
    );
    assert_eq!(implicit[..3], ["auth-offered yes", "login 235", "mail 250"], "{implicit:?}");
    assert!(implicit[4].starts_with("data 250"), "{implicit:?}");

    // msmtp over STARTTLS, the certificate pinned by its fingerprint.
    let file = c.world.dir.0.join("msmtp.eml");
    std::fs::write(
        &file,
        message("sales@alpha.test", "c@example.org", "from msmtp").replace('\n', "\r\n"),
    )
    .expect("write");
    let out = Command::new("msmtp")
        .args([
            "--host=127.0.0.1",
            &format!("--port={}", c.submission),
            "--tls=on",
            "--tls-starttls=on",
        ])
        .arg(format!("--tls-fingerprint={}", fingerprint(&c.cert)))
        .args(["--auth=plain", "--user=sales@alpha.test", "--from=sales@alpha.test"])
        .arg(format!("--passwordeval=echo {password}"))
        .arg("c@example.org")
        .stdin(std::fs::File::open(&file).expect("open"))
        .output()
        .expect("msmtp");
    assert!(
        out.status.success(),
        "msmtp: {}\n{}",
        String::from_utf8_lossy(&out.stderr),
        c.world.server.log()
    );

    let got = c.world.sink.wait_for(3, Duration::from_secs(20));
    let mut subjects = Vec::new();
    for m in &got {
        let results = verify_dkim(&c.world.dns, &m.data);
        assert!(results.len() == 2 && results.iter().all(|(_, r)| r == "Pass"), "{results:?}");
        let text = String::from_utf8_lossy(&m.data);
        assert!(!text.contains("secret@example.net"), "Bcc is not sent: {text}");
        assert!(header(&m.data, "Message-ID").is_some() && header(&m.data, "Date").is_some());
        assert_eq!(header(&m.data, "From").as_deref(), Some("Sales Team <sales@alpha.test>"));
        assert!(m.mail_from.ends_with("@alpha.test"), "bounces come back to us: {}", m.mail_from);
        subjects.push(header(&m.data, "Subject").unwrap_or_default());
    }
    subjects.sort();
    assert_eq!(subjects, ["from msmtp", "over STARTTLS", "over implicit TLS"]);
    assert_eq!(
        got.iter().find(|m| m.rcpt_to == ["b@example.net"]).map(|m| m.rcpt_to.len()),
        Some(1)
    );

    // Delivered like any transactional email, then in the mailbox's sent folder.
    let id = starttls[4].rsplit(' ').next().expect("id").to_owned();
    let email = c.world.wait_status(&id, "delivered");
    assert_eq!(email["type"], "transactional");
    // Its download is what the client submitted (without Bcc), as sent but for the signatures.
    let raw = c.world.api().get(&format!("/v1/emails/{id}/raw")).expect(200);
    assert_eq!(raw.header("content-type"), Some("message/rfc822"));
    let sent = got.iter().find(|m| m.rcpt_to == ["a@example.org"]).expect("sent");
    let submitted = String::from_utf8_lossy(&raw.body);
    assert!(submitted.contains("Hello from a mail client") && !submitted.contains("secret@"));
    assert!(sent.data.trim_ascii_end().ends_with(raw.body.trim_ascii_end()), "{submitted}");
    assert_eq!(email["subject"], "over STARTTLS");
    assert!(
        email["text"].as_str().is_some_and(|t| t.contains("Hello from a mail client")),
        "{email}"
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let sent = c.world.api().get("/v1/emails?mailbox=sales&folder=sent").expect(200).json();
        let mut listed: Vec<String> = sent
            .as_array()
            .expect("array")
            .iter()
            .map(|e| e["subject"].as_str().unwrap_or("").to_owned())
            .collect();
        listed.sort();
        if listed == ["from msmtp", "over STARTTLS", "over implicit TLS"] {
            break;
        }
        assert!(Instant::now() < deadline, "not all in sent: {listed:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn refusals_no_tls_bad_password_wrong_sender_blocked_recipient_and_throttling() {
    let c = Clients::start(&[("EDGEMAIL_SUBMISSION_FAILED_LOGINS", "3")]);
    let (id, password) = c.password("laptop");
    let right = Some(("sales@alpha.test", password.as_str()));
    let ok = message("sales@alpha.test", "a@example.org", "refusals");

    // No TLS: no AUTH offered, none accepted, no mail without it.
    let plain = c.smtplib("plain", right, "sales@alpha.test", "a@example.org", &ok);
    assert_eq!(plain[..3], ["auth-offered no", "login 538", "mail 530"], "{plain:?}");
    // A wrong password.
    let wrong = c.smtplib(
        "starttls",
        Some(("sales@alpha.test", "not-the-password")),
        "sales@alpha.test",
        "a@example.org",
        &ok,
    );
    assert_eq!(wrong[1..3], ["login 535", "mail 530"], "{wrong:?}");
    // Another sender, in the envelope or in the From header.
    let other = c.smtplib("starttls", right, "boss@alpha.test", "a@example.org", &ok);
    assert_eq!(other[1..3], ["login 235", "mail 553"], "{other:?}");
    let forged = message("boss@alpha.test", "a@example.org", "forged");
    let header_from = c.smtplib("starttls", right, "sales@alpha.test", "a@example.org", &forged);
    assert!(header_from[4].starts_with("data 553 5.7.1"), "{header_from:?}");
    // Recipients screened as /v1/send screens them: the refused one gets a 5xx with the reason.
    let screened = c.smtplib(
        "starttls",
        right,
        "sales@alpha.test",
        "x@nullmx.example.com,not-an-address,a@example.org",
        &ok,
    );
    assert!(screened[3].starts_with("rcpt x@nullmx.example.com 550 5.7.1 no_mx"), "{screened:?}");
    assert!(screened[4].starts_with("rcpt not-an-address 5"), "{screened:?}");
    assert!(screened[5].starts_with("rcpt a@example.org 250"), "{screened:?}");
    assert!(screened[6].starts_with("data 250"), "{screened:?}");
    let got = c.world.sink.wait_for(1, Duration::from_secs(20));
    assert_eq!(got[0].rcpt_to, ["a@example.org"]);
    assert_eq!(header(&got[0].data, "Subject").as_deref(), Some("refusals"));

    // A deleted password stops working.
    c.world.api().delete(&format!("/v1/mailboxes/sales/passwords/{id}")).expect(200);
    let deleted = c.smtplib("starttls", right, "sales@alpha.test", "a@example.org", &ok);
    assert_eq!(deleted[1], "login 535", "{deleted:?}");

    // Two failures so far, the limit is three: the next failure empties the bucket, and then
    // even a right password is not checked.
    let (_, fresh) = c.password("phone");
    let fresh = Some(("sales@alpha.test", fresh.as_str()));
    let third = c.smtplib(
        "starttls",
        Some(("sales@alpha.test", "guess")),
        "sales@alpha.test",
        "a@example.org",
        &ok,
    );
    assert_eq!(third[1], "login 535", "{third:?}");
    let fourth = c.smtplib(
        "starttls",
        Some(("sales@alpha.test", "guess")),
        "sales@alpha.test",
        "a@example.org",
        &ok,
    );
    assert_eq!(fourth[1], "login 535", "{fourth:?}");
    let throttled = c.smtplib("starttls", fresh, "sales@alpha.test", "a@example.org", &ok);
    assert_eq!(throttled[1], "login 454", "{throttled:?}");
}

/// The `h=` tag of every DKIM-Signature field of `raw`, lowercased, in order.
fn signed_fields(raw: &[u8]) -> Vec<Vec<String>> {
    let text = String::from_utf8_lossy(raw).replace("\r\n\t", " ").replace("\r\n ", " ");
    text.lines()
        .filter(|l| l.to_ascii_lowercase().starts_with("dkim-signature:"))
        .filter_map(|l| {
            let tag = l.split(';').map(str::trim).find_map(|t| t.strip_prefix("h="))?;
            Some(tag.split(':').map(|n| n.trim().to_ascii_lowercase()).collect())
        })
        .collect()
}

/// Issue 32, finding 6: the sender binding holds against repeated and extra identity fields, and
/// every signature oversigns From, To, Subject, Date and Message-ID, so a From added on the way
/// breaks it.
#[test]
fn one_from_field_naming_the_login_and_oversigned_identity_fields() {
    let c = Clients::start(&[]);
    let (_, password) = c.password("laptop");
    let right = Some(("sales@alpha.test", password.as_str()));
    let body = "To: a@example.org\nSubject: s\n\nhello\n";
    for (case, head) in [
        ("a second From after a forged one", "From: security@paypal.com\nFrom: sales@alpha.test\n"),
        ("the right From twice", "From: sales@alpha.test\nFrom: sales@alpha.test\n"),
        ("two addresses", "From: security@paypal.com, sales@alpha.test\n"),
        ("another Sender", "From: sales@alpha.test\nSender: security@paypal.com\n"),
        ("another Resent-From", "From: sales@alpha.test\nResent-From: security@paypal.com\n"),
    ] {
        let message = format!("{head}{body}");
        let lines = c.smtplib("starttls", right, "sales@alpha.test", "a@example.org", &message);
        assert!(lines[4].starts_with("data 553 5.7.1"), "{case}: {lines:?}");
    }
    let ok = message("sales@alpha.test", "a@example.org", "oversigned");
    let lines = c.smtplib("starttls", right, "sales@alpha.test", "a@example.org", &ok);
    assert!(lines[4].starts_with("data 250"), "{lines:?}");
    let got = c.world.sink.wait_for(1, Duration::from_secs(20));
    assert_eq!(got.len(), 1, "only the genuine message left");
    let raw = &got[0].data;
    let signatures = signed_fields(raw);
    assert_eq!(signatures.len(), 2, "RSA and Ed25519");
    for h in &signatures {
        for name in ["from", "to", "subject", "date", "message-id"] {
            assert_eq!(h.iter().filter(|n| *n == name).count(), 2, "{name} oversigned: {h:?}");
        }
    }
    let results = verify_dkim(&c.world.dns, raw);
    assert!(results.iter().all(|(_, r)| r == "Pass"), "{results:?}");
    // A From added anywhere in the header fails both signatures.
    let tampered = [b"From: security@paypal.com\r\n".as_slice(), raw].concat();
    let results = verify_dkim(&c.world.dns, &tampered);
    assert!(results.len() == 2 && results.iter().all(|(_, r)| r != "Pass"), "{results:?}");
}
