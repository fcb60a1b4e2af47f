//! The web dashboard: plain-HTTP checks of its security (session cookie flags, the content
//! security policy, CSRF refusals) and a walk through every page in a real Chromium (keyboard
//! login, navigation, a mailbox made through the form, no console errors).

use std::net::SocketAddr;

use edgemail::store::Folder;
use serde_json::json;

use crate::client::{Client, Resp};
use crate::dashboard_mail::log_in;
use crate::harness::{A, World, cli};
use crate::webdriver::{Browser, ENTER, TAB};

/// Every page of the navigation: path and the heading it shows.
pub(crate) const PAGES: [(&str, &str); 11] = [
    ("/ui/overview", "Overview"),
    ("/ui/domain", "Domain"),
    ("/ui/mailboxes", "Mailboxes"),
    ("/ui/mail", "Mail"),
    ("/ui/compose", "Compose"),
    ("/ui/contacts", "Contacts"),
    ("/ui/sequences", "Sequences"),
    ("/ui/replies", "Replies"),
    ("/ui/suppressions", "Suppressions"),
    ("/ui/webhooks", "Webhooks"),
    ("/ui/outbox", "Outbox"),
];

/// A browser without a browser: a cookie jar over raw HTTP.
struct Visitor {
    client: Client,
    cookies: Vec<(String, String)>,
}

impl Visitor {
    fn new(addr: SocketAddr) -> Visitor {
        Visitor { client: Client::new(addr, None), cookies: Vec::new() }
    }

    fn send(
        &mut self,
        method: &str,
        path: &str,
        extra: &[(&str, &str)],
        body: Option<&str>,
    ) -> Resp {
        let mut req =
            format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n");
        if !self.cookies.is_empty() {
            let jar: Vec<String> = self.cookies.iter().map(|(k, v)| format!("{k}={v}")).collect();
            req.push_str(&format!("Cookie: {}\r\n", jar.join("; ")));
        }
        for (k, v) in extra {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        if let Some(body) = body {
            req.push_str("Content-Type: application/x-www-form-urlencoded\r\n");
            req.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        req.push_str("\r\n");
        req.push_str(body.unwrap_or(""));
        let resp = self.client.exchange(req.as_bytes());
        for (k, v) in &resp.headers {
            if k.eq_ignore_ascii_case("set-cookie") {
                let (pair, _) = v.split_once(';').unwrap_or((v, ""));
                let (name, value) = pair.split_once('=').expect("cookie pair");
                self.cookies.retain(|(n, _)| n != name);
                if !value.is_empty() {
                    self.cookies.push((name.to_owned(), value.to_owned()));
                }
            }
        }
        resp
    }

    fn get(&mut self, path: &str) -> Resp {
        self.send("GET", path, &[], None)
    }

    fn post(&mut self, path: &str, body: &str) -> Resp {
        self.send("POST", path, &[], Some(body))
    }

    /// Logs in with `key` through the login form.
    fn login(&mut self, key: &str) -> Resp {
        let form = self.get("/ui/login").expect(200);
        let token = csrf(&form.text());
        self.post("/ui/login", &format!("csrf={token}&key={key}"))
    }
}

/// The CSRF token of the first form of a page.
fn csrf(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("a form with a csrf field");
    let rest = &html[at + 19..];
    rest[..rest.find('"').expect("end of value")].to_owned()
}

fn set_cookie<'r>(resp: &'r Resp, name: &str) -> &'r str {
    resp.headers
        .iter()
        .find(|(k, v)| k.eq_ignore_ascii_case("set-cookie") && v.starts_with(&format!("{name}=")))
        .map(|(_, v)| v.as_str())
        .unwrap_or_else(|| panic!("no {name} cookie in {:?}", resp.headers))
}

#[track_caller]
fn strict_csp(resp: &Resp) {
    let csp = resp.header("content-security-policy").expect("a content security policy");
    for part in
        ["default-src 'none'", "style-src 'self'", "frame-ancestors 'none'", "form-action 'self'"]
    {
        assert!(csp.contains(part), "{part} missing from {csp}");
    }
    assert!(!csp.contains("unsafe") && !csp.contains("http"), "loose policy: {csp}");
}

