//! The body of `POST /v1/sequences/{id}/enroll`: the spec's contact array, checked for count,
//! merge-field sizes and time zones, and `skipContacted` (extensions.md, "Outreach").

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::{Error, Result};
use crate::http::request::parse_json;
use crate::sequences::window;
use crate::store::EnrollInput;

use super::sequence_input::MAX_ENROLL;

const MAX_MERGE_FIELDS: usize = 50;
const MAX_MERGE_VALUE: usize = 2000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnrollRequest {
    /// The spec's array, or `"all"` (the whole contact book).
    #[serde(default)]
    contacts: Option<serde_json::Value>,
    /// Contacts of the contact book by id.
    #[serde(default, rename = "contactIds")]
    contact_ids: Option<Vec<String>>,
    /// Skip addresses that replied to, bounced in, or are active in another sequence of the
    /// domain (`contacted`); on unless `false`.
    #[serde(default = "yes", rename = "skipContacted")]
    skip_contacted: bool,
}

fn yes() -> bool {
    true
}

/// A validated enroll request. `contacts` holds the given contacts; with `from_book` set they
/// are still to be read from the contact book (`enroll_contacts::resolve`).
#[derive(Debug)]
pub struct Enroll {
    pub contacts: Vec<EnrollInput>,
    pub skip_contacted: bool,
    pub from_book: Option<FromBook>,
}

/// Contacts to take from the contact book.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromBook {
    All,
    Ids(Vec<String>),
}

/// The most contact ids one request names.
pub const MAX_CONTACT_IDS: usize = 10_000;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct EnrollContact {
    email: String,
    #[serde(default, rename = "mergeFields")]
    merge_fields: BTreeMap<String, String>,
    #[serde(default)]
    timezone: Option<String>,
}

/// The contacts of an enroll request, checked for count, merge-field sizes and time zones
/// (addresses are screened afterwards, like recipients of a send).
pub fn parse_enroll(body: &[u8]) -> Result<Enroll> {
    let input: EnrollRequest = parse_json(body)?;
    let skip_contacted = input.skip_contacted;
    let given = match (input.contacts, input.contact_ids) {
        (Some(serde_json::Value::String(all)), None) if all == "all" => {
            return Ok(Enroll {
                contacts: Vec::new(),
                skip_contacted,
                from_book: Some(FromBook::All),
            });
        }
        (None, Some(ids)) => {
            if ids.is_empty() || ids.len() > MAX_CONTACT_IDS {
                return Err(Error::invalid(
                    format!("`contactIds` must hold 1 to {MAX_CONTACT_IDS} ids; got {}", ids.len()),
                    "split larger lists over several requests, or give `contacts: \"all\"`",
                ));
            }
            let from_book = Some(FromBook::Ids(ids));
            return Ok(Enroll { contacts: Vec::new(), skip_contacted, from_book });
        }
        (Some(list @ serde_json::Value::Array(_)), None) => serde_json::from_value::<
            Vec<EnrollContact>,
        >(list)
        .map_err(|e| {
            Error::invalid(format!("invalid `contacts`: {e}"), "see POST /v1/sequences/{id}/enroll")
        })?,
        _ => {
            return Err(Error::invalid(
                "give exactly one of `contacts` (an array, or \"all\") and `contactIds`",
                "e.g. {\"contacts\": \"all\"} enrolls the whole contact book",
            ));
        }
    };
    let n = given.len();
    if n == 0 || n > MAX_ENROLL {
        return Err(Error::invalid(
            format!("`contacts` must hold 1 to {MAX_ENROLL} entries; got {n}"),
            "split larger lists over several requests",
        ));
    }
    let mut out = Vec::with_capacity(n);
    for (i, c) in given.into_iter().enumerate() {
        merge_fields(i, &c.merge_fields)?;
        let timezone = match c.timezone {
            None => None,
            Some(name) => match window::zone(&name) {
                Some(zone) => Some(zone.iana_name().map_or(name, str::to_owned)),
                None => {
                    return Err(Error::invalid(
                        format!("`contacts[{i}].timezone` is not a known IANA time zone: {name:?}"),
                        "give a name such as Europe/Berlin, or leave it out for the window's",
                    ));
                }
            },
        };
        out.push(EnrollInput { email: c.email, merge_fields: c.merge_fields, timezone });
    }
    Ok(Enroll { contacts: out, skip_contacted, from_book: None })
}

fn merge_fields(i: usize, fields: &BTreeMap<String, String>) -> Result<()> {
    if fields.len() > MAX_MERGE_FIELDS {
        return Err(Error::invalid(
            format!("`contacts[{i}].mergeFields` has more than {MAX_MERGE_FIELDS} fields"),
            "keep only the fields the steps use",
        ));
    }
    if let Some((k, _)) =
        fields.iter().find(|(k, v)| k.len() > 64 || v.chars().count() > MAX_MERGE_VALUE)
    {
        return Err(Error::invalid(
            format!(
                "`contacts[{i}].mergeFields.{}` is too long (names up to 64 bytes, values up to \
                 {MAX_MERGE_VALUE} characters)",
                k.chars().take(64).collect::<String>()
            ),
            "shorten the field",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skip_contacted_is_on_unless_turned_off() {
        let on =
            parse_enroll(br#"{"contacts": [{"email": "a@x.test"}]}"#).map(|e| e.skip_contacted);
        assert_eq!(on.ok(), Some(true));
        let body = br#"{"contacts": [{"email": "a@x.test"}], "skipContacted": false}"#;
        assert_eq!(parse_enroll(body).map(|e| e.skip_contacted).ok(), Some(false));
    }

    #[test]
    fn from_the_contact_book() {
        let book = |body: &[u8]| parse_enroll(body).ok().and_then(|e| e.from_book);
        assert_eq!(book(br#"{"contacts": "all"}"#), Some(FromBook::All));
        assert_eq!(book(br#"{"contactIds": ["ct_1"]}"#), Some(FromBook::Ids(vec!["ct_1".into()])));
        for bad in [
            &br#"{"contacts": "some"}"#[..],
            br#"{"contactIds": []}"#,
            br#"{"contacts": "all", "contactIds": ["ct_1"]}"#,
            br#"{}"#,
            br#"{"contacts": [{"email": 1}]}"#,
        ] {
            assert!(parse_enroll(bad).is_err(), "{}", String::from_utf8_lossy(bad));
        }
    }
}
