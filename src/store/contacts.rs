//! The contact book of a domain; the email address (lower-cased) is the upsert key.

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
    pub created_at: u64,
    pub updated_at: u64,
}

impl Wtx<'_> {
    /// Creates the contact, or renames the one that already has this email.
    pub fn upsert_contact(&mut self, domain: &str, email: &str, name: String) -> Result<Contact> {
        if !self.domain_exists(domain)? {
            return Err(Error::not_found("domain"));
        }
        let key = email.to_ascii_lowercase();
        let mut by_email = self.tx.open_table(CONTACT_EMAILS)?;
        let mut contacts = self.tx.open_table(CONTACTS)?;
        let existing_id = by_email.get((domain, key.as_str()))?.map(|v| v.value().to_owned());
        let now = now_ms();
        let existing = match &existing_id {
            Some(id) => {
                let found = contacts.get((domain, id.as_str()))?;
                found.map(|v| decode::<Contact>(v.value())).transpose()?
            }
            None => None,
        };
        let contact = match existing {
            Some(mut contact) => {
                contact.name = name;
                contact.email = email.to_owned();
                contact.updated_at = now;
                contact
            }
            None => {
                let contact = Contact {
                    id: new_id("ct"),
                    email: email.to_owned(),
                    name,
                    created_at: now,
                    updated_at: now,
                };
                by_email.insert((domain, key.as_str()), contact.id.as_str())?;
                contact
            }
        };
        contacts.insert((domain, contact.id.as_str()), encode(&contact)?.as_slice())?;
        Ok(contact)
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
