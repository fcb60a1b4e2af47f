//! The SPF parser, the lookup count and `check_host`, over an in-memory resolver.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};

use super::*;
use crate::health::lookup::{Answer, Resolve};

#[derive(Default)]
struct Table {
    txt: HashMap<String, Vec<String>>,
    a: HashMap<String, Vec<IpAddr>>,
    mx: HashMap<String, Vec<(u16, String)>>,
    ptr: HashMap<String, Vec<String>>,
    broken: Vec<String>,
}

impl Table {
    fn txt(mut self, name: &str, text: &str) -> Self {
        self.txt.entry(name.into()).or_default().push(text.into());
        self
    }
    fn a(mut self, name: &str, ip: [u8; 4]) -> Self {
        self.a.entry(name.into()).or_default().push(IpAddr::V4(Ipv4Addr::from(ip)));
        self
    }
    fn mx(mut self, name: &str, host: &str) -> Self {
        self.mx.entry(name.into()).or_default().push((10, host.into()));
        self
    }
    fn ptr(mut self, addr: [u8; 4], name: &str) -> Self {
        self.ptr.entry(ip(addr).to_string()).or_default().push(name.into());
        self
    }
    fn get<T: Clone>(&self, map: &HashMap<String, Vec<T>>, name: &str) -> Answer<Vec<T>> {
        if self.broken.iter().any(|b| b == name) {
            return Answer::Failed(format!("{name}: timed out"));
        }
        map.get(name).cloned().map_or(Answer::Nothing, Answer::Found)
    }
}

impl Resolve for Table {
    async fn txt(&self, name: &str) -> Answer<Vec<String>> {
        self.get(&self.txt, name)
    }
    async fn addrs(&self, name: &str, v6: bool) -> Answer<Vec<IpAddr>> {
        if v6 { Answer::Nothing } else { self.get(&self.a, name) }
    }
    async fn mx(&self, name: &str) -> Answer<Vec<(u16, String)>> {
        self.get(&self.mx, name)
    }
    async fn ptr(&self, addr: IpAddr) -> Answer<Vec<String>> {
        self.get(&self.ptr, &addr.to_string())
    }
}

fn run<T>(f: impl Future<Output = T>) -> T {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt").block_on(f) // ok: test
}

fn ip(a: [u8; 4]) -> IpAddr {
    IpAddr::V4(Ipv4Addr::from(a))
}

#[test]
fn parses_mechanisms_qualifiers_and_modifiers() {
    let r = parse(
        "v=spf1 +a mx:mail.example.com/24//64 -ip4:192.0.2.0/24 ip6:2001:db8::/32 \
                   ~include:_spf.example.net ?exists:%{i}.bl.example.org ptr redirect=example.org \
                   exp=explain.example.org x-custom=1",
    )
    .expect("valid"); // ok: test
    let mechs: Vec<&Mechanism> = r.directives.iter().map(|d| &d.mechanism).collect();
    assert_eq!(mechs[0], &Mechanism::A { domain: None, v4: 32, v6: 128 });
    assert_eq!(
        mechs[1],
        &Mechanism::Mx { domain: Some("mail.example.com".into()), v4: 24, v6: 64 }
    );
    assert_eq!(mechs[2], &Mechanism::Ip4(Ipv4Addr::new(192, 0, 2, 0), 24));
    assert!(matches!(mechs[3], Mechanism::Ip6(_, 32)));
    assert_eq!(r.directives[4].qualifier, Qualifier::SoftFail);
    assert_eq!(r.directives[5].qualifier, Qualifier::Neutral);
    assert_eq!(mechs[6], &Mechanism::Ptr(None));
    assert_eq!(r.redirect.as_deref(), Some("example.org"));
    assert_eq!(r.exp.as_deref(), Some("explain.example.org"));
    assert_eq!(r.all(), None);
    assert_eq!(parse("v=spf1 -all").expect("valid").all(), Some(Qualifier::Fail)); // ok: test
    assert_eq!(parse("V=SPF1 MX ~ALL").expect("case").all(), Some(Qualifier::SoftFail)); // ok: test
}

