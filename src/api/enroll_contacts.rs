//! Enrolling from the contact book (extensions.md, "Outreach"): `{contacts: "all"}` and
//! `{contactIds: [...]}` become the spec's contact list, each contact's `fields` (and its
//! `name`, as the field `name`) its merge fields. Contacts given the spec's way that are in the
//! book get its fields too, under their own: the request's `mergeFields` win, since they were
//! written for this sequence. Every skip reason applies afterwards as for a given list.

use std::collections::BTreeMap;

use super::enroll_input::{Enroll, FromBook};
use crate::error::{Error, Result};
use crate::store::{Contact, EnrollInput, Store};

/// The most contacts `"all"` enrolls at once: as many as one import brings.
pub const MAX_FROM_BOOK: usize = 50_000;

/// A contact's merge fields: its fields, and its name as `name` when it has one.
fn fields_of(contact: &Contact) -> BTreeMap<String, String> {
    let mut fields = contact.fields.clone();
    if !contact.name.trim().is_empty() {
        fields.entry("name".to_owned()).or_insert_with(|| contact.name.clone());
    }
    fields
}

fn from_contact(contact: Contact) -> EnrollInput {
    let merge_fields = fields_of(&contact);
    EnrollInput { email: contact.email, merge_fields, timezone: None }
}

/// The request with its contacts read from the book where it names them from there, and the
/// book's fields under the given ones otherwise.
pub async fn resolve(store: &Store, domain: &str, mut enroll: Enroll) -> Result<Enroll> {
    let d = domain.to_owned();
    match enroll.from_book.take() {
        None => {
            let emails: Vec<String> = enroll.contacts.iter().map(|c| c.email.clone()).collect();
            let found = store.read(move |r| r.contacts_by_email(&d, &emails)).await?;
            for (given, contact) in enroll.contacts.iter_mut().zip(found) {
                let Some(contact) = contact else { continue };
                let mut fields = fields_of(&contact);
                fields.append(&mut given.merge_fields);
                given.merge_fields = fields;
            }
        }
        Some(FromBook::All) => {
            let all = store.read_long(move |r| r.contacts_upto(&d, MAX_FROM_BOOK + 1)).await?;
            if all.is_empty() {
                return Err(Error::invalid(
                    "the contact book is empty",
                    "import contacts first with POST /v1/contacts/import",
                ));
            }
            if all.len() > MAX_FROM_BOOK {
                return Err(Error::invalid(
                    format!("the contact book holds more than {MAX_FROM_BOOK} contacts"),
                    "enroll them in parts with `contactIds`",
                ));
            }
            enroll.contacts = all.into_iter().map(from_contact).collect();
        }
        Some(FromBook::Ids(ids)) => {
            let asked = ids.clone();
            let found = store.read_long(move |r| r.contacts_by_id(&d, &ids)).await?;
            let mut out = Vec::with_capacity(found.len());
            for (i, (contact, id)) in found.into_iter().zip(&asked).enumerate() {
                let contact = contact.ok_or_else(|| {
                    let id: String = id.chars().take(64).collect();
                    Error::invalid(
                        format!("`contactIds[{i}]` ({id:?}) is not a contact of your domain"),
                        "GET /v1/contacts lists them",
                    )
                })?;
                out.push(from_contact(contact));
            }
            enroll.contacts = out;
        }
    }
    Ok(enroll)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_is_a_field_unless_one_is_called_so() {
        let mut c = Contact {
            id: "ct_1".into(),
            email: "a@x.test".into(),
            name: "Ada".into(),
            fields: BTreeMap::from([("company".into(), "ACME".into())]),
            created_at: 0,
            updated_at: 0,
        };
        let f = fields_of(&c);
        assert_eq!((f["name"].as_str(), f["company"].as_str()), ("Ada", "ACME"));
        c.name = " ".into();
        assert!(!fields_of(&c).contains_key("name"));
    }
}