fn seed_html_message(seed: &crate::harness::Seed) -> String {
    seed.mailbox(A, "hello");
    let mut email =
        crate::emails::sample_email(&format!("hello@{A}"), Folder::Inbox, "Styled news", 1_000);
    email.html = Some("<p style=\"color:green\">Hello <b>there</b></p>".into());
    let id = email.summary.id.clone();
    seed.email(email);
    id
}

#[test]
fn login_sets_a_strict_session_cookie_and_every_page_has_the_navigation() {
    let world = World::start();
    let mut v = Visitor::new(world.server.addr);
    let root = v.get("/").expect(303);
    assert_eq!(root.header("location"), Some("/ui/login"));
    let form = v.get("/ui/login").expect(200);
    strict_csp(&form);
    assert!(form.text().contains("type=\"password\" name=\"key\""), "{}", form.text());
    let login_cookie = set_cookie(&form, "em_login");
    assert!(login_cookie.contains("HttpOnly") && login_cookie.contains("SameSite=Strict"));
    // A wrong key stays on the login page; an org-wide key is not a domain's.
    let token = csrf(&form.text());
    v.post("/ui/login", &format!("csrf={token}&key=em_wrong")).expect(401);
    v.login(&world.org).expect(401);
    let done = v.login(&world.a).expect(303);
    assert_eq!(done.header("location"), Some("/ui/overview"));
    let session = set_cookie(&done, "em_session");
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(session.contains(flag), "{flag} missing: {session}");
    }
    assert!(!session.contains("Secure"), "plain HTTP cannot keep a Secure cookie: {session}");
    assert_eq!(v.get("/").expect(303).header("location"), Some("/ui/overview"));
    for (path, heading) in PAGES {
        let page = v.get(path).expect(200);
        strict_csp(&page);
        let html = page.text();
        assert!(html.contains(&format!("<h1>{heading}")), "{path}: {html}");
        assert!(html.contains("href=\"#main\""), "{path}: no skip link");
        for (other, _) in PAGES {
            assert!(html.contains(&format!("href=\"{other}\"")), "{path} does not link {other}");
        }
        assert!(!html.contains("<script"), "{path} has a script");
        for remote in ["src=\"http", "href=\"http", "src=\"//", "href=\"//"] {
            assert!(!html.contains(remote), "{path} loads from another origin");
        }
    }
    for asset in ["/ui/style.css", "/ui/favicon.svg", "/favicon.ico"] {
        v.get(asset).expect(200);
    }
    // Logging out ends the session on the server, not only in the browser.
    let stale = v.cookies.clone();
    let token = csrf(&v.get("/ui/overview").text());
    v.post("/ui/logout", &format!("csrf={token}")).expect(303);
    v.cookies = stale;
    assert_eq!(v.get("/ui/overview").expect(303).header("location"), Some("/ui/login"));
}

#[test]
fn the_login_pages_hint_is_a_command_that_makes_a_key_that_logs_in() {
    let world = World::start();
    let mut v = Visitor::new(world.server.addr);
    let form = v.get("/ui/login").expect(200).text();
    let at = form.find("<code>edgemail ").expect("a command in the hint") + "<code>".len();
    let command = &form[at..at + form[at..].find("</code>").expect("</code>")];
    // The hint's domain stands for the user's own; everything else is run as printed.
    let args: Vec<&str> = command
        .split_whitespace()
        .skip(1)
        .map(|a| if a == "example.com" { A } else { a })
        .collect();
    let data = world._dir.0.to_str().expect("utf-8 path");
    let (ok, stdout, stderr) = cli(&[&args[..], &["--data", data]].concat());
    assert!(ok, "`{command}` failed: {stderr}");
    let key = stdout.lines().last().expect("the key").trim().to_owned();
    assert!(key.starts_with("em_"), "{stdout}");
    assert_eq!(v.login(&key).expect(303).header("location"), Some("/ui/overview"));
}

