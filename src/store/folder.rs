//! The folders of a mailbox, and what each means for listing, IMAP and flags. The system
//! folders every mailbox has are named here; the folders a user makes (`folders`) are known by
//! a code the mailbox gives each when it is made, so that renaming one touches no message.

use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Folder {
    #[default]
    Inbox,
    Sent,
    Outbox,
    Drafts,
    Trash,
    /// Warmup traffic (the warmup engine): stored like any mail, never listed or returned by the
    /// emails API, so it never reaches what users see.
    Warmup,
    Junk,
    Archive,
    /// A folder the mailbox's user made; the code is one of `USER_CODES`, its name is in the
    /// mailbox's folder list (`folders`).
    User(u8),
}

/// The codes user folders take: the system folders keep the codes below (room for more), so
/// a mailbox holds at most 240 folders of its own.
pub const USER_CODES: std::ops::RangeInclusive<u8> = 16..=u8::MAX;

impl Folder {
    /// The system folders, in the order lists show them.
    pub const ALL: [Folder; 7] = [
        Folder::Inbox,
        Folder::Sent,
        Folder::Outbox,
        Folder::Drafts,
        Folder::Trash,
        Folder::Junk,
        Folder::Archive,
    ];

    /// The name of a system folder in the API (`inbox`); `None` for a user folder.
    pub fn system_name(self) -> Option<&'static str> {
        Some(match self {
            Folder::Inbox => "inbox",
            Folder::Sent => "sent",
            Folder::Outbox => "outbox",
            Folder::Drafts => "drafts",
            Folder::Trash => "trash",
            Folder::Warmup => "warmup",
            Folder::Junk => "junk",
            Folder::Archive => "archive",
            Folder::User(_) => return None,
        })
    }

    /// The system folder the API names so.
    pub fn parse(name: &str) -> Option<Folder> {
        Folder::ALL.into_iter().find(|f| f.system_name() == Some(name))
    }

    /// The name IMAP shows a system folder by (a user folder's is in its mailbox's list).
    pub fn imap_name(self) -> &'static str {
        match self {
            Folder::Inbox | Folder::User(_) => "INBOX",
            Folder::Sent => "Sent",
            Folder::Outbox => "Outbox",
            Folder::Drafts => "Drafts",
            Folder::Trash => "Trash",
            Folder::Warmup => "Warmup",
            Folder::Junk => "Junk",
            Folder::Archive => "Archive",
        }
    }

    /// The SPECIAL-USE attribute (RFC 6154) of a system folder.
    pub fn special_use(self) -> Option<&'static str> {
        match self {
            Folder::Sent => Some("\\Sent"),
            Folder::Drafts => Some("\\Drafts"),
            Folder::Trash => Some("\\Trash"),
            Folder::Junk => Some("\\Junk"),
            Folder::Archive => Some("\\Archive"),
            _ => None,
        }
    }

    /// Folders the emails API never shows.
    pub fn is_hidden(self) -> bool {
        self == Folder::Warmup
    }

    /// Where a message goes once every recipient has a final status.
    pub fn once_sent(self) -> Folder {
        if self.is_hidden() { self } else { Folder::Sent }
    }

    pub(super) fn code(self) -> u8 {
        match self {
            Folder::Inbox => 0,
            Folder::Sent => 1,
            Folder::Outbox => 2,
            Folder::Drafts => 3,
            Folder::Trash => 4,
            Folder::Warmup => 5,
            Folder::Junk => 6,
            Folder::Archive => 7,
            Folder::User(code) => code,
        }
    }

    pub(super) fn from_code(code: u8) -> Option<Folder> {
        Some(match code {
            0 => Folder::Inbox,
            1 => Folder::Sent,
            2 => Folder::Outbox,
            3 => Folder::Drafts,
            4 => Folder::Trash,
            5 => Folder::Warmup,
            6 => Folder::Junk,
            7 => Folder::Archive,
            c if USER_CODES.contains(&c) => Folder::User(c),
            _ => return None,
        })
    }

    /// Whether IMAP shows the folder (the outbox is mail on its way; warmup mail is never
    /// shown).
    pub fn imap(self) -> bool {
        !matches!(self, Folder::Outbox | Folder::Warmup)
    }

    pub fn is_user(self) -> bool {
        matches!(self, Folder::User(_))
    }

    /// The IMAP flags of a message that arrives in this folder.
    pub fn initial_flags(self) -> &'static [&'static str] {
        match self {
            Folder::Inbox | Folder::Trash | Folder::Junk | Folder::Archive | Folder::User(_) => &[],
            Folder::Drafts => &["\\Draft"],
            Folder::Sent | Folder::Outbox | Folder::Warmup => &["\\Seen"],
        }
    }
}

/// A system folder is written as its name (`"inbox"`), a user folder as its code: the API
/// shows the user folder's name in its place (`folders`), which a rename may change.
impl Serialize for Folder {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.system_name() {
            Some(name) => s.serialize_str(name),
            None => s.serialize_u8(self.code()),
        }
    }
}

impl<'de> Deserialize<'de> for Folder {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Folder, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Folder;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a folder name or code")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Folder, E> {
                match v {
                    "warmup" => Ok(Folder::Warmup),
                    _ => Folder::parse(v).ok_or_else(|| E::custom(format!("no folder {v:?}"))),
                }
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Folder, E> {
                u8::try_from(v)
                    .ok()
                    .and_then(Folder::from_code)
                    .ok_or_else(|| E::custom(format!("no folder code {v}")))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_round_trip_through_their_stored_form() {
        for f in
            Folder::ALL.into_iter().chain([Folder::Warmup, Folder::User(16), Folder::User(255)])
        {
            let json = serde_json::to_string(&f).expect("test value"); // ok: test
            assert_eq!(serde_json::from_str::<Folder>(&json).expect("test value"), f, "{json}"); // ok: test
            assert_eq!(Folder::from_code(f.code()), Some(f));
        }
        assert_eq!(serde_json::to_string(&Folder::User(17)).expect("test value"), "17"); // ok: test
        assert!(serde_json::from_str::<Folder>("9").is_err());
    }
}
