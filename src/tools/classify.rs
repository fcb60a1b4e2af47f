//! Address traits for validate-emails: role accounts (mail to a function, not a person) and free
//! webmail providers. Small curated lists of the common cases.

const ROLES: &[&str] = &[
    "abuse",
    "accounts",
    "admin",
    "administrator",
    "billing",
    "careers",
    "contact",
    "enquiries",
    "feedback",
    "help",
    "hello",
    "hostmaster",
    "hr",
    "info",
    "inquiries",
    "jobs",
    "legal",
    "marketing",
    "media",
    "newsletter",
    "no-reply",
    "noreply",
    "office",
    "orders",
    "postmaster",
    "press",
    "privacy",
    "root",
    "sales",
    "security",
    "service",
    "support",
    "team",
    "webmaster",
];

const FREE: &[&str] = &[
    "126.com",
    "163.com",
    "aol.com",
    "comcast.net",
    "fastmail.com",
    "free.fr",
    "gmail.com",
    "gmx.com",
    "gmx.de",
    "gmx.net",
    "googlemail.com",
    "hey.com",
    "hotmail.com",
    "icloud.com",
    "laposte.net",
    "libero.it",
    "live.com",
    "mac.com",
    "mail.com",
    "mail.ru",
    "me.com",
    "msn.com",
    "orange.fr",
    "outlook.com",
    "proton.me",
    "protonmail.com",
    "qq.com",
    "rediffmail.com",
    "seznam.cz",
    "t-online.de",
    "tutanota.com",
    "web.de",
    "yahoo.co.uk",
    "yahoo.com",
    "yandex.com",
    "yandex.ru",
    "zoho.com",
];

/// Whether the local part names a function (`info`, `sales+eu`, `no-reply`...).
pub fn is_role_account(local: &str) -> bool {
    let base = local.split('+').next().unwrap_or(local).to_ascii_lowercase();
    ROLES.contains(&base.as_str())
}

pub fn is_free_provider(domain: &str) -> bool {
    FREE.contains(&domain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_roles_and_free_providers() {
        assert!(is_role_account("Info"));
        assert!(is_role_account("sales+emea"));
        assert!(!is_role_account("jane.doe"));
        assert!(is_free_provider("gmail.com"));
        assert!(!is_free_provider("example.com"));
        let mut sorted = FREE.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, FREE, "keep the list sorted");
    }
}
