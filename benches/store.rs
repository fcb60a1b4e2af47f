//! The store's hot reads and writes through its public API, on a real data file: what a storage
//! backend beneath the store costs or saves. Run with `cargo bench --bench store`; compare two
//! builds by running each bench executable alternately (the machine's load moves the figures).
//!
//! Typed redb tables (before: the store at ebc8467, with this bench's seeding) against the
//! key-value backend on redb (after). Instructions per call, which do not move with the load:
//! `valgrind --tool=callgrind` on each executable with `--bench --profile-time 2`, inclusive Ir
//! over all calls of each `Rtx` method. Before / the backend as first written / with lazy ranges
//! only / now, where the store's loops over many entries call `scan`:
//! - 10 mailboxes: 67.2k / 76.1k / 72.1k / 66.3k
//! - folder page of 50: 77.7k / 123.4k / 95.3k / 58.8k
//! - 50 contacts: 260.3k / 309k / 287k / 262.3k (decoding the 50 JSON documents is most of it;
//!   the page is now joined from the stored JSON instead, `contacts_page_json`, which this bench
//!   times from here on)
//! - 100 due entries: 84.4k / 163.3k / 131.6k / 84.4k
//!
//! Criterion medians on a quiet 2-core machine (load 1.7), before and now run alternately twice
//! each, before / now: a point get 1.36, 1.29 / 1.18, 1.16 µs; 10 mailboxes 7.00, 6.78 / 6.64,
//! 6.55 µs; an email by id 3.63, 3.85 / 2.48, 2.50 µs; folder page 8.26, 8.42 / 5.90, 6.01 µs;
//! 50 contacts 23.9, 25.0 / 23.3, 23.5 µs; 100 due entries 12.7, 14.3 / 11.5, 9.9 µs. The
//! backend costs nothing measurable on redb; it saves time where the store's own code changed
//! with it (emails by id, the folder page).
//!
//! Why `scan` and not only lazy ranges: a lazily read range hands each entry out as redb's two page
//! guards (about a hundred bytes each), moved through `Bytes`, `Result` and `Option` on their way to
//! the caller and checked again when read, which cost 0.35-0.55k instructions an entry more than
//! the typed tables. `scan` lends each entry to a closure where redb's cursor hands it over, and
//! checks and reads each key and value in one pass.

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
                w.upsert_contact(
                    DOMAIN,
                    &edgemail::store::ContactUpsert {
                        email: format!("c{i}@example.com"),
                        name: Some(format!("Contact {i}")),
                        fields: Default::default(),
                    },
                )?;
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
                store.read_blocking(|r| {
                    r.folder_page(black_box(MAILBOX), Folder::Sent, 50, None, None)
                }),
            )
        })
    });
    c.bench_function("store: contacts page of 50", |b| {
        b.iter(|| {
            let page = store.read_blocking(|r| r.contacts_page_json(black_box(DOMAIN), None, 50));
            must("contacts", page)
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
                        w.upsert_contact(
                            DOMAIN,
                            &edgemail::store::ContactUpsert {
                                email: format!("w{i}@example.com"),
                                name: Some("W".into()),
                                fields: Default::default(),
                            },
                        )?;
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
                    w.upsert_contact(
                        DOMAIN,
                        &edgemail::store::ContactUpsert {
                            email: ("c7@example.com").to_string(),
                            name: Some("Renamed".into()),
                            fields: Default::default(),
                        },
                    )
                }),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, reads, writes);
criterion_main!(benches);
