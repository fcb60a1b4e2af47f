//! What every backend must do, written once over `Backend`: the redb file runs it here, and any
//! other backend runs the same functions. Plus the key codec's promise: encoded order is typed
//! order, and keys decode to what was encoded.

use std::ops::{Bound, ControlFlow};

use super::key::{Key, encode_key};
use super::table::Range;
use super::*;
use crate::store::error::Error;

const T: TableDefinition<(&str, u64, &str), &[u8]> = TableDefinition::new("t");
const U: TableDefinition<&str, u64> = TableDefinition::new("u");

fn ok<T>(r: Result<T>) -> T {
    r.unwrap_or_else(|e| panic!("backend: {e}"))
}

fn write<B: Backend, R>(backend: &B, work: impl FnOnce(&dyn WriteTxn) -> Result<R>) -> R {
    let tx = ok(backend.write());
    let out = ok(work(&*tx));
    ok(tx.commit());
    out
}

fn read<B: Backend, R>(backend: &B, work: impl FnOnce(&Snapshot) -> Result<R>) -> R {
    let tx = ok(backend.read());
    ok(work(&tx))
}

fn keys(range: Range<'_, (&str, u64, &str), &[u8]>) -> Result<Vec<(String, u64, String)>> {
    range
        .map(|e| e.map(|(k, _)| (k.value().0.to_owned(), k.value().1, k.value().2.to_owned())))
        .collect()
}

/// Point reads and writes, and a table never written.
pub fn get_put_delete<B: Backend>(backend: &B) {
    read(backend, |r| {
        assert!(r.open_table(U)?.get("nothing")?.is_none(), "a missing table reads as empty");
        assert_eq!(r.open_table(U)?.len()?, 0);
        Ok(())
    });
    write(backend, |w| {
        let mut u = w.open_table(U)?;
        u.insert("a", 1)?;
        u.insert("b", 2)?;
        u.insert("a", 3)?;
        assert_eq!(
            u.get("a")?.map(|v| v.value()),
            Some(3),
            "a write reads back in its transaction"
        );
        assert_eq!(u.len()?, 2);
        Ok(())
    });
    write(backend, |w| {
        let mut u = w.open_table(U)?;
        assert_eq!(u.remove("b")?.map(|v| v.value()), Some(2), "delete answers the old value");
        assert!(u.remove("b")?.is_none());
        Ok(())
    });
    read(backend, |r| {
        let u = r.open_table(U)?;
        assert_eq!(u.get("a")?.map(|v| v.value()), Some(3));
        assert!(u.get("b")?.is_none());
        assert!(!u.is_empty()?);
        Ok(())
    });
}

fn seed<B: Backend>(backend: &B) {
    write(backend, |w| {
        let mut t = w.open_table(T)?;
        for d in ["a", "a\0", "ab", "b"] {
            for n in [0u64, 7, u64::MAX] {
                for id in ["", "x", "x\0y", "y"] {
                    t.insert((d, n, id), format!("{d}|{n}|{id}").as_bytes())?;
                }
            }
        }
        Ok(())
    });
}

/// Ranges of typed keys, both ways, with every kind of bound; prefix scans see their prefix only.
pub fn ranges<B: Backend>(backend: &B) {
    seed(backend);
    read(backend, |r| {
        let t = r.open_table(T)?;
        let all = keys(t.iter()?)?;
        assert_eq!(all.len(), 48);
        let mut sorted = all.clone();
        sorted.sort();
        assert_eq!(all, sorted, "entries come in typed order");
        let mut back = keys(t.iter()?.rev())?;
        back.reverse();
        assert_eq!(back, all, "rev is the same entries backwards");
        let prefix = keys(t.range(("a", 0u64, "")..("a", u64::MAX, "\u{10FFFF}"))?)?;
        assert_eq!(prefix.len(), 12);
        assert!(prefix.iter().all(|(d, ..)| d == "a"), "a prefix scan stays in its prefix");
        let from = keys(t.range(("a\0", 7u64, "x")..)?)?;
        assert_eq!(from[0], ("a\0".into(), 7, "x".into()));
        assert_eq!(from.len(), 48 - 12 - 4 - 1);
        let excluded = (Bound::Excluded(("ab", 0u64, "")), Bound::Included(("ab", 7u64, "x")));
        let between = keys(t.range::<(&str, u64, &str)>(excluded)?.rev())?;
        let expect =
            [("ab", 7, "x"), ("ab", 7, ""), ("ab", 0, "y"), ("ab", 0, "x\0y"), ("ab", 0, "x")];
        let expect: Vec<_> =
            expect.iter().map(|(d, n, i)| (d.to_string(), *n, i.to_string())).collect();
        assert_eq!(between, expect);
        assert!(keys(t.range(("b", 0u64, "")..("a", 0u64, ""))?)?.is_empty(), "inverted is empty");
        let first = t.first()?.map(|(k, v)| (k.value().2.to_owned(), v.value().to_vec()));
        assert_eq!(first, Some((String::new(), b"a|0|".to_vec())));
        let last = t.last()?.map(|(k, _)| k.value().0.to_owned());
        assert_eq!(last.as_deref(), Some("b"));
        Ok(())
    });
    write(backend, |w| {
        let mut t = w.open_table(T)?;
        t.retain_in(("a", 0u64, "")..=("a", u64::MAX, "z"), |(_, n, _), _| n == 7)?;
        assert_eq!(keys(t.range(("a", 0u64, "")..("a\0", 0u64, ""))?)?.len(), 4);
        Ok(())
    });
}

