//! Sender groups: a set of the domain's mailboxes and a list of recipients.

use super::kv::ReadableTable;
use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::tables::*;
use super::{Rtx, Wtx, decode, encode, scan_domain};
use crate::ids::{new_id, now_ms};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SenderGroup {
    pub id: String,
    pub name: String,
    pub mailboxes: Vec<String>,
    pub emails: Vec<String>,
    pub created_at: u64,
    pub updated_at: u64,
}

/// Which mailboxes a group sends from, as the caller wrote it.
#[derive(Debug, Clone)]
pub enum MailboxSelection {
    /// Every mailbox of the domain at the time of the request.
    All,
    /// Full addresses; each must exist.
    List(Vec<String>),
}

/// A validated update: recipients are trimmed and syntax-checked by the caller.
#[derive(Debug, Default, Clone)]
pub struct GroupPatch {
    pub name: Option<String>,
    pub mailboxes: Option<MailboxSelection>,
    pub emails: Option<Vec<String>>,
    pub add_emails: Vec<String>,
    pub remove_emails: Vec<String>,
}

/// Appends `more` to `list`, skipping addresses already present (compared lower-cased).
pub fn merge_recipients(list: &mut Vec<String>, more: impl IntoIterator<Item = String>) {
    for address in more {
        if !list.iter().any(|have| have.eq_ignore_ascii_case(&address)) {
            list.push(address);
        }
    }
}

impl Wtx<'_> {
    pub fn create_group(
        &mut self,
        domain: &str,
        name: String,
        mailboxes: MailboxSelection,
        emails: Vec<String>,
    ) -> Result<SenderGroup> {
        let mailboxes = self.resolve_mailboxes(domain, mailboxes)?;
        let mut recipients = Vec::with_capacity(emails.len());
        merge_recipients(&mut recipients, emails);
        let now = now_ms();
        let group = SenderGroup {
            id: new_id("sg"),
            name,
            mailboxes,
            emails: recipients,
            created_at: now,
            updated_at: now,
        };
        let mut table = self.tx.open_table(GROUPS)?;
        table.insert((domain, group.id.as_str()), encode(&group)?.as_slice())?;
        Ok(group)
    }

    pub fn update_group(
        &mut self,
        domain: &str,
        id: &str,
        patch: GroupPatch,
    ) -> Result<SenderGroup> {
        let mut group: SenderGroup = {
            let table = self.tx.open_table(GROUPS)?;
            let found = table.get((domain, id))?;
            match found {
                Some(v) => decode(v.value())?,
                None => return Err(Error::not_found("sender group")),
            }
        };
        if let Some(selection) = patch.mailboxes {
            group.mailboxes = self.resolve_mailboxes(domain, selection)?;
        }
        if let Some(name) = patch.name {
            group.name = name;
        }
        if let Some(emails) = patch.emails {
            group.emails.clear();
            merge_recipients(&mut group.emails, emails);
        } else {
            merge_recipients(&mut group.emails, patch.add_emails);
            group
                .emails
                .retain(|have| !patch.remove_emails.iter().any(|r| r.eq_ignore_ascii_case(have)));
        }
        group.updated_at = now_ms();
        let mut table = self.tx.open_table(GROUPS)?;
        table.insert((domain, id), encode(&group)?.as_slice())?;
        Ok(group)
    }

    pub fn delete_group(&mut self, domain: &str, id: &str) -> Result<()> {
        match self.tx.open_table(GROUPS)?.remove((domain, id))? {
            Some(_) => Ok(()),
            None => Err(Error::not_found("sender group")),
        }
    }

    /// Drops a deleted mailbox from every group of its domain.
    pub(super) fn remove_from_groups(&mut self, domain: &str, address: &str) -> Result<()> {
        let mut table = self.tx.open_table(GROUPS)?;
        let groups: Vec<SenderGroup> = scan_domain(&table, domain)?;
        let now = now_ms();
        for mut group in groups {
            let before = group.mailboxes.len();
            group.mailboxes.retain(|m| m != address);
            if group.mailboxes.len() != before {
                group.updated_at = now;
                table.insert((domain, group.id.as_str()), encode(&group)?.as_slice())?;
            }
        }
        Ok(())
    }

    fn resolve_mailboxes(&self, domain: &str, selection: MailboxSelection) -> Result<Vec<String>> {
        let existing = self.domain_mailboxes(domain)?;
        let resolved = match selection {
            MailboxSelection::All => existing.into_iter().map(|m| m.address).collect(),
            MailboxSelection::List(wanted) => {
                let mut out: Vec<String> = Vec::with_capacity(wanted.len());
                for address in wanted {
                    if !existing.iter().any(|m| m.address == address) {
                        return Err(Error::invalid(
                            format!("mailbox {address} does not exist"),
                            "`mailboxes` must name existing mailboxes of your domain, or be \"all\"",
                        ));
                    }
                    if !out.contains(&address) {
                        out.push(address);
                    }
                }
                out
            }
        };
        if resolved.is_empty() {
            return Err(Error::invalid(
                "the sender group would have no mailboxes",
                "create a mailbox first (POST /v1/mailboxes), or list at least one in `mailboxes`",
            ));
        }
        Ok(resolved)
    }
}

impl Wtx<'_> {
    /// The group, for the sequence engine choosing a sending mailbox inside its write.
    pub fn group_in_write(&self, domain: &str, id: &str) -> Result<Option<SenderGroup>> {
        let table = self.tx.open_table(GROUPS)?;
        let found = table.get((domain, id))?;
        found.map(|v| decode(v.value())).transpose()
    }
}

impl Rtx {
    pub fn groups(&self, domain: &str) -> Result<Vec<SenderGroup>> {
        scan_domain(&self.tx.open_table(GROUPS)?, domain)
    }

    pub fn group(&self, domain: &str, id: &str) -> Result<Option<SenderGroup>> {
        let table = self.tx.open_table(GROUPS)?;
        let found = table.get((domain, id))?;
        found.map(|v| decode(v.value())).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::merge_recipients;

    #[test]
    fn merging_keeps_order_and_drops_case_insensitive_duplicates() {
        let mut list = vec!["a@x.com".to_owned()];
        merge_recipients(&mut list, ["B@x.com", "A@X.com", "b@x.com", "c@x.com"].map(String::from));
        assert_eq!(list, ["a@x.com", "B@x.com", "c@x.com"]);
    }
}
