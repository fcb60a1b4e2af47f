//! The policy file (RFC 8461 section 3.2): `key: value` lines, its mode, its MX patterns and how
//! long it may be cached, and whether a mail exchanger's name is one the policy lists.

use std::time::Duration;

/// The longest `max_age` the RFC allows (about a year); longer values are refused.
const MAX_AGE_LIMIT: u64 = 31_557_600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Deliver only over verified TLS to a listed MX; otherwise defer.
    Enforce,
    /// Deliver as without a policy, but report what enforcing would have refused.
    Testing,
    /// The domain withdrew its policy.
    None,
}

impl Mode {
    pub fn label(self) -> &'static str {
        match self {
            Mode::Enforce => "enforce",
            Mode::Testing => "testing",
            Mode::None => "none",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub mode: Mode,
    /// Host names and `*.` wildcards, lower-cased, without a trailing dot.
    pub mx: Vec<String>,
    pub max_age: Duration,
}

impl Policy {
    /// Parses a policy body; the error says which field is missing or wrong.
    pub fn parse(text: &str) -> Result<Policy, String> {
        let (mut version, mut mode, mut max_age) = (None, None, None);
        let mut mx = Vec::new();
        for line in text.split('\n') {
            let line = line.trim_end_matches('\r').trim();
            if line.is_empty() {
                continue;
            }
            let Some((key, value)) = line.split_once(':') else {
                return Err(format!("the line {line:?} is not `key: value`"));
            };
            let value = value.trim();
            // The first of a repeated field counts; unknown fields are for later versions.
            match key.trim() {
                "version" => version = version.or(Some(value)),
                "mode" => mode = mode.or(Some(value)),
                "max_age" => max_age = max_age.or(Some(value)),
                "mx" => mx.push(pattern(value)?),
                _ => {}
            }
        }
        if version != Some("STSv1") {
            return Err("the version is not STSv1".into());
        }
        let mode = match mode {
            Some("enforce") => Mode::Enforce,
            Some("testing") => Mode::Testing,
            Some("none") => Mode::None,
            Some(other) => {
                return Err(format!("the mode {other:?} is not enforce, testing or none"));
            }
            None => return Err("the policy has no mode".into()),
        };
        let max_age = max_age
            .filter(|v| (1..=10).contains(&v.len()) && v.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|v| v.parse::<u64>().ok())
            .ok_or("max_age is missing or not a number of seconds")?;
        if mx.is_empty() && mode != Mode::None {
            return Err("the policy lists no mx".into());
        }
        let max_age = Duration::from_secs(max_age.min(MAX_AGE_LIMIT));
        Ok(Policy { mode, mx, max_age })
    }

    /// Whether `host` is a mail exchanger the policy lists: equal to a pattern, or, for
    /// `*.example.com`, exactly one label in front of `example.com`.
    pub fn lists(&self, host: &str) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.mx.iter().any(|p| match p.strip_prefix("*.") {
            Some(parent) => host
                .split_once('.')
                .is_some_and(|(label, rest)| !label.is_empty() && rest == parent),
            None => *p == host,
        })
    }
}

/// An `mx` value: a host name, optionally behind `*.`.
fn pattern(value: &str) -> Result<String, String> {
    let p = value.trim_end_matches('.').to_ascii_lowercase();
    let name = p.strip_prefix("*.").unwrap_or(&p);
    let valid = !name.is_empty()
        && name.split('.').all(|l| {
            (1..=63).contains(&l.len()) && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        });
    if valid { Ok(p) } else { Err(format!("the mx pattern {value:?} is not a host name")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = "version: STSv1\r\nmode: enforce\r\nmx: mail.example.com\r\n\
                        mx: *.Example.NET.\r\nmax_age: 86400\r\n";

    #[test]
    fn a_policy_parses_with_its_fields() {
        let p = Policy::parse(GOOD).expect("valid"); // ok: test
        assert_eq!(p.mode, Mode::Enforce);
        assert_eq!(p.mx, ["mail.example.com", "*.example.net"]);
        assert_eq!(p.max_age, Duration::from_secs(86_400));
        let lf = "version: STSv1\nmode: testing\nmx: a.test\nmax_age: 60\nextension: x\n";
        assert_eq!(Policy::parse(lf).map(|p| p.mode), Ok(Mode::Testing));
        let none = "version: STSv1\nmode: none\nmax_age: 60\n";
        assert_eq!(Policy::parse(none).map(|p| p.mode), Ok(Mode::None));
        let long = "version: STSv1\nmode: enforce\nmx: a.test\nmax_age: 9999999999\n";
        assert_eq!(Policy::parse(long).map(|p| p.max_age.as_secs()), Ok(MAX_AGE_LIMIT));
    }

    #[test]
    fn broken_policies_are_refused() {
        for bad in [
            "",
            "mode: enforce\nmx: a.test\nmax_age: 60\n",
            "version: STSv2\nmode: enforce\nmx: a.test\nmax_age: 60\n",
            "version: STSv1\nmode: strict\nmx: a.test\nmax_age: 60\n",
            "version: STSv1\nmode: enforce\nmax_age: 60\n",
            "version: STSv1\nmode: enforce\nmx: a.test\n",
            "version: STSv1\nmode: enforce\nmx: a.test\nmax_age: -1\n",
            "version: STSv1\nmode: enforce\nmx: a test\nmax_age: 60\n",
            "version: STSv1\nmode: enforce\nmx: *.\nmax_age: 60\n",
            "<html>not a policy</html>",
        ] {
            assert!(Policy::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn wildcards_match_one_label_only() {
        let p = Policy::parse(GOOD).expect("valid"); // ok: test
        assert!(p.lists("mail.example.com"));
        assert!(p.lists("MAIL.example.com."));
        assert!(!p.lists("other.example.com"));
        assert!(!p.lists("mail.example.com.evil.test"));
        assert!(p.lists("mx1.example.net"));
        assert!(!p.lists("a.mx1.example.net"));
        assert!(!p.lists("example.net"));
        assert!(!p.lists(".example.net"));
    }
}
