//! What our MX does with the mail it receives beyond filing it: DMARC enforcement, the DNS
//! blacklists asked about connecting clients, and the forwarders whose ARC results we trust.

use std::time::Duration;

/// `inbound.dmarc_reject`: what a DMARC failure under `p=reject` gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmarcReject {
    /// 550 5.7.1 at the end of DATA (RFC 7489 6.6.3 suggests it): the sender learns.
    Refuse,
    /// Accepted into the Junk folder, for hosts that would rather lose nothing.
    Junk,
}

#[derive(Debug, Clone)]
pub struct Inbound {
    pub dmarc_reject: DmarcReject,
    /// ARC sealers (`d=` of the newest ARC-Seal, RFC 8617) whose DMARC result we take instead of
    /// our own when they forwarded the message (mailing lists, forwarding services).
    pub arc_trusted: Vec<String>,
    /// IP blacklists asked about the connecting client (`d.c.b.a.zone`); a listing adds to the
    /// spam score and never refuses on its own.
    pub dnsbl: Vec<String>,
    /// How long all lists together may take for one client.
    pub dnsbl_timeout: Duration,
    /// Greylisting (RFC 6647): a new (client network, sender, recipient) is answered 451 until
    /// it retries at least `greylist_delay` later. Off by default: it delays first mail.
    pub greylisting: bool,
    pub greylist_delay: Duration,
    /// How long a triplet is remembered after its last attempt or pass.
    pub greylist_keep: Duration,
}

/// The lists asked by default: the two widely used free ones for small servers. Spamhaus
/// answers only queries from a server's own resolver, not from public resolvers.
pub const DEFAULT_DNSBL: [&str; 2] = ["zen.spamhaus.org", "bl.spamcop.net"];

impl Default for Inbound {
    fn default() -> Self {
        Inbound {
            dmarc_reject: DmarcReject::Refuse,
            arc_trusted: Vec::new(),
            dnsbl: DEFAULT_DNSBL.map(str::to_owned).to_vec(),
            dnsbl_timeout: Duration::from_secs(2),
            greylisting: false,
            greylist_delay: Duration::from_secs(5 * 60),
            greylist_keep: Duration::from_secs(36 * 24 * 3600),
        }
    }
}
