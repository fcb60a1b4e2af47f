//! MTA-STS (RFC 8461) through real deliveries: recipient domains publish `_mta-sts` TXT records
//! in the test DNS, their policies are served over HTTPS by a small server here, and their mail
//! exchangers are SMTP sinks, some offering STARTTLS with certificates of a test CA that the
//! server trusts through `mta_sts.ca_file` (the policy port is the test-only
//! `mta_sts.policy_port`).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::Value;

use crate::harness::TempDir;
use crate::mail_world::{MailWorld, basic};
use crate::smtp_sink::Sink;

/// Every domain a test here publishes a policy for (the policy host's certificate names them).
const DOMAINS: [&str; 9] = [
    "plain.test",
    "secure.test",
    "untrusted.test",
    "listed.test",
    "trial.test",
    "cached.test",
    "mixed.test",
    "html.test",
    "moved.test",
];

/// A certificate authority made for one test.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

impl Ca {
    fn new(name: &str) -> Ca {
        let key = KeyPair::generate().expect("ca key");
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("ca params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
        let pem = params.self_signed(&key).expect("ca cert").pem();
        Ca { pem, issuer: Issuer::new(params, key) }
    }

    /// A TLS server configuration with a certificate for `names`, signed by this CA.
    fn server(&self, names: &[String]) -> Arc<rustls::ServerConfig> {
        let key = KeyPair::generate().expect("leaf key");
        let params = CertificateParams::new(names.to_vec()).expect("leaf params");
        let cert = params.signed_by(&key, &self.issuer).expect("leaf cert");
        let chain = vec![CertificateDer::from(cert.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("server certificate");
        Arc::new(config)
    }
}

/// The policy hosts of every domain: one HTTPS server on 127.0.0.1 answering by Host header.
struct PolicyHost {
    port: u16,
    /// Host name -> (status, content type, body).
    answers: Arc<Answers>,
    /// Host names asked for, in order.
    asked: Arc<Mutex<Vec<String>>>,
}

impl PolicyHost {
    fn start(tls: Arc<rustls::ServerConfig>) -> PolicyHost {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind policy host");
        let port = listener.local_addr().expect("policy host address").port();
        let host = PolicyHost { port, answers: Arc::default(), asked: Arc::default() };
        let (answers, asked) = (host.answers.clone(), host.asked.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (tls, answers, asked) = (tls.clone(), answers.clone(), asked.clone());
                std::thread::spawn(move || {
                    let Ok(server) = rustls::ServerConnection::new(tls) else { return };
                    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut stream = rustls::StreamOwned::new(server, stream);
                    let _ = serve_policy(&mut stream, &answers, &asked);
                });
            }
        });
        host
    }

    fn set(&self, domain: &str, status: u16, content_type: &str, body: &str) {
        let answer = (status, content_type.to_owned(), body.to_owned());
        self.answers.lock().expect("answers").insert(format!("mta-sts.{domain}"), answer);
    }

    fn fetches(&self, domain: &str) -> usize {
        let host = format!("mta-sts.{domain}");
        self.asked.lock().expect("asked").iter().filter(|h| **h == host).count()
    }
}

type Answers = Mutex<HashMap<String, (u16, String, String)>>;

/// One request: the head is read, the answer for its Host sent, the connection closed.
fn serve_policy(
    stream: &mut (impl std::io::Read + Write),
    answers: &Answers,
    asked: &Mutex<Vec<String>>,
) -> std::io::Result<()> {
    let mut reader = BufReader::new(&mut *stream);
    let (mut host, mut first, mut line) = (String::new(), String::new(), String::new());
    reader.read_line(&mut first)?;
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("host")
        {
            host = value.trim().split(':').next().unwrap_or_default().to_ascii_lowercase();
        }
    }
    asked.lock().expect("asked").push(host.clone());
    let known = first.starts_with("GET /.well-known/mta-sts.txt ");
    let answer = answers.lock().expect("answers").get(&host).cloned().filter(|_| known);
    let (status, content_type, body) =
        answer.unwrap_or((404, "text/plain".into(), "not found".into()));
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}

/// A sending world whose server trusts `ca` for MTA-STS and fetches policies from `policies`.
struct StsWorld {
    w: MailWorld,
    ca: Ca,
    policies: PolicyHost,
    _files: TempDir,
}

