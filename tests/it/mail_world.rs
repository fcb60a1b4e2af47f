//! A sending fixture: the real server with its DNS pointed at a test nameserver and its MX port
//! at a test SMTP sink, both on 127.0.0.1. The sending domain's DKIM keys are published in that
//! DNS, and recipient domains `example.org` and `example.net` have MX records at the sink.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::client::Client;
use crate::dns::Dns;
use crate::harness::{A, Seed, Server, TempDir};
use crate::smtp_sink::Sink;

pub struct MailWorld {
    pub server: Server,
    pub dns: Dns,
    pub sink: Sink,
    pub key: String,
    pub dir: TempDir,
    extra_env: Vec<(String, String)>,
    extra_args: Vec<String>,
}

/// Settings that keep retries fast in tests.
const FAST: [(&str, &str); 6] = [
    ("EDGEMAIL_LOG_LEVEL", "edgemail=debug,info"),
    ("EDGEMAIL_DELIVERY_RETRY_INITIAL", "300ms"),
    ("EDGEMAIL_DELIVERY_RETRY_MAX_INTERVAL", "1s"),
    ("EDGEMAIL_SHAPING_PAUSE_INITIAL", "300ms"),
    ("EDGEMAIL_SHAPING_PAUSE_MAX", "1s"),
    ("EDGEMAIL_DELIVERY_DNS_TIMEOUT", "500ms"),
];

impl MailWorld {
    pub fn start() -> MailWorld {
        MailWorld::start_with(&[], &[])
    }

    pub fn start_with(env: &[(&str, &str)], args: &[&str]) -> MailWorld {
        MailWorld::start_in(TempDir::new("mail"), env, args)
    }

    /// `start_with` on a chosen data directory.
    pub fn start_in(dir: TempDir, env: &[(&str, &str)], args: &[&str]) -> MailWorld {
        let seed = Seed::open(&dir.0);
        seed.domain(A);
        seed.mailbox(A, "sales");
        let key = seed.key(Some(A));
        let domain = seed.domain_record(A);
        seed.close();
        let dns = Dns::start();
        let sink = Sink::start();
        for name in ["example.org", "example.net"] {
            dns.add_mx(name, 10, &format!("mx.{name}"));
            dns.add_a(&format!("mx.{name}"), Ipv4Addr::LOCALHOST);
        }
        dns.add_mx("nullmx.example.com", 0, ".");
        for k in &domain.dkim {
            let kind = if k.algorithm.starts_with("ed25519") { "ed25519" } else { "rsa" };
            dns.add_txt(
                &format!("{}._domainkey.{A}", k.selector),
                &format!("v=DKIM1; k={kind}; p={}", k.public_key),
            );
        }
        let mut extra_env: Vec<(String, String)> =
            FAST.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        extra_env.push(("EDGEMAIL_DELIVERY_PORT".into(), sink.port().to_string()));
        extra_env.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let mut extra_args = vec!["--nameserver".to_owned(), dns.addr().to_string()];
        extra_args.extend(args.iter().map(|a| a.to_string()));
        let server = Self::spawn(&dir, &extra_env, &extra_args);
        MailWorld { server, dns, sink, key, dir, extra_env, extra_args }
    }

    /// Another node on `dir` with this world's DNS, sink and settings, and `args` besides (the
    /// caller shares the store of both beforehand: `harness::share_store`).
    pub fn start_node(&self, dir: &TempDir, args: &[&str]) -> Server {
        let mut all = self.extra_args.clone();
        all.extend(args.iter().map(|a| a.to_string()));
        Self::spawn(dir, &self.extra_env, &all)
    }

