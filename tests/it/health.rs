//! Domain health and the check-deliverability tool against a test nameserver: a fully configured
//! hosted domain scores 100, and each broken record lowers the score and says how to fix it.

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::dns::Dns;
use crate::harness::{Seed, Server, TempDir};

const SENDING_IP: &str = "192.0.2.25";
const HOSTNAME: &str = "mail.edge.test";

const GOOD: &str = "good.test";
const NO_DMARC: &str = "nodmarc.test";
const BAD_SYNTAX: &str = "badsyntax.test";
const NOT_AUTHORIZED: &str = "noauth.test";
const TOO_MANY: &str = "toomany.test";
const LISTED: &str = "listed.test";
const SLOW: &str = "slow.test";
const BY_PTR: &str = "byptr.test";
const HOSTED: [&str; 8] =
    [GOOD, NO_DMARC, BAD_SYNTAX, NOT_AUTHORIZED, TOO_MANY, LISTED, SLOW, BY_PTR];

struct Fixture {
    server: Server,
    dns: Dns,
    good_key: String,
    org_key: String,
    _dir: TempDir,
}

/// Publishes everything a hosted domain needs, with `spf` and `dmarc` as given.
fn publish(dns: &Dns, seed: &Seed, domain: &str, spf: &str, dmarc: Option<&str>) {
    for k in &seed.domain_record(domain).dkim {
        let kind = if k.algorithm.starts_with("ed25519") { "ed25519" } else { "rsa" };
        dns.add_txt(
            &format!("{}._domainkey.{domain}", k.selector),
            &format!("v=DKIM1; k={kind}; p={}", k.public_key),
        );
    }
    dns.add_txt(domain, spf);
    if let Some(dmarc) = dmarc {
        dns.add_txt(&format!("_dmarc.{domain}"), dmarc);
    }
    dns.add_mx(domain, 10, HOSTNAME);
}

fn start() -> Fixture {
    start_with(&[("EDGEMAIL_DELIVERY_SENDING_IPS", SENDING_IP)])
}

fn start_with(sending: &[(&str, &str)]) -> Fixture {
    let dir = TempDir::new("health");
    let seed = Seed::open(&dir.0);
    for d in HOSTED {
        seed.domain(d);
    }
    let good_key = seed.key(Some(GOOD));
    let org_key = seed.key(None);
    let dns = Dns::start();
    dns.add_a(HOSTNAME, SENDING_IP.parse().expect("ip")); // ok: test
    let good_spf = format!("v=spf1 ip4:{SENDING_IP} -all");
    let reject = Some("v=DMARC1; p=reject; rua=mailto:dmarc@example.org");
    publish(&dns, &seed, GOOD, &good_spf, reject);
    publish(&dns, &seed, NO_DMARC, &good_spf, None);
    publish(&dns, &seed, BAD_SYNTAX, &format!("v=spf1 ip4:{SENDING_IP} frob:x.test -all"), reject);
    publish(&dns, &seed, NOT_AUTHORIZED, "v=spf1 ip4:198.51.100.7 -all", reject);
    // The sending address matches first, but the record as a whole costs 11 lookups.
    let includes: Vec<String> = (0..11).map(|i| format!("include:i{i}.spf.test")).collect();
    for i in 0..11 {
        dns.add_txt(&format!("i{i}.spf.test"), "v=spf1 -all");
    }
    let too_many = format!("v=spf1 ip4:{SENDING_IP} {} -all", includes.join(" "));
    publish(&dns, &seed, TOO_MANY, &too_many, reject);
    publish(&dns, &seed, LISTED, &good_spf, reject);
    dns.add_mx(LISTED, 20, "backup.listed.test");
    dns.add_a("backup.listed.test", Ipv4Addr::new(192, 0, 2, 99));
    dns.add_a("99.2.0.192.bl.test", Ipv4Addr::new(127, 0, 0, 2));
    dns.add_a("listed.test.dbl.test", Ipv4Addr::new(127, 0, 1, 2));
    publish(&dns, &seed, SLOW, &good_spf, reject);
    // SPF by reverse DNS (RFC 7208 5.5): the sending address's name, confirmed forward, is under
    // the domain. (A second, unconfirmed name is not.)
    publish(&dns, &seed, BY_PTR, "v=spf1 ptr -all", reject);
    let address: std::net::IpAddr = SENDING_IP.parse().expect("ip"); // ok: test
    dns.add_ptr(address, "claimed.other.test");
    dns.add_ptr(address, "mta.byptr.test");
    dns.add_a("mta.byptr.test", Ipv4Addr::new(192, 0, 2, 25));
    dns.set_timeout(&format!("_dmarc.{SLOW}"));
    seed.close();
    let nameserver = dns.addr().to_string();
    let mut env = vec![
        ("EDGEMAIL_DELIVERY_DNS_TIMEOUT", "300ms"),
        ("EDGEMAIL_HEALTH_DNSBL_ZONES", "bl.test, domain:dbl.test"),
        ("EDGEMAIL_SMTP_HOSTNAME", HOSTNAME),
        ("EDGEMAIL_TOOLS_BURST", "100"),
    ];
    env.extend_from_slice(sending);
    let server = Server::start_with(&dir.0, &["--nameserver", &nameserver], &env);
    Fixture { server, dns, good_key, org_key, _dir: dir }
}

