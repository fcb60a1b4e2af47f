//! The dashboard's mail pages in Chromium: a hostile HTML mail runs no script and loads nothing
//! remote until the reader asks for remote images in one view; long folders page by cursor.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use edgemail::store::Folder;

use crate::harness::{A, World};
use crate::webdriver::Browser;

/// A stand-in for a sender's tracking server: records the request line of every connection.
struct Tracker {
    port: u16,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Tracker {
    fn start() -> Tracker {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let log = log.clone();
                // One thread per connection: the browser may open one and send nothing yet.
                std::thread::spawn(move || {
                    let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(10)));
                    let mut line = String::new();
                    let _ = BufReader::new(&stream).read_line(&mut line);
                    log.lock().expect("log").push(line.trim().to_owned());
                    let _ = stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n",
                    );
                });
            }
        });
        Tracker { port, seen }
    }

    fn seen(&self) -> Vec<String> {
        self.seen.lock().expect("log").clone()
    }
}

/// Every trick a hostile mail might try: scripts, handlers, `javascript:` links, remote images
/// in tags and in CSS, a remote stylesheet and a nested frame.
fn hostile_html(port: u16) -> String {
    let r = format!("http://127.0.0.1:{port}");
    format!(
        r#"<html><head><title>Innocent</title>
<style>body {{ background-image: url({r}/css-background.png); }}</style>
<link rel="stylesheet" href="{r}/remote.css">
<script>window.pwned = "script"; document.title = "pwned"; top.document.title = "pwned";</script>
</head><body onload="window.pwned = 'onload'">
<p id="greeting">Hello from a hostile sender</p>
<img src="{r}/pixel.png" alt="tracker" onerror="window.pwned = 'onerror'; document.title = 'pwned'">
<img src="missing.png" onerror="window.pwned = 'relative onerror'">
<a id="js" href="javascript:window.pwned = 'link'; document.title = 'pwned'">Open me</a>
<div style="background: url({r}/inline-style.png)">styled</div>
<svg onload="window.pwned = 'svg'"><circle r="4"/></svg>
<iframe src="{r}/frame.html"></iframe>
</body></html>"#
    )
}

fn seed_hostile(seed: &crate::harness::Seed, port: u16) -> String {
    seed.mailbox(A, "hello");
    let mut email =
        crate::emails::sample_email(&format!("hello@{A}"), Folder::Inbox, "Hostile", 1_000);
    email.html = Some(hostile_html(port));
    let id = email.summary.id.clone();
    seed.email(email);
    id
}

pub(crate) fn log_in(b: &Browser, base: &str, key: &str) {
    b.goto(&format!("{base}/ui/login"));
    b.type_into(&b.find("input[name=key]"), key);
    b.click(&b.find("form button"));
    b.wait_until("the overview", |b| b.url().ends_with("/ui/overview"));
}

/// Opens a message page and waits until it and its frame have loaded.
fn open(b: &Browser, url: &str) {
    b.goto(url);
    b.wait_until("the page and its frame", |b| {
        b.execute("return document.readyState", serde_json::json!([])) == "complete"
    });
}

/// What the scripts of the hostile mail would have left behind in the frame, if any ran.
fn frame_state(b: &Browser) -> (String, String, String) {
    let frame = b.find("iframe.message");
    b.enter_frame(&frame);
    let greeting = b.text(&b.find("#greeting"));
    b.click(&b.find("#js"));
    let state = b.execute("return [document.title, String(window.pwned)]", serde_json::json!([]));
    b.leave_frames();
    let field = |i: usize| state[i].as_str().unwrap_or_default().to_owned();
    assert_eq!(greeting, "Hello from a hostile sender", "the mail is not shown");
    (field(0), field(1), b.title())
}

