//! The contact book of a domain; the email address (lower-cased) is the upsert key. Contacts
//! carry `fields` (merge fields for sequences); an import writes many at once (`import`).

use std::collections::BTreeMap;
use std::ops::{Bound, ControlFlow as Flow};

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::scan::JsonPage;
use super::tables::*;
use super::{Rtx, Wtx, decode, drain_domain, encode};
use crate::ids::{new_id, now_ms};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contact {
    pub id: String,
    pub email: String,
    pub name: String,
    /// Merge fields (at most `MAX_CONTACT_FIELDS`); contacts stored before fields existed read
    /// as having none.
    #[serde(default)]
    pub fields: BTreeMap<String, String>,
    pub created_at: u64,
    pub updated_at: u64,
}

/// The most fields a contact may carry (extensions.md, "Outreach").
pub const MAX_CONTACT_FIELDS: usize = 50;

/// A contact to create or update, checked by the caller. `name: None` keeps the stored name
/// (a new contact gets an empty one). Each given field is set, and one given as an empty string
/// is removed; fields not given stay as they are.
#[derive(Debug, Clone)]
pub struct ContactUpsert {
    pub email: String,
    pub name: Option<String>,
    pub fields: BTreeMap<String, String>,
}

/// Merges `given`'s fields into `fields`; false (and `fields` as it was) when the result would
/// hold more than `MAX_CONTACT_FIELDS`.
fn merge_fields(fields: &mut BTreeMap<String, String>, given: &BTreeMap<String, String>) -> bool {
    let mut merged = fields.clone();
    for (k, v) in given {
        if v.is_empty() {
            merged.remove(k);
        } else {
            merged.insert(k.clone(), v.clone());
        }
    }
    if merged.len() > MAX_CONTACT_FIELDS {
        return false;
    }
    *fields = merged;
    true
}

/// The contact `given` makes of `existing` (or a new one); `None` when its fields would pass
/// the limit.
fn apply(existing: Option<Contact>, given: &ContactUpsert, now: u64) -> Option<Contact> {
    let mut contact = existing.unwrap_or_else(|| Contact {
        id: new_id("ct"),
        email: given.email.clone(),
        name: String::new(),
        fields: BTreeMap::new(),
        created_at: now,
        updated_at: now,
    });
    if !merge_fields(&mut contact.fields, &given.fields) {
        return None;
    }
    if let Some(name) = &given.name {
        contact.name.clone_from(name);
    }
    contact.email.clone_from(&given.email);
    contact.updated_at = now;
    Some(contact)
}

/// What one chunk of an import did: counts, and the rows refused (row number, email, reason).
#[derive(Debug, Default)]
pub struct ContactsImported {
    pub created: usize,
    pub updated: usize,
    pub invalid: Vec<(usize, String, &'static str)>,
}

impl Wtx<'_> {
    /// Creates the contact, or updates the one that already has this email.
    pub fn upsert_contact(&mut self, domain: &str, given: &ContactUpsert) -> Result<Contact> {
        if !self.domain_exists(domain)? {
            return Err(Error::not_found("domain"));
        }
        let key = given.email.to_ascii_lowercase();
        let mut by_email = self.tx.open_table(CONTACT_EMAILS)?;
        let mut contacts = self.tx.open_table(CONTACTS)?;
        let existing_id = by_email.get((domain, key.as_str()))?.map(|v| v.value().to_owned());
        let existing = match &existing_id {
            Some(id) => {
                let found = contacts.get((domain, id.as_str()))?;
                found.map(|v| decode::<Contact>(v.value())).transpose()?
            }
            None => None,
        };
        let contact = apply(existing, given, now_ms()).ok_or_else(|| {
            Error::invalid(
                format!("the contact would carry more than {MAX_CONTACT_FIELDS} fields"),
                "remove fields by giving them as empty strings",
            )
        })?;
        if existing_id.is_none() {
            by_email.insert((domain, key.as_str()), contact.id.as_str())?;
        }
        contacts.insert((domain, contact.id.as_str()), encode(&contact)?.as_slice())?;
        Ok(contact)
    }

