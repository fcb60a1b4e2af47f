//! Tagged completions and the small conversions every command needs.

use imap_types::core::{Tag, Text};
use imap_types::flag::{Flag, FlagFetch};
use imap_types::response::{Code, Status, StatusBody, StatusKind, Tagged};

/// The answer to message sequence numbers past the last message (Dovecot's words).
pub const INVALID_SET: &str = "Invalid messageset";

fn text(s: &str) -> Text<'static> {
    Text::try_from(s.to_owned()).unwrap_or_else(|_| Text::unvalidated("-"))
}

pub fn status(
    tag: &Tag<'static>,
    kind: StatusKind,
    code: Option<Code<'static>>,
    s: &str,
) -> Status<'static> {
    Status::Tagged(Tagged { tag: tag.clone(), body: StatusBody { kind, code, text: text(s) } })
}

pub fn ok(tag: &Tag<'static>, s: &str) -> Status<'static> {
    status(tag, StatusKind::Ok, None, s)
}

pub fn no(tag: &Tag<'static>, s: &str) -> Status<'static> {
    status(tag, StatusKind::No, None, s)
}

pub fn bad(tag: &Tag<'static>, s: &str) -> Status<'static> {
    status(tag, StatusKind::Bad, None, s)
}

/// The answer to a store failure: a NO that says to try again (the details go to the log).
pub fn failed(tag: &Tag<'static>, e: &crate::store::Error) -> Status<'static> {
    tracing::warn!(error = %e, "imap: store error");
    status(tag, StatusKind::No, Some(Code::Other(unavailable())), "server unavailable, try again")
}

fn unavailable() -> imap_types::response::CodeOther<'static> {
    imap_types::response::CodeOther::unvalidated(b"UNAVAILABLE".as_slice())
}

/// The `[LIMIT]` code (RFC 9051 7.1): a command ran into one of the server's limits.
pub fn limit_code() -> Code<'static> {
    Code::Other(imap_types::response::CodeOther::unvalidated(b"LIMIT".as_slice()))
}

/// A NO at one of the server's limits; the text says which.
pub fn limit(tag: &Tag<'static>, s: &str) -> Status<'static> {
    status(tag, StatusKind::No, Some(limit_code()), s)
}

/// The NO of an APPEND or COPY past the mailbox's quota (RFC 9208 `[OVERQUOTA]`).
pub fn over_quota(tag: &Tag<'static>) -> Status<'static> {
    status(tag, StatusKind::No, Some(Code::OverQuota), "the mailbox is over its quota")
}

/// A stored flag as a response item; `None` for one that is no longer valid.
pub fn flag(stored: &str) -> Option<Flag<'static>> {
    Flag::try_from(stored.to_owned().as_str()).ok().map(|f| {
        use imap_types::ToStatic;
        f.to_static()
    })
}

/// Whether a flag is \Recent: the server's alone, per session (RFC 3501 2.3.2), never stored.
pub fn is_recent(flag: &str) -> bool {
    flag.eq_ignore_ascii_case("\\Recent")
}

/// The flags a client gives (STORE, APPEND) as stored: \Recent is ignored, as RFC 3501 allows.
pub fn storable(flags: &[Flag<'_>]) -> Vec<String> {
    flags.iter().map(flag_name).filter(|f| !is_recent(f)).collect()
}

/// The flags of a message as FETCH tells them: the stored ones, and \Recent when the message
/// is recent for this session (a \Recent stored before it was refused is not shown).
pub fn flags_fetch(stored: &[String], recent: bool) -> Vec<FlagFetch<'static>> {
    let shown = stored.iter().filter(|s| !is_recent(s));
    let mut out: Vec<_> = shown.filter_map(|s| flag(s)).map(FlagFetch::Flag).collect();
    if recent {
        out.push(FlagFetch::Recent);
    }
    out
}

/// The text form of a flag, as stored.
pub fn flag_name(flag: &Flag<'_>) -> String {
    flag.to_string()
}
