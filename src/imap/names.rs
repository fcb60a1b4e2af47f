//! Folder names as IMAP carries them: a mailbox argument to the UTF-8 name the store keeps
//! (modified UTF-7 decoded, unless the client enabled UTF8=ACCEPT), a name back to a mailbox
//! argument, and the folder a name means for the logged-in user.

use std::num::NonZeroU32;

use imap_types::mailbox::Mailbox;

use super::utf7;
use crate::store::{Folder, Store};

/// The UTF-8 name a mailbox argument carries; `None` when it is not valid modified UTF-7 or
/// not UTF-8. A name with bytes past ASCII is taken as UTF-8 as it is: clients that send one
/// without UTF8=ACCEPT mean it so.
pub fn decode(mailbox: &Mailbox<'_>, utf8: bool) -> Option<String> {
    let bytes = match mailbox {
        Mailbox::Inbox => return Some("INBOX".to_owned()),
        Mailbox::Other(other) => other.as_ref(),
    };
    let text = std::str::from_utf8(bytes).ok()?;
    if utf8 || !text.is_ascii() { Some(text.to_owned()) } else { utf7::decode(text) }
}

/// A pattern of LIST or LSUB in UTF-8 (wildcards are ASCII, so they survive decoding).
pub fn decode_pattern(pattern: &[u8], utf8: bool) -> String {
    let text = String::from_utf8_lossy(pattern);
    match utf8 {
        true => text.into_owned(),
        false => utf7::decode(&text).unwrap_or_else(|| text.into_owned()),
    }
}

/// The mailbox argument naming `name` to a client.
pub fn encode(name: &str, utf8: bool) -> Mailbox<'static> {
    if name.eq_ignore_ascii_case("INBOX") {
        return Mailbox::Inbox;
    }
    let shown = if utf8 { name.to_owned() } else { utf7::encode(name) };
    Mailbox::try_from(shown).unwrap_or(Mailbox::Inbox)
}

/// The folder a mailbox argument names for `user`, if any.
pub async fn resolve(
    store: &Store,
    user: &str,
    mailbox: &Mailbox<'_>,
    utf8: bool,
) -> crate::store::Result<Option<Folder>> {
    let Some(name) = decode(mailbox, utf8) else { return Ok(None) };
    if let Some(system) = crate::store::system_named(&name) {
        return Ok(Some(system).filter(|f| f.imap()));
    }
    let user = user.to_owned();
    store.read(move |r| r.folder_named(&user, &name)).await
}

pub fn nonzero(n: u32) -> NonZeroU32 {
    NonZeroU32::new(n).unwrap_or(NonZeroU32::MIN)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_cross_in_modified_utf7_unless_utf8_is_enabled() {
        let m = encode("Entwürfe", false);
        assert_eq!(decode(&m, false).as_deref(), Some("Entwürfe"));
        assert!(matches!(encode("inbox", false), Mailbox::Inbox));
        let bad = Mailbox::try_from("a&b").expect("test value"); // ok: test
        assert_eq!(decode(&bad, false), None);
        assert_eq!(decode(&bad, true).as_deref(), Some("a&b"));
    }
}