    /// Upserts `rows` (row number and contact), which the caller sorted by lower-cased email:
    /// the existing contacts of the chunk are found with one range read over the email index
    /// between its first and last address, instead of a lookup per row.
    pub fn import_contacts(
        &mut self,
        domain: &str,
        rows: &[(usize, ContactUpsert)],
    ) -> Result<ContactsImported> {
        if !self.domain_exists(domain)? {
            return Err(Error::not_found("domain"));
        }
        let mut done = ContactsImported::default();
        let keys: Vec<String> = rows.iter().map(|(_, c)| c.email.to_ascii_lowercase()).collect();
        let (Some(first), Some(last)) = (keys.first(), keys.last()) else { return Ok(done) };
        let mut known: std::collections::HashMap<String, String> = Default::default();
        let mut by_email = self.tx.open_table(CONTACT_EMAILS)?;
        let range =
            (Bound::Included((domain, first.as_str())), Bound::Included((domain, last.as_str())));
        by_email.scan::<(&str, &str)>(range, false, |(_, email), id| {
            known.insert(email.to_owned(), id.to_owned());
            Ok(Flow::Continue(()))
        })?;
        let mut contacts = self.tx.open_table(CONTACTS)?;
        let now = now_ms();
        for ((row, given), key) in rows.iter().zip(&keys) {
            let existing = match known.get(key) {
                Some(id) => {
                    let found = contacts.get((domain, id.as_str()))?;
                    found.map(|v| decode::<Contact>(v.value())).transpose()?
                }
                None => None,
            };
            let created = existing.is_none();
            let Some(contact) = apply(existing, given, now) else {
                done.invalid.push((*row, given.email.clone(), "too_many_fields"));
                continue;
            };
            if created {
                by_email.insert((domain, key.as_str()), contact.id.as_str())?;
                known.insert(key.clone(), contact.id.clone());
                done.created += 1;
            } else {
                done.updated += 1;
            }
            contacts.insert((domain, contact.id.as_str()), encode(&contact)?.as_slice())?;
        }
        Ok(done)
    }

    pub fn delete_contact(&mut self, domain: &str, id: &str) -> Result<()> {
        let mut contacts = self.tx.open_table(CONTACTS)?;
        let contact: Contact = match contacts.remove((domain, id))? {
            Some(v) => decode(v.value())?,
            None => return Err(Error::not_found("contact")),
        };
        let key = contact.email.to_ascii_lowercase();
        self.tx.open_table(CONTACT_EMAILS)?.remove((domain, key.as_str()))?;
        Ok(())
    }

    pub(super) fn remove_domain_contacts(&mut self, domain: &str) -> Result<usize> {
        drain_domain(&mut self.tx.open_table(CONTACT_EMAILS)?, domain)?;
        drain_domain(&mut self.tx.open_table(CONTACTS)?, domain)
    }
}

impl Rtx {
    /// The domain's contacts, oldest first, at most `limit` of them (the caller asks for one more
    /// than it takes, to tell a book that is too large).
    pub fn contacts_upto(&self, domain: &str, limit: usize) -> Result<Vec<Contact>> {
        let table = self.tx.open_table(CONTACTS)?;
        let mut out = Vec::new();
        let range = (Bound::Included((domain, "")), Bound::Unbounded);
        table.scan::<(&str, &str)>(range, false, |(d, _), value| {
            if d != domain || out.len() == limit {
                return Ok(Flow::Break(()));
            }
            out.push(decode::<Contact>(value)?);
            Ok(Flow::Continue(()))
        })?;
        Ok(out)
    }

    /// The contacts with these ids, in their order (`None` for an id the domain lacks).
    pub fn contacts_by_id(&self, domain: &str, ids: &[String]) -> Result<Vec<Option<Contact>>> {
        let table = self.tx.open_table(CONTACTS)?;
        ids.iter()
            .map(|id| table.get((domain, id.as_str()))?.map(|v| decode(v.value())).transpose())
            .collect()
    }

    /// The contacts with these addresses (compared lower-cased), in their order.
    pub fn contacts_by_email(
        &self,
        domain: &str,
        emails: &[String],
    ) -> Result<Vec<Option<Contact>>> {
        let by_email = self.tx.open_table(CONTACT_EMAILS)?;
        let table = self.tx.open_table(CONTACTS)?;
        let mut out = Vec::with_capacity(emails.len());
        for email in emails {
            let key = email.trim().to_ascii_lowercase();
            let id = by_email.get((domain, key.as_str()))?.map(|v| v.value().to_owned());
            let found = match id {
                Some(id) => table.get((domain, id.as_str()))?.map(|v| decode(v.value())),
                None => None,
            };
            out.push(found.transpose()?);
        }
        Ok(out)
    }

    /// Up to `limit` of the domain's contacts, oldest first (ids are time-ordered), after the contact id `after`; also answers whether
    /// more follow.
    /// Up to `limit` of the domain's contacts after the one with id `after`, as a JSON array
    /// joined straight from the stored documents (which are the API's form), and the id of the
    /// last one when more follow.
    pub fn contacts_page_json(
        &self,
        domain: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<(Vec<u8>, Option<String>)> {
        let table = self.tx.open_table(CONTACTS)?;
        let lo = match after {
            Some(id) => Bound::Excluded((domain, id)),
            None => Bound::Included((domain, "")),
        };
        let mut page = JsonPage::new(limit, 128 * limit.min(100) + 2);
        let mut last = String::new();
        table.scan::<(&str, &str)>((lo, Bound::Unbounded), false, |(d, id), value| {
            if d != domain {
                return Ok(Flow::Break(()));
            }
            if page.add(value).is_break() {
                return Ok(Flow::Break(()));
            }
            last.clear();
            last.push_str(id);
            Ok(Flow::Continue(()))
        })?;
        let (out, more) = page.finish();
        Ok((out, more.then_some(last)))
    }
}