impl Fixture {
    fn health(&self, domain: &str) -> Value {
        let answer = self
            .server
            .client(Some(&self.org_key))
            .get(&format!("/v1/domain-health?domain={domain}"))
            .expect(200)
            .json();
        assert_eq!(answer.as_array().map(Vec::len), Some(1), "{answer}");
        answer[0].clone()
    }
}

fn status(report: &Value, check: &str) -> String {
    report[check]["status"].as_str().unwrap_or("").to_owned()
}

fn text(report: &Value, check: &str, field: &str) -> String {
    report[check][field].as_str().unwrap_or("").to_owned()
}

#[test]
fn a_fully_configured_domain_scores_100_and_each_broken_record_costs_points() {
    let f = start();
    let good = f.server.client(Some(&f.good_key)).get("/v1/domain-health").expect(200).json();
    assert_eq!(good["domain"], GOOD);
    assert_eq!(good["score"], 100, "{good:#}");
    for check in ["spf", "dkim", "dmarc", "mx", "blacklists"] {
        assert_eq!(status(&good, check), "pass", "{check}: {good:#}");
        assert_eq!(good[check]["hint"], Value::Null, "{check}");
    }
    assert_eq!(good["spf"]["record"], format!("v=spf1 ip4:{SENDING_IP} -all"));
    assert_eq!(good["dkim"]["records"].as_array().map(Vec::len), Some(2));
    assert_eq!(good["mx"]["records"], json!([format!("10 {HOSTNAME}")]));
    assert_eq!(good["blacklists"]["checked"], json!(["bl.test", "dbl.test"]));
    assert_eq!(good["blacklists"]["listed"], false);
    assert!(text(&good, "spf", "detail").contains(&format!("authorizes {SENDING_IP}")));
    assert!(good["checkedAt"].as_u64().is_some_and(|t| t > 1_700_000_000_000));

    let no_dmarc = f.health(NO_DMARC);
    assert_eq!(no_dmarc["score"], 80);
    assert_eq!(status(&no_dmarc, "dmarc"), "fail");
    assert!(text(&no_dmarc, "dmarc", "hint").contains(&format!("_dmarc.{NO_DMARC}")));

    let syntax = f.health(BAD_SYNTAX);
    assert_eq!(syntax["score"], 75);
    assert_eq!(status(&syntax, "spf"), "fail");
    assert!(text(&syntax, "spf", "detail").contains("frob"), "{syntax:#}");
    assert!(!text(&syntax, "spf", "hint").is_empty());

    let unauthorized = f.health(NOT_AUTHORIZED);
    assert_eq!(unauthorized["score"], 75);
    assert!(text(&unauthorized, "spf", "detail").contains(SENDING_IP), "{unauthorized:#}");
    assert!(text(&unauthorized, "spf", "hint").contains(&format!("ip4:{SENDING_IP}")));

    let too_many = f.health(TOO_MANY);
    assert_eq!(status(&too_many, "spf"), "fail", "{too_many:#}");
    assert!(text(&too_many, "spf", "detail").contains("limit is 10"), "{too_many:#}");
    assert!(text(&too_many, "spf", "hint").contains("ip4:"));
    assert_eq!(too_many["score"], 75);

    let listed = f.health(LISTED);
    assert_eq!(status(&listed, "blacklists"), "fail", "{listed:#}");
    assert_eq!(listed["blacklists"]["listed"], true);
    assert_eq!(listed["blacklists"]["listedOn"], json!(["bl.test", "dbl.test"]));
    assert!(text(&listed, "blacklists", "detail").contains("192.0.2.99 is listed on bl.test"));
    assert!(!text(&listed, "blacklists", "hint").is_empty());
    assert_eq!(listed["score"], 85);
    assert_eq!(status(&listed, "mx"), "pass", "one MX host is this server");
}