#[test]
fn rejects_malformed_records() {
    for bad in [
        "v=spf2 -all",
        "v=spf1x -all",
        "v=spf1 ip4:300.1.1.1 -all",
        "v=spf1 ip4:192.0.2.1/33 -all",
        "v=spf1 ip6:zz::1 -all",
        "v=spf1 include -all",
        "v=spf1 include:nodot -all",
        "v=spf1 all:example.com",
        "v=spf1 foo:example.com -all",
        "v=spf1 a/ -all",
        "v=spf1 - -all",
        "v=spf1 exists:%{z}.example.com -all",
        "v=spf1 exists:%{i.example.com -all",
        "v=spf1 redirect=a.example redirect=b.example",
        "v=spf1 include:example.com/24 -all",
    ] {
        assert!(parse(bad).is_err(), "{bad} parsed");
    }
}

#[test]
fn macros_expand_with_transformers() {
    let m = Macros {
        ip: ip([192, 0, 2, 3]),
        domain: "mail.example.com",
        sender_domain: "example.com",
        helo: "mx.example.net",
    };
    assert_eq!(
        expand("%{ir}.%{v}._spf.%{d2}", &m).as_deref(),
        Ok("3.2.0.192.in-addr._spf.example.com")
    );
    assert_eq!(expand("%{l}-%{o}%%", &m).as_deref(), Ok("postmaster-example.com%"));
    assert_eq!(expand("%{s}", &m).as_deref(), Ok("postmaster@example.com"));
}

#[test]
fn counts_lookups_through_includes_and_redirects() {
    let t = Table::default()
        .txt("example.com", "v=spf1 include:a.example mx redirect=r.example")
        .txt("a.example", "v=spf1 a include:b.example ip4:192.0.2.1 -all")
        .txt("b.example", "v=spf1 exists:x.example ptr ~all")
        .txt("r.example", "v=spf1 a -all");
    let record = parse(&t.txt["example.com"][0]).expect("valid"); // ok: test
    let tree = run(walk(&t, "example.com", &record));
    // include, mx, redirect | a, include | exists, ptr | a
    assert_eq!(tree.lookups, 8);
    assert!(tree.problems.is_empty(), "{:?}", tree.problems);
    assert_eq!(tree.ending, Some(Qualifier::Fail), "the redirect target's all ends evaluation");
}

#[test]
fn more_than_ten_lookups_and_broken_includes_are_found() {
    let mut t = Table::default();
    let includes: Vec<String> = (0..6).map(|i| format!("include:i{i}.example")).collect();
    t = t.txt("example.com", &format!("v=spf1 {} -all", includes.join(" ")));
    for i in 0..6 {
        t = t.txt(&format!("i{i}.example"), "v=spf1 a -all");
    }
    let record = parse(&t.txt["example.com"][0]).expect("valid"); // ok: test
    assert!(run(walk(&t, "example.com", &record)).lookups > LOOKUP_LIMIT);
    assert_eq!(run(check_host(&t, ip([192, 0, 2, 9]), "example.com", "h")), Verdict::PermError);

    let t = Table::default()
        .txt("example.com", "v=spf1 include:gone.example include:twice.example -all")
        .txt("twice.example", "v=spf1 -all")
        .txt("twice.example", "v=spf1 ~all");
    let record = parse(&t.txt["example.com"][0]).expect("valid"); // ok: test
    let tree = run(walk(&t, "example.com", &record));
    assert_eq!(tree.problems.len(), 2, "{:?}", tree.problems);
}

#[test]
fn loops_end() {
    let t = Table::default()
        .txt("a.example", "v=spf1 include:b.example -all")
        .txt("b.example", "v=spf1 include:a.example -all");
    let record = parse(&t.txt["a.example"][0]).expect("valid"); // ok: test
    let tree = run(walk(&t, "a.example", &record));
    assert!(tree.problems.iter().any(|p| p.contains("loop")), "{:?}", tree.problems);
    assert_eq!(run(check_host(&t, ip([192, 0, 2, 9]), "a.example", "h")), Verdict::PermError);
}

