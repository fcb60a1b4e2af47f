//! Folders people make (issue 34): CREATE, RENAME, DELETE, SUBSCRIBE and LSUB over IMAP with
//! RFC 5530's response codes and modified UTF-7 names, Junk and Archive with their SPECIAL-USE
//! attributes, and the same folders in the API (list with counts, create, rename, delete, and
//! moving an email), each side seeing what the other did. Python's imaplib and mbsync are the
//! clients.

use std::process::Command;

use serde_json::json;

use crate::harness::A;
use crate::imap::{Fixture, PY_RAW as RAW, plain, under};

/// The tagged line of a command's output (its last).
fn tagged(lines: &[String], name: &str) -> String {
    under(lines, name).pop().unwrap_or_default()
}

#[test]
fn imap_clients_create_rename_and_delete_folders_with_response_codes() {
    let f = Fixture::start();
    f.receive(&plain("to-archive"));
    let script = format!(
        "{RAW}\nm = tls()\n\
         show('create', raw(m, 'CREATE Projects/2026'))\n\
         show('again', raw(m, 'CREATE Projects'))\n\
         show('system', raw(m, 'CREATE Sent'))\n\
         show('bad', raw(m, 'CREATE \"a//b\"'))\n\
         show('utf7', raw(m, 'CREATE Entw&APw-rfe'))\n\
         show('list', raw(m, 'LIST \"\" *'))\n\
         show('level', raw(m, 'LIST \"\" %'))\n\
         show('select', raw(m, 'SELECT INBOX'))\n\
         show('copy', raw(m, 'COPY 1 Projects/2026'))\n\
         show('archive', raw(m, 'UID MOVE 1 Archive'))\n\
         show('rename', raw(m, 'RENAME Projects Work'))\n\
         show('renamed', raw(m, 'LIST \"\" Work*'))\n\
         show('gone', raw(m, 'RENAME Projects Other'))\n\
         show('sysren', raw(m, 'RENAME Trash Bin'))\n\
         show('parent', raw(m, 'DELETE Work'))\n\
         show('sub', raw(m, 'SUBSCRIBE Work/2026'))\n\
         show('lsub', raw(m, 'LSUB \"\" %'))\n\
         show('trycreate', raw(m, 'APPEND Nowhere {{1+}}\\r\\nx'))\n\
         show('status', raw(m, 'STATUS Archive (MESSAGES)'))\n"
    );
    let lines = f.py(&script, &[]);
    assert!(tagged(&lines, "create").contains("OK"), "{lines:?}");
    assert!(tagged(&lines, "again").contains("NO [ALREADYEXISTS]"), "{lines:?}");
    assert!(tagged(&lines, "system").contains("NO [ALREADYEXISTS]"), "{lines:?}");
    assert!(tagged(&lines, "bad").contains("NO [CANNOT]"), "{lines:?}");
    assert!(tagged(&lines, "utf7").contains("OK"), "{lines:?}");
    let list = under(&lines, "list").join("\n");
    for line in [
        r#"* LIST (\HasNoChildren) "/" INBOX"#,
        r#"* LIST (\HasNoChildren \Junk) "/" Junk"#,
        r#"* LIST (\HasNoChildren \Archive) "/" Archive"#,
        r#"* LIST (\HasChildren) "/" Projects"#,
        r#"* LIST (\HasNoChildren) "/" Projects/2026"#,
        r#"* LIST (\HasNoChildren) "/" Entw&APw-rfe"#,
    ] {
        assert!(list.contains(line), "{line} missing from\n{list}");
    }
    assert!(!list.contains("Outbox"), "{list}");
    let level = under(&lines, "level").join("\n");
    assert!(
        level.contains("Projects\r")
            || level.contains(" Projects\n")
            || level.ends_with(" Projects"),
        "{level}"
    );
    assert!(!level.contains("Projects/2026"), "% stops at a level: {level}");
    let archived = under(&lines, "archive").join("\n");
    assert!(archived.contains("OK [COPYUID ") && archived.contains("* 1 EXPUNGE"), "{archived}");
    assert!(tagged(&lines, "rename").contains("OK"), "{lines:?}");
    let renamed = under(&lines, "renamed").join("\n");
    assert!(renamed.contains(r#""/" Work/2026"#) && !renamed.contains("Projects"), "{renamed}");
    assert!(tagged(&lines, "gone").contains("NO [NONEXISTENT]"), "{lines:?}");
    assert!(tagged(&lines, "sysren").contains("NO [CANNOT]"), "{lines:?}");
    assert!(tagged(&lines, "parent").contains("NO [CANNOT]"), "{lines:?}");
    let lsub = under(&lines, "lsub").join("\n");
    assert!(lsub.contains(r#"* LSUB () "/" INBOX"#), "{lsub}");
    assert!(lsub.contains(r#"* LSUB (\Noselect) "/" Work"#), "a subscribed child's parent: {lsub}");
    assert!(tagged(&lines, "trycreate").contains("NO [TRYCREATE]"), "{lines:?}");
    assert!(under(&lines, "status").join("\n").contains("(MESSAGES 1)"), "{lines:?}");

    // The API sees the same folders, with their counts, and the archived message there.
    let folders = f.world.api().get("/v1/mailboxes/sales/folders").expect(200).json();
    let names: Vec<&str> = folders
        .as_array()
        .expect("test value")
        .iter()
        .map(|x| x["name"].as_str().expect("test value"))
        .collect();
    assert_eq!(
        names,
        [
            "inbox",
            "sent",
            "outbox",
            "drafts",
            "trash",
            "junk",
            "archive",
            "Entwürfe",
            "Work",
            "Work/2026"
        ]
    );
    let archive = &folders[6];
    assert_eq!((archive["role"].as_str(), archive["total"].as_u64()), (Some("archive"), Some(1)));
    let work = f.world.api().get("/v1/emails?mailbox=sales&folder=Work%2F2026").expect(200).json();
    assert_eq!(work[0]["folder"], "Work/2026", "{work}");
    assert_eq!(work[0]["subject"], "to-archive", "{work}");

    // DELETE takes the folder and its mail; a new folder of the same name starts empty with a
    // new UIDVALIDITY.
    let script = format!(
        "{RAW}\nm = tls()\n\
         show('before', raw(m, 'STATUS Work/2026 (MESSAGES UIDVALIDITY)'))\n\
         show('delete', raw(m, 'DELETE Work/2026'))\n\
         show('missing', raw(m, 'DELETE Work/2026'))\n\
         show('create', raw(m, 'CREATE Work/2026'))\n\
         show('after', raw(m, 'STATUS Work/2026 (MESSAGES UIDVALIDITY)'))\n"
    );
    let lines = f.py(&script, &[]);
    assert!(tagged(&lines, "delete").contains("OK"), "{lines:?}");
    assert!(tagged(&lines, "missing").contains("NO [NONEXISTENT]"), "{lines:?}");
    let validity = |name: &str| -> String {
        let line = under(&lines, name).join(" ");
        line.split("UIDVALIDITY ")
            .nth(1)
            .unwrap_or("")
            .chars()
            .take_while(char::is_ascii_digit)
            .collect()
    };
    assert!(under(&lines, "before").join(" ").contains("MESSAGES 1"), "{lines:?}");
    assert!(under(&lines, "after").join(" ").contains("MESSAGES 0"), "{lines:?}");
    assert_ne!(validity("before"), validity("after"), "{lines:?}");
}

#[test]
fn api_folders_show_in_imap_and_move_mail() {
    let f = Fixture::start();
    f.receive(&plain("filed"));
    let api = f.world.api();
    let made =
        api.post("/v1/mailboxes/sales/folders", json!({"name": "Clients/Acme"})).expect(201).json();
    assert_eq!(made, json!({"name": "Clients/Acme", "role": null, "total": 0, "unread": 0}));
    api.post("/v1/mailboxes/sales/folders", json!({"name": "Clients/Acme"})).expect(409);
    api.post("/v1/mailboxes/sales/folders", json!({"name": "Trash"})).expect(400);
    api.post("/v1/mailboxes/sales/folders", json!({"name": "a/"})).expect(400);
    api.get("/v1/emails?mailbox=sales&folder=Nowhere").expect(404);
    let id = api.get("/v1/emails?mailbox=sales").expect(200).json()[0]["id"]
        .as_str()
        .expect("test value")
        .to_owned();
    let moved = api
        .patch(
            &format!("/v1/emails/{id}"),
            json!({"folder": "Clients/Acme", "flags": ["\\Seen", "invoice"]}),
        )
        .expect(200)
        .json();
    assert_eq!(moved["folder"], "Clients/Acme", "{moved}");
    assert_eq!(moved["flags"], json!(["\\Seen", "invoice"]), "{moved}");
    api.patch(&format!("/v1/emails/{id}"), json!({"folder": "Nowhere"})).expect(404);
    api.patch(&format!("/v1/emails/{id}"), json!({"flags": ["bad flag"]})).expect(400);

    // IMAP shows the folder (subscribed), the message in it and its flags.
    let script = format!(
        "{RAW}\nm = tls()\n\
         show('lsub', raw(m, 'LSUB \"\" *'))\n\
         show('select', raw(m, 'SELECT Clients/Acme'))\n\
         show('fetch', raw(m, 'FETCH 1 (FLAGS)'))\n"
    );
    let lines = f.py(&script, &[]);
    assert!(under(&lines, "lsub").join("\n").contains(r#""/" Clients/Acme"#), "{lines:?}");
    assert!(under(&lines, "select").join("\n").contains("* 1 EXISTS"), "{lines:?}");
    let fetch = under(&lines, "fetch").join("\n");
    assert!(fetch.contains("\\Seen") && fetch.contains("invoice"), "{fetch}");

    // A rename in the API keeps the mail; a delete moves it to the trash.
    let renamed = api
        .patch("/v1/mailboxes/sales/folders/Clients%2FAcme", json!({"name": "Clients/Acme Corp"}))
        .expect(200)
        .json();
    assert_eq!(
        (renamed["name"].as_str(), renamed["total"].as_u64()),
        (Some("Clients/Acme Corp"), Some(1))
    );
    api.patch("/v1/mailboxes/sales/folders/inbox", json!({"name": "x"})).expect(400);
    api.delete("/v1/mailboxes/sales/folders/trash").expect(400);
    api.delete("/v1/mailboxes/sales/folders/Clients%2FAcme").expect(404);
    let gone = api.delete("/v1/mailboxes/sales/folders/Clients").expect(200).json();
    assert_eq!(gone, json!({"deleted": true, "moved": 1}));
    let trash = api.get("/v1/emails?mailbox=sales&folder=trash").expect(200).json();
    assert_eq!(trash[0]["id"], id.as_str(), "{trash}");
    let lines = f.py(&format!("{RAW}\nm = tls()\nshow('list', raw(m, 'LIST \"\" *'))\n"), &[]);
    assert!(!under(&lines, "list").join("\n").contains("Clients"), "{lines:?}");
}

#[test]
fn mbsync_creates_deletes_and_archives_on_the_server() {
    let f = Fixture::start();
    f.receive(&plain("keep-me"));
    let home = f.world.dir.0.join("mbsync-folders");
    let maildir = home.join("mail");
    std::fs::create_dir_all(&maildir).expect("test value");
    std::fs::write(home.join("pass"), &f.password).expect("test value");
    let config = format!(
        "IMAPAccount edgemail\nHost 127.0.0.1\nPort {port}\nUser sales@{A}\n\
         PassCmd \"cat {pass}\"\nSSLType IMAPS\nCertificateFile {cert}\n\n\
         IMAPStore remote\nAccount edgemail\n\n\
         MaildirStore local\nPath {maildir}/\nInbox {maildir}/INBOX\nSubFolders Verbatim\n\n\
         Channel all\nFar :remote:\nNear :local:\nPatterns * !Outbox\nCreate Both\nRemove Both\n\
         Expunge Both\nSyncState {state}/\n",
        port = f.port("imaps"),
        pass = home.join("pass").display(),
        cert = f.cert.display(),
        maildir = maildir.display(),
        // Kept apart from the folders, so that mbsync tells a folder removed here from one
        // it has not seen yet.
        state = home.join("state").display(),
    );
    std::fs::create_dir_all(home.join("state")).expect("test value");
    std::fs::write(home.join("mbsyncrc"), config).expect("test value");
    let sync = || {
        let out = Command::new("mbsync")
            .env("HOME", &home)
            .args(["-c", &home.join("mbsyncrc").display().to_string(), "all"])
            .output()
            .expect("mbsync");
        assert!(
            out.status.success(),
            "mbsync: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            f.world.server.log()
        );
    };
    sync();
    assert!(maildir.join("Archive/cur").is_dir() && maildir.join("Junk/cur").is_dir());
    // A folder made locally is made on the server; the message filed into Archive locally is
    // archived on the server.
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(maildir.join("Receipts").join(sub)).expect("test value");
    }
    let inbox_new = maildir.join("INBOX/new");
    let inbox_cur = maildir.join("INBOX/cur");
    let file = std::fs::read_dir(&inbox_new)
        .expect("test value")
        .chain(std::fs::read_dir(&inbox_cur).expect("test value"))
        .next()
        .expect("the message pulled")
        .expect("test value")
        .path();
    let name = file.file_name().expect("test value").to_string_lossy().to_string();
    // mbsync keeps the UID in the file name; a file moved to another folder loses it.
    let plain_name = name.split(",U=").next().expect("test value").to_owned();
    std::fs::rename(&file, maildir.join("Archive/cur").join(format!("{plain_name}:2,S")))
        .expect("test value");
    sync();
    let folders = f.world.api().get("/v1/mailboxes/sales/folders").expect(200).json();
    let find =
        |n: &str| folders.as_array().expect("test value").iter().find(|x| x["name"] == n).cloned();
    assert!(find("Receipts").is_some(), "{folders}");
    assert_eq!(find("archive").expect("test value")["total"], 1, "{folders}");
    assert_eq!(find("inbox").expect("test value")["total"], 0, "{folders}");
    // A folder removed locally is removed on the server.
    std::fs::remove_dir_all(maildir.join("Receipts")).expect("test value");
    sync();
    let folders = f.world.api().get("/v1/mailboxes/sales/folders").expect(200).json();
    assert!(!folders.to_string().contains("Receipts"), "{folders}");
}