#[test]
fn spf_ptr_authorizes_a_forward_confirmed_name_under_the_domain() {
    let f = start();
    let report = f.health(BY_PTR);
    assert_eq!(status(&report, "spf"), "pass", "{report:#}");
    assert!(text(&report, "spf", "detail").contains(&format!("authorizes {SENDING_IP}")));
    let asked = f.dns.queries();
    assert!(asked.iter().any(|q| q.name == "25.2.0.192.in-addr.arpa" && q.record_type == "PTR"));
    assert!(asked.iter().any(|q| q.name == "mta.byptr.test" && q.record_type == "A"), "confirmed");
}

#[test]
fn a_hanging_nameserver_gives_a_warning_within_seconds_not_an_error() {
    let f = start();
    let started = Instant::now();
    let slow = f.health(SLOW);
    assert!(started.elapsed() < Duration::from_secs(6), "took {:?}", started.elapsed());
    assert_eq!(status(&slow, "dmarc"), "warn", "{slow:#}");
    assert!(!text(&slow, "dmarc", "detail").is_empty());
    assert_eq!(slow["score"], 90);
    assert!(f.dns.queries().iter().any(|q| q.name == format!("_dmarc.{SLOW}")));
}

#[test]
fn keys_see_their_own_domains() {
    let f = start();
    let all = f.server.client(Some(&f.org_key)).get("/v1/domain-health").expect(200).json();
    let mut domains: Vec<&str> =
        all.as_array().expect("array").iter().filter_map(|r| r["domain"].as_str()).collect(); // ok: test
    domains.sort();
    let mut hosted = HOSTED.to_vec();
    hosted.sort();
    assert_eq!(domains, hosted);
    let good = f.server.client(Some(&f.good_key));
    good.get(&format!("/v1/domain-health?domain={NO_DMARC}")).expect_error(404, "not_found");
    f.server
        .client(Some(&f.org_key))
        .get("/v1/domain-health?domain=unknown.test")
        .expect_error(404, "not_found");
    f.server.client(None).get("/v1/domain-health").expect_error(401, "unauthorized");
}

