//! The commands of a logged-in session, each to its handler; what needs a selected folder is
//! refused without one. Commands outside the contract get a BAD, never a half answer.

use imap_types::command::{CommandBody, FetchModifier, StoreModifier};
use imap_types::core::Tag;
use imap_types::fetch::{MacroOrMessageDataItemNames, MessageDataItemName};
use imap_types::response::Status;

use super::conn::{Conn, ConnError};
use super::reply::{bad, ok};
use super::session::Session;

impl Session {
    pub(super) async fn authenticated(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        body: CommandBody<'static>,
    ) -> Result<Status<'static>, ConnError> {
        Ok(match body {
            CommandBody::Select { mailbox, parameters } => {
                self.select(conn, tag, &mailbox, false, &parameters).await
            }
            CommandBody::Examine { mailbox, parameters } => {
                self.select(conn, tag, &mailbox, true, &parameters).await
            }
            CommandBody::Enable { capabilities } => self.enable(conn, tag, capabilities.as_ref()),
            CommandBody::List { reference, mailbox_wildcard } => {
                self.list(conn, tag, &reference, &mailbox_wildcard, false).await
            }
            CommandBody::Lsub { reference, mailbox_wildcard } => {
                self.list(conn, tag, &reference, &mailbox_wildcard, true).await
            }
            CommandBody::Status { mailbox, item_names } => {
                self.status_of(conn, tag, &mailbox, &item_names).await
            }
            CommandBody::Namespace => self.namespace(conn, tag),
            CommandBody::Create { mailbox } => self.create(tag, &mailbox).await,
            CommandBody::Delete { mailbox } => self.delete(tag, &mailbox).await,
            CommandBody::Rename { from, to } => self.rename(tag, &from, &to).await,
            CommandBody::Subscribe { mailbox } => self.subscribe(tag, &mailbox, true).await,
            CommandBody::Unsubscribe { mailbox } => self.subscribe(tag, &mailbox, false).await,
            CommandBody::GetQuotaRoot { mailbox } => self.get_quota_root(conn, tag, &mailbox).await,
            CommandBody::GetQuota { root } => self.get_quota(conn, tag, &root).await,
            CommandBody::SetQuota { .. } => super::quota::set_quota_refused(tag),
            CommandBody::Append { mailbox, flags, date, message } => {
                self.append(conn, tag, &mailbox, flags, date, message).await
            }
            body if self.view.is_none() => {
                let _ = body;
                bad(tag, "select a folder first")
            }
            body => self.selected(conn, tag, body).await?,
        })
    }

    async fn selected(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        body: CommandBody<'static>,
    ) -> Result<Status<'static>, ConnError> {
        Ok(match body {
            CommandBody::Unselect => {
                self.view = None;
                ok(tag, "UNSELECT completed")
            }
            CommandBody::Close => {
                // CLOSE expunges silently (RFC 9051 6.4.1), unlike EXPUNGE.
                if self.view.as_ref().is_some_and(|v| !v.read_only) {
                    let _ = self.expunge_marked(None).await;
                }
                self.view = None;
                ok(tag, "CLOSE completed")
            }
            CommandBody::Expunge => self.expunge(conn, tag, None).await,
            CommandBody::ExpungeUid { sequence_set } => {
                self.expunge(conn, tag, Some(&sequence_set)).await
            }
            CommandBody::Search { charset, criteria, uid } => {
                self.search(conn, tag, charset.as_ref(), criteria.as_ref(), uid).await?
            }
            CommandBody::Sort { sort_criteria, charset, search_criteria, uid } => {
                self.sort(conn, tag, &sort_criteria, &charset, &search_criteria, uid).await?
            }
            CommandBody::Thread { algorithm, charset, search_criteria, uid } => {
                self.thread(conn, tag, &algorithm, &charset, &search_criteria, uid).await?
            }
            CommandBody::Fetch { sequence_set, macro_or_item_names, uid, modifiers } => {
                let since = modifiers.iter().find_map(|m| match m {
                    FetchModifier::ChangedSince(n) => Some(n.get()),
                    FetchModifier::Vanished => None,
                });
                let vanished = modifiers.contains(&FetchModifier::Vanished);
                // RFC 7162 3.2.6: VANISHED only in UID FETCH, with CHANGEDSINCE, under QRESYNC.
                if vanished && (!uid || since.is_none() || !self.qresync) {
                    return Ok(bad(tag, "VANISHED needs UID FETCH, CHANGEDSINCE and QRESYNC"));
                }
                if since.is_some() || asks_modseq(&macro_or_item_names) {
                    self.condstore_on();
                }
                if let Some(since) = since.filter(|_| vanished) {
                    self.fetch_vanished(conn, &sequence_set, since).await;
                }
                self.fetch(conn, tag, &sequence_set, macro_or_item_names, uid, since).await?
            }
            CommandBody::Store { sequence_set, kind, response, flags, uid, modifiers } => {
                let since = modifiers.iter().map(|StoreModifier::UnchangedSince(n)| *n).next();
                if since.is_some() {
                    self.condstore_on();
                }
                let how = (kind, response, since);
                self.store_flags(conn, tag, &sequence_set, how, &flags, uid).await
            }
            CommandBody::Copy { sequence_set, mailbox, uid } => {
                self.transfer(conn, tag, &sequence_set, &mailbox, uid, false).await
            }
            CommandBody::Move { sequence_set, mailbox, uid } => {
                self.transfer(conn, tag, &sequence_set, &mailbox, uid, true).await
            }
            _ => bad(tag, "command not supported"),
        })
    }
}

/// Whether a FETCH asks for MODSEQ (a CONDSTORE enabling command).
fn asks_modseq(names: &MacroOrMessageDataItemNames<'_>) -> bool {
    match names {
        MacroOrMessageDataItemNames::Macro(_) => false,
        MacroOrMessageDataItemNames::MessageDataItemNames(items) => {
            items.contains(&MessageDataItemName::ModSeq)
        }
    }
}
