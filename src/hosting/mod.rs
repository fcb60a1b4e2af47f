//! What a hosted domain publishes about this server so that others find their way without
//! being told: the endpoints mail clients are pointed at (Thunderbird's autoconfig, Microsoft's
//! Autodiscover, Apple's configuration profile, RFC 6186 SRV records), the MTA-STS policy
//! (RFC 8461) and TLS-RPT record (RFC 8460), and the zone lines that announce them. Pure
//! functions of the configuration and the listeners that run: the HTTP handlers and
//! `domain add` both call them, so the zone and the documents say the same thing.

pub mod autoconfig;
pub mod sts;
mod xml;

use crate::config::Config;

/// The ports the mail client listeners bound (None: not running).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bound {
    pub imap: Option<u16>,
    pub imaps: Option<u16>,
    pub submission: Option<u16>,
    pub submissions: Option<u16>,
}

impl Bound {
    /// The ports the configuration asks for, for a zone printed while no server runs.
    pub fn configured(config: &Config) -> Bound {
        Bound {
            imap: config.imap.listen.map(|a| a.port()),
            imaps: config.imap.tls_listen.map(|a| a.port()),
            submission: config.submission.listen.map(|a| a.port()),
            submissions: config.submission.tls_listen.map(|a| a.port()),
        }
    }
}

/// What clients are told: the public host name and the public port of each listener that
/// runs (`autoconfig.*_port` over the bound port).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoints {
    pub host: String,
    pub imap: Option<u16>,
    pub imaps: Option<u16>,
    pub submission: Option<u16>,
    pub submissions: Option<u16>,
}

impl Endpoints {
    /// What clients of `domain` are told.
    pub fn new(config: &Config, bound: Bound, domain: &str) -> Endpoints {
        let a = &config.autoconfig;
        let public = |bound: Option<u16>, set: Option<u16>| bound.map(|p| set.unwrap_or(p));
        Endpoints {
            host: config.client_host(domain),
            imap: public(bound.imap, a.imap_port),
            imaps: public(bound.imaps, a.imaps_port),
            submission: public(bound.submission, a.submission_port),
            submissions: public(bound.submissions, a.submissions_port),
        }
    }

    /// The IMAP endpoint clients should prefer: implicit TLS (RFC 8314), else STARTTLS.
    pub fn incoming(&self) -> Option<(u16, Security)> {
        self.imaps.map(|p| (p, Security::Tls)).or(self.imap.map(|p| (p, Security::StartTls)))
    }

    /// The submission endpoint clients should prefer, as `incoming`.
    pub fn outgoing(&self) -> Option<(u16, Security)> {
        let implicit = self.submissions.map(|p| (p, Security::Tls));
        implicit.or(self.submission.map(|p| (p, Security::StartTls)))
    }
}

/// How a connection to a listener is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    /// TLS from the first byte (IMAPS, submissions).
    Tls,
    /// Plain first, then STARTTLS.
    StartTls,
}

/// The zone lines of what a domain publishes besides its MX, SPF, DKIM and DMARC records
/// (those are `dkim::zone_lines`): the names our HTTPS documents are fetched from, the SRV
/// records of the mail client listeners (a service that does not run is published as not
/// offered, target "."), and the MTA-STS and TLS-RPT TXT records.
pub fn zone_lines(domain: &str, config: &Config, endpoints: &Endpoints) -> Vec<String> {
    let host = &endpoints.host;
    let mut lines = vec![format!(
        "; Mail clients and other servers find their settings here ({host} serves them)."
    )];
    for name in ["autoconfig", "autodiscover", "mta-sts"] {
        lines.push(format!("{name}.{domain}.\t3600\tIN\tCNAME\t{host}."));
    }
    let srv = |service: &str, port: Option<u16>, priority: u16| match port {
        Some(port) => {
            format!("_{service}._tcp.{domain}.\t3600\tIN\tSRV\t{priority} 1 {port} {host}.")
        }
        None => format!("_{service}._tcp.{domain}.\t3600\tIN\tSRV\t0 0 0 ."),
    };
    // RFC 8314 section 5.1: implicit TLS ranks before STARTTLS (a lower priority number).
    lines.push(srv("imaps", endpoints.imaps, 0));
    lines.push(srv("imap", endpoints.imap, 10));
    lines.push(srv("submissions", endpoints.submissions, 0));
    lines.push(srv("submission", endpoints.submission, 10));
    lines.push(srv("autodiscover", Some(443), 0));
    let policy = sts::policy_text(domain, config);
    lines.push(format!(
        "_mta-sts.{domain}.\t3600\tIN\tTXT\t\"v=STSv1; id={}\"",
        sts::policy_id(&policy)
    ));
    lines.push(format!(
        "_smtp._tls.{domain}.\t3600\tIN\tTXT\t\"v=TLSRPTv1; rua=mailto:tls-reports@{domain}\""
    ));
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        let mut c = Config::default();
        c.smtp.hostname = Some("mx.example.net".into());
        c
    }

    #[test]
    fn public_ports_override_bound_ones_of_running_listeners_only() {
        let mut c = config();
        c.autoconfig.imaps_port = Some(993);
        c.autoconfig.submission_port = Some(587);
        let bound = Bound { imaps: Some(10993), submissions: Some(10465), ..Bound::default() };
        let e = Endpoints::new(&c, bound, "example.com");
        assert_eq!(e.imaps, Some(993));
        assert_eq!(e.submissions, Some(10465));
        // Configured but not running: never advertised.
        assert_eq!(e.submission, None);
        assert_eq!(e.incoming(), Some((993, Security::Tls)));
        assert_eq!(e.host, "mx.example.net");
    }

    #[test]
    fn the_zone_names_running_services_and_marks_the_others_not_offered() {
        let c = config();
        let e = Endpoints::new(
            &c,
            Bound { imaps: Some(993), submission: Some(587), ..Bound::default() },
            "example.com",
        );
        let lines = zone_lines("example.com", &c, &e);
        let has = |s: &str| lines.iter().any(|l| l.contains(s));
        assert!(has("_imaps._tcp.example.com.\t3600\tIN\tSRV\t0 1 993 mx.example.net."));
        assert!(has("_imap._tcp.example.com.\t3600\tIN\tSRV\t0 0 0 ."));
        assert!(has("_submission._tcp.example.com.\t3600\tIN\tSRV\t10 1 587 mx.example.net."));
        assert!(has("_submissions._tcp.example.com.\t3600\tIN\tSRV\t0 0 0 ."));
        assert!(has("_autodiscover._tcp.example.com."));
        assert!(has("_mta-sts.example.com.\t3600\tIN\tTXT\t\"v=STSv1; id="));
        assert!(has("\"v=TLSRPTv1; rua=mailto:tls-reports@example.com\""));
    }
}