#[test]
fn the_session_cookie_is_secure_behind_a_tls_proxy() {
    let world = World::start_with_env(&[("EDGEMAIL_HTTP_TRUSTED_PROXIES", "127.0.0.1")]);
    let mut v = Visitor::new(world.server.addr);
    let https = [("X-Forwarded-Proto", "https")];
    let form = v.send("GET", "/ui/login", &https, None).expect(200);
    assert!(set_cookie(&form, "em_login").contains("; Secure"));
    let body = format!("csrf={}&key={}", csrf(&form.text()), world.a);
    let done = v.send("POST", "/ui/login", &https, Some(&body)).expect(303);
    assert!(set_cookie(&done, "em_session").contains("; Secure"));
}

#[test]
fn forged_posts_are_refused_and_forms_act_through_the_api() {
    let world = World::start();
    let mut v = Visitor::new(world.server.addr);
    // The login form itself needs the token of its cookie.
    v.get("/ui/login").expect(200);
    v.post("/ui/login", &format!("csrf=forged&key={}", world.a)).expect(403);
    v.login(&world.a).expect(303);
    let names = |w: &World| w.alpha().get("/v1/mailboxes").expect(200).json().to_string();
    v.post("/ui/mailboxes", "address=forged").expect(403);
    v.post("/ui/mailboxes", "csrf=guess&address=forged").expect(403);
    assert!(!names(&world).contains("forged"), "a forged post created a mailbox");
    let token = csrf(&v.get("/ui/mailboxes").text());
    v.post("/ui/mailboxes", &format!("csrf={token}&address=sales")).expect(303);
    assert!(names(&world).contains(&format!("sales@{A}")));
    assert!(v.get("/ui/mailboxes").text().contains(&format!("Mailbox sales@{A} created.")));
    // The API's rules and messages apply to the form as they are, beside the field they name.
    v.post("/ui/mailboxes", &format!("csrf={token}&address=bad..name")).expect(303);
    let page = v.get("/ui/mailboxes").text();
    assert!(page.contains("id=\"address-error\">invalid `address`"), "{page}");
    assert!(page.contains("value=\"bad..name\" aria-invalid=\"true\""), "{page}");
    assert!(!page.contains("role=\"alert\""), "the message is repeated above the form: {page}");
    // One that names no field of the form stays above it.
    v.post("/ui/mailboxes", &format!("csrf={token}&address=sales")).expect(303);
    let page = v.get("/ui/mailboxes").text();
    assert!(page.contains("role=\"alert\"") && page.contains("already exists"), "{page}");
    assert!(!page.contains("aria-invalid"), "{page}");
    // A session of another domain's key sees only its own domain.
    let mut other = Visitor::new(world.server.addr);
    other.login(&world.b).expect(303);
    assert!(!other.get("/ui/mailboxes").text().contains("sales@"));
}

