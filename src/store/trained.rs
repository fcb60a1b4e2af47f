//! What each received message taught its mailbox's junk classifier (`Email::spam.trained`), so
//! that moving it back first takes the old lesson back.

use super::Wtx;
use super::error::Result;

impl Wtx<'_> {
    /// Records that the message `id` now teaches spam (`true`) or ham; answers what it taught
    /// before (`None`: nothing), or `Err` not found when there is no such message.
    pub fn mark_trained(&mut self, id: &str, spam: bool) -> Result<Option<bool>> {
        let Some(mut email) = self.load_email(id)? else {
            return Err(super::Error::not_found("email"));
        };
        let before = email.summary.clone();
        let mut finding = email.spam.take().unwrap_or_default();
        let was = finding.trained.as_deref().map(|t| t == "spam");
        finding.trained = Some(if spam { "spam" } else { "ham" }.to_owned());
        if finding.verdict.is_empty() {
            // Mail filed before the filter existed, or appended by a client: no score of its own.
            finding.verdict = if spam { "spam" } else { "ham" }.to_owned();
        }
        email.spam = Some(finding);
        self.replace_email(&before, &email)?;
        self.note_trained(&before.mailbox, &before.from, spam, was)?;
        Ok(was)
    }
}
