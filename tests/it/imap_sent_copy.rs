//! Clients that save their own copy of what they send (Thunderbird, Apple Mail: submit, then
//! APPEND to Sent) keep one copy in Sent, not two: an APPEND to Sent of a message the mailbox
//! just sent through us answers OK and stores nothing, with the UID of the copy we keep when it
//! is already in Sent.

use std::time::Duration;

use crate::mail_clients::{Clients, message};

/// Submits `args[0]` to a@example.org, then APPENDs the same bytes to `args[1]`.
const SEND_THEN_APPEND: &str = r#"
msg = args[0].encode()
s = submit()
s.sendmail(user, ['a@example.org'], msg)
s.quit()
m = imap()
typ, data = m.append(args[1], None, None, msg)
out('append', typ, data[0].decode())
"#;

/// APPENDs `args[0]` to `args[1]`.
const APPEND: &str = r#"
m = imap()
typ, data = m.append(args[1], None, None, args[0].encode())
out('append', typ, data[0].decode())
"#;

/// Each folder's messages as `folder: Message-ID...`, and the UID of `args[0]`'s Message-ID in
/// Sent with the folder's UIDVALIDITY.
const LIST: &str = r#"
m = imap()
for folder in ['Sent', 'Drafts']:
    typ, data = m.select(folder, readonly=True)
    ids = []
    if int(data[0]) > 0:
        typ, data = m.fetch('1:*', '(BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])')
        ids = sorted(d[1].decode().split(':', 1)[1].strip() for d in data if isinstance(d, tuple))
    out(folder + ':', *ids)
typ, data = m.select('Sent', readonly=True)
out('validity', m.response('UIDVALIDITY')[1][0].decode())
if int(data[0]) > 0:
    typ, data = m.fetch('1:*', '(UID BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])')
for d in data:
    if isinstance(d, tuple) and args[0] in d[1].decode():
        out('uid', re.search(r'UID (\d+)', d[0].decode()).group(1))
"#;

#[test]
fn a_clients_own_copy_of_what_it_sent_is_not_stored_twice_in_sent() {
    let c = Clients::start();
    // Delivery held: the copy we keep is still on its way (the outbox, not shown by IMAP).
    c.world.sink.stall(true);
    let first = message("a@example.org", "first", "first@alpha.test");
    let lines = c.py(SEND_THEN_APPEND, &[&first, "Sent"]);
    assert_eq!(lines, ["append OK APPEND completed"], "no UID before it reaches Sent");
    let listed = c.py(LIST, &["<first@alpha.test>"]);
    assert_eq!(listed[0], "Sent:", "{listed:?}");
    c.world.sink.stall(false);
    c.world.sink.wait_for(1, Duration::from_secs(20));
    c.wait_listed("sent", 1);

    // Delivered before the APPEND: the answer names the copy in Sent.
    let second = message("a@example.org", "second", "second@alpha.test");
    let submit = "s = submit()\ns.sendmail(user, ['a@example.org'], args[0].encode())\ns.quit()\n";
    assert!(c.py(submit, &[&second]).is_empty());
    c.world.sink.wait_for(2, Duration::from_secs(20));
    c.wait_listed("sent", 2);
    let before = c.py(LIST, &["<second@alpha.test>"]);
    let uid = before.iter().find_map(|l| l.strip_prefix("uid ")).expect("uid").to_owned();
    let validity = before.iter().find_map(|l| l.strip_prefix("validity ")).expect("v").to_owned();
    let lines = c.py(APPEND, &[&second, "Sent"]);
    assert_eq!(lines, [format!("append OK [APPENDUID {validity} {uid}] APPEND completed")]);

    // Anything else is stored as given: another message in Sent, the same one in Drafts.
    let other = message("b@example.net", "kept elsewhere", "other@alpha.test");
    let lines = c.py(APPEND, &[&other, "Sent"]);
    assert!(lines[0].starts_with("append OK [APPENDUID"), "{lines:?}");
    let lines = c.py(APPEND, &[&second, "Drafts"]);
    assert!(lines[0].starts_with("append OK [APPENDUID"), "{lines:?}");
    let after = c.py(LIST, &["<second@alpha.test>"]);
    assert_eq!(
        after[..2],
        [
            "Sent: <first@alpha.test> <other@alpha.test> <second@alpha.test>",
            "Drafts: <second@alpha.test>",
        ],
        "{after:?}"
    );
    assert_eq!(c.listed("sent").len(), 3, "the API sees the same");
}
