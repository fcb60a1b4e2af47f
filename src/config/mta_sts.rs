//! MTA-STS for outbound delivery (RFC 8461): whether recipient domains' policies are honoured,
//! the extra CA certificates trusted for their mail exchangers and policy hosts, and the port
//! policies are fetched from (443; other values exist for test set-ups only).

use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct MtaSts {
    /// Look up, fetch, cache and apply recipient domains' policies.
    pub enabled: bool,
    /// PEM file of CA certificates trusted in addition to the built-in web PKI roots, for the
    /// policy host and the mail exchangers of a policy (a private PKI, or a test CA).
    pub ca_file: Option<PathBuf>,
    /// The port of `https://mta-sts.<domain>/`. Always 443 in the RFC; tests cannot bind it.
    pub policy_port: u16,
}

impl Default for MtaSts {
    fn default() -> Self {
        MtaSts { enabled: true, ca_file: None, policy_port: 443 }
    }
}