/// Paging through a range in either direction meets every entry once, in order.
pub fn pages<B: Backend>(backend: &B) {
    seed(backend);
    let tx = ok(backend.read());
    let table = ok(tx.table(T.name()));
    let all = ok(table.page(Bound::Unbounded, Bound::Unbounded, Direction::Forward, usize::MAX));
    assert_eq!(all.entries.len(), 48);
    assert!(all.next.is_none());
    for direction in [Direction::Forward, Direction::Backward] {
        for size in [1, 5, 48] {
            let mut seen = Vec::new();
            let mut after: Option<Vec<u8>> = None;
            loop {
                let cursor = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
                let (lo, hi) = match direction {
                    Direction::Forward => (cursor, Bound::Unbounded),
                    Direction::Backward => (Bound::Unbounded, cursor),
                };
                let page = ok(table.page(lo, hi, direction, size));
                assert!(page.entries.len() <= size);
                seen.extend(page.entries);
                match page.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            if direction == Direction::Backward {
                seen.reverse();
            }
            assert_eq!(seen, all.entries, "{direction:?} pages of {size}");
        }
    }
}

/// An abandoned transaction leaves nothing; nor does one that is dropped.
pub fn rollback<B: Backend>(backend: &B) {
    write(backend, |w| w.open_table(U)?.insert("kept", 1));
    let tx = ok(backend.write());
    ok((|| -> Result<()> {
        let w: &dyn WriteTxn = &*tx;
        w.open_table(U)?.insert("lost", 2)?;
        w.open_table(U)?.remove("kept")?;
        Ok(())
    })());
    ok(tx.abort());
    read(backend, |r| {
        let u = r.open_table(U)?;
        assert!(u.get("lost")?.is_none(), "an aborted write is gone");
        assert_eq!(u.get("kept")?.map(|v| v.value()), Some(1), "an aborted delete is undone");
        Ok(())
    });
}

fn seen(u: &impl ReadableTable<&'static str, u64>) -> Result<Vec<(String, u64)>> {
    u.iter()?.map(|e| e.map(|(k, v)| (k.value().to_owned(), v.value()))).collect()
}

/// A transaction's own writes, mixed with what was committed before, are what its point reads,
/// ranges and counts see, and what it commits (a backend may hold writes back until then).
pub fn own_writes<B: Backend>(backend: &B) {
    write(backend, |w| {
        let mut u = w.open_table(U)?;
        for (k, v) in [("a", 1), ("b", 2), ("c", 3)] {
            u.insert(k, v)?;
        }
        Ok(())
    });
    write(backend, |w| {
        let mut u = w.open_table(U)?;
        u.insert("d", 4)?;
        assert_eq!(u.remove("d")?.map(|v| v.value()), Some(4), "a held put answers a delete");
        assert!(u.get("d")?.is_none(), "and is gone");
        assert_eq!(u.remove("a")?.map(|v| v.value()), Some(1));
        u.insert("b", 20)?;
        assert_eq!(u.remove("b")?.map(|v| v.value()), Some(20));
        u.insert("e", 5)?;
        let want = vec![("c".to_owned(), 3), ("e".to_owned(), 5)];
        assert_eq!(seen(&u)?, want, "a range sees the transaction's writes");
        assert_eq!(u.len()?, 2);
        u.insert("a", 10)?;
        assert_eq!(u.get("a")?.map(|v| v.value()), Some(10), "a put after a delete reads back");
        Ok(())
    });
    read(backend, |r| {
        let u = r.open_table(U)?;
        let want = [("a", 10), ("c", 3), ("e", 5)].map(|(k, v)| (k.to_owned(), v)).to_vec();
        assert_eq!(seen(&u)?, want, "what the transaction saw is what it committed");
        Ok(())
    });
}

/// A read keeps the state it first saw; one begun after a commit sees the commit.
pub fn snapshots<B: Backend>(backend: &B) {
    let n = |r: &Snapshot| ok(r.open_table(U).and_then(|u| Ok(u.get("n")?.map(|v| v.value()))));
    for value in 0..3 {
        let before = ok(backend.read());
        let old = n(&before);
        write(backend, |w| w.open_table(U)?.insert("n", value));
        assert_eq!(n(&before), old, "a read keeps its snapshot across a commit");
        assert_eq!(n(&ok(backend.read())), Some(value), "a later read sees the commit");
    }
}

type K3<'a> = (&'a str, u64, &'a str);

/// Up to `stop` entries of a scan, as owned tuples.
fn scanned(
    t: &impl ReadableTable<(&'static str, u64, &'static str), &'static [u8]>,
    range: (Bound<K3<'_>>, Bound<K3<'_>>),
    rev: bool,
    stop: usize,
) -> Result<Vec<(String, u64, String)>> {
    let mut out = Vec::new();
    t.scan::<K3<'_>>(range, rev, |(d, n, id), v| {
        assert_eq!(v, format!("{d}|{n}|{id}").as_bytes(), "a scan lends each key's own value");
        out.push((d.to_owned(), n, id.to_owned()));
        Ok(if out.len() == stop { ControlFlow::Break(()) } else { ControlFlow::Continue(()) })
    })?;
    Ok(out)
}

