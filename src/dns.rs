//! DNS through hickory-resolver: the system's resolvers, or one configured nameserver (tests run a
//! local one). Answers are cached by the resolver for their TTL, so screening a list of recipients
//! at the same domain costs one query.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig, ResolverOpts};
use hickory_resolver::net::NetError;
use hickory_resolver::net::runtime::TokioRuntimeProvider;

use crate::error::{Error, Result};

pub struct Dns {
    resolver: TokioResolver,
}

/// Whether a domain can receive mail, as far as DNS can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MailVerdict {
    Accepts,
    /// A definitive answer that no mail can be delivered (the reason in words).
    Refuses(&'static str),
    /// No definitive answer (timeout, server failure): never a reason to refuse.
    Unknown,
}

/// Where a domain's mail goes, for delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Destination {
    /// Mail exchangers in preference order.
    Hosts(Vec<String>),
    /// The domain can never receive mail: recipients bounce.
    Never(String),
    /// Try again later.
    Unknown(String),
}

impl Dns {
    pub fn new(nameserver: Option<SocketAddr>, timeout: Duration) -> Result<Dns> {
        let mut opts = ResolverOpts::default();
        opts.timeout = timeout;
        opts.attempts = 2;
        opts.ndots = 0;
        opts.cache_size = 8192;
        let builder = match nameserver {
            Some(addr) => {
                let mut udp = ConnectionConfig::udp();
                udp.port = addr.port();
                let mut tcp = ConnectionConfig::tcp();
                tcp.port = addr.port();
                let server = NameServerConfig::new(addr.ip(), true, vec![udp, tcp]);
                TokioResolver::builder_with_config(
                    ResolverConfig::from_name_servers(vec![server]),
                    TokioRuntimeProvider::default(),
                )
            }
            None => TokioResolver::builder_tokio().map_err(|e| {
                Error::internal(format!("cannot read the system DNS configuration: {e}"))
            })?,
        };
        let resolver = builder.with_options(opts).build().map_err(Error::internal)?;
        Ok(Dns { resolver })
    }

    pub fn resolver(&self) -> &TokioResolver {
        &self.resolver
    }

    /// Screening: only NXDOMAIN, a null MX (RFC 7505), or neither MX nor address records refuse.
    pub async fn accepts_mail(&self, domain: &str) -> MailVerdict {
        match self.destination(domain).await {
            Destination::Hosts(_) => MailVerdict::Accepts,
            Destination::Never(_) if self.is_nx(domain).await => {
                MailVerdict::Refuses("the domain does not exist")
            }
            Destination::Never(why) if why.contains("null MX") => {
                MailVerdict::Refuses("the domain publishes a null MX: it accepts no mail")
            }
            Destination::Never(_) => {
                MailVerdict::Refuses("the domain has no MX and no address records")
            }
            Destination::Unknown(_) => MailVerdict::Unknown,
        }
    }

    async fn is_nx(&self, domain: &str) -> bool {
        matches!(self.resolver.mx_lookup(fqdn(domain)).await, Err(e) if e.is_nx_domain())
    }

    /// Delivery: MX hosts by preference, or the domain itself when it has no MX (RFC 5321 5.1).
    pub async fn destination(&self, domain: &str) -> Destination {
        let found = self.resolver.mx_lookup(fqdn(domain)).await;
        crate::metrics::dns_lookup(found.is_ok() || found.as_ref().is_err_and(is_definitive));
        match found {
            Ok(lookup) => {
                let mut mx: Vec<(u16, String)> = lookup
                    .answers()
                    .iter()
                    .filter_map(|r| match &r.data {
                        hickory_resolver::proto::rr::RData::MX(mx) => {
                            Some((mx.preference, mx.exchange.to_ascii()))
                        }
                        _ => None,
                    })
                    .collect();
                mx.sort();
                if mx.len() == 1 && (mx[0].1 == "." || mx[0].1.is_empty()) {
                    return Destination::Never(format!("{domain} publishes a null MX"));
                }
                let hosts: Vec<String> = mx
                    .into_iter()
                    .map(|(_, host)| host.trim_end_matches('.').to_owned())
                    .filter(|h| !h.is_empty())
                    .collect();
                if hosts.is_empty() {
                    return Destination::Unknown(format!("{domain}: MX answer without hosts"));
                }
                Destination::Hosts(hosts)
            }
            Err(e) if e.is_nx_domain() => {
                Destination::Never(format!("{domain} does not exist (NXDOMAIN)"))
            }
            Err(e) if e.is_no_records_found() => match self.addresses(domain).await {
                Ok(ips) if !ips.is_empty() => Destination::Hosts(vec![domain.to_owned()]),
                Ok(_) => Destination::Never(format!("{domain} has no MX and no address records")),
                Err(e) if is_definitive(&e) => {
                    Destination::Never(format!("{domain} has no MX and no address records"))
                }
                Err(e) => Destination::Unknown(format!("{domain}: {e}")),
            },
            Err(e) => Destination::Unknown(format!("MX lookup for {domain} failed: {e}")),
        }
    }

