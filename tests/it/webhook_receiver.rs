//! A webhook receiver on 127.0.0.1: records every post and answers by path, and checks Standard
//! Webhooks signatures with its own HMAC-SHA256 (ring), independently of the server's code.
//!
//! Paths: `/ok` answers 204; `/fail2` answers 500 to its first two posts, then 200; `/down`
//! answers 503 while `set_down(true)`; `/error` always 500; `/hang` reads the request and never
//! answers; `/redirect` answers 302 to `/ok`; `/huge` answers 200 with a 10 MB body.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Hit {
    pub path: String,
    pub id: String,
    pub timestamp: String,
    pub signature: String,
    pub body: Vec<u8>,
}

impl Hit {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("a JSON body") // ok: test
    }

    pub fn kind(&self) -> String {
        self.json()["type"].as_str().unwrap_or_default().to_owned()
    }

    /// Whether one of the `v1,` signatures is HMAC-SHA256 of `id.timestamp.body` under the
    /// base64-decoded `secret` (after `whsec_`).
    pub fn verifies(&self, secret: &str) -> bool {
        let Some(key) = secret.strip_prefix("whsec_").and_then(|k| STANDARD.decode(k).ok()) else {
            return false;
        };
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &key);
        let mut signed = format!("{}.{}.", self.id, self.timestamp).into_bytes();
        signed.extend_from_slice(&self.body);
        self.signature.split(' ').filter_map(|s| s.strip_prefix("v1,")).any(|sig| {
            STANDARD.decode(sig).is_ok_and(|sig| ring::hmac::verify(&key, &signed, &sig).is_ok())
        })
    }
}

#[derive(Default)]
struct State {
    hits: Vec<Hit>,
    per_path: HashMap<String, usize>,
}

pub struct Receiver {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    down: Arc<AtomicBool>,
}

impl Receiver {
    pub fn start() -> Receiver {
        Receiver::start_on(0)
    }

    /// A receiver on a given port of 127.0.0.1 (0: any free one).
    pub fn start_on(port: u16) -> Receiver {
        let listener = TcpListener::bind(("127.0.0.1", port)).expect("bind receiver"); // ok: test
        let addr = listener.local_addr().expect("addr"); // ok: test
        let state = Arc::new(Mutex::new(State::default()));
        let down = Arc::new(AtomicBool::new(false));
        let (s, d) = (state.clone(), down.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (s, d) = (s.clone(), d.clone());
                std::thread::spawn(move || serve(stream, &s, &d));
            }
        });
        Receiver { addr, state, down }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.state.lock().expect("lock").hits.clone() // ok: test
    }

    /// Waits until `done` holds for the hits so far.
    #[track_caller]
    pub fn wait(&self, what: &str, done: impl Fn(&[Hit]) -> bool) -> Vec<Hit> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let hits = self.hits();
            if done(&hits) {
                return hits;
            }
            if Instant::now() > deadline {
                let kinds: Vec<String> =
                    hits.iter().map(|h| format!("{} {}", h.path, h.kind())).collect();
                panic!("the receiver never got {what}; got {kinds:?}");
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// The first hit of event type `kind` that `matches`, once it arrived.
    #[track_caller]
    pub fn event(&self, kind: &str, matches: impl Fn(&Value) -> bool) -> Hit {
        let found = |hits: &[Hit]| {
            hits.iter().find(|h| h.kind() == kind && matches(&h.json()["data"])).cloned()
        };
        let hits = self.wait(kind, |hits| found(hits).is_some());
        found(&hits).expect("found") // ok: test
    }
}

fn serve(stream: TcpStream, state: &Mutex<State>, down: &AtomicBool) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let mut writer = match stream.try_clone() {
        Ok(w) => w,
        Err(_) => return,
    };
    let mut reader = BufReader::new(stream);
    loop {
        let Some(hit) = read_request(&mut reader) else { return };
        let path = hit.path.clone();
        let n = {
            let mut s = state.lock().expect("lock"); // ok: test
            s.hits.push(hit);
            let n = s.per_path.entry(path.clone()).or_default();
            *n += 1;
            *n
        };
        let answer = match path.as_str() {
            "/fail2" if n <= 2 => plain(500),
            "/down" if down.load(Ordering::SeqCst) => plain(503),
            "/error" => plain(500),
            "/hang" => {
                std::thread::sleep(Duration::from_secs(40));
                return;
            }
            "/redirect" => {
                b"HTTP/1.1 302 Found\r\nLocation: /ok\r\nContent-Length: 0\r\n\r\n".to_vec()
            }
            "/huge" => {
                let head = "HTTP/1.1 200 OK\r\nContent-Length: 10485760\r\n\r\n";
                if writer.write_all(head.as_bytes()).is_err() {
                    return;
                }
                let chunk = vec![b'x'; 64 * 1024];
                for _ in 0..160 {
                    if writer.write_all(&chunk).is_err() {
                        return;
                    }
                }
                continue;
            }
            _ => plain(204),
        };
        if writer.write_all(&answer).is_err() {
            return;
        }
    }
}

fn plain(status: u16) -> Vec<u8> {
    format!("HTTP/1.1 {status} Status\r\nContent-Length: 0\r\n\r\n").into_bytes()
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Hit> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_owned();
    let mut headers = HashMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let len: usize = headers.get("content-length")?.parse().ok()?;
    let mut body = vec![0; len];
    reader.read_exact(&mut body).ok()?;
    let get = |k: &str| headers.get(k).cloned().unwrap_or_default();
    Some(Hit {
        path,
        id: get("webhook-id"),
        timestamp: get("webhook-timestamp"),
        signature: get("webhook-signature"),
        body,
    })
}
