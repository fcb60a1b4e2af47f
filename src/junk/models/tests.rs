use super::*;

fn message(subject: &str, body: &str) -> Vec<u8> {
    format!(
        "From: a@b.test\r\nSubject: {subject}\r\nMessage-ID: <{subject}@b.test>\r\n\r\n{body}\r\n"
    )
    .into_bytes()
}

fn temp_store(tag: &str) -> (Store, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!("edgemail-junk-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    (Store::open(&dir).expect("open"), dir) // ok: test
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn training_is_seen_by_this_cache_and_by_another_node() {
    let (store, dir) = temp_store("models");
    let (here, there) = (Models::new(), Models::new());
    let t = Thresholds::default();
    let spam = message("cheap pills", "buy viagra online now");
    let ham = message("meeting agenda", "minutes of the project meeting");
    let v = here.classify(&store, "m@x.test", &spam, &[], &t).await.expect("classify"); // ok: test
    assert_eq!((v.probability, v.score, v.spam), (None, 0.0, false), "untrained");
    // `there` caches the empty models now.
    there.classify(&store, "m@x.test", &spam, &[], &t).await.expect("classify"); // ok: test
    for i in 0..6 {
        let s = message(&format!("cheap pills {i}"), "buy viagra online now");
        let h = message(&format!("meeting agenda {i}"), "minutes of the project meeting");
        here.train(&store, None, &s, true, None).await.expect("train"); // ok: test
        here.train(&store, Some("m@x.test"), &h, false, None).await.expect("train"); // ok: test
    }
    let from_here = here.classify(&store, "m@x.test", &spam, &[], &t).await.expect("c"); // ok: test
    let from_there = there.classify(&store, "m@x.test", &spam, &[], &t).await.expect("c"); // ok: test
    assert_eq!(from_here, from_there, "the other cache reloaded on the new generations");
    assert!(from_here.spam, "{from_here:?}");
    let v = there.classify(&store, "m@x.test", &ham, &[], &t).await.expect("c"); // ok: test
    assert!(!v.spam && v.score < 0.0, "{v:?}");
    // The mailbox model alone has no spam: the global one is what junks it.
    let v = here.classify(&store, "n@x.test", &spam, &[], &t).await.expect("c"); // ok: test
    assert_eq!(v.probability, None, "n@ has no ham and the global model none either");

    // A message moved back: unlearned as spam, learned as ham; the same twice changes nothing.
    here.train(&store, None, &spam, true, None).await.expect("train"); // ok: test
    here.train(&store, None, &spam, false, Some(true)).await.expect("train"); // ok: test
    here.train(&store, None, &spam, false, Some(false)).await.expect("train"); // ok: test
    let totals = store.read_blocking(|r| r.junk_totals("")).expect("totals"); // ok: test
    assert_eq!((totals.spam, totals.ham, totals.generation), (6, 1, 8));
    let cached = here.lock_read().get("").map(|c| c.generation);
    assert_eq!(cached, Some(8), "the cache followed its own training without a reload");
    store.close();
    drop(store);
    std::fs::remove_dir_all(&dir).ok();
}
