//! Per-provider shaping: `[shaping]` holds the pause after a throttling answer, and
//! `[shaping.<group>]` the limits of one group of mail exchangers. The built-in groups (`gmail`,
//! `microsoft`, `yahoo`, `icloud`) match MX host names by suffix; `default` gives the limits of
//! every other MX host, each of which is a group of its own. New groups may be named in the file
//! or the environment with their own `mx_suffixes`.

use std::time::Duration;

use super::parse::{list, parse_duration, positive};

#[derive(Debug, Clone)]
pub struct Shaping {
    /// The first pause of a group that answered "too many" or "rate"; each further throttling
    /// answer before a delivery succeeds doubles it, up to `pause_max`.
    pub pause_initial: Duration,
    pub pause_max: Duration,
    /// The named groups, the built-in ones first, then `default`.
    pub groups: Vec<Group>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub name: String,
    /// MX host name suffixes (`google.com` matches `gmail-smtp-in.l.google.com` and
    /// `google.com` itself, never `notgoogle.com`). Empty for `default`.
    pub mx_suffixes: Vec<String>,
    /// Sessions open at once to the group's hosts.
    pub connections: usize,
    /// Messages a minute to the group; 0 is no limit.
    pub per_minute: u32,
}

/// The name of the limits every MX host outside a named group gets.
pub const DEFAULT_GROUP: &str = "default";

fn group(name: &str, suffixes: &[&str], connections: usize, per_minute: u32) -> Group {
    Group {
        name: name.to_owned(),
        mx_suffixes: suffixes.iter().map(|s| (*s).to_owned()).collect(),
        connections,
        per_minute,
    }
}

impl Default for Shaping {
    fn default() -> Self {
        Shaping {
            pause_initial: Duration::from_secs(60),
            pause_max: Duration::from_secs(3600),
            groups: vec![
                group("gmail", &["google.com", "googlemail.com"], 10, 600),
                group("microsoft", &["outlook.com", "hotmail.com"], 5, 300),
                group("yahoo", &["yahoodns.net", "yahoo.com"], 5, 300),
                group("icloud", &["icloud.com", "me.com"], 4, 120),
                group(DEFAULT_GROUP, &[], 8, 0),
            ],
        }
    }
}

impl Shaping {
    fn group_mut(&mut self, name: &str) -> &mut Group {
        let at = match self.groups.iter().position(|g| g.name == name) {
            Some(at) => at,
            None => {
                let fallback = self.groups.iter().find(|g| g.name == DEFAULT_GROUP);
                let (connections, per_minute) = fallback.map_or((8, 0), |g| (g.connections, 0));
                // A new group goes before `default`, so it is matched first.
                let at = self.groups.len().saturating_sub(1);
                self.groups.insert(at, group(name, &[], connections, per_minute));
                at
            }
        };
        &mut self.groups[at]
    }

    /// Sets `shaping.<group>.<field>`; `None` when `key` is not such a key.
    pub(super) fn set(&mut self, key: &str, value: &str) -> Option<Result<(), String>> {
        let rest = key.strip_prefix("shaping.")?;
        let (name, field) = rest.split_once('.')?;
        Some(self.set_field(name, field, value))
    }

    /// The key named by the variable `EDGEMAIL_SHAPING_<GROUP>_<FIELD>`, if it is one.
    pub(super) fn env_key(variable: &str) -> Option<String> {
        let rest = variable.strip_prefix("EDGEMAIL_SHAPING_")?.to_ascii_lowercase();
        ["connections", "per_minute", "mx_suffixes"].iter().find_map(|field| {
            let name = rest.strip_suffix(field)?.strip_suffix('_')?;
            Some(format!("shaping.{name}.{field}"))
        })
    }

    fn set_field(&mut self, name: &str, field: &str, value: &str) -> Result<(), String> {
        let valid = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_';
        if name.is_empty() || !name.chars().all(valid) {
            return Err("a group name is lower-case letters, digits and _".into());
        }
        match field {
            "connections" => self.group_mut(name).connections = positive(value)?,
            "per_minute" => {
                self.group_mut(name).per_minute =
                    value.parse().map_err(|_| "expected a whole number (0: no limit)")?
            }
            "mx_suffixes" if name == DEFAULT_GROUP => {
                return Err("the default group matches every other MX host".into());
            }
            "mx_suffixes" => {
                let suffixes = list(value)
                    .map(|s| s.trim_start_matches('.'))
                    .map(|s| crate::address::normalize_domain(s).map_err(|e| format!("{s:?}: {e}")))
                    .collect::<Result<_, _>>()?;
                self.group_mut(name).mx_suffixes = suffixes;
            }
            _ => return Err("expected connections, per_minute or mx_suffixes".into()),
        }
        Ok(())
    }
}

/// `shaping.pause_initial` and `shaping.pause_max`.
pub(super) fn set_pause(s: &mut Shaping, max: bool, value: &str) -> Result<(), String> {
    let d = parse_duration(value)?.max(Duration::from_millis(10));
    if max {
        s.pause_max = d
    } else {
        s.pause_initial = d
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_are_set_by_key_and_new_ones_go_before_default() {
        let mut s = Shaping::default();
        assert_eq!(s.set("shaping.gmail.per_minute", "5"), Some(Ok(())));
        assert_eq!(s.set("shaping.corp.mx_suffixes", ".corp.example, mx.other"), Some(Ok(())));
        assert!(matches!(s.set("shaping.corp.connections", "0"), Some(Err(_))));
        assert!(matches!(s.set("shaping.Bad.connections", "1"), Some(Err(_))));
        assert!(matches!(s.set("shaping.default.mx_suffixes", "a.b"), Some(Err(_))));
        assert_eq!(s.set("http.listen", "x"), None);
        let names: Vec<&str> = s.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["gmail", "microsoft", "yahoo", "icloud", "corp", "default"]);
        assert_eq!(s.groups[0].per_minute, 5);
        assert_eq!(s.groups[4].mx_suffixes, ["corp.example", "mx.other"]);
    }

    #[test]
    fn variables_name_group_and_field() {
        let key = Shaping::env_key("EDGEMAIL_SHAPING_MY_GROUP_PER_MINUTE");
        assert_eq!(key.as_deref(), Some("shaping.my_group.per_minute"));
        assert_eq!(Shaping::env_key("EDGEMAIL_SHAPING_PAUSE_MAX"), None);
        assert_eq!(Shaping::env_key("EDGEMAIL_SHAPING_CONNECTIONS"), None);
    }
}
