//! The MTA-STS policy a hosted domain serves at `https://mta-sts.<domain>/.well-known/mta-sts.txt`
//! (RFC 8461 section 3.2) and the id its `_mta-sts` TXT record carries. The id is derived from
//! the policy text, so changing the mode, the MX list or max_age changes the id and senders
//! fetch the policy again (section 3.1: the id must change when the policy does).

use sha2::{Digest, Sha256};

use crate::config::Config;

/// The MX names of the policy: `mta_sts.policy_mx`, else `smtp.hostname`, else the
/// `mail.<domain>` the printed zone points the MX at.
pub fn policy_mx(domain: &str, config: &Config) -> Vec<String> {
    if !config.sts_policy.mx.is_empty() {
        return config.sts_policy.mx.clone();
    }
    match &config.smtp.hostname {
        Some(host) => vec![host.clone()],
        None => vec![format!("mail.{domain}")],
    }
}

/// The policy document, lines ended by CRLF as section 3.2 writes them.
pub fn policy_text(domain: &str, config: &Config) -> String {
    let policy = &config.sts_policy;
    let mut text = format!("version: STSv1\r\nmode: {}\r\n", policy.mode.as_str());
    for mx in policy_mx(domain, config) {
        text.push_str(&format!("mx: {mx}\r\n"));
    }
    text.push_str(&format!("max_age: {}\r\n", policy.max_age.as_secs()));
    text
}

/// The `id=` of the TXT record: 1 to 32 letters and digits (section 3.1); 20 hex digits of the
/// policy's SHA-256.
pub fn policy_id(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    digest.iter().take(10).map(|b| format!("{b:02x}")).collect()
}

/// The hosted domain a request for the policy is about: its Host header must be
/// `mta-sts.<domain>` (a port is ignored, case too).
pub fn domain_of_host(host: &str) -> Option<String> {
    let name = host.rsplit_once(':').map_or(host, |(name, port)| {
        if port.bytes().all(|b| b.is_ascii_digit()) { name } else { host }
    });
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    let domain = name.strip_prefix("mta-sts.")?;
    (!domain.is_empty() && domain.len() <= 253).then(|| domain.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::PolicyMode;

    #[test]
    fn the_policy_follows_the_configuration_and_its_id_changes_with_it() {
        let mut c = Config::default();
        let testing = policy_text("example.com", &c);
        assert_eq!(
            testing,
            "version: STSv1\r\nmode: testing\r\nmx: mail.example.com\r\nmax_age: 604800\r\n"
        );
        c.sts_policy.mode = PolicyMode::Enforce;
        c.sts_policy.mx = vec!["mx1.example.net".into(), "*.example.org".into()];
        let enforce = policy_text("example.com", &c);
        assert!(enforce.contains("mode: enforce\r\nmx: mx1.example.net\r\nmx: *.example.org\r\n"));
        let (a, b) = (policy_id(&testing), policy_id(&enforce));
        assert_ne!(a, b);
        assert_eq!(a.len(), 20);
        assert!(a.bytes().all(|c| c.is_ascii_alphanumeric()));
        assert_eq!(a, policy_id(&testing), "the id is stable while the policy is");
    }

    #[test]
    fn the_host_names_the_domain() {
        assert_eq!(domain_of_host("mta-sts.Example.com:8443").as_deref(), Some("example.com"));
        assert_eq!(domain_of_host("mta-sts.example.com.").as_deref(), Some("example.com"));
        assert_eq!(domain_of_host("example.com"), None);
        assert_eq!(domain_of_host("mta-sts."), None);
    }
}