#[test]
fn a_message_shows_in_a_sandboxed_frame_that_loads_nothing_remote() {
    let mut id = String::new();
    let world = World::start_seeded(|seed| id = seed_html_message(seed));
    let mut v = Visitor::new(world.server.addr);
    v.login(&world.a).expect(303);
    let page = v.get(&format!("/ui/mail/{id}")).expect(200).text();
    assert!(page.contains("<iframe class=\"message\" sandbox=\"\""), "{page}");
    let body = v.get(&format!("/ui/mail/{id}/body")).expect(200);
    let csp = body.header("content-security-policy").expect("csp");
    for part in ["default-src 'none'", "img-src data:", "sandbox", "frame-ancestors 'self'"] {
        assert!(csp.contains(part), "{part} missing from {csp}");
    }
    assert!(body.text().contains("<b>there</b>"));
    // Without a session the body is not shown.
    let mut stranger = Visitor::new(world.server.addr);
    stranger.get(&format!("/ui/mail/{id}/body")).expect(303);
}
#[test]
fn chromium_logs_in_by_keyboard_and_walks_every_page_without_console_errors() {
    let mut id = String::new();
    let world = World::start_seeded(|seed| id = seed_html_message(seed));
    let base = format!("http://{}", world.server.addr);
    let b = Browser::start();
    b.goto(&format!("{base}/"));
    assert!(b.url().ends_with("/ui/login"), "{}", b.url());
    // Keyboard only: the skip link comes first, then the key field; Enter submits.
    b.keys(TAB);
    assert_eq!(b.text(&b.active()), "Skip to content");
    b.keys(TAB);
    assert_eq!(b.attribute(&b.active(), "name").as_deref(), Some("key"));
    b.keys(&world.a);
    b.keys(ENTER);
    b.wait_until("the overview", |b| b.url().ends_with("/ui/overview"));
    for (path, heading) in PAGES {
        b.click(&b.find(&format!("nav a[href=\"{path}\"]")));
        b.wait_until(path, |b| b.url().ends_with(path));
        assert!(b.title().starts_with(heading), "{path}: {}", b.title());
    }
    b.click(&b.find("nav a[href=\"/ui/mailboxes\"]"));
    let field = b.find("input[name=address]");
    b.type_into(&field, "support");
    b.click(&b.find("form[action=\"/ui/mailboxes\"] button"));
    let created = format!("Mailbox support@{A} created.");
    b.wait_until("the new mailbox", |b| b.source().contains(&created));
    b.goto(&format!("{base}/ui/mail/{id}"));
    let frame = b.find("iframe.message");
    assert_eq!(b.attribute(&frame, "sandbox").as_deref(), Some(""));
    let errors: Vec<_> =
        b.console().into_iter().filter(|e| e["level"] != "DEBUG" && e["level"] != "INFO").collect();
    assert!(errors.is_empty(), "console errors: {errors:?}");
    // The check above can fail: a missing page is an error in the console.
    b.goto(&format!("{base}/ui/missing"));
    assert!(b.console().iter().any(|e| e["level"] == "SEVERE"), "the console log is not read");
}

#[test]
fn chromium_shows_a_refused_form_with_the_message_beside_its_field() {
    let world = World::start();
    let base = format!("http://{}", world.server.addr);
    let b = Browser::start();
    log_in(&b, &base, &world.a);
    b.goto(&format!("{base}/ui/mailboxes"));
    b.type_into(&b.find("#address"), "bad..name");
    b.type_into(&b.find("#displayName"), "Support desk");
    b.click(&b.find("form[action=\"/ui/mailboxes\"] button"));
    b.wait_until("the refused form", |b| b.source().contains("field-error"));
    let field = b.find("#address");
    assert_eq!(b.attribute(&field, "aria-invalid").as_deref(), Some("true"));
    let described = b.attribute(&field, "aria-describedby").expect("aria-describedby");
    let message = b.text(&b.find(&format!("#{described}")));
    assert!(message.contains("invalid `address`"), "{message}");
    // The message is the field's next element, and the focus waits on the field.
    let next =
        b.execute("return document.getElementById('address').nextElementSibling.id", json!([]));
    assert_eq!(next, described.as_str());
    assert_eq!(b.attribute(&b.active(), "id").as_deref(), Some("address"));
    // What was typed is still there; the other field is not marked; no alert repeats it.
    let values = b.execute(
        "return ['address', 'displayName'].map(id => document.getElementById(id).value)",
        json!([]),
    );
    assert_eq!(values, json!(["bad..name", "Support desk"]));
    assert_eq!(b.attribute(&b.find("#displayName"), "aria-invalid"), None);
    let alerts = b.execute("return document.querySelectorAll('[role=alert]').length", json!([]));
    assert_eq!(alerts, 0);
    let list = world.alpha().get("/v1/mailboxes").expect(200).json().to_string();
    assert!(!list.contains("bad..name"), "{list}");
    // Fixed in place, the same form goes through.
    b.execute("document.getElementById('address').value = ''", json!([]));
    b.type_into(&b.find("#address"), "desk");
    b.click(&b.find("form[action=\"/ui/mailboxes\"] button"));
    let created = format!("Mailbox desk@{A} created.");
    b.wait_until("the new mailbox", |b| b.source().contains(&created));
    assert_eq!(
        b.execute("return document.querySelectorAll('[aria-invalid]').length", json!([])),
        0
    );
}
