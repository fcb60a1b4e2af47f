//! A small blocking WebDriver client for Debian's `chromedriver` driving headless `chromium`
//! (installed by `scripts/test.sh`): just the commands the dashboard tests use.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The W3C key codes of the keys the tests press.
pub const TAB: &str = "\u{E004}";
pub const ENTER: &str = "\u{E007}";

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// One browser at a time: the tests that use one run in parallel with everything else, and
/// several Chromiums starting at once on a 2-core machine made chromedriver miss its answers.
static TURN: Mutex<()> = Mutex::new(());

pub struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
    _turn: MutexGuard<'static, ()>,
}

fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

/// Starts chromedriver on a free port.
fn spawn_driver() -> (Child, SocketAddr) {
    let port = free_port();
    let driver = Command::new("chromedriver")
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn chromedriver");
    (driver, format!("127.0.0.1:{port}").parse().expect("addr"))
}

/// A headless Chromium that records the browser console.
fn capabilities() -> Value {
    json!({"capabilities": {"alwaysMatch": {
        "browserName": "chrome",
        "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage",
                     "--disable-gpu", "--no-first-run", "--window-size=1280,1000"]
        },
        "goog:loggingPrefs": {"browser": "ALL"}
    }}})
}

impl Browser {
    /// Starts chromedriver on a free port and opens a headless Chromium session that records the
    /// browser console.
    pub fn start() -> Browser {
        for tool in ["chromium", "chromedriver"] {
            let found = Command::new("sh").args(["-c", &format!("command -v {tool}")]).output();
            assert!(
                found.is_ok_and(|o| o.status.success()),
                "{tool} is missing: scripts/test.sh installs it (apt-get install -y chromium chromium-driver)"
            );
        }
        let turn = TURN.lock().unwrap_or_else(PoisonError::into_inner);
        let (driver, addr) = spawn_driver();
        let mut browser = Browser { driver, addr, session: String::new(), _turn: turn };
        // On a loaded machine a starting Chromium now and then makes chromedriver drop the
        // new-session request without an answer; a fresh driver is tried then (the old one is
        // killed, with it its browser), as a person would start the browser again.
        let mut created = Value::Null;
        for attempt in 0..3 {
            if attempt > 0 {
                let _ = browser.driver.kill();
                let _ = browser.driver.wait();
                (browser.driver, browser.addr) = spawn_driver();
            }
            let deadline = Instant::now() + Duration::from_secs(20);
            while !browser.ready() {
                assert!(Instant::now() < deadline, "chromedriver did not become ready");
                std::thread::sleep(Duration::from_millis(100));
            }
            created = browser.call("POST", "/session", Some(capabilities()));
            if let Some(id) = created["sessionId"].as_str() {
                browser.session = id.to_owned();
                return browser;
            }
        }
        panic!("no session after three drivers: {created}")
    }

    /// Whether chromedriver answers `/status` with ready; a driver still starting may accept a
    /// connection and close it without a word.
    fn ready(&self) -> bool {
        let Ok(mut stream) = TcpStream::connect(self.addr) else { return false };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
        let head =
            format!("GET /status HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", self.addr);
        if stream.write_all(head.as_bytes()).is_err() {
            return false;
        }
        let raw = read_response(&mut stream);
        let Some(start) = raw.windows(4).position(|w| w == b"\r\n\r\n") else { return false };
        let value: Value = serde_json::from_slice(&raw[start + 4..]).unwrap_or(Value::Null);
        value["value"]["ready"] == Value::Bool(true)
    }

    /// One WebDriver command; answers its `value`.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        // A loaded machine's chromedriver now and then closes a connection without a word. A
        // command that changes nothing twice over (reads, finding elements, navigating to a
        // URL) is asked again; clicks and typing are not, so a retry can never act twice.
        let repeatable = method == "GET"
            || ["/element", "/elements", "/url", "/execute/sync", "/window/rect", "/screenshot"]
                .iter()
                .any(|tail| path.ends_with(tail));
        for _ in 0..3 {
            let raw = self.exchange(method, path, &body);
            if !raw.is_empty() {
                let resp = crate::client::parse_response(&raw);
                let value: Value = serde_json::from_slice(&resp.body).unwrap_or(Value::Null);
                return value["value"].clone();
            }
            if !repeatable {
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        // No answer (also what ending a session in `drop` may get): the caller's checks of
        // what the command should have done are what fail then.
        Value::Null
    }

    /// One request and its raw answer (empty when the driver closed without one).
    fn exchange(&self, method: &str, path: &str, body: &str) -> Vec<u8> {
        let Ok(mut stream) = TcpStream::connect(self.addr) else {
            return Vec::new();
        };
        stream.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Type: \
             application/json\r\nContent-Length: {}\r\n\r\n",
            self.addr,
            body.len()
        );
        stream.write_all(head.as_bytes()).expect("write");
        stream.write_all(body.as_bytes()).expect("write");
        // chromedriver keeps connections open whatever the request says: read what
        // Content-Length announces instead of waiting for the end of the stream.
        read_response(&mut stream)
    }