#[test]
fn a_hostile_mail_runs_no_script_and_loads_remote_images_only_when_asked() {
    let tracker = Tracker::start();
    let mut id = String::new();
    let world = World::start_seeded(|seed| id = seed_hostile(seed, tracker.port));
    let base = format!("http://{}", world.server.addr);
    let b = Browser::start();
    log_in(&b, &base, &world.a);
    open(&b, &format!("{base}/ui/mail/{id}"));
    let (frame_title, pwned, page_title) = frame_state(&b);
    assert_eq!((frame_title.as_str(), pwned.as_str()), ("Innocent", "undefined"));
    assert!(page_title.starts_with("Hostile"), "{page_title}");
    assert!(tracker.seen().is_empty(), "remote content loaded: {:?}", tracker.seen());
    // Asked for, remote images of this view load, and nothing else does.
    b.click(&b.find("a[href$=\"?remote=1\"]"));
    b.wait_until("the remote view", |b| b.url().ends_with("?remote=1"));
    open(&b, &b.url());
    b.wait_until("the tracking pixel", |_| tracker.seen().iter().any(|l| l.contains("/pixel.png")));
    let (frame_title, pwned, page_title) = frame_state(&b);
    assert_eq!((frame_title.as_str(), pwned.as_str()), ("Innocent", "undefined"));
    assert!(page_title.starts_with("Hostile"), "{page_title}");
    let seen = tracker.seen();
    for wanted in ["/css-background.png", "/inline-style.png"] {
        b.wait_until(wanted, |_| tracker.seen().iter().any(|l| l.contains(wanted)));
    }
    for blocked in ["/remote.css", "/frame.html"] {
        assert!(!seen.iter().any(|l| l.contains(blocked)), "{blocked} loaded: {seen:?}");
    }
    // The choice is per view: the plain page blocks again.
    let before = tracker.seen().len();
    open(&b, &format!("{base}/ui/mail/{id}"));
    frame_state(&b);
    assert_eq!(tracker.seen().len(), before, "{:?}", tracker.seen());
}

fn rows(b: &Browser) -> u64 {
    b.execute(
        "return document.querySelectorAll('main table tbody tr').length",
        serde_json::json!([]),
    )
    .as_u64()
    .unwrap_or(0)
}

#[test]
fn long_folders_page_by_cursor_and_webhooks_choose_their_events() {
    let world = World::start_seeded(|seed| {
        seed.mailbox(A, "bulk");
        for i in 0..55u64 {
            let subject = format!("Message {i:02}");
            let at = 1_795_000_000_000 + i * 60_000;
            seed.email(crate::emails::sample_email(
                &format!("bulk@{A}"),
                Folder::Inbox,
                &subject,
                at,
            ));
        }
    });
    let base = format!("http://{}", world.server.addr);
    let b = Browser::start();
    log_in(&b, &base, &world.a);
    b.goto(&format!("{base}/ui/mail?mailbox=bulk%40{A}&folder=inbox"));
    assert_eq!(rows(&b), 50);
    assert!(b.source().contains("Message 54") && !b.source().contains("Message 04"));
    b.click(&b.find("a[rel=next]"));
    b.wait_until("the second page", |b| b.url().contains("cursor="));
    assert_eq!(rows(&b), 5);
    assert!(b.source().contains("Message 04") && !b.source().contains("Message 05"));
    assert!(!b.source().contains("rel=\"next\""), "a next link after the last page");
    b.click(&b.find("nav.pager a"));
    b.wait_until("the first page", |b| !b.url().contains("cursor="));
    assert_eq!(rows(&b), 50);
    // The webhook form offers every event type of the contract as a checkbox.
    b.goto(&format!("{base}/ui/webhooks"));
    let boxes = b.execute(
        "return [...document.querySelectorAll('input[name=events]')].map(i => i.value)",
        serde_json::json!([]),
    );
    assert!(boxes.as_array().is_some_and(|v| v.len() == 14), "{boxes}");
    b.type_into(&b.find("input[name=url]"), "https://93.184.216.34/in");
    b.click(&b.find("input[value=\"email.bounced\"]"));
    b.click(&b.find("input[value=\"email.delivered\"]"));
    b.click(&b.find("form[action=\"/ui/webhooks\"] button"));
    b.wait_until("the new webhook", |b| b.source().contains("created; its signing secret"));
    let hooks = world.alpha().get("/v1/webhooks").expect(200).json();
    let mut events: Vec<String> =
        serde_json::from_value(hooks[0]["events"].clone()).expect("events");
    events.sort();
    assert_eq!(events, ["email.bounced", "email.delivered"]);
}