impl StsWorld {
    fn start() -> StsWorld {
        let ca = Ca::new("edgemail MTA-STS test CA");
        let files = TempDir::new("mta-sts");
        let ca_file = files.0.join("ca.pem");
        std::fs::write(&ca_file, &ca.pem).expect("write the CA file");
        let names: Vec<String> = DOMAINS.iter().map(|d| format!("mta-sts.{d}")).collect();
        let policies = PolicyHost::start(ca.server(&names));
        let port = policies.port.to_string();
        let env = [
            ("EDGEMAIL_MTA_STS_CA_FILE", ca_file.to_str().expect("utf-8 path")),
            ("EDGEMAIL_MTA_STS_POLICY_PORT", port.as_str()),
        ];
        let w = MailWorld::start_with(&env, &[]);
        StsWorld { w, ca, policies, _files: files }
    }

    /// Publishes `domain`'s record with `id` and serves a policy of `mode` listing `mx`.
    fn publish(&self, domain: &str, id: &str, mode: &str, mx: &[&str]) {
        let mx: String = mx.iter().map(|m| format!("mx: {m}\r\n")).collect();
        let body = format!("version: STSv1\r\nmode: {mode}\r\n{mx}max_age: 86400\r\n");
        self.policies.set(domain, 200, "text/plain; charset=utf-8", &body);
        self.w.dns.remove(&format!("mta-sts.{domain}"));
        self.w.dns.add_a(&format!("mta-sts.{domain}"), Ipv4Addr::LOCALHOST);
        self.set_id(domain, id);
    }

    /// Replaces `domain`'s record with one of `id`.
    fn set_id(&self, domain: &str, id: &str) {
        self.w.dns.remove(&format!("_mta-sts.{domain}"));
        self.w.dns.add_txt(&format!("_mta-sts.{domain}"), &format!("v=STSv1; id={id}"));
    }

    /// `domain`'s MX is `host`, at `ip` (the sinks all listen on the server's MX port).
    fn mx(&self, domain: &str, preference: u16, host: &str, ip: Ipv4Addr) {
        self.w.dns.add_mx(domain, preference, host);
        self.w.dns.add_a(host, ip);
    }

    /// A sink at `ip` offering STARTTLS with a certificate for `host` signed by `ca`.
    fn tls_sink(&self, ip: Ipv4Addr, host: &str, ca: &Ca) -> Sink {
        let sink = Sink::start_on(ip, self.w.sink.port());
        sink.offer_starttls(ca.server(&[host.to_owned()]));
        sink
    }

    fn send(&self, to: &str) -> String {
        let sent = self.w.send(basic(Value::from(to))).expect(200).json();
        sent["messageId"].as_str().expect("messageId").to_owned()
    }

    /// The email once its first recipient had `n` attempts.
    fn after_attempts(&self, id: &str, n: u64) -> Value {
        self.w.wait_email(id, |e| e["deliveries"][0]["attempts"].as_u64() >= Some(n))
    }

    fn failures(&self, mode: &str) -> f64 {
        self.metric(&format!("edgemail_mta_sts_failures_total{{mode=\"{mode}\"}}"))
    }

    fn metric(&self, series: &str) -> f64 {
        let text = self.w.server.client(None).get("/metrics").expect(200).text();
        text.lines().find_map(|l| l.strip_prefix(series)?.trim().parse().ok()).unwrap_or(-1.0)
    }
}

fn delivery(email: &Value) -> &Value {
    &email["deliveries"][0]
}

fn response(email: &Value) -> String {
    delivery(email)["lastResponse"].as_str().unwrap_or_default().to_owned()
}

fn said_starttls(sink: &Sink) -> bool {
    sink.commands().iter().any(|(_, line)| line.eq_ignore_ascii_case("STARTTLS"))
}