/// Scans see what ranges see, both ways, in read and write transactions (including keys that
/// escape a zero byte and the writes a transaction holds), and stop when told.
pub fn scans<B: Backend>(backend: &B) {
    seed(backend);
    let bounds: [(Bound<K3<'_>>, Bound<K3<'_>>); 4] = [
        (Bound::Unbounded, Bound::Unbounded),
        (Bound::Included(("a", 0, "")), Bound::Excluded(("ab", 0, ""))),
        (Bound::Excluded(("a\0", 7, "x\0y")), Bound::Included(("b", 0, "y"))),
        (Bound::Included(("b", 0, "")), Bound::Excluded(("a", 0, ""))),
    ];
    let check = |t: &dyn Fn(bool, usize, usize) -> Result<(Vec<_>, Vec<_>)>| -> Result<()> {
        for which in 0..bounds.len() {
            for rev in [false, true] {
                let (scan, range) = t(rev, which, usize::MAX)?;
                assert_eq!(scan, range, "bounds {which}, rev {rev}");
                let (first, _) = t(rev, which, 3)?;
                assert_eq!(first, range.iter().take(3).cloned().collect::<Vec<_>>(), "a break");
            }
        }
        Ok(())
    };
    read(backend, |r| {
        let t = r.open_table(T)?;
        check(&|rev, which, stop| {
            let range =
                keys(if rev { t.range(bounds[which])?.rev() } else { t.range(bounds[which])? })?;
            Ok((scanned(&t, bounds[which], rev, stop)?, range))
        })
    });
    write(backend, |w| {
        let mut t = w.open_table(T)?;
        t.insert(("a\0", 7, "new"), &b"a\0|7|new"[..])?;
        t.remove(("ab", 0, "x"))?;
        check(&|rev, which, stop| {
            let range =
                keys(if rev { t.range(bounds[which])?.rev() } else { t.range(bounds[which])? })?;
            Ok((scanned(&t, bounds[which], rev, stop)?, range))
        })
    });
}

/// Runs every check on a fresh backend each.
pub fn all<B: Backend>(fresh: impl Fn() -> B) {
    get_put_delete(&fresh());
    own_writes(&fresh());
    ranges(&fresh());
    scans(&fresh());
    pages(&fresh());
    rollback(&fresh());
    snapshots(&fresh());
}

/// A small deterministic generator, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// Short strings over an alphabet rich in edge cases: NUL, 0x01, 0xFF-adjacent UTF-8.
    fn text(&mut self) -> String {
        const ALPHABET: [char; 8] = ['\0', '\u{1}', 'a', 'b', 'z', 'é', '\u{7F}', '\u{10FFFF}'];
        (0..self.below(4)).map(|_| ALPHABET[self.below(8) as usize]).collect()
    }

    fn number(&mut self) -> u64 {
        match self.below(4) {
            0 => 0,
            1 => u64::MAX,
            2 => self.below(300),
            _ => self.next(),
        }
    }
}

fn ordered_as_typed<T: Ord + std::fmt::Debug>(
    items: &[T],
    encode: impl Fn(&T) -> Vec<u8>,
    decode: impl Fn(&[u8]) -> T,
) {
    for a in items {
        let ea = encode(a);
        assert_eq!(&decode(&ea), a, "decodes to what was encoded");
        for b in items {
            assert_eq!(ea.cmp(&encode(b)), a.cmp(b), "{a:?} vs {b:?}");
        }
    }
}

fn decoded<K: Key>(encoded: &[u8]) -> Vec<u8> {
    let mut plain = Vec::new();
    let rest = K::to_plain(encoded, true, &mut plain).unwrap_or_else(|e| panic!("{e}"));
    assert!(rest.is_empty());
    plain
}

