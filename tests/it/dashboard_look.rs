//! How the dashboard looks, in Chromium: the chart reads without colour, every page fits a
//! 360 px screen without sideways scrolling, dark and light follow the system, and the README's
//! screenshots are taken here, from fixed data, on every run: into the build's scratch directory,
//! so a test run leaves the checkout untouched, and into `dist/screenshots/` (tracked, shown by
//! the README) only when `EDGEMAIL_UPDATE_SCREENSHOTS=1` asks for new ones.

use std::path::PathBuf;

use edgemail::store::{DayCounts, Folder};
use serde_json::{Value, json};

use crate::dashboard_mail::log_in;
use crate::harness::{A, Seed, World};
use crate::webdriver::Browser;

const DAY_MS: u64 = 86_400_000;

/// A month of traffic, the same shape on every run.
fn seed_month(seed: &Seed) {
    let now = edgemail::ids::now_ms();
    for back in 0..30u64 {
        let sent = 120 + (back * 37) % 90;
        let bounced = (back * 7) % 9;
        let counts = DayCounts {
            sent,
            delivered: sent - bounced,
            bounced,
            opened: sent * 2 / 5 + (back * 13) % 20,
            ..DayCounts::default()
        };
        seed.day_counts(A, now - back * DAY_MS, counts);
    }
}

/// A newsletter as mail clients see them, with one remote image (blocked in the view).
fn seed_mail(seed: &Seed) -> String {
    seed.mailbox(A, "hello");
    let mut email = crate::emails::sample_email(
        &format!("hello@{A}"),
        Folder::Inbox,
        "Your November report",
        1_795_500_000_000,
    );
    email.summary.from = "Ada at Example <ada@example.org>".into();
    email.html = Some(
        "<div style=\"font-family:sans-serif;max-width:36rem;padding:1rem\">\
         <h2 style=\"color:#1d4ed8\">November at a glance</h2>\
         <p>Hello, here is how your sending went this month.</p>\
         <img src=\"https://tracker.example.com/open.gif\" alt=\"(remote image, blocked)\">\
         <ul><li>3,412 messages delivered</li><li>41% opened</li><li>0.8% bounced</li></ul>\
         <p style=\"color:#4b5563\">Ada, for the Example team</p></div>"
            .into(),
    );
    let id = email.summary.id.clone();
    seed.email(email);
    id
}

fn screenshot(b: &Browser, name: &str) {
    let png = b.screenshot();
    assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "{name} is not a PNG");
    let dir = if std::env::var_os("EDGEMAIL_UPDATE_SCREENSHOTS").is_some_and(|v| v == "1") {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("dist/screenshots")
    } else {
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("screenshots")
    };
    std::fs::create_dir_all(&dir).expect("screenshots dir");
    std::fs::write(dir.join(name), png).expect("write screenshot");
}

fn js(b: &Browser, script: &str) -> Value {
    b.execute(script, json!([]))
}

/// The series of the chart tell themselves apart without colour.
fn chart_reads_without_colour(b: &Browser) {
    let dashes = js(
        b,
        "return [...document.querySelectorAll('svg.chart polyline')]
        .map(p => p.getAttribute('stroke-dasharray'))",
    );
    let dashes: Vec<&str> =
        dashes.as_array().expect("lines").iter().filter_map(Value::as_str).collect();
    let mut distinct = dashes.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!((dashes.len(), distinct.len()), (4, 4), "{dashes:?}");
    let labels = js(
        b,
        "return [...document.querySelectorAll('svg.chart text.end')].map(t => t.textContent)",
    );
    assert_eq!(labels, json!(["sent", "delivered", "bounced", "opened"]));
    // Every point names its value; the newest sent point is today's 120.
    let tips = js(
        b,
        "return [...document.querySelectorAll('svg.chart .s-sent title')].map(t => t.textContent)",
    );
    let tips = tips.as_array().expect("tooltips");
    assert_eq!(tips.len(), 30);
    assert!(tips[29].as_str().is_some_and(|t| t.ends_with(": 120 sent")), "{tips:?}");
    // And a table holds the same figures for screen readers.
    let rows = js(b, "return document.querySelectorAll('#chart-table tbody tr').length");
    assert_eq!(rows, json!(30));
    let described =
        js(b, "return document.querySelector('svg.chart').getAttribute('aria-describedby')");
    assert_eq!(described, json!("chart-table"));
}

fn background(b: &Browser) -> String {
    js(b, "return getComputedStyle(document.body).backgroundColor").as_str().unwrap_or("").into()
}

fn colour_scheme(b: &Browser, scheme: &str) {
    let feature = json!([{ "name": "prefers-color-scheme", "value": scheme }]);
    b.devtools("Emulation.setEmulatedMedia", json!({ "features": feature }));
}

/// No page scrolls sideways at 360 px.
fn fits_360(b: &Browser, base: &str, paths: &[String]) {
    b.window(360, 800);
    let width = js(b, "return window.innerWidth").as_u64().expect("width");
    assert!(width <= 360, "the window is {width} px wide");
    for path in paths {
        b.goto(&format!("{base}{path}"));
        let (scroll, inner) = (
            js(b, "return document.documentElement.scrollWidth"),
            js(b, "return window.innerWidth"),
        );
        assert!(scroll.as_u64() <= inner.as_u64(), "{path} scrolls sideways: {scroll} > {inner}");
    }
}

#[test]
fn the_dashboard_reads_without_colour_fits_small_screens_and_takes_its_screenshots() {
    let mut id = String::new();
    let world = World::start_seeded(|seed| {
        seed_month(seed);
        id = seed_mail(seed);
    });
    let base = format!("http://{}", world.server.addr);
    let b = Browser::start();
    b.window(1200, 800);
    log_in(&b, &base, &world.a);
    chart_reads_without_colour(&b);
    colour_scheme(&b, "light");
    b.goto(&format!("{base}/ui/overview"));
    let light = background(&b);
    screenshot(&b, "overview.png");
    b.goto(&format!("{base}/ui/mail/{id}"));
    b.wait_until("the message", |b| js(b, "return document.readyState") == "complete");
    screenshot(&b, "mail.png");
    colour_scheme(&b, "dark");
    b.goto(&format!("{base}/ui/overview"));
    let dark = background(&b);
    assert_ne!(light, dark, "the page ignores prefers-color-scheme");
    screenshot(&b, "overview-dark.png");
    colour_scheme(&b, "light");
    let mut paths: Vec<String> =
        crate::dashboard::PAGES.iter().map(|(p, _)| p.to_string()).collect();
    paths.extend([format!("/ui/mail/{id}"), "/ui/login".into()]);
    fits_360(&b, &base, &paths);
    // The check can fail: a wide table that is not allowed to scroll on its own overflows.
    let wide = "const d = document.createElement('div'); d.style.width = '900px'; \
                d.textContent = 'wide'; document.querySelector('main').append(d); \
                return document.documentElement.scrollWidth";
    assert!(js(&b, wide).as_u64() > js(&b, "return window.innerWidth").as_u64());
}