#[test]
fn enforce_refuses_a_plain_text_mx_and_the_mail_stays_queued() {
    let s = StsWorld::start();
    s.publish("plain.test", "1", "enforce", &["mx.plain.test"]);
    s.mx("plain.test", 10, "mx.plain.test", Ipv4Addr::LOCALHOST);
    assert_eq!(s.failures("enforce"), 0.0);
    let id = s.send("someone@plain.test");
    let e = s.after_attempts(&id, 2);
    assert_eq!(e["status"], "deferred", "the mail waits for a verified session: {e}");
    assert_eq!(e["folder"], "outbox", "{e}");
    assert!(e["nextAttemptAt"].is_u64(), "another attempt is planned: {e}");
    assert_eq!(delivery(&e)["status"], "deferred", "{e}");
    let why = response(&e);
    assert!(why.starts_with("4.7.5 MTA-STS policy of plain.test (enforce)"), "{why}");
    assert!(why.contains("mx.plain.test does not offer STARTTLS"), "{why}");
    assert_eq!(delivery(&e)["bounceClass"], "tls", "{e}");
    assert!(s.w.sink.messages().is_empty(), "nothing crossed in plain text");
    let mail = s.w.sink.commands().iter().filter(|(_, l)| l.starts_with("MAIL")).count();
    assert_eq!(mail, 0, "no mail command before a verified session");
    assert!(s.failures("enforce") >= 2.0);
    assert_eq!(s.policies.fetches("plain.test"), 1, "the retries use the cached policy");
}

#[test]
fn enforce_delivers_over_a_verified_certificate_and_refuses_an_untrusted_one() {
    let s = StsWorld::start();
    let good_ip = Ipv4Addr::new(127, 0, 0, 2);
    let good = s.tls_sink(good_ip, "mx.secure.test", &s.ca);
    s.publish("secure.test", "a1", "enforce", &["*.secure.test"]);
    s.mx("secure.test", 10, "mx.secure.test", good_ip);
    let rogue_ca = Ca::new("not trusted");
    let bad_ip = Ipv4Addr::new(127, 0, 0, 3);
    let bad = s.tls_sink(bad_ip, "mx.untrusted.test", &rogue_ca);
    s.publish("untrusted.test", "a1", "enforce", &["mx.untrusted.test"]);
    s.mx("untrusted.test", 10, "mx.untrusted.test", bad_ip);

    let ok = s.send("someone@secure.test");
    let refused = s.send("someone@untrusted.test");
    let e = s.w.wait_status(&ok, "delivered");
    assert!(delivery(&e)["bounceClass"].is_null(), "{e}");
    let got = good.wait_for(1, Duration::from_secs(10));
    assert_eq!(got[0].rcpt_to, ["someone@secure.test"]);
    assert!(said_starttls(&good), "delivered inside TLS");

    let e = s.after_attempts(&refused, 2);
    assert_eq!(delivery(&e)["status"], "deferred", "{e}");
    let why = response(&e);
    assert!(why.contains("no verified TLS with mx.untrusted.test"), "{why}");
    assert!(said_starttls(&bad), "the handshake was tried");
    assert!(bad.messages().is_empty(), "no mail to a server whose certificate fails");
    let mail = bad.commands().iter().filter(|(_, l)| l.starts_with("MAIL")).count();
    assert_eq!(mail, 0, "no fallback to plain text after the failed handshake");
}

#[test]
fn enforce_uses_only_the_mail_exchangers_its_policy_lists() {
    let s = StsWorld::start();
    // listed.test's only MX is not in its policy: refused before any connection.
    let rogue_ip = Ipv4Addr::new(127, 0, 0, 4);
    let rogue = s.tls_sink(rogue_ip, "mx.rogue.test", &s.ca);
    s.publish("listed.test", "7", "enforce", &["mx.listed.test"]);
    s.mx("listed.test", 10, "mx.rogue.test", rogue_ip);
    // mixed.test prefers an unlisted MX; its listed second MX gets the mail.
    let fine_ip = Ipv4Addr::new(127, 0, 0, 5);
    let fine = s.tls_sink(fine_ip, "mx2.mixed.test", &s.ca);
    s.publish("mixed.test", "7", "enforce", &["mx2.mixed.test"]);
    s.mx("mixed.test", 10, "mx.rogue.test", rogue_ip);
    s.mx("mixed.test", 20, "mx2.mixed.test", fine_ip);

    let refused = s.send("someone@listed.test");
    let mixed = s.send("someone@mixed.test");
    let e = s.after_attempts(&refused, 2);
    assert_eq!(delivery(&e)["status"], "deferred", "{e}");
    let why = response(&e);
    assert!(why.contains("mx.rogue.test is not listed in the policy"), "{why}");
    s.w.wait_status(&mixed, "delivered");
    assert_eq!(fine.wait_for(1, Duration::from_secs(10))[0].rcpt_to, ["someone@mixed.test"]);
    assert_eq!(rogue.connections(), 0, "an unlisted MX is never connected to");
}

