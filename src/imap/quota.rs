//! QUOTA (RFC 9208): a mailbox with a limit has one quota root, `""`, holding all its folders,
//! with the one resource the store counts, STORAGE (the bytes of all its mail, the trash
//! included, in KiB rounded up). A mailbox without a limit has no quota root. Quotas are the
//! admin API's to set, so SETQUOTA is refused.

use imap_types::core::{AString, Tag, Vec1};
use imap_types::extensions::quota::{QuotaGet, Resource};
use imap_types::mailbox::Mailbox;
use imap_types::response::{Code, Data, Status, StatusKind};

use super::conn::Conn;
use super::mailboxes::nonexistent;
use super::names::resolve;
use super::reply::{failed, ok, status};
use super::session::Session;
use crate::store::Quota;

/// The name of the one quota root.
fn root() -> AString<'static> {
    AString::try_from("").unwrap_or_else(|_| unreachable!()) // ok: the empty quoted string
}

/// KiB as RFC 9208 counts STORAGE: rounded up, so a mailbox holding anything never shows 0.
fn kib(bytes: u64) -> u64 {
    bytes.div_ceil(1024)
}

/// The QUOTA response of a quota; `None` without a limit (then there is no quota root).
fn quota_data(quota: &Quota) -> Option<Data<'static>> {
    let limit = quota.limit_bytes?;
    let storage = QuotaGet::new(Resource::Storage, kib(quota.used_bytes), kib(limit));
    Some(Data::Quota { root: root(), quotas: Vec1::from(storage) })
}

/// The NO of a quota root that does not exist.
fn no_root(tag: &Tag<'static>) -> Status<'static> {
    let code = Code::Other(imap_types::response::CodeOther::unvalidated(b"NONEXISTENT".as_slice()));
    status(tag, StatusKind::No, Some(code), "no such quota root")
}

impl Session {
    /// The QUOTA response of the logged-in mailbox; `None` when it has no limit.
    async fn quota(&self) -> crate::store::Result<Option<Data<'static>>> {
        let user = self.user.clone().unwrap_or_default();
        let default = self.deps.quota_bytes;
        let (local, domain) = user.rsplit_once('@').unwrap_or((user.as_str(), ""));
        let (local, domain) = (local.to_owned(), domain.to_owned());
        let found =
            self.deps.store.read(move |r| r.mailbox_quota(&domain, &local, default)).await?;
        Ok(found.and_then(|(_, q)| quota_data(&q)))
    }

    pub(super) async fn get_quota_root(
        &self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        mailbox: &Mailbox<'_>,
    ) -> Status<'static> {
        let user = self.user.clone().unwrap_or_default();
        match resolve(&self.deps.store, &user, mailbox, self.utf8).await {
            Ok(Some(_)) => {}
            Ok(None) => return nonexistent(tag),
            Err(e) => return failed(tag, &e),
        }
        let quota = match self.quota().await {
            Ok(q) => q,
            Err(e) => return failed(tag, &e),
        };
        let mailbox = imap_types::ToStatic::to_static(mailbox);
        let roots = quota.as_ref().map(|_| root()).into_iter().collect();
        conn.enqueue_data(Data::QuotaRoot { mailbox, roots });
        if let Some(data) = quota {
            conn.enqueue_data(data);
        }
        ok(tag, "GETQUOTAROOT completed")
    }

    pub(super) async fn get_quota(
        &self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        name: &AString<'_>,
    ) -> Status<'static> {
        if !name.as_ref().is_empty() {
            return no_root(tag);
        }
        match self.quota().await {
            Ok(Some(data)) => {
                conn.enqueue_data(data);
                ok(tag, "GETQUOTA completed")
            }
            Ok(None) => no_root(tag),
            Err(e) => failed(tag, &e),
        }
    }
}

/// The NO of SETQUOTA: quotas are the administrator's to set (RFC 9208 4.1.3 lets a server
/// refuse; `[NOPERM]`, RFC 5530).
pub fn set_quota_refused(tag: &Tag<'static>) -> Status<'static> {
    let code = Code::Other(imap_types::response::CodeOther::unvalidated(b"NOPERM".as_slice()));
    status(tag, StatusKind::No, Some(code), "quotas are set by the administrator")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_is_counted_in_kib_rounded_up() {
        assert_eq!((kib(0), kib(1), kib(1024), kib(1025)), (0, 1, 1, 2));
        assert!(quota_data(&Quota { used_bytes: 10, limit_bytes: None }).is_none());
        let data = quota_data(&Quota { used_bytes: 2048, limit_bytes: Some(10 * 1024) });
        let Some(Data::Quota { quotas, .. }) = data else { panic!("a QUOTA response") };
        assert_eq!((quotas.as_ref()[0].usage, quotas.as_ref()[0].limit), (2, 10));
    }
}
