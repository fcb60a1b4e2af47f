use super::*;

/// A self-signed certificate for `names`, as a served entry of `source`.
fn make(names: &[&str], source: Source) -> Served {
    let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
    let params = rcgen::CertificateParams::new(names).expect("params"); // ok: test
    let key = rcgen::KeyPair::generate().expect("key"); // ok: test
    let cert = params.self_signed(&key).expect("cert"); // ok: test
    let served = served_from_pem(cert.pem().as_bytes(), key.serialize_pem().as_bytes(), source);
    served.expect("served") // ok: test
}

fn names_of(certs: &Certs, sni: Option<&str>) -> Vec<String> {
    let key = certs.pick(sni).expect("a certificate"); // ok: test
    Info::read(&key.cert[0]).expect("info").names // ok: test
}

fn with_fallback(host: &str) -> Arc<Certs> {
    let certs = Certs::new(host);
    *certs.fixed.write().expect("lock") = vec![make(&[host, "localhost"], Source::SelfSigned)]; // ok: test
    certs.install(Vec::new());
    certs
}

#[test]
fn picks_by_name_then_wildcard_then_the_default() {
    let certs = with_fallback("mx.example.com");
    assert_eq!(names_of(&certs, None), ["mx.example.com", "localhost"]);
    certs.install(vec![
        make(&["mail.example.org", "autoconfig.example.org"], Source::Acme),
        make(&["*.example.net"], Source::Acme),
    ]);
    assert_eq!(names_of(&certs, Some("MAIL.example.org"))[0], "mail.example.org");
    assert_eq!(names_of(&certs, Some("imap.example.net")), ["*.example.net"]);
    // A name nothing covers, and no name: the default, which names the host.
    assert_eq!(names_of(&certs, Some("other.test"))[0], "mx.example.com");
    assert_eq!(names_of(&certs, None)[0], "mx.example.com");
}

#[test]
fn an_acme_certificate_for_the_host_becomes_the_default_and_hides_the_self_signed_one() {
    let certs = with_fallback("mx.example.com");
    fn sources(c: &Certs) -> Vec<Source> {
        c.describe().into_iter().map(|(_, s)| s).collect()
    }
    assert_eq!(sources(&certs), [Source::SelfSigned]);
    certs.install(vec![make(&["mail.example.org"], Source::Acme)]);
    assert_eq!(sources(&certs), [Source::Acme, Source::SelfSigned]);
    certs.install(vec![make(&["mx.example.com"], Source::Acme)]);
    assert_eq!(names_of(&certs, None), ["mx.example.com"]);
    // The self-signed one still names `localhost`, which nothing else covers.
    assert_eq!(sources(&certs), [Source::Acme, Source::SelfSigned]);
    assert_eq!(names_of(&certs, Some("localhost")), ["mx.example.com", "localhost"]);
}

#[test]
fn a_configured_file_wins_over_everything() {
    let certs = Certs::new("mx.example.com");
    *certs.fixed.write().expect("lock") = vec![make(&["file.example.com"], Source::File)]; // ok: test
    certs.install(vec![make(&["mx.example.com"], Source::Acme)]);
    assert!(certs.from_file());
    assert_eq!(names_of(&certs, None), ["file.example.com"]);
    assert_eq!(certs.describe()[0].1, Source::File);
}

#[test]
fn renewal_falls_two_thirds_into_the_lifetime() {
    let stored = crate::store::StoredCertificate {
        names: vec![],
        chain_pem: String::new(),
        key_pem: String::new(),
        not_before: 1000,
        not_after: 1090,
    };
    assert_eq!(acme::renew_at(&stored), 1_060_000);
}

#[test]
fn failed_orders_back_off_doubling_up_to_the_maximum() {
    let config = Config::default();
    let waits: Vec<u64> = (0..12).map(|n| acme::backoff(&config, n).as_secs()).collect();
    assert_eq!(&waits[..4], [60, 120, 240, 480]);
    assert_eq!(waits[11], 6 * 3600);
    assert_eq!(acme::backoff(&config, u32::MAX).as_secs(), 6 * 3600);
}

#[test]
fn http_tokens_and_alpn_challenges_come_and_go() {
    let certs = Certs::new("mx.example.com");
    certs.set_token("abc", Some("abc.thumb".into()));
    assert_eq!(certs.token("abc").as_deref(), Some("abc.thumb"));
    certs.set_token("abc", None);
    assert_eq!(certs.token("abc"), None);
    let key = challenge::alpn_certificate("mail.example.org", &[1; 32]).expect("cert"); // ok: test
    certs.set_alpn_challenge("mail.example.org", Some(key));
    assert!(certs.alpn.lock().expect("lock").contains_key("mail.example.org")); // ok: test
    certs.set_alpn_challenge("mail.example.org", None);
    assert!(certs.alpn.lock().expect("lock").is_empty()); // ok: test
}