#[test]
fn encoded_order_is_typed_order() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..20 {
        let strs: Vec<(String, String)> = (0..40).map(|_| (rng.text(), rng.text())).collect();
        ordered_as_typed(
            &strs,
            |(a, b)| encode_key::<(&str, &str)>(&(a.as_str(), b.as_str())),
            |e| {
                let plain = decoded::<(&str, &str)>(e);
                let (a, b) = <(&str, &str)>::from_plain(&plain, true).0;
                (a.to_owned(), b.to_owned())
            },
        );
        let mixed: Vec<(String, u8, u64, String)> =
            (0..40).map(|_| (rng.text(), rng.below(3) as u8, rng.number(), rng.text())).collect();
        type M<'a> = (&'a str, u8, u64, &'a str);
        ordered_as_typed(
            &mixed,
            |(a, b, c, d)| encode_key::<M<'_>>(&(a.as_str(), *b, *c, d.as_str())),
            |e| {
                let plain = decoded::<M<'_>>(e);
                let (a, b, c, d) = <M<'_>>::from_plain(&plain, true).0;
                (a.to_owned(), b, c, d.to_owned())
            },
        );
        let bytes: Vec<(u64, Vec<u8>, u32)> =
            (0..40).map(|_| (rng.number(), rng.text().into_bytes(), rng.below(5) as u32)).collect();
        type N<'a> = (u64, &'a [u8], u32);
        ordered_as_typed(
            &bytes,
            |(a, b, c)| encode_key::<N<'_>>(&(*a, b.as_slice(), *c)),
            |e| {
                let plain = decoded::<N<'_>>(e);
                let (a, b, c) = <N<'_>>::from_plain(&plain, true).0;
                (a, b.to_vec(), c)
            },
        );
    }
}

#[test]
fn a_prefix_bound_sorts_before_its_longer_neighbours() {
    let short = encode_key::<(&str, &str)>(&("a", "b"));
    let long = encode_key::<(&str, &str)>(&("ab", ""));
    assert!(short < long, "(\"a\", \"b\") < (\"ab\", \"\")");
    assert_eq!(encode_key::<&str>(&"plain"), b"plain", "a single string key is itself");
}

#[test]
fn a_damaged_key_is_an_error_not_a_panic() {
    let mut plain = Vec::new();
    let bad = <(&str, &str)>::to_plain(b"abc", true, &mut plain);
    assert!(matches!(bad, Err(Error::Internal(_))));
    assert!(<(&str, &str)>::to_plain(b"a\0\x05b", true, &mut plain).is_err());
    assert!(<&str as Key>::decode(b"\xFF", true).is_err());
}

#[test]
fn the_redb_backend_conforms() {
    let dir = std::env::temp_dir().join(format!("edgemail-kv-{}", crate::ids::new_id("t")));
    std::fs::create_dir_all(&dir).ok();
    let n = std::cell::Cell::new(0);
    all(|| {
        n.set(n.get() + 1);
        ok(Redb::open(&dir.join(format!("{}.redb", n.get())), 1 << 20))
    });
    std::fs::remove_dir_all(&dir).ok();
}

#[path = "../../../tests/support/pg_cluster.rs"]
#[allow(dead_code)]
pub(in crate::store) mod pg_cluster;

#[test]
fn the_postgres_backend_conforms() {
    let cluster = pg_cluster::Cluster::shared();
    all(|| ok(Postgres::connect(&cluster.database(), 4, &[], TRIAL)));
}

#[test]
fn a_lost_race_on_postgres_is_contention_and_writes_nothing() {
    let db = ok(Postgres::connect(&pg_cluster::Cluster::shared().database(), 4, &[], TRIAL));
    write(&db, |w| w.open_table(U)?.insert("n", 1));
    // Two transactions read the counter and both write it: at SERIALIZABLE the second to
    // write, after the first committed, must lose (a write before that would wait on the lock).
    let (a, b) = (ok(db.write()), ok(db.write()));
    let read_n = |tx: &dyn WriteTxn| -> Result<u64> {
        Ok(tx.open_table(U)?.get("n")?.map_or(0, |v| v.value()))
    };
    let n = ok(read_n(&*a));
    ok((&*a as &dyn WriteTxn).open_table(U).and_then(|mut t| t.insert("n", n + 1)));
    let seen = ok(read_n(&*b));
    ok(a.commit());
    let late = (&*b as &dyn WriteTxn).open_table(U).and_then(|mut t| t.insert("n", seen + 1));
    let lost = late.and_then(|()| b.commit());
    assert!(lost.as_ref().is_err_and(Error::is_contention), "{lost:?}");
    assert_eq!(read(&db, |r| Ok(r.open_table(U)?.get("n")?.map(|v| v.value()))), Some(2));
}
