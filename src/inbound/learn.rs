//! Learning from what people do with their mail: a message moved into Junk (over IMAP or the
//! API) teaches its mailbox's classifier spam; moved out of Junk, or archived, it teaches ham.
//! Deleting is no lesson (people delete ham too), nor is any other move.

use crate::error::Result;
use crate::junk::Models;
use crate::store::{Folder, Store};

/// What moving a message from `from` to `to` teaches: spam (`true`), ham, or nothing.
pub fn lesson(from: Folder, to: Folder) -> Option<bool> {
    match (from, to) {
        (_, Folder::Junk) if from != Folder::Junk => Some(true),
        (Folder::Junk, Folder::Trash | Folder::Junk) => None,
        (Folder::Junk, _) => Some(false),
        (_, Folder::Archive) if from != Folder::Archive => Some(false),
        _ => None,
    }
}

/// Trains the mailbox of message `id` with it as spam or ham (taking back what it taught
/// before). Mail without stored bytes (sent through the API) teaches nothing.
pub async fn train(store: &Store, models: &Models, id: &str, spam: bool) -> Result<()> {
    let key = id.to_owned();
    let found = store
        .read_long(move |r| -> Result<_> {
            let Some(raw) = r.raw_message(&key)? else { return Ok(None) };
            let mailbox = r.email_by_id(&key)?.map(|e| e.summary.mailbox);
            Ok(mailbox.map(|m| (m, raw)))
        })
        .await?;
    let Some((mailbox, raw)) = found else { return Ok(()) };
    let key = id.to_owned();
    let was = store.write(move |w| w.mark_trained(&key, spam)).await?;
    models.train(store, Some(&mailbox), &raw, spam, was).await?;
    tracing::info!(mailbox = %mailbox, email_id = %id, spam, "junk classifier trained");
    Ok(())
}

/// Trains with the messages a move took from `from` to `to`, when the move is a lesson.
pub async fn moved(store: &Store, models: &Models, ids: &[String], from: Folder, to: Folder) {
    let Some(spam) = lesson(from, to) else { return };
    for id in ids {
        if let Err(e) = train(store, models, id, spam).await {
            // The move itself stands; a lesson lost is not worth failing it for.
            tracing::warn!(email_id = %id, error = %e, "junk classifier not trained");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn into_junk_is_spam_out_of_it_or_archived_is_ham() {
        assert_eq!(lesson(Folder::Inbox, Folder::Junk), Some(true));
        assert_eq!(lesson(Folder::User(20), Folder::Junk), Some(true));
        assert_eq!(lesson(Folder::Junk, Folder::Inbox), Some(false));
        assert_eq!(lesson(Folder::Junk, Folder::Archive), Some(false));
        assert_eq!(lesson(Folder::Inbox, Folder::Archive), Some(false));
        assert_eq!(lesson(Folder::Junk, Folder::Trash), None);
        assert_eq!(lesson(Folder::Inbox, Folder::Trash), None);
        assert_eq!(lesson(Folder::Inbox, Folder::User(20)), None);
        assert_eq!(lesson(Folder::Junk, Folder::Junk), None);
    }
}