    pub async fn addresses(&self, host: &str) -> std::result::Result<Vec<IpAddr>, NetError> {
        if let Ok(ip) = host.parse::<IpAddr>() {
            return Ok(vec![ip]);
        }
        let lookup = self.resolver.lookup_ip(fqdn(host)).await;
        crate::metrics::dns_lookup(
            lookup.as_ref().is_ok() || lookup.as_ref().is_err_and(is_definitive),
        );
        Ok(lookup?.iter().collect())
    }
}

fn is_definitive(e: &NetError) -> bool {
    e.is_nx_domain() || e.is_no_records_found()
}

/// The absolute form of a name, so no search domain is ever appended.
fn fqdn(name: &str) -> String {
    if name.ends_with('.') { name.to_owned() } else { format!("{name}.") }
}

/// Whether `ip` is a public unicast address: not loopback, private (RFC 1918, unique local),
/// link-local, shared (CGNAT), unspecified, broadcast, multicast, documentation or reserved. An
/// IPv6 address that carries an IPv4 address (mapped, NAT64, 6to4) is judged by the IPv4 address
/// it leads to, since that is where a connection ends up. Mail and webhooks go only to such
/// addresses unless a test set-up allows otherwise.
pub fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

fn is_public_v4(v4: Ipv4Addr) -> bool {
    let [a, b, c, _] = v4.octets();
    !(v4.is_loopback()
        || v4.is_private()
        || v4.is_link_local()
        || v4.is_unspecified()
        || v4.is_broadcast()
        || v4.is_multicast()
        || v4.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (b == 18 || b == 19))
        || a >= 240)
}

fn is_public_v6(v6: Ipv6Addr) -> bool {
    let s = v6.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    let low_v4 = v4(s[6], s[7]);
    match s {
        // ::ffff:a.b.c.d, IPv4-mapped: the socket layer connects to a.b.c.d itself.
        [0, 0, 0, 0, 0, 0xffff, _, _] => is_public_v4(low_v4),
        // 64:ff9b::a.b.c.d, NAT64's well-known prefix (RFC 6052): a translator forwards to
        // a.b.c.d, which may be inside the translator's network.
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => is_public_v4(low_v4),
        // 2002:AABB:CCDD::/48, 6to4 (RFC 3056): a relay forwards to the IPv4 address in bits
        // 16 to 47.
        [0x2002, hi, lo, ..] => is_public_v4(v4(hi, lo)),
        // Everything else under ::/8 (IPv4-compatible ::a.b.c.d, deprecated by RFC 4291;
        // SIIT's ::ffff:0:a.b.c.d, RFC 6145; loopback, unspecified; NAT64's local-use
        // 64:ff9b:1::/48 of RFC 8215, whose translator is a private one by definition), and the
        // IETF protocol block 2001::/23, Teredo's 2001::/32 among it (RFC 4380: a relay chosen
        // by the address, the real end an obfuscated IPv4 address): no mail server or webhook
        // receiver is reached there directly, and each can lead to a private IPv4 address.
        [0..=0xff, ..] => false,
        [0x2001, 0..=0x1ff, ..] => false,
        _ => {
            let first = s[0];
            // Only global unicast (2000::/3) is public; in it, documentation (2001:db8::/32,
            // 3fff::/20) is not.
            (first & 0xe000) == 0x2000
                && !(first == 0x2001 && s[1] == 0x0db8)
                && (first & 0xfff0) != 0x3ff0
        }
    }
}

#[cfg(test)]
mod public_tests {
    use super::is_public;

    #[test]
    fn only_public_unicast_addresses_are_public() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "192.0.2.1",
            "::1",
            "::",
            "fe80::1",
            "fec0::1",
            "fd00::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "2001:db8::1",
            "3fff::1",
            "64:ff9b::7f00:1",
            "100::1",
        ] {
            assert!(!is_public(private.parse().expect("ip")), "{private}"); // ok: test
        }
        for public in ["1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"] {
            assert!(is_public(public.parse().expect("ip")), "{public}"); // ok: test
        }
    }

    #[test]
    fn ipv6_forms_are_judged_by_the_ipv4_address_they_lead_to() {
        for private in [
            // IPv4-compatible (deprecated) and SIIT forms, whatever they embed.
            "::127.0.0.1",
            "::10.0.0.1",
            "::8.8.8.8",
            "::ffff:0:127.0.0.1",
            "::ffff:0:8.8.8.8",
            // NAT64 of a private address, and the local-use NAT64 prefix.
            "64:ff9b::10.0.0.1",
            "64:ff9b::169.254.169.254",
            "64:ff9b:1::8.8.8.8",
            // 6to4 of loopback, RFC 1918 and metadata addresses.
            "2002:7f00:1::1",
            "2002:a00:1::",
            "2002:c0a8:101::1",
            "2002:a9fe:a9fe::",
            // Teredo, and the rest of the IETF protocol block.
            "2001:0:4136:e378:8000:63bf:f5ff:fffe",
            "2001::1",
            "2001:2::1",
        ] {
            assert!(!is_public(private.parse().expect("ip")), "{private}"); // ok: test
        }
        for public in ["64:ff9b::8.8.8.8", "2002:808:808::1", "2001:4860:4860::8888"] {
            assert!(is_public(public.parse().expect("ip")), "{public}"); // ok: test
        }
    }
}
