use super::*;
use std::path::Path;
use std::time::Duration;

#[test]
fn layers_apply_in_order_and_flags_win() {
    let dir = std::env::temp_dir().join(format!("edgemail-cfg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok();
    let file = dir.join("c.toml");
    std::fs::write(&file, "[http]\nlisten = \"127.0.0.1:1\"\nbody_limit = \"2MiB\"\n")
        .expect("write"); // ok: test
    let env = vec![("EDGEMAIL_HTTP_LISTEN".to_owned(), "127.0.0.1:2".to_owned())];
    let flags = [("http.listen", "127.0.0.1:3".to_owned())];
    let c = load(Some(&file), env, &flags).expect("valid"); // ok: test
    assert_eq!(c.http.listen.port(), 3);
    assert_eq!(c.cache_size, DEFAULT_CACHE_SIZE);
    let env = vec![("EDGEMAIL_STORAGE_CACHE_SIZE".to_owned(), "16MiB".to_owned())];
    assert_eq!(load(None, env, &[]).map(|c| c.cache_size), Ok(16 << 20));
    assert_eq!(c.http.body_limit, 2 << 20);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_problem_is_reported() {
    let env = vec![
        ("EDGEMAIL_HTTP_LISTEN".to_owned(), "nowhere".to_owned()),
        ("EDGEMAIL_HTTP_BODY_LIMT".to_owned(), "1".to_owned()),
        ("EDGEMAIL_HTTP_HEADER_TIMEOUT".to_owned(), "10 parsecs".to_owned()),
    ];
    let problems = load(None, env, &[]).expect_err("invalid");
    assert_eq!(problems.len(), 3, "{problems:?}");
}

#[test]
fn the_shipped_example_configuration_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("dist/edgemail.toml");
    let c = load(Some(&path), Vec::new(), &[]).expect("dist/edgemail.toml is valid"); // ok: test
    assert_eq!(c.delivery.retry_initial, Duration::from_secs(300));
    assert_eq!(c.cache_size, DEFAULT_CACHE_SIZE);
    assert_eq!(c.smtp.hostname.as_deref(), Some("mail.example.com"));
    assert_eq!(c.shaping.groups, Shaping::default().groups, "the example shows the defaults");
    assert_eq!(c.delivery.sending_ips.len(), 2);
    assert_eq!(c.health.dnsbl_zones.last().map(String::as_str), Some("domain:dbl.spamhaus.org"));
}

#[test]
fn lists_of_addresses_and_zones() {
    let env = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
    let c = load(None, env("EDGEMAIL_HEALTH_DNSBL_ZONES", "BL.test, domain:dbl.test."), &[])
        .expect("valid"); // ok: test
    assert_eq!(c.health.dnsbl_zones, ["bl.test", "domain:dbl.test"]);
    let c = load(None, env("EDGEMAIL_HEALTH_DNSBL_ZONES", ""), &[]).expect("empty"); // ok: test
    assert!(c.health.dnsbl_zones.is_empty());
    assert!(load(None, env("EDGEMAIL_HEALTH_DNSBL_ZONES", "bad zone"), &[]).is_err());
    assert!(load(None, env("EDGEMAIL_DELIVERY_SENDING_IPS", "192.0.2.1, x"), &[]).is_err());
}

#[test]
fn durations_and_sizes() {
    assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
    assert_eq!(parse_duration("3d"), Ok(Duration::from_secs(3 * 86_400)));
    assert!(parse_duration("5").is_err());
    assert_eq!(parse_size("1MiB"), Ok(1 << 20));
    assert_eq!(parse_size("64MiB"), Ok(DEFAULT_CACHE_SIZE));
    assert!(parse_size("0").is_err());
}

#[test]
fn shaping_groups_come_from_tables_and_variables() {
    let dir = std::env::temp_dir().join(format!("edgemail-shaping-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok();
    let file = dir.join("c.toml");
    let text = "[shaping]\npause_initial = \"5s\"\n[shaping.corp]\nmx_suffixes = \"corp.example\"\n\
                per_minute = 30\n[shaping.gmail]\nconnections = 2\n";
    std::fs::write(&file, text).expect("write"); // ok: test
    let env = vec![("EDGEMAIL_SHAPING_CORP_CONNECTIONS".to_owned(), "3".to_owned())];
    let c = load(Some(&file), env, &[]).expect("valid"); // ok: test
    assert_eq!(c.shaping.pause_initial, Duration::from_secs(5));
    let corp = c.shaping.groups.iter().find(|g| g.name == "corp").expect("corp"); // ok: test
    assert_eq!((corp.connections, corp.per_minute), (3, 30));
    assert_eq!(c.shaping.groups[0].connections, 2);
    let bad = "[shaping.corp]\nper_minit = 1\n";
    std::fs::write(&file, bad).expect("write"); // ok: test
    assert!(load(Some(&file), Vec::new(), &[]).is_err());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn mta_sts_keys() {
    let c = Config::default();
    assert!(c.mta_sts.enabled && c.mta_sts.ca_file.is_none());
    assert_eq!(c.mta_sts.policy_port, 443);
    let env = vec![
        ("EDGEMAIL_MTA_STS_ENABLED".to_owned(), "false".to_owned()),
        ("EDGEMAIL_MTA_STS_CA_FILE".to_owned(), "/tmp/ca.pem".to_owned()),
        ("EDGEMAIL_MTA_STS_POLICY_PORT".to_owned(), "8443".to_owned()),
    ];
    let c = load(None, env, &[]).expect("valid"); // ok: test
    assert!(!c.mta_sts.enabled);
    assert_eq!(c.mta_sts.ca_file.as_deref(), Some(Path::new("/tmp/ca.pem")));
    assert_eq!(c.mta_sts.policy_port, 8443);
    let bad = vec![("EDGEMAIL_MTA_STS_POLICY_PORT".to_owned(), "0".to_owned())];
    assert!(load(None, bad, &[]).is_err());
}