    fn cmd(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let value = self.call(method, &format!("/session/{}{path}", self.session), body);
        assert!(value.get("error").is_none(), "{method} {path}: {value}");
        value
    }

    pub fn goto(&self, url: &str) {
        self.cmd("POST", "/url", Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.cmd("GET", "/url", None).as_str().unwrap_or_default().to_owned()
    }

    pub fn title(&self) -> String {
        self.cmd("GET", "/title", None).as_str().unwrap_or_default().to_owned()
    }

    pub fn source(&self) -> String {
        self.cmd("GET", "/source", None).as_str().unwrap_or_default().to_owned()
    }

    /// Waits (up to 20 s) until `done` holds: a click returns before the page it leads to
    /// has loaded.
    #[track_caller]
    pub fn wait_until(&self, what: &str, done: impl Fn(&Browser) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}; at {}", self.url());
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The element a CSS selector finds first.
    pub fn find(&self, css: &str) -> String {
        let found =
            self.cmd("POST", "/element", Some(json!({"using": "css selector", "value": css})));
        found[ELEMENT].as_str().unwrap_or_else(|| panic!("no element {css}: {found}")).to_owned()
    }

    pub fn click(&self, element: &str) {
        self.cmd("POST", &format!("/element/{element}/click"), Some(json!({})));
    }

    pub fn type_into(&self, element: &str, text: &str) {
        self.cmd("POST", &format!("/element/{element}/value"), Some(json!({ "text": text })));
    }

    pub fn attribute(&self, element: &str, name: &str) -> Option<String> {
        self.cmd("GET", &format!("/element/{element}/attribute/{name}"), None)
            .as_str()
            .map(str::to_owned)
    }

    pub fn text(&self, element: &str) -> String {
        self.cmd("GET", &format!("/element/{element}/text"), None).as_str().unwrap_or("").into()
    }

    /// The focused element.
    pub fn active(&self) -> String {
        let found = self.cmd("GET", "/element/active", None);
        found[ELEMENT].as_str().unwrap_or_else(|| panic!("nothing focused: {found}")).to_owned()
    }

    /// Presses keys on the keyboard (each down then up), wherever the focus is.
    pub fn keys(&self, text: &str) {
        let mut actions = Vec::new();
        for c in text.chars() {
            actions.push(json!({"type": "keyDown", "value": c.to_string()}));
            actions.push(json!({"type": "keyUp", "value": c.to_string()}));
        }
        let body = json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]});
        self.cmd("POST", "/actions", Some(body));
    }

    /// Runs `script` (a function body; `arguments` are `args`) in the current frame.
    pub fn execute(&self, script: &str, args: Value) -> Value {
        self.cmd("POST", "/execute/sync", Some(json!({ "script": script, "args": args })))
    }

    /// Makes the frame `element` the current one for `execute`, `find` and the rest.
    pub fn enter_frame(&self, element: &str) {
        self.cmd("POST", "/frame", Some(json!({ "id": { ELEMENT: element } })));
    }

    /// Back to the page itself.
    pub fn leave_frames(&self) {
        self.cmd("POST", "/frame", Some(json!({ "id": null })));
    }

    /// A PNG of the viewport.
    pub fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let b64 = self.cmd("GET", "/screenshot", None);
        let b64 = b64.as_str().expect("a base64 screenshot");
        base64::engine::general_purpose::STANDARD.decode(b64).expect("base64")
    }

    /// Resizes the browser window (outer size in CSS pixels).
    pub fn window(&self, width: u32, height: u32) {
        self.cmd("POST", "/window/rect", Some(json!({ "width": width, "height": height })));
    }

    /// One Chrome DevTools command (chromedriver's extension), e.g. media emulation.
    pub fn devtools(&self, cmd: &str, params: Value) -> Value {
        self.cmd("POST", "/goog/cdp/execute", Some(json!({ "cmd": cmd, "params": params })))
    }

    /// The console entries since the last call (chromedriver's log of the browser).
    pub fn console(&self) -> Vec<Value> {
        let logs = self.cmd("POST", "/se/log", Some(json!({ "type": "browser" })));
        logs.as_array().cloned().unwrap_or_default()
    }
}

/// One HTTP response: the head, then as many body bytes as its Content-Length says.
fn read_response(stream: &mut TcpStream) -> Vec<u8> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    loop {
        let Ok(n) = stream.read(&mut buf) else { return raw };
        if n == 0 {
            return raw;
        }
        raw.extend_from_slice(&buf[..n]);
        let Some(end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else { continue };
        let head = String::from_utf8_lossy(&raw[..end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok());
        match length {
            Some(len) if raw.len() >= end + 4 + len => return raw,
            Some(_) => {}
            None => {
                let _ = stream.read_to_end(&mut raw);
                return raw;
            }
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = self.call("DELETE", &format!("/session/{}", self.session), None);
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}
