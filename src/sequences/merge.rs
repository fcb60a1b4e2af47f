//! `{{fieldName}}` placeholders. Values come from the enrollment's merge fields plus `email`;
//! in HTML they are escaped so a contact's name cannot inject markup, in a subject line breaks
//! become spaces so a value cannot add a header. `{{name|fallback}}` uses the fallback when the
//! field is missing or empty; a placeholder without a value or fallback becomes empty (enroll
//! skips such contacts, `required`). `{{spin: Hi | Hello | Hey}}` picks one option, the same
//! one for an enrollment every time the same spin text appears (in any of its steps).

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Subject,
    Html,
    /// A plain-text body: values as they are.
    Text,
}

/// What placeholders are filled from for one enrollment.
pub struct Merge<'a> {
    pub fields: &'a BTreeMap<String, String>,
    pub email: &'a str,
    /// The enrollment's id: spintax picks are a function of it, so they are stable across steps.
    pub seed: &'a str,
}

/// Whether `name` can be a placeholder name (so `{{ }}` or `{{a b}}` stay literal text).
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A placeholder's content read: a field with an optional fallback, or spintax options.
enum Placeholder<'t> {
    Field { name: &'t str, fallback: Option<&'t str> },
    Spin(&'t str),
}

fn placeholder(inner: &str) -> Option<Placeholder<'_>> {
    let trimmed = inner.trim();
    if let Some(options) = trimmed.strip_prefix("spin:") {
        return Some(Placeholder::Spin(options));
    }
    let (name, fallback) = match trimmed.split_once('|') {
        Some((name, fallback)) => (name.trim(), Some(fallback.trim())),
        None => (trimmed, None),
    };
    is_name(name).then_some(Placeholder::Field { name, fallback })
}

/// Calls `each` with the text before each placeholder and the placeholder; returns the rest.
fn walk<'t>(template: &'t str, mut each: impl FnMut(&'t str, Option<Placeholder<'t>>)) -> &'t str {
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else { break };
        match placeholder(&after[..close]) {
            Some(p) => {
                each(&rest[..open], Some(p));
                rest = &after[close + 2..];
            }
            None => {
                // Not a placeholder: keep one brace and look again from the next one.
                each(&rest[..open + 1], None);
                rest = &rest[open + 1..];
            }
        }
    }
    rest
}

pub fn fill(template: &str, merge: &Merge<'_>, target: Target) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let rest = walk(template, |before, p| {
        out.push_str(before);
        match p {
            None => {}
            Some(Placeholder::Spin(options)) => out.push_str(spin(options, merge.seed)),
            Some(Placeholder::Field { name, fallback }) => {
                let value = if name == "email" {
                    Some(merge.email)
                } else {
                    merge.fields.get(name).map(String::as_str)
                };
                match (value.filter(|v| !v.trim().is_empty()), fallback) {
                    (Some(v), _) => push_value(&mut out, v, target),
                    // The fallback is the template's own text, like the words around it.
                    (None, Some(f)) => out.push_str(f),
                    (None, None) => {}
                }
            }
        }
    });
    out.push_str(rest);
    out
}

/// The fields `template` uses without a fallback (`email` is always there).
pub fn required(template: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    walk(template, |_, p| {
        if let Some(Placeholder::Field { name, fallback: None }) = p
            && name != "email"
            && !out.iter().any(|n| n == name)
        {
            out.push(name.to_owned());
        }
    });
    out
}

/// One of the `|`-separated options, chosen by a hash of the seed and the options' text.
fn spin<'t>(options: &'t str, seed: &str) -> &'t str {
    let count = options.split('|').count();
    let digest =
        Sha256::new().chain_update(seed).chain_update([0]).chain_update(options).finalize();
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let at = (u64::from_be_bytes(first) % count as u64) as usize;
    options.split('|').nth(at).unwrap_or("").trim()
}

fn push_value(out: &mut String, value: &str, target: Target) {
    for c in value.chars() {
        match (target, c) {
            (Target::Html, '&') => out.push_str("&amp;"),
            (Target::Html, '<') => out.push_str("&lt;"),
            (Target::Html, '>') => out.push_str("&gt;"),
            (Target::Html, '"') => out.push_str("&quot;"),
            (Target::Html, '\'') => out.push_str("&#39;"),
            (Target::Subject, '\r' | '\n' | '\t') => out.push(' '),
            _ => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn fill(template: &str, f: &BTreeMap<String, String>, email: &str, target: Target) -> String {
        super::fill(template, &Merge { fields: f, email, seed: "enr1" }, target)
    }

    #[test]
    fn fallbacks_for_missing_and_empty_fields() {
        let f = fields(&[("firstName", " "), ("co", "Acme")]);
        let html = fill("Hi {{firstName|there}}, {{co|your team}}!", &f, "", Target::Html);
        assert_eq!(html, "Hi there, Acme!");
        assert_eq!(required("{{a}} {{b|x}} {{email}} {{a}} {{spin: x | y}} {{c }}"), ["a", "c"]);
    }

    #[test]
    fn spin_is_stable_per_enrollment_and_varies_across_them() {
        let f = fields(&[]);
        let t = "{{spin: Hi | Hello | Hey}} there";
        let pick =
            |seed: &str| super::fill(t, &Merge { fields: &f, email: "", seed }, Target::Html);
        assert_eq!(pick("enr1"), pick("enr1"));
        let seen: std::collections::BTreeSet<String> =
            (0..60).map(|i| pick(&format!("enr{i}"))).collect();
        assert_eq!(seen.len(), 3, "every option is used: {seen:?}");
        assert!(seen.iter().all(|s| s.ends_with(" there") && !s.contains('|')));
    }

    #[test]
    fn fills_escapes_and_blanks() {
        let f = fields(&[("firstName", "Ada <b>&"), ("co", "Engines")]);
        assert_eq!(
            fill("<p>Hi {{firstName}} of {{ co }}, {{missing}}!</p>", &f, "a@x.test", Target::Html),
            "<p>Hi Ada &lt;b&gt;&amp; of Engines, !</p>"
        );
        assert_eq!(fill("For {{email}}", &f, "a@x.test", Target::Subject), "For a@x.test");
    }

    #[test]
    fn subject_values_cannot_break_lines() {
        let f = fields(&[("n", "a\r\nBcc: x@y")]);
        assert_eq!(fill("Hi {{n}}", &f, "", Target::Subject), "Hi a  Bcc: x@y");
    }

    #[test]
    fn malformed_placeholders_stay_literal() {
        let f = fields(&[("a", "1")]);
        assert_eq!(fill("{{}} {{a b}} {{a}} {{a", &f, "", Target::Html), "{{}} {{a b}} 1 {{a");
        assert_eq!(fill("{{{a}}}", &f, "", Target::Html), "{1}");
    }
}
