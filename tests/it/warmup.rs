//! Mailbox warmup end to end: one server hosts alpha.test and beta.test, its test DNS points both
//! domains' MX at its own SMTP port, so warmup mail between the enrolled mailboxes really crosses
//! SMTP (DKIM-signed by the queue, authenticated and recognized at the MX) and is answered.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use edgemail::store::Folder;
use serde_json::{Value, json};

use crate::client::Client;
use crate::dns::Dns;
use crate::harness::{A, B, Seed, Server, TempDir};
use crate::smtp_client::send_one;

struct Warm {
    server: Server,
    _dns: Dns,
    dir: TempDir,
    a: String,
    b: String,
    org: String,
    smtp: String,
    args: Vec<String>,
    env: Vec<(String, String)>,
}

fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a probe"); // ok: test
    probe.local_addr().expect("probe address").port() // ok: test
}

impl Warm {
    /// alpha.test: ada (warmed up) and sales (never enrolled); beta.test: grace and alan.
    fn start() -> Warm {
        let dir = TempDir::new("warmup");
        let seed = Seed::open(&dir.0);
        seed.domain(A);
        seed.domain(B);
        for (domain, local) in [(A, "ada"), (A, "sales"), (B, "grace"), (B, "alan")] {
            seed.mailbox(domain, local);
        }
        let (a, b, org) = (seed.key(Some(A)), seed.key(Some(B)), seed.key(None));
        let keys = seed.domain_record(A).dkim;
        seed.close();
        let dns = Dns::start();
        for domain in [A, B] {
            dns.add_mx(domain, 10, &format!("mx.{domain}"));
            dns.add_a(&format!("mx.{domain}"), Ipv4Addr::LOCALHOST);
            // Seeded domains share one set of DKIM keys; each publishes it under its own name.
            for k in &keys {
                let kind = if k.algorithm.starts_with("ed25519") { "ed25519" } else { "rsa" };
                dns.add_txt(
                    &format!("{}._domainkey.{domain}", k.selector),
                    &format!("v=DKIM1; k={kind}; p={}", k.public_key),
                );
            }
        }
        let port = free_port();
        let env: Vec<(String, String)> = [
            ("EDGEMAIL_LOG_LEVEL", "edgemail=debug,info"),
            ("EDGEMAIL_DELIVERY_RETRY_INITIAL", "300ms"),
            ("EDGEMAIL_DELIVERY_RETRY_MAX_INTERVAL", "1s"),
            ("EDGEMAIL_DELIVERY_DNS_TIMEOUT", "500ms"),
            ("EDGEMAIL_DELIVERY_PORT", &port.to_string()),
            ("EDGEMAIL_WARMUP_TICK", "100ms"),
            // 200 a day spread over 200 s: about one new conversation per mailbox per second.
            ("EDGEMAIL_WARMUP_SPREAD", "200s"),
            ("EDGEMAIL_WARMUP_REPLY_DELAY", "0ms"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let args = vec!["--nameserver".to_owned(), dns.addr().to_string()];
        let smtp = format!("127.0.0.1:{port}");
        let server = Self::spawn(&dir, &smtp, &args, &env);
        Warm { server, _dns: dns, dir, a, b, org, smtp, args, env }
    }

    fn spawn(dir: &TempDir, smtp: &str, args: &[String], env: &[(String, String)]) -> Server {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Server::start_smtp_on(&dir.0, smtp, &args, &env)
    }

    fn alpha(&self) -> Client {
        self.server.client(Some(&self.a))
    }

    fn beta(&self) -> Client {
        self.server.client(Some(&self.b))
    }

    fn org(&self) -> Client {
        self.server.client(Some(&self.org))
    }

    fn status(&self, mailbox: &str) -> Value {
        let list = self.org().get(&format!("/v1/warmup?mailbox={mailbox}")).expect(200).json();
        assert_eq!(list.as_array().map(Vec::len), Some(1), "{list}");
        list[0].clone()
    }

    /// Polls the status of `mailbox` until `done` holds.
    fn wait(&self, mailbox: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(40);
        loop {
            let s = self.status(mailbox);
            if done(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "{mailbox} never got {what}: {s}\nserver log:\n{}",
                self.server.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn n(v: &Value, field: &str) -> u64 {
    v[field].as_u64().unwrap_or_else(|| panic!("{field} is not a count in {v}"))
}

fn enroll(client: &Client, mailbox: &str) -> Value {
    let body = json!({"mailbox": mailbox, "startLimit": 200, "targetLimit": 500, "rampDays": 30, "replyRate": 1.0});
    client.post("/v1/warmup", body).expect(200).json()
}

fn folders_are_empty(client: &Client, mailbox: &str) {
    for folder in ["inbox", "sent", "outbox", "drafts", "trash"] {
        let list =
            client.get(&format!("/v1/emails?mailbox={mailbox}&folder={folder}")).expect(200).json();
        assert_eq!(list, json!([]), "{mailbox} {folder} shows warmup mail");
    }
    assert_eq!(client.get(&format!("/v1/emails?mailbox={mailbox}")).expect(200).json(), json!([]));
}

#[test]
fn two_mailboxes_warm_up_over_smtp_and_the_counts_show() {
    let mut w = Warm::start();

    // Enrollment answers the status; a never-enrolled mailbox is listed as such.
    let ada = enroll(&w.alpha(), "ada");
    assert_eq!(ada["mailbox"], "ada@alpha.test");
    assert_eq!(
        (ada["enabled"].clone(), n(&ada, "day"), n(&ada, "dailyLimit")),
        (json!(true), 1, 200)
    );
    assert_eq!((ada["startLimit"].clone(), ada["replyRate"].clone()), (json!(200), json!(1.0)));
    enroll(&w.beta(), "grace@beta.test");
    enroll(&w.beta(), "alan");
    let sales = w.status("sales@alpha.test");
    assert_eq!((sales["enabled"].clone(), n(&sales, "day")), (json!(false), 0));
    assert_eq!(sales["startLimit"], Value::Null);

    // Mail crosses SMTP both ways, is answered, and lands (DKIM passes at the receiving MX).
    for mailbox in ["ada@alpha.test", "grace@beta.test"] {
        w.wait(mailbox, "traffic", |s| {
            n(s, "sentToday") > 0
                && n(s, "receivedToday") > 0
                && n(s, "repliedToday") > 0
                && n(s, "deliveredTotal") > 0
                && s["inboxRate"].as_f64().is_some_and(|r| r > 0.0)
                && n(s, "healthScore") > 0
        });
    }

    // None of it is visible to users.
    folders_are_empty(&w.alpha(), "ada");
    folders_are_empty(&w.alpha(), "sales");
    folders_are_empty(&w.beta(), "grace");
    folders_are_empty(&w.beta(), "alan");

    // Visibility: a domain key sees its own mailboxes, the org-wide key every one.
    let alpha_list = w.alpha().get("/v1/warmup").expect(200).json();
    let names: Vec<&str> =
        alpha_list.as_array().into_iter().flatten().filter_map(|s| s["mailbox"].as_str()).collect();
    assert_eq!(names, ["ada@alpha.test", "sales@alpha.test"]);
    assert_eq!(w.org().get("/v1/warmup").expect(200).json().as_array().map(Vec::len), Some(4));
    assert_eq!(
        w.alpha().get("/v1/warmup?mailbox=ada").expect(200).json()[0]["mailbox"],
        "ada@alpha.test"
    );
    w.alpha().get("/v1/warmup?mailbox=grace@beta.test").expect_error(404, "not_found");
    w.alpha().get("/v1/warmup?mailbox=nobody").expect_error(404, "not_found");
    w.org().get("/v1/warmup?mailbox=ghost@alpha.test").expect_error(404, "not_found");
    w.org().get("/v1/warmup?mailbox=ada").expect_error(400, "invalid_request");

    // Bad input.
    for (body, field) in [
        (json!({"mailbox": "ada", "startLimit": 0}), "startLimit"),
        (json!({"mailbox": "ada", "targetLimit": 100000}), "targetLimit"),
        (json!({"mailbox": "ada", "rampDays": "soon"}), "rampDays"),
        (json!({"mailbox": "ada", "replyRate": 1.5}), "replyRate"),
        (json!({"mailbox": "ada", "startLimit": 50, "targetLimit": 10}), "startLimit"),
        (json!({"mailbox": "ada", "pace": "fast"}), "pace"),
        (json!({"startLimit": 5}), "mailbox"),
        (json!({"mailbox": "ada@beta.test"}), "mailbox"),
    ] {
        let e = w.alpha().post("/v1/warmup", body.clone()).expect_error(400, "invalid_request");
        assert!(e["message"].as_str().is_some_and(|m| m.contains(field)), "{body} -> {e}");
    }
    w.alpha().post("/v1/warmup", json!({"mailbox": "ghost"})).expect_error(404, "not_found");
    w.org().post("/v1/warmup", json!({"mailbox": "ada@alpha.test"})).expect_error(403, "forbidden");
    w.alpha().delete("/v1/warmup/sales").expect_error(404, "not_found");
    w.alpha().delete("/v1/warmup/ghost").expect_error(404, "not_found");
    w.alpha().delete("/v1/warmup/grace@beta.test").expect_error(404, "not_found");
    w.org().delete("/v1/warmup/ada@alpha.test").expect_error(403, "forbidden");

    // Stopping: ada sends nothing more while grace and alan go on with each other.
    let stopped = w.alpha().delete("/v1/warmup/ada@alpha.test").expect(200).json();
    assert_eq!((stopped["enabled"].clone(), n(&stopped, "dailyLimit")), (json!(false), 0));
    let frozen = n(&stopped, "sentTotal");
    let grace_before = n(&w.status("grace@beta.test"), "sentTotal");
    w.wait("grace@beta.test", "more traffic after ada stopped", |s| {
        n(s, "sentTotal") >= grace_before + 3
    });
    let ada = w.status("ada@alpha.test");
    assert_eq!(n(&ada, "sentTotal"), frozen, "{ada}");
    assert_eq!(ada["enabled"], false);

    // Counters and the hidden copies survive a restart; hidden mail cannot be fetched.
    let before = w.status("grace@beta.test");
    assert_eq!(w.server.terminate().code(), Some(0));
    let store = crate::harness::open_store(&w.dir.0); // ok: test
    let listed = store
        .read_blocking(|r| r.folder_page("grace@beta.test", Folder::Warmup, 100, None, None))
        .expect("read the warmup folder"); // ok: test
    store.close();
    drop(store);
    let hidden: Value = serde_json::from_slice(&listed.0).expect("json"); // ok: test
    let hidden = hidden.as_array().cloned().unwrap_or_default();
    assert!(hidden.len() >= 2, "grace's sent and received warmup mail is stored: {hidden:?}");
    assert!(hidden.iter().all(|e| e["folder"] == "warmup"));
    w.server = Warm::spawn(&w.dir, &w.smtp, &w.args, &w.env);
    let after = w.status("grace@beta.test");
    for field in ["sentTotal", "receivedTotal", "repliedTotal", "landedTotal"] {
        assert!(n(&after, field) >= n(&before, field), "{field}: {before} then {after}");
    }
    assert_eq!(n(&after, "enrolledAt"), n(&before, "enrolledAt"));
    assert_eq!(w.status("ada@alpha.test")["enabled"], false);
    for e in &hidden {
        let id = e["id"].as_str().expect("id"); // ok: test
        w.beta().get(&format!("/v1/emails/{id}")).expect_error(404, "not_found");
        w.beta().delete(&format!("/v1/emails/{id}")).expect_error(404, "not_found");
    }

    // A re-POST enables again, keeping the counters and the day.
    let again = w
        .alpha()
        .post("/v1/warmup", json!({"mailbox": "ada", "replyRate": 0.5}))
        .expect(200)
        .json();
    assert_eq!((again["enabled"].clone(), again["replyRate"].clone()), (json!(true), json!(0.5)));
    assert_eq!((n(&again, "sentTotal"), n(&again, "startLimit")), (frozen, 200));

    // Deleting a mailbox drops its enrollment.
    w.beta().delete("/v1/mailboxes/alan").expect(200);
    w.org().get("/v1/warmup?mailbox=alan@beta.test").expect_error(404, "not_found");
    w.beta().post("/v1/mailboxes", json!({"address": "alan"})).expect(201);
    let fresh = w.status("alan@beta.test");
    assert_eq!((fresh["enabled"].clone(), n(&fresh, "sentTotal")), (json!(false), 0));
}

#[test]
fn a_warmup_header_from_an_unknown_sender_is_ordinary_mail() {
    let w = Warm::start();
    enroll(&w.beta(), "grace");
    let addr: SocketAddr = w.smtp.parse().expect("address"); // ok: test
    // A stranger, and a local mailbox whose header names no warmup message of its own. Sent to
    // our MX unauthenticated, the second claims one of our own domains: refused as a spoof
    // before warmup looks at it (warmup mail between our mailboxes is signed by this server).
    for (from, marker, answer) in
        [("stranger@example.org", "em_x", "250"), ("ada@alpha.test", "em_made_up", "550 5.7.1")]
    {
        let message = format!(
            "From: {from}\r\nTo: grace@beta.test\r\nSubject: hello from {from}\r\n\
             Message-ID: <{marker}@example.org>\r\nX-Edgemail-Warmup: {marker}\r\n\r\nHi Grace"
        );
        let reply = send_one(addr, from, "grace@beta.test", &message);
        assert!(reply.starts_with(answer), "{reply}");
    }
    let inbox = w.beta().get("/v1/emails?mailbox=grace&folder=inbox").expect(200).json();
    assert_eq!(inbox.as_array().map(Vec::len), Some(1), "{inbox}");
    let grace = w.status("grace@beta.test");
    assert_eq!(n(&grace, "receivedTotal"), 0, "{grace}");
}

#[test]
fn mailboxes_on_two_servers_warm_up_as_configured_peers() {
    // Each server delivers to the other's SMTP port (one `delivery.port` per server), so here the
    // only partner of each mailbox is the peer on the other server.
    let (w_port, p_port) = (free_port(), free_port());
    let dns = Dns::start();
    let mut keys = Vec::new();
    let mut servers = Vec::new();
    let mut dirs = Vec::new();
    for (domain, local, peer, own_port, other_port) in [
        (A, "ada", "peer@gamma.test", w_port, p_port),
        ("gamma.test", "peer", "ada@alpha.test", p_port, w_port),
    ] {
        let dir = TempDir::new("warmup-peer");
        let seed = Seed::open(&dir.0);
        seed.domain(domain);
        seed.mailbox(domain, local);
        keys.push(seed.key(Some(domain)));
        for k in seed.domain_record(domain).dkim {
            let kind = if k.algorithm.starts_with("ed25519") { "ed25519" } else { "rsa" };
            dns.add_txt(
                &format!("{}._domainkey.{domain}", k.selector),
                &format!("v=DKIM1; k={kind}; p={}", k.public_key),
            );
        }
        seed.close();
        dns.add_mx(domain, 10, &format!("mx.{domain}"));
        dns.add_a(&format!("mx.{domain}"), Ipv4Addr::LOCALHOST);
        let port = other_port.to_string();
        let env = [
            ("EDGEMAIL_DELIVERY_RETRY_INITIAL", "300ms"),
            ("EDGEMAIL_DELIVERY_RETRY_MAX_INTERVAL", "1s"),
            ("EDGEMAIL_DELIVERY_PORT", port.as_str()),
            ("EDGEMAIL_WARMUP_TICK", "100ms"),
            ("EDGEMAIL_WARMUP_SPREAD", "200s"),
            ("EDGEMAIL_WARMUP_REPLY_DELAY", "0ms"),
            ("EDGEMAIL_WARMUP_PEERS", peer),
        ];
        let ns = dns.addr().to_string();
        let smtp = format!("127.0.0.1:{own_port}");
        servers.push(Server::start_smtp_on(&dir.0, &smtp, &["--nameserver", &ns], &env));
        dirs.push(dir);
    }
    let clients: Vec<Client> = servers.iter().zip(&keys).map(|(s, k)| s.client(Some(k))).collect();
    for (client, mailbox) in clients.iter().zip(["ada", "peer"]) {
        enroll(client, mailbox);
    }
    let deadline = Instant::now() + Duration::from_secs(40);
    for (client, mailbox) in clients.iter().zip(["ada", "peer"]) {
        loop {
            let s =
                client.get(&format!("/v1/warmup?mailbox={mailbox}")).expect(200).json()[0].clone();
            let done = n(&s, "sentTotal") > 0
                && n(&s, "receivedTotal") > 0
                && n(&s, "repliedTotal") > 0
                && s["inboxRate"].as_f64().is_some_and(|r| r > 0.0);
            if done {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{mailbox}: {s}\nlogs:\n{}\n{}",
                servers[0].log(),
                servers[1].log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        folders_are_empty(client, mailbox);
    }
}
