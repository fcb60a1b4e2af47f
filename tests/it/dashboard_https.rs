//! The dashboard over HTTPS (`--https`, the self-signed certificate): a login through the form
//! with curl gets its cookies `Secure`, `HttpOnly` and `SameSite=Strict`, every answer carries
//! HSTS, and the session works on the next page; over plain HTTP the same login gets no
//! `Secure` and no HSTS (a browser would drop a Secure cookie sent over plain HTTP).

use std::process::Command;

use crate::harness::{A, Seed, Server, TempDir};

/// One curl exchange: `(status, head lines, body)`. Cookies go through the jar in `dir`.
fn curl(dir: &TempDir, url: &str, form: Option<&str>) -> (u16, Vec<String>, String) {
    let jar = dir.0.join("cookies.txt");
    let head = dir.0.join("head.txt");
    let mut cmd = Command::new("curl");
    // -k: the server's certificate is its self-signed one, which no root vouches for.
    cmd.args(["-sk", "--max-time", "20", "-o", "-", "-D"]).arg(&head);
    cmd.arg("-b").arg(&jar).arg("-c").arg(&jar);
    if let Some(form) = form {
        cmd.args(["--data-raw", form]);
    }
    let out = cmd.arg(url).output().expect("curl (scripts/test.sh installs it)"); // ok: test
    assert!(out.status.success(), "curl {url}: {}", String::from_utf8_lossy(&out.stderr));
    let head = std::fs::read_to_string(&head).expect("the head curl wrote"); // ok: test
    let lines: Vec<String> = head.lines().map(|l| l.trim_end().to_owned()).collect();
    let status = lines
        .first()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, lines, String::from_utf8_lossy(&out.stdout).into_owned())
}

fn header<'a>(head: &'a [String], name: &str) -> Vec<&'a str> {
    head.iter()
        .filter_map(|l| l.split_once(':'))
        .filter(|(k, _)| k.trim().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.trim())
        .collect()
}

fn cookie<'a>(head: &'a [String], name: &str) -> &'a str {
    let found = header(head, "set-cookie").into_iter().find(|v| v.starts_with(&format!("{name}=")));
    found.unwrap_or_else(|| panic!("no {name} cookie in {head:?}"))
}

fn csrf(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("a csrf field"); // ok: test
    let rest = &html[at + 19..];
    rest[..rest.find('"').expect("end of the value")].to_owned() // ok: test
}

/// Logs in at `base` through the form; the heads of the form and of the login answer.
fn log_in(dir: &TempDir, base: &str, key: &str) -> (Vec<String>, Vec<String>) {
    let (status, form_head, page) = curl(dir, &format!("{base}/ui/login"), None);
    assert_eq!(status, 200, "{form_head:?}");
    let body = format!("csrf={}&key={key}", csrf(&page));
    let (status, login_head, _) = curl(dir, &format!("{base}/ui/login"), Some(&body));
    assert_eq!(status, 303, "{login_head:?}");
    let (status, next, page) = curl(dir, &format!("{base}/ui/overview"), None);
    assert_eq!(status, 200, "the session works: {next:?}");
    assert!(page.contains("Log out"), "{page}");
    (form_head, login_head)
}

#[test]
fn dashboard_cookies_are_secure_over_https_with_hsts_and_not_over_plain_http() {
    let dir = TempDir::new("https-ui");
    let seed = Seed::open(&dir.0);
    seed.domain(A);
    let key = seed.key(Some(A));
    seed.close();
    let server = Server::start_with(&dir.0, &["--https", "127.0.0.1:0"], &[]);
    let https = server.listener("https").expect("https= on the start line"); // ok: test

    let jar = TempDir::new("https-jar");
    let (form, login) = log_in(&jar, &format!("https://127.0.0.1:{}", https.port()), &key);
    for head in [&form, &login] {
        let hsts = header(head, "strict-transport-security");
        assert!(hsts.first().is_some_and(|v| v.starts_with("max-age=")), "HSTS: {head:?}");
    }
    for c in [cookie(&form, "em_login"), cookie(&login, "em_session")] {
        for part in ["; Secure", "; HttpOnly", "; SameSite=Strict"] {
            assert!(c.contains(part), "{part} missing: {c}");
        }
    }

    let plain = TempDir::new("http-jar");
    let (form, login) = log_in(&plain, &format!("http://{}", server.addr), &key);
    for head in [&form, &login] {
        assert!(header(head, "strict-transport-security").is_empty(), "no HSTS: {head:?}");
    }
    for c in [cookie(&form, "em_login"), cookie(&login, "em_session")] {
        assert!(!c.contains("Secure"), "Secure over plain HTTP: {c}");
        assert!(c.contains("; HttpOnly") && c.contains("; SameSite=Strict"), "{c}");
    }
}
