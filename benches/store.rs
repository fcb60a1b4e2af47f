//! The store's hot reads and writes through its public API, on a real data file: what a storage
//! backend beneath the store costs or saves. Run with `cargo bench --bench store`; compare two
//! builds by running each bench executable alternately (the machine's load moves the figures).
//!
//! Typed redb tables (before: the store at ebc8467, with this bench's seeding) against the
//! key-value backend on redb (after), in instructions per call, which do not move with the load:
//! `valgrind --tool=callgrind` on this executable with `--bench --profile-time 2`, inclusive Ir
//! over all calls of each `Rtx` method. Before / the backend as first written / now:
//! 10 mailboxes 67.3k / 76.1k / 72.1k; folder page of 50 77.7k / 123.4k / 95.3k; 50 contacts
//! 260k / 309k / 287k; 100 due entries 84.4k / 163.3k / 131.6k. Medians, before and now run
//! alternately twice each on a busy 2-core machine (load ~4.8): a point get 1.59-2.00 /
//! 1.75-1.76 µs; an email by id 5.59-5.72 / 5.06-5.24 µs; 10 mailboxes 9.2-10.2 / 11.2-11.5 µs;
//! folder page 12.7-12.9 / 16.5-17.6 µs; 50 contacts 37.7-38.9 / 42.5-43.3 µs; 100 due entries
//! 20.1-22.1 / 30.9-33.3 µs. Once more at load ~3.5, before / now / the first version: 10
//! mailboxes 7.2 / 8.2 / 8.1 µs; folder page 8.9 / 11.5 / 13.8 µs; 50 contacts 25.9 / 29.4 /
//! 31.9 µs; 100 due entries 15.2 / 20.5 / 23.2 µs. Point reads cost the same or less; range scans still do not: about
//! 0.35-0.55k instructions per entry more than the typed tables, and more in wall time.
//!
//! What the first version paid per entry and no longer does: a call through a boxed iterator
//! (redb's cursor is now a variant of `Entries`, called directly), a byte-at-a-time search for
//! each string part's end (now a word at a time), a full UTF-8 validation when a key or value is
//! checked and again when it is read (the check tries ASCII first), formatting the table's name
//! on each open. Forcing the whole chain inline into the callers' loops was tried and cost more.
//! What remains, from the profile of `due` (about 0.2k of the 0.47k per entry is moves): each
//! entry's two redb page guards (about a hundred bytes each) are moved through `Bytes`, `Result`
//! and `Option` on their way from redb's cursor to the caller, fewer times with the typed tables,
//! and dropped through `Bytes`; a key is checked when it is read and split again when its value
//! is asked for (about 0.1k). Closing that needs guards that carry less than redb's per entry.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{Criterion, criterion_group, criterion_main};
use edgemail::store::{Domain, Email, Folder, Result, Store, Summary};

const DOMAIN: &str = "bench.test";
const MAILBOX: &str = "user3@bench.test";
const EMAILS: u64 = 500;
const CONTACTS: usize = 300;

struct Seeded {
    store: Store,
    dir: PathBuf,
}

impl Drop for Seeded {
    fn drop(&mut self) {
        self.store.close();
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

fn must<T>(what: &str, r: Result<T>) -> T {
    match r {
        Ok(v) => v,
        Err(e) => panic!("{what}: {e}"),
    }
}

fn seed() -> Seeded {
    let dir = std::env::temp_dir().join(format!("edgemail-bench-store-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    let store = must("open", Store::open(&dir));
    let domain = Domain { name: DOMAIN.into(), created_at: 1, dkim: Vec::new() };
    must("domain", store.write_blocking(move |w| w.add_domain(&domain)));
    must(
        "mailboxes",
        store.write_blocking(|w| -> Result<()> {
            for i in 0..10 {
                w.create_mailbox(DOMAIN, &format!("user{i}"), Some(format!("User {i}")))?;
            }
            Ok(())
        }),
    );
    must(
        "emails",
        store.write_blocking(|w| -> Result<()> {
            for i in 0..EMAILS {
                let email = Email {
                    summary: Summary {
                        id: format!("em_{i:08}"),
                        mailbox: MAILBOX.into(),
                        folder: Folder::Sent,
                        from: MAILBOX.into(),
                        to: vec![format!("rcpt{i}@example.com")],
                        subject: format!("Message {i}"),
                        snippet: "A short snippet of the body".into(),
                        created_at: 1_795_305_600_000 + i,
                        size: 2048,
                        ..Summary::default()
                    },
                    text: Some("Hello there, this is the body of the message.".into()),
                    ..Email::default()
                };
                w.enqueue(&email, 1_795_305_600_000 + i)?;
            }
            Ok(())
        }),
    );
    must(
        "contacts",
        store.write_blocking(|w| -> Result<()> {
            for i in 0..CONTACTS {
                w.upsert_contact(DOMAIN, &format!("c{i}@example.com"), format!("Contact {i}"))?;
            }
            Ok(())
        }),
    );
    Seeded { store, dir }
}

fn reads(c: &mut Criterion) {
    let seeded = seed();
    let store = &seeded.store;
    c.bench_function("store: get one mailbox", |b| {
        b.iter(|| must("get", store.read_blocking(|r| r.mailbox(DOMAIN, black_box("user3")))))
    });
    c.bench_function("store: list a domain's 10 mailboxes", |b| {
        b.iter(|| must("list", store.read_blocking(|r| r.mailboxes(black_box(DOMAIN)))))
    });
    c.bench_function("store: get one email by id", |b| {
        b.iter(|| must("email", store.read_blocking(|r| r.email_by_id(black_box("em_00000250")))))
    });
    c.bench_function("store: folder page of 50, newest first", |b| {
        b.iter(|| {
            must(
                "page",
                store.read_blocking(|r| r.folder_page(black_box(MAILBOX), Folder::Sent, 50, None)),
            )
        })
    });
    c.bench_function("store: contacts page of 50", |b| {
        b.iter(|| {
            must("contacts", store.read_blocking(|r| r.contacts_page(black_box(DOMAIN), None, 50)))
        })
    });
    c.bench_function("store: 100 due queue entries", |b| {
        b.iter(|| must("due", store.read_blocking(|r| r.due(black_box(u64::MAX), 100))))
    });
}

fn writes(c: &mut Criterion) {
    let seeded = seed();
    let store = &seeded.store;
    let mut group = c.benchmark_group("store writes");
    group.sample_size(20);
    let mut round = 0u64;
    group.bench_function("store: upsert 100 contacts in one durable commit", |b| {
        b.iter(|| {
            round += 1;
            let base = round * 100;
            must(
                "upsert",
                store.write_blocking(move |w| -> Result<()> {
                    for i in base..base + 100 {
                        w.upsert_contact(DOMAIN, &format!("w{i}@example.com"), "W".into())?;
                    }
                    Ok(())
                }),
            )
        })
    });
    group.bench_function("store: rename one contact, durable", |b| {
        b.iter(|| {
            must(
                "rename",
                store.write_blocking(|w| {
                    w.upsert_contact(DOMAIN, "c7@example.com", "Renamed".into())
                }),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, reads, writes);
criterion_main!(benches);
