//! The junk classifier's quality and speed on a labelled corpus (`benches/spam.sh` unpacks it):
//! `cargo bench --bench spam -- DIR`, where DIR holds `spam/` and `ham/`, one message per file.
//! About 70% of each class (chosen by a hash of the file name, so the split is the same every
//! run) trains an in-memory model; the rest is scored at the default threshold. Prints spam
//! caught and ham flagged, a sweep of other thresholds, and classifications per second on one
//! thread and on two. `SPAM_BENCH_MISSES=1` lists the misclassified files.

use std::path::{Path, PathBuf};
use std::time::Instant;

use edgemail::junk::{Model, Thresholds, features, token_hash, verdict};

fn files(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.filter_map(|e| e.ok()).map(|e| e.path()).filter(|p| p.is_file()).collect())
        .unwrap_or_default();
    out.sort();
    out
}

/// Whether a file is in the training part: 7 in 10, by a hash of its name.
fn trains(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    token_hash(name.as_bytes()) % 10 < 7
}

struct Held {
    path: PathBuf,
    raw: Vec<u8>,
    spam: bool,
}

fn main() {
    let Some(root) = std::env::args().skip(1).find(|a| !a.starts_with('-')) else {
        eprintln!("usage: cargo bench --bench spam -- DIR (with DIR/spam and DIR/ham)");
        return;
    };
    let root = PathBuf::from(root);
    let mut model = Model::default();
    let mut held = Vec::new();
    let started = Instant::now();
    let mut trained = (0, 0);
    for (class, spam) in [("spam", true), ("ham", false)] {
        for path in files(&root.join(class)) {
            let Ok(raw) = std::fs::read(&path) else { continue };
            if trains(&path) {
                model.learn(&features(&raw), spam);
                if spam { trained.0 += 1 } else { trained.1 += 1 }
            } else {
                held.push(Held { path, raw, spam });
            }
        }
    }
    println!(
        "trained {} spam + {} ham in {:.2} s ({} distinct tokens); held out {} messages",
        trained.0,
        trained.1,
        started.elapsed().as_secs_f64(),
        model.tokens.len(),
        held.len()
    );
    quality(&model, &held);
    speed(&model, &held);
}

fn quality(model: &Model, held: &[Held]) {
    let t = Thresholds::default();
    let scores: Vec<(f64, &Held)> = held
        .iter()
        .map(|h| (verdict(&model.score(None, &features(&h.raw)), &[], &t).score, h))
        .collect();
    let spam_n = held.iter().filter(|h| h.spam).count().max(1) as f64;
    let ham_n = held.iter().filter(|h| !h.spam).count().max(1) as f64;
    let rates = |threshold: f64| {
        let caught = scores.iter().filter(|(s, h)| h.spam && *s >= threshold).count() as f64;
        let flagged = scores.iter().filter(|(s, h)| !h.spam && *s >= threshold).count() as f64;
        (100.0 * caught / spam_n, 100.0 * flagged / ham_n, flagged)
    };
    let (caught, flagged, n) = rates(t.junk);
    println!(
        "at threshold {:.1}: spam caught {caught:.2}% of {spam_n}, ham flagged {flagged:.2}% \
         ({n} of {ham_n})",
        t.junk
    );
    for threshold in [0.0, 2.5, 4.0, 5.0, 5.5, 6.0] {
        let (c, f, _) = rates(threshold);
        println!("  threshold {threshold:>4.1}: caught {c:6.2}%  flagged {f:5.2}%");
    }
    if std::env::var_os("SPAM_BENCH_MISSES").is_some() {
        for (score, h) in &scores {
            if h.spam != (*score >= t.junk) {
                println!(
                    "  miss: {} {} score {score}",
                    if h.spam { "spam" } else { "ham" },
                    h.path.display()
                );
            }
        }
    }
}

/// Classifications (tokenize, score, verdict) per second over the held-out messages, repeated
/// for at least two seconds.
fn speed(model: &Model, held: &[Held]) {
    let t = Thresholds::default();
    let bytes: usize = held.iter().map(|h| h.raw.len()).sum();
    println!("held-out messages average {} bytes", bytes / held.len().max(1));
    for threads in [1usize, 2] {
        let started = Instant::now();
        let mut done = 0usize;
        while started.elapsed().as_secs_f64() < 2.0 {
            std::thread::scope(|s| {
                for part in held.chunks(held.len().div_ceil(threads).max(1)) {
                    s.spawn(move || {
                        for h in part {
                            std::hint::black_box(verdict(
                                &model.score(None, &features(&h.raw)),
                                &[],
                                &t,
                            ));
                        }
                    });
                }
            });
            done += held.len();
        }
        let secs = started.elapsed().as_secs_f64();
        println!(
            "{threads} thread(s): {:.0} classifications/s ({:.1} us each)",
            done as f64 / secs,
            secs * 1e6 * threads as f64 / done as f64
        );
    }
}
