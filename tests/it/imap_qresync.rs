//! CONDSTORE and QRESYNC (RFC 7162) over a real socket: a client that was away catches up
//! with one SELECT (what vanished, what changed, what arrived), and a conditional STORE that
//! lost a race is answered with `[MODIFIED]`.

use crate::imap::{Fixture, PY_RAW as RAW, plain, under};

/// The number after `word` in `line` (`HIGHESTMODSEQ 12`, `UIDVALIDITY 3`, `MODSEQ (7`).
fn number_after(line: &str, word: &str) -> Option<u64> {
    let rest = &line[line.find(word)? + word.len()..];
    let digits: String =
        rest.trim_start_matches([' ', '(']).chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[test]
fn a_qresync_select_tells_what_vanished_changed_and_arrived_while_away() {
    let f = Fixture::start();
    for i in 1..=5 {
        f.receive(&plain(&format!("m{i}")));
    }
    // The client syncs, then leaves; another session expunges 1 and 2, moves 3 out, flags 4.
    let lines = f.py(
        &format!(
            "{RAW}\nm = tls()\nshow('enable', raw(m, 'ENABLE QRESYNC'))\n\
             show('select', raw(m, 'SELECT INBOX'))\nm.logout()\n\
             b = tls()\nb.select('INBOX')\n\
             b.store('1:2', '+FLAGS', '(\\\\Deleted)')\nb.expunge()\n\
             b.uid('MOVE', '3', 'Trash')\nb.uid('STORE', '4', '+FLAGS', '(\\\\Flagged)')\n\
             b.logout()\n"
        ),
        &[],
    );
    let enable = under(&lines, "enable");
    assert!(enable.iter().any(|l| l == "* ENABLED QRESYNC"), "{lines:?}");
    let select = under(&lines, "select");
    let validity = select.iter().find_map(|l| number_after(l, "UIDVALIDITY")).expect("UIDVALIDITY");
    let modseq = select.iter().find_map(|l| number_after(l, "HIGHESTMODSEQ")).expect("modseq");
    // And a message arrives.
    f.receive(&plain("m6"));

    let command = format!("SELECT INBOX (QRESYNC ({validity} {modseq}))");
    let lines = f.py(
        &format!(
            "{RAW}\nm = tls()\nraw(m, 'ENABLE QRESYNC')\nshow('again', raw(m, args[0]))\n\
             show('status', raw(m, 'STATUS INBOX (HIGHESTMODSEQ MESSAGES)'))\n\
             show('changed', raw(m, 'UID FETCH 1:* (FLAGS) (CHANGEDSINCE {modseq} VANISHED)'))\n\
             show('other', raw(m, 'SELECT Trash'))\n"
        ),
        &[&command],
    );
    let again = under(&lines, "again");
    assert!(again.iter().any(|l| l == "* VANISHED (EARLIER) 1:3"), "{again:?}");
    assert!(again.iter().any(|l| l == "* 3 EXISTS"), "{again:?}");
    let flagged: Vec<&String> = again.iter().filter(|l| l.contains("UID 4 ")).collect();
    assert_eq!(flagged.len(), 1, "{again:?}");
    assert!(flagged[0].contains("\\Flagged") && flagged[0].contains("MODSEQ ("), "{again:?}");
    let flagged_at = number_after(flagged[0], "MODSEQ").expect("MODSEQ");
    assert!(flagged_at > modseq, "{again:?}");
    assert!(!again.iter().any(|l| l.contains("UID 5 ")), "unchanged: not fetched {again:?}");
    let highest = again.iter().find_map(|l| number_after(l, "HIGHESTMODSEQ")).expect("highest");
    assert!(highest >= flagged_at, "{again:?}");
    let status = under(&lines, "status");
    assert!(status[0].contains(&format!("HIGHESTMODSEQ {highest}")), "{status:?}");

    let changed = under(&lines, "changed");
    assert_eq!(changed[0], "* VANISHED (EARLIER) 1:3", "{changed:?}");
    assert!(changed.iter().any(|l| l.contains("UID 4 ") && l.contains("MODSEQ")), "{changed:?}");
    assert!(!changed.iter().any(|l| l.contains("UID 5 ")), "{changed:?}");
    let other = under(&lines, "other");
    assert!(other.iter().any(|l| l.starts_with("* OK [CLOSED]")), "{other:?}");
}

#[test]
fn a_conditional_store_that_lost_a_race_is_answered_modified() {
    let f = Fixture::start();
    f.receive(&plain("c1"));
    f.receive(&plain("c2"));
    let lines = f.py(
        &format!(
            "{RAW}\nm = tls()\nshow('enable', raw(m, 'ENABLE CONDSTORE'))\n\
             raw(m, 'SELECT INBOX')\nseen = raw(m, 'FETCH 1:2 (MODSEQ)')\nshow('seen', seen)\n\
             at = max(int(x) for x in re.findall(r'MODSEQ \\((\\d+)\\)', ' '.join(seen)))\n\
             b = tls()\nb.select('INBOX')\nb.store('1', '+FLAGS', '(\\\\Answered)')\nb.logout()\n\
             show('store', raw(m, 'STORE 1:2 (UNCHANGEDSINCE %d) +FLAGS (\\\\Seen)' % at))\n\
             show('flags', raw(m, 'FETCH 1:2 (FLAGS)'))\n\
             show('search', raw(m, 'SEARCH MODSEQ 1'))\n"
        ),
        &[],
    );
    let store = under(&lines, "store");
    let done = store.last().expect("tagged");
    assert!(done.contains("OK [MODIFIED 1]"), "{store:?}");
    assert!(store.iter().any(|l| l.starts_with("* 2 FETCH") && l.contains("MODSEQ")), "{store:?}");
    let flags = under(&lines, "flags");
    assert!(flags[0].contains("\\Answered") && !flags[0].contains("\\Seen"), "{flags:?}");
    assert!(flags[1].contains("\\Seen") && flags[1].contains("MODSEQ ("), "{flags:?}");
    let search = under(&lines, "search");
    assert!(search[0].starts_with("* SEARCH 1 2 (MODSEQ "), "{search:?}");
}
