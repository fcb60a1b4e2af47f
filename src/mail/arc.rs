//! ARC sealing (RFC 8617) of mail we forward: the next receiver learns what we verified (the
//! ARC-Authentication-Results) from a seal it can check against our domain's DKIM key, so mail
//! whose SPF (and perhaps DKIM) breaks by forwarding can still be trusted through us.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use mail_auth::arc::ArcSealer;
use mail_auth::common::headers::HeaderWriter;
use mail_auth::dkim::Canonicalization;
use mail_auth::{ArcOutput, AuthenticatedMessage, AuthenticationResults};

use super::rsa::RsaKey;
use crate::error::{Error, Result};
use crate::store::Domain;

/// Headers the ARC-Message-Signature covers: those a reader sees. Not DKIM-Signature: the queue
/// adds ours on top, which would then be the instance a verifier checks.
const SEALED: [&str; 8] =
    ["From", "To", "Cc", "Subject", "Date", "Message-ID", "MIME-Version", "Content-Type"];

/// The three ARC headers (seal, message signature, authentication results) that go on top of
/// `message`, sealed with `domain`'s RSA DKIM key (what every verifier knows). `chain` is the
/// message's own ARC chain as verified; one that failed cannot be sealed (RFC 8617 5.1.2).
pub fn seal(
    domain: &Domain,
    message: &AuthenticatedMessage<'_>,
    results: &AuthenticationResults<'_>,
    chain: &ArcOutput<'_>,
) -> Result<String> {
    let key = domain.dkim.iter().find(|k| k.algorithm == "rsa-sha256").ok_or_else(|| {
        Error::internal(format!("{} has no RSA DKIM key to seal with", domain.name))
    })?;
    let der = B64.decode(&key.private_key).map_err(Error::internal)?;
    let bad =
        |e: mail_auth::Error| Error::internal(format!("ARC sealing for {}: {e}", domain.name));
    let sealer = ArcSealer::from_key(RsaKey::from_pkcs1_der(&der).map_err(bad)?)
        .domain(&domain.name)
        .selector(&key.selector)
        .headers(SEALED)
        .header_canonicalization(Canonicalization::Relaxed)
        .body_canonicalization(Canonicalization::Relaxed);
    let set = sealer.seal(message, results, chain).map_err(bad)?;
    Ok(set.to_header())
}
