//! The self-signed certificate a server makes for itself when none is configured (issue 33): its
//! subject names `smtp.hostname` (it said "rcgen self signed cert"), it is valid for about a year
//! from yesterday (it ran from 1975 to 4096), it stays the same across restarts so clients can
//! pin it, and a start within 30 days of its end makes a new one.

use std::process::Command;

use crate::mail_world::MailWorld;

/// The subject, notBefore and notAfter of the certificate served on `port`, and its PEM.
fn served(w: &MailWorld, port: u16) -> Vec<String> {
    let file = w.dir.0.join(format!("served-{}.pem", crate::harness::unique()));
    let script = r#"
import ssl, sys, datetime
port, path = int(sys.argv[1]), sys.argv[2]
pem = ssl.get_server_certificate(('127.0.0.1', port))
open(path, 'w').write(pem)
d = ssl._ssl._test_decode_cert(path)
parse = lambda s: datetime.datetime.strptime(s, '%b %d %H:%M:%S %Y %Z')
now = datetime.datetime.utcnow()
print('subject', dict(x[0] for x in d['subject']).get('commonName'))
print('starts-days', (parse(d['notBefore']) - now).days)
print('ends-days', (parse(d['notAfter']) - now).days)
print('pem', pem.replace('\n', ''))
"#;
    let out = Command::new("python3")
        .args(["-c", script, &port.to_string()])
        .arg(&file)
        .output()
        .expect("python3");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).collect()
}

#[test]
fn the_self_signed_certificate_names_the_host_and_lasts_a_year() {
    let args = ["--submissions", "127.0.0.1:0"];
    let env = [("EDGEMAIL_SMTP_HOSTNAME", "mx.alpha.test")];
    let mut w = MailWorld::start_with(&env, &args);
    let port = |w: &MailWorld| w.server.listener("submissions").expect("listener").port();
    let first = served(&w, port(&w));
    assert_eq!(first[0], "subject mx.alpha.test", "{first:?}");
    let starts: i64 = first[1].trim_start_matches("starts-days ").parse().expect("days");
    let ends: i64 = first[2].trim_start_matches("ends-days ").parse().expect("days");
    assert!((-3..=0).contains(&starts), "{first:?}");
    assert!((360..=366).contains(&ends), "{first:?}");

    w.crash_and_restart();
    assert_eq!(served(&w, port(&w))[3], first[3], "the same certificate after a restart");

    // 340 days on, within 30 days of its end: a start makes a new one, again for a year.
    w.restart_with_env("EDGEMAIL_TESTING_CLOCK_OFFSET", "340d");
    let renewed = served(&w, port(&w));
    assert_ne!(renewed[3], first[3], "renewed");
    let ends: i64 = renewed[2].trim_start_matches("ends-days ").parse().expect("days");
    assert!(ends > 600, "a year from the shifted clock: {renewed:?}");
}