#[test]
fn check_host_follows_ip_a_mx_include_and_redirect() {
    let t = Table::default()
        .txt(
            "example.com",
            "v=spf1 ip4:198.51.100.0/24 a:web.example.com mx include:esp.example ~all",
        )
        .a("web.example.com", [192, 0, 2, 10])
        .mx("example.com", "mx.example.com")
        .a("mx.example.com", [192, 0, 2, 20])
        .txt("esp.example", "v=spf1 ip4:203.0.113.0/25 -all")
        .txt("r.example", "v=spf1 redirect=example.com")
        .txt("tmp.example", "v=spf1 include:slow.example -all");
    let t = Table { broken: vec!["slow.example".into()], ..t };
    let check = |addr: [u8; 4], domain: &str| run(check_host(&t, ip(addr), domain, "h"));
    assert_eq!(check([198, 51, 100, 7], "example.com"), Verdict::Pass);
    assert_eq!(check([192, 0, 2, 10], "example.com"), Verdict::Pass);
    assert_eq!(check([192, 0, 2, 20], "example.com"), Verdict::Pass);
    assert_eq!(check([203, 0, 113, 5], "example.com"), Verdict::Pass);
    assert_eq!(check([203, 0, 113, 200], "example.com"), Verdict::SoftFail);
    assert_eq!(check([203, 0, 113, 5], "r.example"), Verdict::Pass);
    assert_eq!(check([10, 0, 0, 1], "r.example"), Verdict::SoftFail);
    assert_eq!(check([10, 0, 0, 1], "none.example"), Verdict::None);
    assert_eq!(check([10, 0, 0, 1], "tmp.example"), Verdict::TempError);
}

#[test]
fn ptr_needs_a_forward_confirmed_name_at_or_under_the_target() {
    let mut t = Table::default()
        .txt("example.com", "v=spf1 ptr -all")
        .txt("mail.example.com", "v=spf1 ptr -all")
        .txt("other.example", "v=spf1 ptr:example.com -all")
        .txt("evil.example", "v=spf1 ptr -all")
        // Confirmed: its name points back to it.
        .ptr([192, 0, 2, 1], "mail.example.com")
        .a("mail.example.com", [192, 0, 2, 1])
        // Claimed only: the name resolves elsewhere.
        .ptr([192, 0, 2, 2], "fake.example.com")
        .a("fake.example.com", [192, 0, 2, 99])
        // The matching name comes after ten others, which are all that count.
        .ptr([192, 0, 2, 4], "mail.example.com");
    for n in 0..10 {
        t = t.ptr([192, 0, 2, 3], &format!("n{n}.elsewhere.example"));
    }
    let t = t.ptr([192, 0, 2, 3], "late.example.com").a("late.example.com", [192, 0, 2, 3]);
    let t = Table { broken: vec!["192.0.2.5".into()], ..t };
    let check = |addr: [u8; 4], domain: &str| run(check_host(&t, ip(addr), domain, "h"));
    assert_eq!(check([192, 0, 2, 1], "example.com"), Verdict::Pass, "a subdomain");
    assert_eq!(check([192, 0, 2, 1], "mail.example.com"), Verdict::Pass, "the name itself");
    assert_eq!(check([192, 0, 2, 1], "other.example"), Verdict::Pass, "ptr:<domain>");
    assert_eq!(check([192, 0, 2, 1], "evil.example"), Verdict::Fail, "another domain");
    assert_eq!(check([192, 0, 2, 2], "example.com"), Verdict::Fail, "not forward-confirmed");
    assert_eq!(check([192, 0, 2, 3], "example.com"), Verdict::Fail, "the eleventh name");
    assert_eq!(check([192, 0, 2, 4], "example.com"), Verdict::Fail, "points elsewhere");
    assert_eq!(check([192, 0, 2, 5], "example.com"), Verdict::Fail, "no PTR answer");
    assert_eq!(check([192, 0, 2, 9], "example.com"), Verdict::Fail, "no PTR");
}

#[test]
fn networks() {
    let net = Some((Ipv4Addr::new(192, 0, 2, 0), 24));
    assert!(in_network(ip([192, 0, 2, 255]), net, None));
    assert!(!in_network(ip([192, 0, 3, 0]), net, None));
    assert!(in_network(ip([8, 8, 8, 8]), Some((Ipv4Addr::UNSPECIFIED, 0)), None));
    assert!(!in_network("2001:db8::1".parse().expect("v6"), net, None)); // ok: test
}

#[test]
fn odd_input_is_an_error_not_a_panic() {
    for odd in [
        "v=spf1 é",
        "v=spf1 %{é}",
        "v=spf1 exists:%{iré}.x.com",
        "v=spf1 ~",
        "v=spf1 =x",
        "v=spf1 ip6:",
        "v=spf1 a:%",
    ] {
        let _ = parse(odd);
    }
}