    /// `start_node` with some of this world's settings replaced (or added) by `env`.
    pub fn start_node_with(&self, dir: &TempDir, args: &[&str], env: &[(&str, &str)]) -> Server {
        let mut all_env = self.extra_env.clone();
        all_env.retain(|(k, _)| !env.iter().any(|(name, _)| name == k));
        all_env.extend(env.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let mut all = self.extra_args.clone();
        all.extend(args.iter().map(|a| a.to_string()));
        Self::spawn(dir, &all_env, &all)
    }

    fn spawn(dir: &TempDir, env: &[(String, String)], args: &[String]) -> Server {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Server::start_with(&dir.0, &args, &env)
    }

    /// SIGKILL and start again on the same data, DNS and sink.
    pub fn crash_and_restart(&mut self) {
        self.server.kill9();
        self.server = Self::spawn(&self.dir, &self.extra_env, &self.extra_args);
    }

    /// Sets (or replaces) an environment variable of the server, then `crash_and_restart`.
    pub fn restart_with_env(&mut self, name: &str, value: &str) {
        self.extra_env.retain(|(k, _)| k != name);
        self.extra_env.push((name.to_owned(), value.to_owned()));
        self.crash_and_restart();
    }

    pub fn api(&self) -> Client {
        self.server.client(Some(&self.key))
    }

    pub fn send(&self, body: Value) -> crate::client::Resp {
        self.api().post("/v1/send", body)
    }

    /// Polls the email until `done` holds for it.
    pub fn wait_email(&self, id: &str, done: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let email = self.api().get(&format!("/v1/emails/{id}")).expect(200).json();
            if done(&email) {
                return email;
            }
            assert!(
                Instant::now() < deadline,
                "email never reached the expected state: {email}\nserver log:\n{}",
                self.server.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    pub fn wait_status(&self, id: &str, status: &str) -> Value {
        self.wait_email(id, |e| e["status"] == status)
    }
}

pub fn basic(to: Value) -> Value {
    json!({"from": "sales@alpha.test", "to": to, "subject": "Hello", "html": "<p>Hi <b>there</b></p>"})
}

/// A header's value (unfolded) from raw message bytes.
pub fn header(raw: &[u8], name: &str) -> Option<String> {
    let text = String::from_utf8_lossy(raw);
    let head = text.split("\r\n\r\n").next().unwrap_or("");
    let mut value: Option<String> = None;
    for line in head.split("\r\n") {
        if line.starts_with([' ', '\t']) {
            if let Some(v) = value.as_mut() {
                v.push(' ');
                v.push_str(line.trim());
            }
            continue;
        }
        if value.is_some() {
            break;
        }
        if let Some((n, v)) = line.split_once(':')
            && n.eq_ignore_ascii_case(name)
        {
            value = Some(v.trim().to_owned());
        }
    }
    value
}

/// The decoded text of a quoted-printable or plain body section containing `marker`.
pub fn body_text(raw: &[u8]) -> String {
    let message = mail_parser::MessageParser::default().parse(raw).expect("parse message");
    let mut out = String::new();
    for i in 0..message.text_body_count() {
        out.push_str(&message.body_text(i).unwrap_or_default());
    }
    for i in 0..message.html_body_count() {
        out.push_str(&message.body_html(i).unwrap_or_default());
    }
    out
}

/// The decoded HTML part of a message.
pub fn html_part(raw: &[u8]) -> String {
    let message = mail_parser::MessageParser::default().parse(raw).expect("parse message");
    message.body_html(0).map(|h| h.into_owned()).unwrap_or_default()
}

/// Verifies every DKIM signature of `raw` against the test DNS; returns (algorithm tag, passed).
pub fn verify_dkim(dns: &Dns, raw: &[u8]) -> Vec<(String, String)> {
    use mail_auth::common::verify::VerifySignature;
    use mail_auth::{AuthenticatedMessage, MessageAuthenticator};

    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    rt.block_on(async {
        let resolver = dns.resolver(true);
        let auth = MessageAuthenticator(resolver);
        let message = AuthenticatedMessage::parse(raw).expect("parsable message");
        let outputs = auth.verify_dkim(&message).await;
        outputs
            .iter()
            .map(|o| {
                let algorithm =
                    o.signature().map(|s| format!("{:?}", s.algorithm())).unwrap_or_default();
                (algorithm, format!("{:?}", o.result()))
            })
            .collect()
    })
}
