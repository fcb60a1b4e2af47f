//! Attacks on the HTTP side (issue 32: 5, 9, 10, 14, 15, 17), each replayed against the real
//! binary over real sockets and shown refused or bounded: a campaign body copied per recipient,
//! unauthenticated bodies buffered by the thousand, an open pixel replayed, the keyless
//! deliverability check fanned out, one tenant's logins evicting everyone's sessions, and
//! private IPv4 addresses hidden inside IPv6 forms.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::{Resp, parse_response};
use crate::harness::World;
use crate::mail_world::{MailWorld, header, html_part};
use crate::webhook_receiver::Receiver;

/// `VmRSS` and `VmHWM` (peak) of a process, in bytes.
fn memory(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("proc status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map_or(0, |kb| kb * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn data_file(dir: &Path) -> u64 {
    std::fs::metadata(dir.join("edgemail.redb")).map_or(0, |m| m.len())
}

const MB: u64 = 1024 * 1024;

/// One request on a fresh connection, the answer read to its end.
fn exchange(addr: SocketAddr, request: &[u8]) -> Resp {
    let mut stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let _ = stream.write_all(request);
    let mut raw = Vec::new();
    let _ = stream.read_to_end(&mut raw);
    parse_response(&raw)
}

#[track_caller]
fn error_object(resp: &Resp, status: u16, code: &str) {
    assert_eq!(resp.status, status, "{}", resp.text());
    let body = resp.json();
    assert_eq!(body["code"], code, "{body}");
    for field in ["error", "message", "hint", "documentation_url"] {
        assert!(body[field].as_str().is_some_and(|s| !s.is_empty()), "{field} missing: {body}");
    }
}

/// The path of the first link of `kind` (`/t/o/`, `/t/c/`) in an HTML body.
fn link(html: &str, kind: &str) -> String {
    let at = html.find(kind).unwrap_or_else(|| panic!("no {kind} link in {html}"));
    html[at..].split(['"', '\'', '>', '<', ' ', '\r', '\n']).next().unwrap_or("").to_owned()
}

// Finding 17: IPv6 forms that embed a private IPv4 address are not public.

#[test]
fn ipv6_forms_of_private_ipv4_addresses_are_refused_for_webhooks_and_mail_exchangers() {
    let w = MailWorld::start_with(&[("EDGEMAIL_DELIVERY_ALLOW_PRIVATE", "false")], &[]);
    let loopback = |s: &str| s.parse::<Ipv6Addr>().expect("an IPv6 address");
    // 127.0.0.1 and 10.0.0.1 inside IPv4-compatible, SIIT, NAT64, 6to4 and Teredo addresses.
    let forms = [
        ("compat", loopback("::127.0.0.1")),
        ("siit", loopback("::ffff:0:127.0.0.1")),
        ("nat64", loopback("64:ff9b::10.0.0.1")),
        ("sixtofour", loopback("2002:7f00:1::1")),
        ("teredo", loopback("2001:0:4136:e378:8000:63bf:f5ff:fffe")),
    ];
    let mut to = Vec::new();
    for (name, ip) in forms {
        let (domain, mx) = (format!("{name}.example"), format!("mx.{name}.example"));
        w.dns.add_mx(&domain, 10, &mx);
        w.dns.add_aaaa(&mx, ip);
        w.dns.add_aaaa(&format!("hook.{name}.example"), ip);
        to.push(format!("x@{domain}"));
        // A webhook URL naming the address, or a host that resolves to it, is refused.
        for url in [format!("http://[{ip}]:{}/", w.sink.port()), format!("http://hook.{domain}/")] {
            let e = w
                .api()
                .post("/v1/webhooks", json!({"url": url}))
                .expect_error(400, "invalid_request");
            assert!(e["hint"].as_str().is_some_and(|h| h.contains("public")), "{url}: {e}");
        }
    }
    let sent = w
        .send(json!({"from": "sales@alpha.test", "to": to, "subject": "s", "text": "t"}))
        .expect(200)
        .json();
    let id = sent["messageId"].as_str().expect("id");
    let email = w.wait_email(id, |e| e["folder"] == "sent");
    for d in email["deliveries"].as_array().expect("deliveries") {
        assert_eq!(d["status"], "failed", "{email}");
        assert!(d["lastResponse"].as_str().is_some_and(|r| r.starts_with("550")), "{d}");
    }
    assert_eq!(w.sink.connections(), 0, "a private address was connected to");
}

// Finding 15: one tenant's logins cannot end another tenant's dashboard session.

/// Logs in with `key` (the login form's token is a double-submit cookie); the session id.
fn log_in(addr: SocketAddr, key: &str) -> String {
    let body = format!("csrf=t0ken&key={key}");
    let request = format!(
        "POST /ui/login HTTP/1.1\r\nHost: t\r\nConnection: close\r\nCookie: em_login=t0ken\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let resp = exchange(addr, request.as_bytes());
    assert_eq!(resp.status, 303, "{}", resp.text());
    resp.headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .find_map(|(_, v)| v.strip_prefix("em_session=")?.split(';').next())
        .expect("a session cookie")
        .to_owned()
}

/// Whether the session still opens the overview (a dead one is sent to the login form).
fn session_works(addr: SocketAddr, session: &str) -> bool {
    let request = format!(
        "GET /ui/overview HTTP/1.1\r\nHost: t\r\nConnection: close\r\nCookie: em_session={session}\r\n\r\n"
    );
    let resp = exchange(addr, request.as_bytes());
    match resp.status {
        200 => true,
        303 => false,
        other => panic!("overview answered {other}: {}", resp.text()),
    }
}

#[test]
fn one_tenants_logins_evict_only_that_tenants_oldest_sessions() {
    // A small process-wide table makes the old behaviour (evict the oldest of anyone) visible
    // within 200 logins; the per-key cap keeps the default, 50.
    let w = World::start_with_env(&[("EDGEMAIL_UI_MAX_SESSIONS", "100")]);
    let addr = w.server.addr;
    let tenant_b = log_in(addr, &w.b);
    let first_of_a = log_in(addr, &w.a);
    let mut last_of_a = String::new();
    for _ in 0..200 {
        last_of_a = log_in(addr, &w.a);
    }
    assert!(session_works(addr, &tenant_b), "tenant B was logged out by tenant A's logins");
    assert!(session_works(addr, &last_of_a));
    assert!(!session_works(addr, &first_of_a), "tenant A keeps at most 50 sessions");
}

// Finding 14: the keyless deliverability check asks a bounded number of DNS questions.

#[test]
fn check_deliverability_of_a_domain_with_40_mx_of_40_addresses_asks_a_bounded_number() {
    let w = MailWorld::start();
    for h in 0..40u8 {
        let host = format!("mx{h}.wide.example");
        w.dns.add_mx("wide.example", 10, &host);
        for a in 0..40u8 {
            w.dns.add_a(&host, Ipv4Addr::new(198, 51, h, a + 1));
        }
    }
    let before = w.dns.queries().len();
    let report = w
        .server
        .client(None)
        .post("/api/tools/check-deliverability", json!({"domain": "wide.example"}))
        .expect(200)
        .json();
    let asked = w.dns.queries().len() - before;
    eprintln!("check-deliverability of 40 MX x 40 addresses: {asked} DNS questions");
    assert!(asked <= 150, "{asked} DNS questions for one request");
    let blacklists = &report["blacklists"];
    assert_eq!(blacklists["status"], "warn", "{report}");
    assert!(blacklists["detail"].as_str().is_some_and(|d| d.contains("not checked")), "{report}");
    assert_eq!(report["mx"]["records"].as_array().map(Vec::len), Some(40), "{report}");
}

// Finding 9: unauthenticated bodies are small, and all bodies share one budget.

/// `connections` clients each announcing a body of `size` to `path` and sending it in 64 KiB
/// rounds, all at once; answers the statuses they got (0: none, the connection was closed).
fn flood(addr: SocketAddr, path: &str, connections: usize, size: usize) -> Vec<u16> {
    let threads = 25;
    let per_thread = connections / threads;
    let workers: Vec<_> = (0..threads)
        .map(|_| {
            let path = path.to_owned();
            std::thread::spawn(move || {
                let head = format!(
                    "POST {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\
                     Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {size}\r\n\r\n"
                );
                let mut streams: Vec<Option<TcpStream>> = (0..per_thread)
                    .map(|_| {
                        let mut s = TcpStream::connect(addr).ok()?;
                        s.set_write_timeout(Some(Duration::from_secs(20))).ok()?;
                        s.set_read_timeout(Some(Duration::from_secs(20))).ok()?;
                        s.write_all(head.as_bytes()).ok()?;
                        Some(s)
                    })
                    .collect();
                let chunk = vec![b'a'; 64 * 1024];
                for _ in 0..size.div_ceil(chunk.len()) {
                    for slot in &mut streams {
                        if slot.as_mut().is_some_and(|s| s.write_all(&chunk).is_err()) {
                            *slot = None;
                        }
                    }
                }
                let mut statuses = Vec::new();
                for mut s in streams.into_iter().flatten() {
                    let mut raw = Vec::new();
                    let _ = s.read_to_end(&mut raw);
                    let status = String::from_utf8_lossy(&raw)
                        .split(' ')
                        .nth(1)
                        .and_then(|s| s.parse().ok())
                        .unwrap_or(0);
                    statuses.push(status);
                }
                statuses
            })
        })
        .collect();
    workers.into_iter().flat_map(|t| t.join().expect("flood thread")).collect()
}

#[test]
fn five_hundred_unauthenticated_megabyte_bodies_are_refused_early_and_memory_stays_flat() {
    let w = World::start_with_env(&[
        ("EDGEMAIL_HTTP_MAX_CONNECTIONS_PER_IP", "1000"),
        ("EDGEMAIL_HTTP_MAX_BUFFERED_BYTES", "4MiB"),
    ]);
    let (addr, pid) = (w.server.addr, w.server.child.id());
    let (rss_before, _) = memory(pid);
    let started = Instant::now();
    let statuses = flood(addr, "/ui/login", 500, 1024 * 1024);
    let took = started.elapsed();
    let (rss_after, peak) = memory(pid);
    eprintln!(
        "500 x 1 MiB to /ui/login: RSS {} MB before, {} MB after, peak {} MB, in {took:?}",
        rss_before / MB,
        rss_after / MB,
        peak / MB
    );
    assert!(peak < rss_before + 64 * MB, "peak RSS {} MB", peak / MB);
    assert!(statuses.iter().all(|s| *s == 413 || *s == 0), "{statuses:?}");
    // Refused from the announced length: the same answer, at once, to a single client.
    let big = "POST /ui/login HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: 1048576\r\n\r\n";
    error_object(&exchange(addr, big.as_bytes()), 413, "invalid_request");
    // A body without a length is cut off at the same small limit.
    let mut chunked =
        b"POST /api/tools/validate-emails HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\
        Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
            .to_vec();
    for _ in 0..16 {
        chunked.extend_from_slice(b"4000\r\n");
        chunked.extend_from_slice(&[b' '; 0x4000]);
        chunked.extend_from_slice(b"\r\n");
    }
    chunked.extend_from_slice(b"0\r\n\r\n");
    error_object(&exchange(addr, &chunked), 413, "invalid_request");

    // A logged-in dashboard visitor may post a long message; a stranger may not.
    let session = log_in(addr, &w.a);
    let compose = |cookie: &str| {
        let body = format!("csrf=x&subject=s&text={}", "a".repeat(100_000));
        let request = format!(
            "POST /ui/compose HTTP/1.1\r\nHost: t\r\nConnection: close\r\nCookie: {cookie}\r\n\
             Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        exchange(addr, request.as_bytes()).status
    };
    assert_ne!(compose(&format!("em_session={session}")), 413);
    assert_eq!(compose("em_session=forged"), 413);

    // Authenticated bodies may be large, but all of them together stay within the budget of
    // buffered bytes (4 MiB here): while six half-sent 1 MiB bodies hold 3.6 MiB of it, a
    // 600 KiB body is refused with 503 (small requests still pass), and once they are gone it
    // goes through.
    let held: Vec<TcpStream> = (0..6)
        .map(|_| {
            let mut s = TcpStream::connect(addr).expect("connect");
            s.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
            let head = format!(
                "POST /v1/contacts HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\
                 Authorization: Bearer {}\r\nContent-Type: application/json\r\n\
                 Content-Length: 1048576\r\n\r\n",
                w.a
            );
            s.write_all(head.as_bytes()).expect("head");
            s.write_all(&vec![b' '; 600 * 1024]).expect("half a body");
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let mut large = vec![b' '; 600 * 1024];
    large.extend_from_slice(br#"{"email": "ada@example.org", "name": "Ada"}"#);
    let post = |body: &[u8]| {
        w.alpha().raw("POST", "/v1/contacts", &[("Content-Type", "application/json")], Some(body))
    };
    error_object(&post(&large), 503, "service_unavailable");
    let small = post(br#"{"email": "bob@example.org", "name": "Bob"}"#);
    assert!(matches!(small.status, 200 | 201), "{} {}", small.status, small.text());
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let again = post(&large);
        if again.status == 200 || again.status == 201 {
            break;
        }
        assert!(Instant::now() < deadline, "the budget never came back: {}", again.text());
        std::thread::sleep(Duration::from_millis(50));
    }
    // Real clients are served throughout.
    w.anonymous().get("/healthz").expect(200);
}

// Finding 10: a replayed open pixel is one event, one unique open, and no write per hit.

/// Fetches `path` `times` times over one keep-alive connection from `from`; the statuses.
fn replay(addr: SocketAddr, from: Ipv4Addr, path: &str, times: usize) -> Vec<u16> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().expect("runtime");
    let mut stream = rt
        .block_on(async {
            let socket = tokio::net::TcpSocket::new_v4()?;
            socket.bind(SocketAddr::new(from.into(), 0))?;
            socket.connect(addr).await?.into_std()
        })
        .expect("connect from a chosen address");
    stream.set_nonblocking(false).expect("blocking");
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
    let mut statuses = Vec::with_capacity(times);
    let mut buf = vec![0u8; 64 * 1024];
    let mut pending = Vec::new();
    for _ in 0..times {
        stream.write_all(request.as_bytes()).expect("write");
        // One whole answer: its head, then Content-Length bytes.
        loop {
            if let Some(end) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8_lossy(&pending[..end]).to_ascii_lowercase();
                let length = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse::<usize>().ok())
                    .unwrap_or(0);
                if pending.len() >= end + 4 + length {
                    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
                    statuses.push(status);
                    pending.drain(..end + 4 + length);
                    break;
                }
            }
            let n = stream.read(&mut buf).expect("read");
            assert!(n > 0, "the server closed the connection");
            pending.extend_from_slice(&buf[..n]);
        }
    }
    statuses
}

#[test]
fn a_replayed_open_pixel_is_one_event_and_one_open_without_a_write_per_hit() {
    let w = MailWorld::start_with(&[("EDGEMAIL_WEBHOOKS_ALLOW_PRIVATE", "true")], &[]);
    let receiver = Receiver::start();
    w.api()
        .post("/v1/webhooks", json!({"url": receiver.url("/ok"), "events": ["email.opened"]}))
        .expect(201);
    let html = "<p>Hello <a href=\"https://shop.example.com/\">shop</a></p>";
    let sent = w
        .send(json!({"from": "sales@alpha.test", "subject": "News", "html": html,
                     "type": "campaign", "to": ["ada@example.org", "bob@example.org"]}))
        .expect(200)
        .json();
    let got = w.sink.wait_for(2, Duration::from_secs(20));
    let pixel = |rcpt: &str| {
        let copy = got.iter().find(|m| m.rcpt_to[0] == rcpt).expect("a copy");
        link(&html_part(&copy.data), "/t/o/")
    };
    let (ada, bob) = (pixel("ada@example.org"), pixel("bob@example.org"));
    let id_of = |rcpt: &str| {
        sent["messageIds"]
            .as_array()
            .expect("ids")
            .iter()
            .filter_map(Value::as_str)
            .find(|id| w.api().get(&format!("/v1/emails/{id}")).json()["to"][0] == rcpt)
            .expect("the recipient's message")
            .to_owned()
    };
    let (ada_id, bob_id) = (id_of("ada@example.org"), id_of("bob@example.org"));
    for id in [&ada_id, &bob_id] {
        w.wait_status(id, "delivered");
    }

    // Ada's pixel, 4,000 times from one address over four connections.
    let file_before = data_file(&w.dir.0);
    let started = Instant::now();
    let replays: Vec<_> = (0..4)
        .map(|_| {
            let (addr, path) = (w.server.addr, ada.clone());
            std::thread::spawn(move || replay(addr, Ipv4Addr::new(127, 0, 2, 21), &path, 1_000))
        })
        .collect();
    // Meanwhile a real reader elsewhere opens Bob's copy, and is counted.
    let real = replay(w.server.addr, Ipv4Addr::new(127, 0, 2, 22), &bob, 1);
    assert_eq!(real, [200]);
    for statuses in replays.into_iter().map(|t| t.join().expect("replay")) {
        assert!(statuses.iter().all(|s| *s == 200), "every hit gets its pixel");
    }
    let took = started.elapsed();
    std::thread::sleep(Duration::from_millis(1500));
    let growth = data_file(&w.dir.0).saturating_sub(file_before);
    eprintln!("4,000 replays in {took:?}: the data file grew by {growth} bytes");

    receiver.event("email.opened", |d| d["messageId"] == bob_id);
    let opened = |id: &str| {
        receiver
            .hits()
            .iter()
            .filter(|h| h.kind() == "email.opened" && h.json()["data"]["messageId"] == id)
            .count()
    };
    assert_eq!(opened(&ada_id), 1, "one email.opened event for Ada's message");
    assert!(growth < MB, "the data file grew by {growth} bytes");
    let tracking =
        w.api().get(&format!("/v1/emails/{ada_id}")).expect(200).json()["tracking"].clone();
    let opens = tracking["opens"].as_u64().unwrap_or(0);
    eprintln!("Ada's message after 4,000 replays: {tracking}");
    assert!((1..=4_000).contains(&opens), "{tracking}");
    assert!(tracking["firstOpenedAt"].is_u64(), "{tracking}");
    let bob_tracking = w.api().get(&format!("/v1/emails/{bob_id}")).json()["tracking"].clone();
    assert_eq!(bob_tracking["opens"], 1, "{bob_tracking}");
    let batch = sent["batchId"].as_str().expect("batch");
    let stats = w.api().get(&format!("/v1/campaign-stats?type=batch&batchId={batch}")).json();
    assert_eq!(stats["batches"][0]["opened"], 2, "unique opens: {stats}");
}

// Finding 5: a campaign's body is stored once, not once per recipient.

#[test]
fn a_campaign_body_is_stored_once_for_all_its_recipients() {
    let w = MailWorld::start();
    let pid = w.server.child.id();
    // 138 KB of HTML with a link to rewrite per recipient.
    let paragraph = "<p>Our autumn collection is here, with <b>new</b> colours and sizes. \
                     <a href=\"https://shop.example.com/autumn\">Have a look</a>.</p>\n";
    let html = paragraph.repeat(138_000 / paragraph.len());
    let to: Vec<String> = (0..500).map(|i| format!("r{i}@example.org")).collect();
    // All but two are refused at RCPT: the sink keeps what it accepts in memory.
    for rcpt in &to[2..] {
        w.sink.set_rcpt_reply(rcpt, vec!["550 5.1.1 no such user"]);
    }
    let (file_before, (rss_before, _)) = (data_file(&w.dir.0), memory(pid));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let body = json!({"from": "sales@alpha.test", "subject": "Autumn", "html": html,
                      "type": "campaign", "to": to, "scheduledAt": now + 4_000});
    let started = Instant::now();
    let sent = w.send(body).expect(200).json();
    let took = started.elapsed();
    let growth = data_file(&w.dir.0).saturating_sub(file_before);
    let (rss_after, peak) = memory(pid);
    eprintln!(
        "campaign of {} bytes to 500: {took:?}; the data file grew by {} KB; RSS {} MB before, \
         {} MB after, peak {} MB",
        html.len(),
        growth / 1024,
        rss_before / MB,
        rss_after / MB,
        peak / MB
    );
    assert_eq!(sent["messageIds"].as_array().map(Vec::len), Some(500));
    // The body is stored once (deflated); what remains are the 500 messages' own records, about
    // 1.7 KB each whatever the body. redb grows its file by doubling, so the bound leaves room
    // for that: 16 times the body, where a copy per recipient took 1,170 times.
    assert!(growth < 16 * html.len() as u64, "the data file grew by {growth} bytes");
    assert!(peak < rss_before + 50 * MB, "peak RSS {} MB", peak / MB);

    // The two accepted recipients get the whole body, with links and headers of their own.
    let got = w.sink.wait_for(2, Duration::from_secs(60));
    let last = sent["messageIds"][499].as_str().expect("id");
    w.wait_email(last, |e| e["folder"] == "sent");
    eprintln!("peak RSS once all 500 were rendered and sent: {} MB", memory(pid).1 / MB);
    let mut tokens = Vec::new();
    for (copy, rcpt) in got.iter().zip(["r0@example.org", "r1@example.org"]) {
        let copy = got.iter().find(|m| m.rcpt_to == [rcpt]).unwrap_or(copy);
        let page = html_part(&copy.data);
        assert_eq!(page.matches("Our autumn collection").count(), html.matches("Our").count());
        assert!(!page.contains("shop.example.com"), "links are rewritten");
        let unsubscribe = header(&copy.data, "List-Unsubscribe").expect("List-Unsubscribe");
        tokens.push((link(&page, "/t/o/"), link(&page, "/t/c/"), unsubscribe));
    }
    assert_ne!(tokens[0], tokens[1], "each recipient has links of its own");
    // A stored copy reads back whole, as sent.
    let id = sent["messageIds"][0].as_str().expect("id");
    let email = w.api().get(&format!("/v1/emails/{id}")).expect(200).json();
    assert_eq!(email["html"].as_str().map(str::len), Some(html.len()));
    assert!(email["text"].as_str().is_some_and(|t| t.contains("autumn collection")));
}
