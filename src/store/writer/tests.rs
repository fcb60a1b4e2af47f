//! The group-commit thread's own tests: a refused job and a faulting one inside a batch.

use super::super::kv::{ReadableTable, Redb, TableDefinition};
use super::*;

const T: TableDefinition<&str, u64> = TableDefinition::new("t");

type Answer = oneshot::Receiver<Result<()>>;

/// A job that writes `key`, then answers `end`.
fn job(key: &'static str, end: fn() -> Result<()>) -> (Box<dyn Job>, Answer) {
    let (reply, answer) = oneshot::channel();
    let work = move |tx: &dyn WriteTxn| -> Result<()> {
        tx.open_table(T)?.insert(key, 1)?;
        end()
    };
    (
        Box::new(Pending { snapshot: false, ahead: None, work: Some(work), outcome: None, reply }),
        answer,
    )
}

/// Runs the jobs as one group commit; returns their answers and the keys the file holds.
fn commit(jobs: Vec<(Box<dyn Job>, Answer)>) -> (Vec<Result<()>>, Vec<String>) {
    let dir = std::env::temp_dir().join(format!("edgemail-writer-{}", crate::ids::new_id("t")));
    std::fs::create_dir_all(&dir).expect("dir"); // ok: test
    let db = Db::Redb(Redb::open(&dir.join("w.redb"), 1 << 20).expect("db")); // ok: test
    let (mut batch, answers): (Vec<_>, Vec<_>) = jobs.into_iter().unzip();
    let outcome = run_batch(&db, &mut batch, false, false).map_err(Arc::new);
    batch.into_iter().for_each(|job| job.finish(outcome.clone()));
    let answers = answers.into_iter().map(|mut a| a.try_recv().expect("answered")).collect(); // ok: test
    let mut keys = Vec::new();
    let tx = db.read().expect("read"); // ok: test
    if let Ok(table) = tx.open_table(T) {
        let entries = table.iter().expect("iter"); // ok: test
        for entry in entries {
            keys.push(entry.expect("entry").0.value().to_owned()); // ok: test
        }
    }
    drop((tx, db));
    std::fs::remove_dir_all(&dir).ok();
    (answers, keys)
}

#[test]
fn a_refusal_answers_its_own_job_and_the_batch_still_commits() {
    let (answers, keys) = commit(vec![
        job("a", || Ok(())),
        job("b", || Err(Error::not_found("thing"))),
        job("c", || Ok(())),
    ]);
    assert!(matches!(answers[..], [Ok(()), Err(Error::NotFound(_)), Ok(())]), "{answers:?}");
    // A refusal must come before any write of its job; this one wrote first, and that stands.
    assert_eq!(keys, ["a", "b", "c"]);
}

#[test]
fn a_fault_aborts_the_whole_batch_and_each_job_learns_why() {
    let (answers, keys) = commit(vec![
        job("a", || Ok(())),
        job("b", || Err(Error::internal("broken"))),
        job("c", || Ok(())),
    ]);
    assert!(keys.is_empty(), "nothing of an aborted batch is written: {keys:?}");
    assert!(matches!(&answers[0], Err(Error::Aborted(_))), "{answers:?}");
    assert!(matches!(&answers[1], Err(Error::Internal(m)) if m == "broken"));
    assert!(matches!(&answers[2], Err(Error::Aborted(_))));
}
