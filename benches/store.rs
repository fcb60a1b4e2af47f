//! The store's hot reads and writes through its public API, on a real data file: what a storage
//! backend beneath the store costs or saves. Run with `cargo bench --bench store`; compare two
//! builds by running each bench executable alternately (the machine's load moves the figures).
//!
//! Typed redb tables (before) against the key-value backend on redb (after), two alternating runs
//! each on a busy 2-core machine (load ~10), medians: a point get 1.27-1.88 / 1.24-1.26 µs; an
//! email by id 3.9-5.6 / 3.9-8.0 µs; 10 mailboxes 6.8-9.9 / 8.1-8.6 µs; a folder page of 50,
//! newest first, 8.4-8.6 / 12.5-13.9 µs; 50 contacts 26.7-27.3 / 34-45 µs; 100 due queue entries
//! 14.6-15.6 / 25.7-34.1 µs. Durable writes were within the disk's noise (0.4-4.3 ms either way).
//! Point reads cost the same; range scans paid about 0.1-0.2 µs per entry, first suspected in
//! decoding tuple keys into an owned layout.
//!
//! Keys now decode in place (no allocation per entry unless a string part holds a NUL). Owned
//! decoding against in place, two alternating runs each, same load (~4 on 2 cores), medians: 10
//! mailboxes 8.1-8.6 / 7.7-13.6 µs; folder page of 50 11.6-14.7 / 11.1-15.3 µs; 50 contacts
//! 29.3-30.6 / 28.6-35.9 µs; 100 due entries 19.0-27.1 / 19.0-21.4 µs: within the noise.
//! Instructions per call do not move with the load: under `valgrind --tool=callgrind` (this
//! executable with `--bench --profile-time 2`, inclusive Ir over calls of each `Rtx` method),
//! 10 mailboxes 76.1k / 73.9k, folder page 120.7k / 113.6k, 50 contacts 310k / 299k, 100 due
//! entries 158.5k / 144.8k (-3% to -9%). What remains per entry is redb's cursor and page guards,
//! moving guards through the boxed iterator, checking UTF-8, and the callers' own copies of ids.

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
