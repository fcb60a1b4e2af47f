//! CSRF tokens. A logged-in form carries its session's token; the login form, which has no
//! session yet, carries a token that must equal the one in a short-lived cookie set with the
//! form (double submit). Both cookies are SameSite=Strict as well, so a forged post needs to
//! beat two defences.

use super::form::Form;
use crate::http::Ctx;

/// The cookie holding the login form's token.
pub const LOGIN_COOKIE: &str = "em_login";

/// Equal in time that depends on the length only.
pub fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether a posted form carries `expected` as its `csrf` field.
pub fn valid(form: &Form, expected: &str) -> bool {
    form.get("csrf").is_some_and(|sent| !sent.is_empty() && same(sent, expected))
}

/// Whether a posted login form matches the token of its cookie.
pub fn valid_login(ctx: &Ctx, form: &Form) -> bool {
    super::session::cookie(&ctx.headers, LOGIN_COOKIE).is_some_and(|c| valid(form, &c))
}

/// A fresh token.
pub fn token() -> String {
    crate::ids::secret("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_whole_tokens() {
        assert!(same("abc", "abc"));
        assert!(!same("abc", "abd"));
        assert!(!same("abc", "ab"));
        let form = Form::parse(b"csrf=abc&x=1");
        assert!(valid(&form, "abc"));
        assert!(!valid(&form, "abcd"));
        assert!(!valid(&Form::parse(b"csrf="), ""));
    }
}
