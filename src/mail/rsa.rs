//! The RSA-SHA256 DKIM key, signing through aws-lc. RSA-2048 signing is most of what delivery
//! costs, and aws-lc's constant-time assembly does it in about half ring's time on this machine
//! (`benches/micro.rs`, dkim). Everything else (TLS, Ed25519, verification) stays on ring.

use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{RSA_PKCS1_SHA256, RsaKeyPair};
use mail_auth::common::crypto::{Algorithm, CryptoError, Sha256, SigningKey};
use mail_auth::common::headers::Writable;

pub struct RsaKey {
    pair: RsaKeyPair,
    rng: SystemRandom,
}

impl RsaKey {
    /// A PKCS#1 `RSAPrivateKey`, DER-encoded: the form `dkim::generate` stores.
    pub fn from_pkcs1_der(der: &[u8]) -> mail_auth::Result<RsaKey> {
        let pair = RsaKeyPair::from_der(der).map_err(|e| library(e.to_string()))?;
        Ok(RsaKey { pair, rng: SystemRandom::new() })
    }
}

fn library(message: String) -> mail_auth::Error {
    mail_auth::Error::Crypto(CryptoError::Library(message))
}

impl SigningKey for RsaKey {
    type Hasher = Sha256;

    fn sign(&self, input: impl Writable) -> mail_auth::Result<Vec<u8>> {
        // What DKIM signs is the canonicalized header block plus the signature header: a few
        // hundred bytes.
        let mut data = Vec::with_capacity(1024);
        input.write(&mut data);
        let mut signature = vec![0; self.pair.public_modulus_len()];
        self.pair
            .sign(&RSA_PKCS1_SHA256, &self.rng, &data, &mut signature)
            .map_err(|e| library(e.to_string()))?;
        Ok(signature)
    }

    fn algorithm(&self) -> Algorithm {
        Algorithm::RsaSha256
    }
}

#[cfg(test)]
mod tests {
    use aws_lc_rs::signature::KeyPair;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD as B64;
    use ring::signature::{RSA_PKCS1_2048_8192_SHA256, UnparsedPublicKey};

    use super::*;

    #[test]
    fn a_signature_verifies_with_ring_against_the_published_key() {
        let domain = crate::dkim::generate("rsa.test").expect("keys"); // ok: test set-up
        let rsa = domain.dkim.iter().find(|k| k.algorithm == "rsa-sha256").expect("rsa"); // ok: test
        let der = B64.decode(&rsa.private_key).expect("base64"); // ok: test
        let key = RsaKey::from_pkcs1_der(&der).expect("parsed"); // ok: test
        let message: &[u8] = b"from:a@rsa.test\r\nsubject:hi\r\n";
        let signature = key.sign(message).expect("signed"); // ok: test
        assert_eq!(signature.len(), 256);
        let public = key.pair.public_key().as_ref().to_vec();
        let verifier = UnparsedPublicKey::new(&RSA_PKCS1_2048_8192_SHA256, public);
        assert!(verifier.verify(message, &signature).is_ok());
        let mut tampered = signature.clone();
        tampered[10] ^= 1;
        assert!(verifier.verify(message, &tampered).is_err());
        assert!(RsaKey::from_pkcs1_der(b"not a key").is_err());
    }
}
