//! What goes with a domain or a mailbox (its junk filter's training included). Removal is the one operation that reaches into every
//! entity, so it sits above them all: each entity lends a `remove_*` for its own tables, and the
//! entities themselves never call back up into one another to clean up.

use serde::{Deserialize, Serialize};

use super::error::{Error, Result};
use super::tables::*;
use super::{Wtx, drain_domain};

/// What a domain removal took with it.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Removed {
    pub mailboxes: usize,
    pub emails: usize,
    pub contacts: usize,
    pub sender_groups: usize,
    pub keys_revoked: usize,
}

impl Wtx<'_> {
    pub fn remove_domain(&mut self, name: &str) -> Result<Removed> {
        if self.tx.open_table(DOMAINS)?.remove(name)?.is_none() {
            return Err(Error::not_found("domain"));
        }
        let mut removed = Removed::default();
        for mailbox in self.domain_mailboxes(name)? {
            removed.emails += self.delete_mailbox_contents(&mailbox.address)?;
            self.forget_folders(&mailbox.address)?;
            self.remove_app_passwords(&mailbox.address)?;
            self.remove_sieve(&mailbox.address)?;
            self.forget_junk(&mailbox.address)?;
            self.forget_senders(&mailbox.address)?;
            self.forget_imports(&mailbox.address)?;
            removed.mailboxes += 1;
        }
        removed.contacts = self.remove_domain_contacts(name)?;
        drain_domain(&mut self.tx.open_table(REPLIES)?, name)?;
        self.remove_domain_aliases(name)?;
        self.remove_domain_sequences(name)?;
        self.remove_domain_webhooks(name)?;
        self.drop_aggregate_reports(name)?;
        self.drop_dmarc_seen(name)?;
        removed.sender_groups = drain_domain(&mut self.tx.open_table(GROUPS)?, name)?;
        drain_domain(&mut self.tx.open_table(MAILBOXES)?, name)?;
        drain_domain(&mut self.tx.open_table(WARMUP)?, name)?;
        removed.keys_revoked = self.revoke_domain_keys(name)?;
        Ok(removed)
    }

    /// Deletes the mailbox, every email in it, its app passwords, and its membership of every
    /// sender group.
    pub fn delete_mailbox(&mut self, domain: &str, local: &str) -> Result<()> {
        if self.tx.open_table(MAILBOXES)?.remove((domain, local))?.is_none() {
            return Err(Error::not_found("mailbox"));
        }
        let address = format!("{local}@{domain}");
        self.delete_mailbox_contents(&address)?;
        self.forget_folders(&address)?;
        self.remove_app_passwords(&address)?;
        self.remove_sieve(&address)?;
        self.forget_junk(&address)?;
        self.forget_senders(&address)?;
        self.forget_imports(&address)?;
        self.remove_from_groups(domain, &address)?;
        self.remove_warmup(domain, local)?;
        Ok(())
    }
}
