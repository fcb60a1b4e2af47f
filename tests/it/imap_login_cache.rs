//! Repeated logins of a mail client skip the argon2 check once one succeeded, and a deleted app
//! password stops working at once all the same, over IMAP and submission alike. The login times
//! are printed (`--nocapture`), cold and then cached.

use crate::mail_clients::{Clients, new_password};

/// Logs in `args[0]` times over IMAPS, printing each LOGIN's duration in ms.
const LOGINS: &str = r#"
times = []
for i in range(int(args[0])):
    m = imap(login=False)
    started = time.perf_counter()
    m.login(user, password)
    times.append((time.perf_counter() - started) * 1000)
    m.logout()
out('times', *['%.2f' % t for t in times])
"#;

/// One IMAP login and one submission login; prints how each went.
const BOTH: &str = r#"
try:
    imap().logout()
    out('imap ok')
except imaplib.IMAP4.error as e:
    out('imap refused', e)
try:
    submit().quit()
    out('submission ok')
except smtplib.SMTPAuthenticationError as e:
    out('submission refused', e.smtp_code)
"#;

#[test]
fn a_revoked_app_password_stops_working_at_once_even_after_cached_logins() {
    let c = Clients::start();
    let lines = c.py(LOGINS, &["6"]);
    let times: Vec<f64> = lines[0]
        .strip_prefix("times ")
        .expect("times")
        .split(' ')
        .map(|t| t.parse().expect("a number"))
        .collect();
    let cached = times[1..].iter().sum::<f64>() / (times.len() - 1) as f64;
    println!(
        "IMAP LOGIN over TLS: cold {:.2} ms (argon2), cached {cached:.2} ms (mean of {}): {times:?}",
        times[0],
        times.len() - 1
    );
    assert_eq!(c.py(BOTH, &[]), ["imap ok", "submission ok"]);

    // Another password of the same mailbox, used and cached too, stays good.
    let other = new_password(&c.world, "phone");
    assert_eq!(c.py_as(&other, BOTH, &[]), ["imap ok", "submission ok"]);

    let list = c.world.api().get("/v1/mailboxes/sales/passwords").expect(200).json();
    let id = list
        .as_array()
        .expect("array")
        .iter()
        .find(|p| p["name"] == "client")
        .and_then(|p| p["id"].as_str())
        .expect("the fixture's password")
        .to_owned();
    c.world.api().delete(&format!("/v1/mailboxes/sales/passwords/{id}")).expect(200);
    let revoked = c.py(BOTH, &[]);
    assert!(revoked[0].starts_with("imap refused"), "{revoked:?}");
    assert_eq!(revoked[1], "submission refused 535", "{revoked:?}");
    assert_eq!(c.py_as(&other, BOTH, &[]), ["imap ok", "submission ok"]);
}