#[test]
fn testing_mode_delivers_anyway_and_reports_the_failure() {
    let s = StsWorld::start();
    s.publish("trial.test", "1", "testing", &["mx.elsewhere.test"]);
    s.mx("trial.test", 10, "mx.trial.test", Ipv4Addr::LOCALHOST);
    assert_eq!(s.failures("testing"), 0.0);
    let ids: Vec<String> = (0..3).map(|i| s.send(&format!("user{i}@trial.test"))).collect();
    for id in &ids {
        let e = s.w.wait_status(id, "delivered");
        assert_eq!(delivery(&e)["attempts"], 1, "{e}");
    }
    assert_eq!(s.w.sink.wait_for(3, Duration::from_secs(10)).len(), 3);
    // Not listed, and no STARTTLS: both reported, neither applied.
    assert!(s.failures("testing") >= 2.0, "{}", s.failures("testing"));
    assert_eq!(s.failures("enforce"), 0.0);
    assert_eq!(s.policies.fetches("trial.test"), 1);
}

#[test]
fn a_policy_is_cached_by_id_and_kept_when_a_refresh_fails() {
    let s = StsWorld::start();
    s.w.dns.set_ttl(0);
    s.mx("cached.test", 10, "mx.cached.test", Ipv4Addr::LOCALHOST);
    s.publish("cached.test", "1", "testing", &["mx.cached.test"]);
    let first = s.send("a@cached.test");
    s.w.wait_status(&first, "delivered");
    let second = s.send("b@cached.test");
    s.w.wait_status(&second, "delivered");
    assert_eq!(s.policies.fetches("cached.test"), 1, "same id: the cached policy");

    // A new id: the policy is fetched again, and now enforces.
    s.publish("cached.test", "2", "enforce", &["mx.cached.test"]);
    let third = s.send("c@cached.test");
    let e = s.after_attempts(&third, 1);
    assert_eq!(delivery(&e)["status"], "deferred", "{e}");
    assert_eq!(s.policies.fetches("cached.test"), 2);

    // The policy host fails under yet another id, then the record goes: the cached policy
    // stays in force either way.
    s.policies.set("cached.test", 500, "text/plain", "broken");
    s.set_id("cached.test", "3");
    let fourth = s.send("d@cached.test");
    let e = s.after_attempts(&fourth, 1);
    assert_eq!(delivery(&e)["status"], "deferred", "{e}");
    assert!(response(&e).contains("MTA-STS"), "{e}");
    assert_eq!(s.policies.fetches("cached.test"), 3, "one try of the failing host");
    s.w.dns.remove("_mta-sts.cached.test");
    let fifth = s.send("e@cached.test");
    let e = s.after_attempts(&fifth, 1);
    assert_eq!(delivery(&e)["status"], "deferred", "{e}");
    assert_eq!(s.w.sink.messages().len(), 2);
}

#[test]
fn a_policy_host_that_answers_badly_gives_no_policy() {
    let s = StsWorld::start();
    let body = "version: STSv1\r\nmode: enforce\r\nmx: mx.nowhere.test\r\nmax_age: 86400\r\n";
    for domain in ["html.test", "moved.test"] {
        s.publish(domain, "1", "enforce", &["mx.nowhere.test"]);
        s.mx(domain, 10, &format!("mx.{domain}"), Ipv4Addr::LOCALHOST);
    }
    s.policies.set("html.test", 200, "text/html", body);
    s.policies.set("moved.test", 301, "text/plain", body);
    for to in ["someone@html.test", "someone@moved.test"] {
        let id = s.send(to);
        s.w.wait_status(&id, "delivered");
    }
    assert_eq!(s.metric(r#"edgemail_mta_sts_policy_fetches_total{result="failed"}"#), 2.0);
    assert_eq!(s.metric(r#"edgemail_mta_sts_policy_fetches_total{result="ok"}"#), 0.0);
    assert_eq!(s.failures("enforce"), 0.0);
}
