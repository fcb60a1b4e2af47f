//! The folders of a mailbox, and what each means for listing, IMAP and flags.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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
}

impl Folder {
    pub const ALL: [Folder; 5] =
        [Folder::Inbox, Folder::Sent, Folder::Outbox, Folder::Drafts, Folder::Trash];

    pub fn name(self) -> &'static str {
        match self {
            Folder::Inbox => "inbox",
            Folder::Sent => "sent",
            Folder::Outbox => "outbox",
            Folder::Drafts => "drafts",
            Folder::Trash => "trash",
            Folder::Warmup => "warmup",
        }
    }

    pub fn parse(name: &str) -> Option<Folder> {
        Folder::ALL.into_iter().find(|f| f.name() == name)
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
        self as u8
    }

    /// The folders IMAP shows (the outbox is mail on its way; warmup mail is never shown).
    pub const IMAP: [Folder; 4] = [Folder::Inbox, Folder::Sent, Folder::Drafts, Folder::Trash];

    pub fn imap(self) -> bool {
        Folder::IMAP.contains(&self)
    }

    /// The IMAP flags of a message that arrives in this folder.
    pub fn initial_flags(self) -> &'static [&'static str] {
        match self {
            Folder::Inbox | Folder::Trash => &[],
            Folder::Drafts => &["\\Draft"],
            _ => &["\\Seen"],
        }
    }
}