#[test]
fn the_public_tool_checks_any_domain_and_refuses_bad_input() {
    let f = start();
    let dns = &f.dns;
    let key = "MCowBQYDK2VwAyEAGb9ECWmEzf6FQbrBZ9w7lshQhqowtrbLDFw4rXAxZuE=";
    dns.add_txt("external.test", "v=spf1 mx -all");
    dns.add_txt("selector1._domainkey.external.test", &format!("v=DKIM1; k=ed25519; p={key}"));
    dns.add_txt("_dmarc.external.test", "v=DMARC1; p=none");
    dns.add_mx("external.test", 10, "mx.external.test");
    dns.add_a("mx.external.test", Ipv4Addr::new(192, 0, 2, 50));
    let c = f.server.client(None);
    let external =
        c.post("/api/tools/check-deliverability", json!({"domain": "External.Test."})).expect(200);
    let external = external.json();
    assert_eq!(external["domain"], "external.test");
    assert_eq!(status(&external, "spf"), "pass", "{external:#}");
    assert_eq!(external["dkim"]["records"], json!(["selector1"]));
    assert_eq!(status(&external, "dmarc"), "warn");
    assert!(text(&external, "dmarc", "hint").contains("p=quarantine"));
    assert_eq!(status(&external, "blacklists"), "pass");
    assert!(text(&external, "blacklists", "detail").contains("192.0.2.50"));
    assert_eq!(external["score"], 90);

    let nothing =
        c.post("/api/tools/check-deliverability", json!({"domain": "nothing.test"})).expect(200);
    let nothing = nothing.json();
    assert_eq!(status(&nothing, "spf"), "fail");
    assert_eq!(status(&nothing, "dkim"), "warn");
    assert_eq!(status(&nothing, "dmarc"), "fail");
    assert_eq!(status(&nothing, "mx"), "fail");
    assert_eq!(nothing["score"], 27);

    // A hosted domain gets its full report from the tool too.
    let hosted = c.post("/api/tools/check-deliverability", json!({"domain": GOOD})).expect(200);
    assert_eq!(hosted.json()["score"], 100);

    for bad in [
        json!({}),
        json!({"domain": ""}),
        json!({"domain": "not a domain"}),
        json!({"domain": "https://example.com/"}),
        json!({"domain": "ada@example.com"}),
        json!({"domain": "localhost"}),
        json!({"domain": 5}),
        json!({"domain": "example.com", "selector": "s1"}),
    ] {
        c.post("/api/tools/check-deliverability", bad).expect_error(400, "invalid_request");
    }
}

#[test]
fn the_relay_must_be_authorized_and_no_sending_addresses_fails_nothing() {
    let relayed = start_with(&[("EDGEMAIL_DELIVERY_RELAY", "relay.edge.test:587")]);
    relayed.dns.add_a("relay.edge.test", Ipv4Addr::new(192, 0, 2, 77));
    let good = relayed.health(GOOD);
    assert_eq!(status(&good, "spf"), "fail", "{good:#}");
    assert!(text(&good, "spf", "detail").contains("192.0.2.77"), "{good:#}");
    assert!(text(&good, "spf", "hint").contains("ip4:192.0.2.77"));

    let unconfigured = start_with(&[]);
    let report = unconfigured.health(NOT_AUTHORIZED);
    assert_eq!(status(&report, "spf"), "pass", "{report:#}");
    assert!(text(&report, "spf", "detail").contains("delivery.sending_ips"), "{report:#}");
}

#[test]
fn blacklists_are_unknown_when_no_list_is_configured_or_none_answers() {
    let unconfigured = start_with(&[
        ("EDGEMAIL_DELIVERY_SENDING_IPS", SENDING_IP),
        ("EDGEMAIL_HEALTH_DNSBL_ZONES", ""),
    ]);
    let report = unconfigured.health(GOOD);
    assert_eq!(status(&report, "blacklists"), "unknown", "{report:#}");
    assert_eq!(report["blacklists"]["checked"], json!([]), "{report:#}");
    assert_eq!(report["blacklists"]["listed"], false);
    assert!(text(&report, "blacklists", "detail").contains("no blacklist zones"), "{report:#}");
    // Unknown earns half the blacklists' 15 points, as a warning does.
    assert_eq!(report["score"], 92, "{report:#}");

    // Both lists hang on every question about the domain and its addresses.
    let f = start();
    f.dns.set_timeout(&format!("{GOOD}.dbl.test"));
    f.dns.set_timeout("25.2.0.192.bl.test");
    let silent = f.health(GOOD);
    assert_eq!(status(&silent, "blacklists"), "unknown", "{silent:#}");
    assert!(text(&silent, "blacklists", "detail").contains("nothing is known"), "{silent:#}");
    assert_eq!(silent["score"], 92, "{silent:#}");
    // One list answering is enough to know something: a pass for the other would be a guess,
    // so the silent one stays a warning.
    let f = start();
    f.dns.set_timeout(&format!("{GOOD}.dbl.test"));
    let half = f.health(GOOD);
    assert_eq!(status(&half, "blacklists"), "warn", "{half:#}");
}
