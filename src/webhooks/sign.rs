//! Standard Webhooks signing: secrets are `whsec_` and the base64 of the key; a signature is
//! `v1,` and the base64 of HMAC-SHA256 over `{id}.{timestamp}.{body}`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;

pub const SECRET_PREFIX: &str = "whsec_";

/// A new secret: 32 random bytes.
pub fn new_secret() -> String {
    let key: [u8; 32] = rand::random();
    format!("{SECRET_PREFIX}{}", STANDARD.encode(key))
}

/// The `webhook-signature` value for a post; `None` when `secret` is not valid base64.
pub fn signature(secret: &str, id: &str, timestamp: u64, body: &[u8]) -> Option<String> {
    let key = STANDARD.decode(secret.strip_prefix(SECRET_PREFIX).unwrap_or(secret)).ok()?;
    let key = hmac::Key::new(hmac::HMAC_SHA256, &key);
    let mut context = hmac::Context::with_key(&key);
    context.update(id.as_bytes());
    context.update(b".");
    context.update(timestamp.to_string().as_bytes());
    context.update(b".");
    context.update(body);
    Some(format!("v1,{}", STANDARD.encode(context.sign().as_ref())))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example of the Standard Webhooks specification's reference libraries.
    #[test]
    fn matches_the_reference_example() {
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        let got = signature(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(got.as_deref(), Some("v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="));
    }

    #[test]
    fn new_secrets_hold_32_bytes() {
        let secret = new_secret();
        let key = STANDARD.decode(&secret[SECRET_PREFIX.len()..]).expect("base64"); // ok: test
        assert_eq!(key.len(), 32);
        assert_ne!(secret, new_secret());
    }
}
