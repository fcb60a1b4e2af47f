//! Refusing `null` in request bodies. serde reads `null` as an absent `Option` field, so without
//! this check `{"mailboxes": null}` would quietly mean "the default", while the document says the
//! field is a string or an array. Only the fields a caller names may be null.

use serde_json::Value;

use crate::error::{Error, Result};

/// Refuses the first `null` in `body` (at any depth) whose path is not in `nullable`; paths use
/// the same form as the other field errors (`steps[0].subject`). A body that is not valid JSON
/// passes: the parser that follows reports it.
pub fn refuse_nulls(body: &[u8], nullable: &[&str]) -> Result<()> {
    // Most bodies hold no `null` at all; skip the second parse for them.
    if !body.windows(4).any(|w| w == b"null") {
        return Ok(());
    }
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return Ok(());
    };
    match first_null(&value, String::new()) {
        Some(path) if !nullable.contains(&path.as_str()) => Err(Error::invalid(
            format!("invalid field `{path}`: null is not allowed"),
            format!("leave `{path}` out to use its default, or give it a value"),
        )),
        _ => Ok(()),
    }
}

fn first_null(value: &Value, path: String) -> Option<String> {
    match value {
        Value::Null => Some(path),
        Value::Array(items) => {
            items.iter().enumerate().find_map(|(i, item)| first_null(item, format!("{path}[{i}]")))
        }
        Value::Object(map) => map.iter().find_map(|(key, item)| {
            let at = if path.is_empty() { key.clone() } else { format!("{path}.{key}") };
            first_null(item, at)
        }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(body: &str, nullable: &[&str]) -> Option<String> {
        refuse_nulls(body.as_bytes(), nullable).err().map(|e| e.to_string())
    }

    #[test]
    fn names_the_null_field_at_any_depth() {
        let e = refused(r#"{"name":"a","mailboxes":null}"#, &[]).unwrap_or_default();
        assert!(e.contains("`mailboxes`"), "{e}");
        let e = refused(r#"{"steps":[{"a":1},{"subject":null}]}"#, &[]).unwrap_or_default();
        assert!(e.contains("`steps[1].subject`"), "{e}");
    }

    #[test]
    fn passes_allowed_nulls_strings_and_bad_json() {
        assert_eq!(refused(r#"{"displayName":null}"#, &["displayName"]), None);
        assert_eq!(refused(r#"{"email":"null@example.com"}"#, &[]), None);
        assert_eq!(refused(r#"{"a":null"#, &[]), None);
    }
}
