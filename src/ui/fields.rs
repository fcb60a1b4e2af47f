//! A refused form shown again: the values the user typed come back, and the API's message goes
//! beside the field it names (the API names fields in backticks, as in "invalid `address`: ...").
//! The message stays in the page's alert only when it names no field of the form.

use maud::{Markup, html};

use super::form::Form;

/// What a refused form leaves for the page that shows it again.
#[derive(Clone, Debug)]
pub struct Echo {
    /// The form's `action`: only that form takes the values back.
    pub action: String,
    /// What was typed (the CSRF token left out).
    pub values: Vec<(String, String)>,
    /// The fields the message names, in its order: the top-level name of each backticked path.
    pub named: Vec<String>,
    /// Set once the page put the message beside a field, so the alert does not repeat it.
    pub beside_field: bool,
}

impl Echo {
    pub fn new(action: &str, form: &Form, message: &str) -> Echo {
        let values =
            form.pairs().iter().filter(|(name, _)| name != "csrf").cloned().collect::<Vec<_>>();
        Echo {
            action: action.to_owned(),
            values,
            named: named_fields(message),
            beside_field: false,
        }
    }
}

/// The fields a message names: each `` `path` ``'s first segment (`steps[0].subject` names
/// `steps`), once each, in order.
pub fn named_fields(message: &str) -> Vec<String> {
    let mut named: Vec<String> = Vec::new();
    let mut parts = message.split('`');
    parts.next();
    while let (Some(inside), Some(_)) = (parts.next(), parts.next()) {
        let root = inside.split(['.', '[']).next().unwrap_or_default();
        let plain = !root.is_empty() && root.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if plain && !named.iter().any(|n| n == root) {
            named.push(root.to_owned());
        }
    }
    named
}

/// A form as the page renders it: empty, or given back after a refusal.
#[derive(Default)]
pub struct Refill {
    values: Vec<(String, String)>,
    field: Option<String>,
    message: String,
}

impl Refill {
    pub fn new(values: Vec<(String, String)>, field: Option<String>, message: String) -> Refill {
        Refill { values, field, message }
    }

    /// The value typed into a field, to fill it again.
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }

    /// Whether a checkbox or option `name` = `value` was chosen.
    pub fn chose(&self, name: &str, value: &str) -> bool {
        self.values.iter().any(|(k, v)| k == name && v == value)
    }

    fn refused(&self, name: &str) -> bool {
        self.field.as_deref() == Some(name)
    }

    /// `aria-invalid` of a field: present only on the refused one.
    pub fn invalid(&self, name: &str) -> Option<&'static str> {
        self.refused(name).then_some("true")
    }

    /// `aria-describedby` of a field: the id of its message, when it has one.
    pub fn described(&self, name: &str) -> Option<String> {
        self.refused(name).then(|| error_id(name))
    }

    /// The refused field takes the focus, so a screen reader reads its message at once.
    pub fn focus(&self, name: &str) -> bool {
        self.refused(name)
    }

    /// A labelled input: filled again after a refusal, marked and described when refused.
    pub fn input(&self, kind: &str, name: &str, label: &str, required: bool) -> Markup {
        html! {
            label for=(name) { (label) }
            input id=(name) type=(kind) name=(name) required[required] value=[self.value(name)]
                aria-invalid=[self.invalid(name)] aria-describedby=[self.described(name)]
                autofocus[self.focus(name)];
            (self.error(name))
        }
    }

    /// The message under a field, or nothing.
    pub fn error(&self, name: &str) -> Markup {
        html! {
            @if self.refused(name) {
                p.field-error id=(error_id(name)) { (self.message) }
            }
        }
    }
}

fn error_id(name: &str) -> String {
    format!("{name}-error")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fields_a_message_names() {
        assert_eq!(named_fields("invalid `address`: two dots"), ["address"]);
        assert_eq!(named_fields("`to`, `cc` and `bcc` have 9 recipients"), ["to", "cc", "bcc"]);
        assert_eq!(named_fields("`steps[0].subject` and `steps[1]` (fix `steps`)"), ["steps"]);
        assert_eq!(named_fields("invalid field `sendingWindow.days`"), ["sendingWindow"]);
        assert!(named_fields("mailbox a@b already exists").is_empty());
        assert!(named_fields("an open ` quote").is_empty());
        assert!(named_fields("code `Authorization: Bearer <key>`").is_empty());
    }

    #[test]
    fn only_the_refused_field_is_marked() {
        let refill = Refill::new(
            vec![("address".into(), "a..b".into())],
            Some("address".into()),
            "bad".into(),
        );
        assert_eq!(refill.value("address"), Some("a..b"));
        assert_eq!(refill.invalid("address"), Some("true"));
        assert_eq!(refill.described("address").as_deref(), Some("address-error"));
        assert_eq!(refill.invalid("displayName"), None);
        assert!(refill.error("address").into_string().contains("id=\"address-error\""));
        assert!(refill.error("displayName").into_string().is_empty());
    }
}
