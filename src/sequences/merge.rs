//! `{{fieldName}}` placeholders. Values come from the enrollment's merge fields plus `email`;
//! in HTML they are escaped so a contact's name cannot inject markup, in a subject line breaks
//! become spaces so a value cannot add a header. A placeholder without a value becomes empty.

use std::collections::BTreeMap;

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Target {
    Subject,
    Html,
}

/// Whether `name` can be a placeholder name (so `{{ }}` or `{{a b}}` stay literal text).
fn is_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

pub fn fill(
    template: &str,
    fields: &BTreeMap<String, String>,
    email: &str,
    target: Target,
) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        let after = &rest[open + 2..];
        let Some(close) = after.find("}}") else { break };
        let name = after[..close].trim();
        out.push_str(&rest[..open]);
        if is_name(name) {
            let value =
                if name == "email" { Some(email) } else { fields.get(name).map(String::as_str) };
            push_value(&mut out, value.unwrap_or(""), target);
            rest = &after[close + 2..];
        } else {
            // Not a placeholder: keep one brace and look again from the next one.
            out.push('{');
            rest = &rest[open + 1..];
        }
    }
    out.push_str(rest);
    out
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
