//! Input conventions shared by the resources: "a string or an array of strings" fields, names,
//! sender addresses and recipient lists.

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};

use crate::address;
use crate::error::{Error, Result};

/// A field that takes `"a, b"` or `["a", "b"]`.
#[derive(Debug, Clone)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl<'de> de::Deserialize<'de> for OneOrMany {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = OneOrMany;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string or an array of strings")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<OneOrMany, E> {
                Ok(OneOrMany::One(v.to_owned()))
            }
            fn visit_seq<A: SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> std::result::Result<OneOrMany, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
                while let Some(item) = seq.next_element::<String>()? {
                    items.push(item);
                }
                Ok(OneOrMany::Many(items))
            }
        }
        d.deserialize_any(V)
    }
}

impl OneOrMany {
    /// The entries, trimmed, blanks dropped; a single string is split on commas and newlines.
    pub fn entries(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(s) => address::split_list(s).collect(),
            OneOrMany::Many(items) => {
                items.iter().map(|s| s.trim()).filter(|s| !s.is_empty()).collect()
            }
        }
    }
}

/// Validates recipient addresses; returns them as `local@domain` with the domain lower-cased.
pub fn recipients(field: &str, list: &OneOrMany) -> Result<Vec<String>> {
    list.entries()
        .into_iter()
        .map(|entry| match address::parse(entry) {
            Ok(a) => Ok(format!("{}@{}", a.local, a.domain)),
            Err(why) => Err(Error::invalid(
                format!("invalid address {entry:?} in `{field}`: {why}"),
                format!("`{field}` takes addresses such as jane@example.com, separated by commas or newlines, or as an array"),
            )),
        })
        .collect()
}

/// A display name or title: trimmed, 1 to `max` characters, no control characters (a line break
/// in a name would be a header injection once it reaches a message).
pub fn name(field: &str, value: &str, max: usize) -> Result<String> {
    let value = value.trim();
    if value.is_empty() {
        return Err(Error::invalid(
            format!("`{field}` is empty"),
            format!("give `{field}` a value"),
        ));
    }
    if value.chars().count() > max {
        return Err(Error::invalid(
            format!("`{field}` is longer than {max} characters"),
            format!("shorten `{field}`"),
        ));
    }
    if value.chars().any(char::is_control) {
        return Err(Error::invalid(
            format!("`{field}` contains a control character or line break"),
            format!("write `{field}` on one line"),
        ));
    }
    Ok(value.to_owned())
}

/// A `from` field: a full address on the key's own domain, lower-cased. Whether it is a mailbox
/// is the caller's check (it needs the store).
pub fn sender(from: &str, domain: &str) -> Result<String> {
    let from = from.trim().to_ascii_lowercase();
    match address::parse(&from) {
        Ok(a) if a.domain == domain => Ok(from),
        Ok(_) => Err(Error::invalid(
            format!("`from` {from} is not on your domain {domain}"),
            "send from a mailbox of your domain (GET /v1/mailboxes lists them)",
        )),
        Err(why) => {
            Err(Error::invalid(format!("invalid `from`: {why}"), "give a full mailbox address"))
        }
    }
}

/// For `#[serde(default, deserialize_with = "present")]` on an optional field that must not be
/// null: absent is `None`, and null is refused (naming the field) like any other wrong type.
pub fn present<'de, D, T>(d: D) -> std::result::Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: de::Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

/// For `#[serde(default, deserialize_with = "nullable")]` on a patch field: absent is `None`,
/// null is `Some(None)` (clear it), a value is `Some(Some(v))`.
pub fn nullable<'de, D, T>(d: D) -> std::result::Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: de::Deserialize<'de>,
{
    <Option<T> as de::Deserialize>::deserialize(d).map(Some)
}

/// The most targets an alias or a forward takes.
pub const MAX_TARGETS: usize = 50;

/// Validated forwarding targets: full addresses, lower-cased (the local part too: hosted
/// mailboxes are so, and outside ones are compared so), without repeats, `min` to 50 of them.
pub fn targets(field: &str, list: &[String], min: usize) -> Result<Vec<String>> {
    if list.len() < min || list.len() > MAX_TARGETS {
        return Err(Error::invalid(
            format!("`{field}` takes {min} to {MAX_TARGETS} addresses"),
            "give full addresses such as jane@example.com",
        ));
    }
    let mut out: Vec<String> = Vec::with_capacity(list.len());
    for raw in list {
        let parsed = address::parse(raw).map_err(|why| {
            Error::invalid(
                format!("invalid address in `{field}`: {why}"),
                "give full addresses such as jane@example.com",
            )
        })?;
        let target = format!("{}@{}", parsed.local.to_ascii_lowercase(), parsed.domain);
        if !out.contains(&target) {
            out.push(target);
        }
    }
    Ok(out)
}
