//! THREAD (RFC 5256): ORDEREDSUBJECT and REFERENCES over the messages a search finds, their
//! fields read as SORT reads them (`sortable`).
//!
//! Everything is iterative: the trees are arenas of nodes linked by index, walked with explicit
//! stacks, because a hostile References chain can be as deep as the folder is long. Linking
//! checks for loops by walking up from the would-be parent, and those walks together may take
//! `WALK_PER_MESSAGE` steps per message; past that, links are refused (the thread splits)
//! rather than the command running on. The answer nests at most `MAX_DEPTH` levels: below
//! that a subtree is given as one run of messages, so the response type (a recursive value)
//! is never deeper than that when it is built, written or dropped.

mod answer;
mod forest;
mod references;

use imap_types::core::{Charset, Tag, Vec1};
use imap_types::extensions::thread::ThreadingAlgorithm;
use imap_types::response::{Data, Status};
use imap_types::search::SearchKey;

use super::conn::{Conn, ConnError};
use super::reply::{bad, no, ok};
use super::session::Session;
use super::sortable::read;
use answer::answer;
use forest::by_subject;
use references::by_references;

impl Session {
    pub(super) async fn thread(
        &mut self,
        conn: &mut Conn,
        tag: &Tag<'static>,
        algorithm: &ThreadingAlgorithm<'static>,
        charset: &Charset<'static>,
        criteria: &Vec1<SearchKey<'static>>,
        uid: bool,
    ) -> Result<Status<'static>, ConnError> {
        let references = match algorithm {
            ThreadingAlgorithm::References => true,
            ThreadingAlgorithm::OrderedSubject => false,
            ThreadingAlgorithm::Other(_) => return Ok(bad(tag, "unknown threading algorithm")),
        };
        let found = match self.matching(tag, Some(charset), criteria.as_ref(), true, read).await {
            Ok(found) => found,
            Err(refused) => return Ok(refused),
        };
        // Threading a large folder is CPU work: off the async workers.
        let work = move || {
            let forest = if references { by_references(&found) } else { by_subject(&found) };
            answer(&forest, |i| if uid { found[i].uid } else { found[i].seq })
        };
        match tokio::task::spawn_blocking(work).await {
            Ok(threads) => {
                conn.enqueue_data(Data::Thread(threads));
                Ok(ok(tag, "THREAD completed"))
            }
            Err(e) => {
                tracing::warn!(error = %e, "imap: thread failed");
                Ok(no(tag, "[UNAVAILABLE] thread failed, try again"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::sortable::Sortable;
    use super::answer::MAX_DEPTH;
    use super::forest::Forest;
    use super::*;

    /// A message: sequence number, Message-ID, References, subject; sent in sequence order.
    fn m(seq: u32, id: &str, refs: &[&str], subject: &str) -> Sortable {
        let (subject, reply) = super::super::subject::base_subject(subject);
        Sortable {
            seq,
            uid: seq,
            sent: i64::from(seq),
            subject,
            reply,
            message_id: (!id.is_empty()).then(|| id.to_owned()),
            references: refs.iter().map(|r| r.to_string()).collect(),
            ..Sortable::default()
        }
    }

    fn shown(forest: &Forest, messages: &[Sortable]) -> String {
        answer(forest, |i| messages[i].seq).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn references_link_replies_under_their_parents() {
        let ms = [
            m(1, "a", &[], "hello"),
            m(2, "b", &["a"], "Re: hello"),
            m(3, "c", &["a"], "Re: hello"),
            m(4, "d", &["a", "b"], "Re: hello"),
            m(5, "e", &[], "other"),
        ];
        assert_eq!(shown(&by_references(&ms), &ms), "(1 (2 4)(3))(5)");
    }

    #[test]
    fn a_missing_parent_becomes_a_dummy_or_goes() {
        // Two replies to a message not in the folder: a dummy holds them.
        let ms = [m(1, "b", &["gone"], "Re: x"), m(2, "c", &["gone"], "Re: x")];
        assert_eq!(shown(&by_references(&ms), &ms), "((1)(2))");
        // One reply to a missing message: the dummy goes and the reply is a root.
        let ms = [m(1, "b", &["gone", "also-gone"], "Re: y"), m(2, "", &[], "z")];
        assert_eq!(shown(&by_references(&ms), &ms), "(1)(2)");
    }

    #[test]
    fn a_reference_cycle_is_broken() {
        let ms = [m(1, "a", &["b"], "one"), m(2, "b", &["a"], "two"), m(3, "c", &["c"], "three")];
        let shown = shown(&by_references(&ms), &ms);
        assert_eq!(shown, "(2 1)(3)", "a is under b: the link back to a would close a loop");
    }

    #[test]
    fn roots_with_one_subject_are_gathered() {
        let ms = [m(1, "a", &[], "topic"), m(2, "b", &[], "Re: topic"), m(3, "c", &[], "topic")];
        // The reply goes under the first original; two originals go under a dummy.
        assert_eq!(shown(&by_references(&ms), &ms), "((1 2)(3))");
        let ms = [m(1, "a", &[], "topic"), m(2, "b", &[], "topic")];
        assert_eq!(shown(&by_references(&ms), &ms), "((1)(2))", "two originals: a dummy");
    }

    #[test]
    fn ordered_subject_hangs_a_group_from_its_first_message() {
        let ms =
            [m(1, "", &[], "b"), m(2, "", &[], "a"), m(3, "", &[], "Re: b"), m(4, "", &[], "b")];
        assert_eq!(shown(&by_subject(&ms), &ms), "(1 (3)(4))(2)");
    }

    #[test]
    fn deep_and_long_chains_stay_bounded() {
        // A chain as long as a folder: one run, built without recursion.
        let n: usize = 20_000;
        let ids: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
        let ms: Vec<Sortable> = (0..n)
            .map(|i| {
                let refs: Vec<&str> =
                    ids[i.saturating_sub(3)..i].iter().map(String::as_str).collect();
                m(i as u32 + 1, &ids[i], &refs, "chain")
            })
            .collect();
        let threads = answer(&by_references(&ms), |i| ms[i].seq);
        assert_eq!(threads.len(), 1);
        // Every message branches: nesting stops at MAX_DEPTH, every message still shown.
        let ms: Vec<Sortable> = (0..n)
            .map(|i| {
                let parent = if i % 2 == 0 { i.saturating_sub(2) } else { i - 1 };
                let refs: Vec<&str> = if i == 0 { vec![] } else { vec![ids[parent].as_str()] };
                m(i as u32 + 1, &ids[i], &refs, "tree")
            })
            .collect();
        let threads = answer(&by_references(&ms), |i| ms[i].seq);
        let text: String = threads.iter().map(ToString::to_string).collect();
        assert_eq!(text.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).count(), n);
        let depth = text.chars().scan(0i32, |d, c| {
            *d += match c {
                '(' => 1,
                ')' => -1,
                _ => 0,
            };
            Some(*d)
        });
        assert!(depth.max().unwrap_or(0) as usize <= MAX_DEPTH + 2);
    }
}
