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

use std::collections::HashMap;
use std::num::NonZeroU32;

use imap_types::core::{Charset, Tag, Vec1, Vec2};
use imap_types::extensions::thread::{Thread, ThreadingAlgorithm};
use imap_types::response::{Data, Status};
use imap_types::search::SearchKey;

use super::conn::{Conn, ConnError};
use super::reply::{bad, no, ok};
use super::session::Session;
use super::sortable::{Sortable, read};

/// Nesting levels of the answer before a subtree is flattened.
pub const MAX_DEPTH: usize = 100;
/// Loop-check steps allowed per message threaded (real threads are a few dozen deep).
const WALK_PER_MESSAGE: usize = 1024;

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

/// A node of a thread tree: a message (its index among those threaded) or a dummy.
#[derive(Default, Clone)]
struct Node {
    message: Option<usize>,
    parent: Option<usize>,
    children: Vec<usize>,
    /// While linking: how many nodes have this one as parent (none: no loop through it).
    linked: usize,
}

/// Thread trees in an arena: `roots` index into `nodes`.
pub struct Forest {
    nodes: Vec<Node>,
    roots: Vec<usize>,
}

/// The order threads and siblings take: sent date, then sequence number.
fn date_key(m: &Sortable) -> (i64, u32) {
    (m.sent, m.seq)
}

/// THREAD=ORDEREDSUBJECT: messages grouped by base subject; in each group, sorted by sent
/// date, the first is the parent of all the others; groups sorted by their first message.
pub fn by_subject(messages: &[Sortable]) -> Forest {
    let mut order: Vec<usize> = (0..messages.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&messages[a], &messages[b]);
        a.subject.cmp(&b.subject).then_with(|| date_key(a).cmp(&date_key(b)))
    });
    let mut nodes: Vec<Node> =
        (0..messages.len()).map(|i| Node { message: Some(i), ..Node::default() }).collect();
    let mut roots = Vec::new();
    let mut current: Option<usize> = None;
    for i in order {
        match current {
            Some(first) if messages[first].subject == messages[i].subject => {
                nodes[first].children.push(i);
                nodes[i].parent = Some(first);
            }
            _ => {
                roots.push(i);
                current = Some(i);
            }
        }
    }
    roots.sort_by_key(|&r| date_key(&messages[r]));
    Forest { nodes, roots }
}

/// THREAD=REFERENCES, RFC 5256 section 3 steps 1 to 6.
pub fn by_references(messages: &[Sortable]) -> Forest {
    let mut linker = Linker {
        nodes: Vec::with_capacity(messages.len()),
        steps: WALK_PER_MESSAGE.saturating_mul(messages.len()),
    };
    let mut ids: HashMap<&str, usize> = HashMap::new();
    // (1) the messages and the ids they name, linked by parent.
    for (i, m) in messages.iter().enumerate() {
        let me = match m.message_id.as_deref() {
            Some(id) => match ids.get(id) {
                Some(&n) if linker.nodes[n].message.is_none() => n,
                // A second message with the id gets a node of its own.
                Some(_) => linker.add(),
                None => {
                    let n = linker.add();
                    ids.insert(id, n);
                    n
                }
            },
            None => linker.add(),
        };
        linker.nodes[me].message = Some(i);
        let mut previous: Option<usize> = None;
        for id in &m.references {
            let n = *ids.entry(id.as_str()).or_insert_with(|| linker.add());
            if let Some(p) = previous
                && linker.nodes[n].parent.is_none()
            {
                linker.link(p, n);
            }
            previous = Some(n);
        }
        // The last reference is the parent, whatever linked the message before.
        linker.unlink(me);
        if let Some(p) = previous {
            linker.link(p, me);
        }
    }
    drop(ids);
    let mut nodes = linker.nodes;
    for n in 0..nodes.len() {
        if let Some(p) = nodes[n].parent {
            nodes[p].children.push(n);
        }
    }
    // (2) the roots; (4) dummies pruned.
    let roots: Vec<usize> = (0..nodes.len()).filter(|&n| nodes[n].parent.is_none()).collect();
    let roots = prune(&mut nodes, roots);
    let mut forest = Forest { nodes, roots };
    sort_siblings(&mut forest, messages);
    // (5) roots with the same base subject gathered; (6) siblings sorted by sent date.
    group_by_subject(&mut forest, messages);
    sort_siblings(&mut forest, messages);
    forest
}

/// Step (1)'s links, counted against the loop-check budget.
struct Linker {
    nodes: Vec<Node>,
    steps: usize,
}

impl Linker {
    fn add(&mut self) -> usize {
        self.nodes.push(Node::default());
        self.nodes.len() - 1
    }

    /// Makes `parent` the parent of `child`, unless that would close a loop (`child` is
    /// `parent` or one of its ancestors) or the loop checks have run out of steps.
    fn link(&mut self, parent: usize, child: usize) {
        let mut up = Some(parent);
        if self.nodes[child].linked == 0 && parent != child {
            // Nothing hangs below the child: no loop can close (the usual case, no walk).
            up = None;
        }
        while let Some(n) = up {
            if n == child || self.steps == 0 {
                return;
            }
            self.steps -= 1;
            up = self.nodes[n].parent;
        }
        self.nodes[child].parent = Some(parent);
        self.nodes[parent].linked += 1;
    }

    fn unlink(&mut self, child: usize) {
        if let Some(p) = self.nodes[child].parent.take() {
            self.nodes[p].linked = self.nodes[p].linked.saturating_sub(1);
        }
    }
}

/// Step (4): dummies without children go; a dummy's children take its place, except at the
/// top where a dummy with several children stays. Bottom-up, with an explicit stack.
fn prune(nodes: &mut [Node], roots: Vec<usize>) -> Vec<usize> {
    let mut stack: Vec<(usize, bool)> = roots.iter().map(|&r| (r, false)).collect();
    while let Some((n, expanded)) = stack.pop() {
        if !expanded {
            stack.push((n, true));
            stack.extend(nodes[n].children.iter().map(|&c| (c, false)));
            continue;
        }
        let children = std::mem::take(&mut nodes[n].children);
        let mut kept = Vec::with_capacity(children.len());
        for c in children {
            if nodes[c].message.is_some() {
                kept.push(c);
            } else {
                // Already pruned: its children are messages.
                kept.append(&mut nodes[c].children);
            }
        }
        for &c in &kept {
            nodes[c].parent = Some(n);
        }
        nodes[n].children = kept;
    }
    let mut out = Vec::with_capacity(roots.len());
    for r in roots {
        if nodes[r].message.is_some() || nodes[r].children.len() > 1 {
            out.push(r);
        } else if let Some(&only) = nodes[r].children.first() {
            nodes[only].parent = None;
            out.push(only);
        }
    }
    out
}

/// The message that stands for node `n`: its own, or a dummy's first child's.
fn standing(forest: &Forest, n: usize) -> Option<usize> {
    let node = &forest.nodes[n];
    node.message.or_else(|| node.children.first().and_then(|&c| forest.nodes[c].message))
}

/// Step (6): every set of siblings, and the roots, by sent date (a dummy by its first child).
fn sort_siblings(forest: &mut Forest, messages: &[Sortable]) {
    let key = |nodes: &[Node], n: usize| nodes[n].message.map(|m| date_key(&messages[m]));
    for n in 0..forest.nodes.len() {
        let mut children = std::mem::take(&mut forest.nodes[n].children);
        children.sort_by_key(|&c| key(&forest.nodes, c));
        forest.nodes[n].children = children;
    }
    let mut roots = std::mem::take(&mut forest.roots);
    roots.sort_by_key(|&r| standing(forest, r).map(|m| date_key(&messages[m])));
    forest.roots = roots;
}

/// Step (5): roots whose base subjects match are gathered under one of them or a new dummy.
fn group_by_subject(forest: &mut Forest, messages: &[Sortable]) {
    let subject = |f: &Forest, n: usize| standing(f, n).map(|m| messages[m].subject.clone());
    let reply = |f: &Forest, n: usize| f.nodes[n].message.is_some_and(|m| messages[m].reply);
    let dummy = |f: &Forest, n: usize| f.nodes[n].message.is_none();
    let mut table: HashMap<String, usize> = HashMap::new();
    for i in 0..forest.roots.len() {
        let r = forest.roots[i];
        let Some(s) = subject(forest, r).filter(|s| !s.is_empty()) else { continue };
        match table.get(&s) {
            None => {
                table.insert(s, r);
            }
            Some(&t) => {
                if !dummy(forest, t)
                    && (dummy(forest, r) || (reply(forest, t) && !reply(forest, r)))
                {
                    table.insert(s, r);
                }
            }
        }
    }
    let mut gone = vec![false; forest.nodes.len()];
    for i in 0..forest.roots.len() {
        let r = forest.roots[i];
        if gone[r] {
            continue;
        }
        let Some(s) = subject(forest, r).filter(|s| !s.is_empty()) else { continue };
        let Some(&t) = table.get(&s) else { continue };
        if t == r {
            continue;
        }
        let adopt = |f: &mut Forest, parent: usize, child: usize| {
            f.nodes[child].parent = Some(parent);
            f.nodes[parent].children.push(child);
        };
        match (dummy(forest, t), dummy(forest, r)) {
            (true, true) => {
                let moved = std::mem::take(&mut forest.nodes[r].children);
                for c in moved {
                    adopt(forest, t, c);
                }
                gone[r] = true;
            }
            (true, false) => {
                adopt(forest, t, r);
                gone[r] = true;
            }
            (false, true) => {
                // The table prefers dummies, so this is not expected; handled all the same.
                adopt(forest, r, t);
                gone[t] = true;
                table.insert(s, r);
            }
            (false, false) if !reply(forest, t) && reply(forest, r) => {
                adopt(forest, t, r);
                gone[r] = true;
            }
            (false, false) => {
                forest.nodes.push(Node::default());
                gone.push(false);
                let d = forest.nodes.len() - 1;
                adopt(forest, d, t);
                adopt(forest, d, r);
                if let Some(slot) = forest.roots.iter_mut().find(|x| **x == t) {
                    *slot = d;
                }
                gone[r] = true;
                table.insert(s, d);
            }
        }
    }
    forest.roots.retain(|&r| !gone[r]);
}

/// A frame of the walk that builds the answer: a run of messages (a node and its only
/// children), the nodes hanging below the run, and their threads once built.
struct Frame {
    run: Vec<NonZeroU32>,
    below: Vec<usize>,
    next: usize,
    built: Vec<Thread>,
}

/// The THREAD response for `forest`, each message shown as `number(index)`.
pub fn answer(forest: &Forest, number: impl Fn(usize) -> u32) -> Vec<Thread> {
    let nodes = &forest.nodes;
    let num = |n: usize| nodes[n].message.and_then(|m| NonZeroU32::new(number(m)));
    let frame = |n: usize, depth: usize| {
        let mut run = Vec::new();
        if depth >= MAX_DEPTH {
            // Too deep to nest further: the whole subtree as one run, in thread order.
            let mut stack = vec![n];
            while let Some(x) = stack.pop() {
                run.extend(num(x));
                stack.extend(nodes[x].children.iter().rev());
            }
            return Frame { run, below: Vec::new(), next: 0, built: Vec::new() };
        }
        let mut tail = n;
        run.extend(num(tail));
        while let [only] = nodes[tail].children[..] {
            if nodes[tail].message.is_none() || nodes[only].message.is_none() {
                break;
            }
            tail = only;
            run.extend(num(tail));
        }
        Frame { run, below: nodes[tail].children.clone(), next: 0, built: Vec::new() }
    };
    let mut out = Vec::new();
    for &root in &forest.roots {
        let mut stack = vec![frame(root, 0)];
        while let Some(top) = stack.last_mut() {
            if let Some(&child) = top.below.get(top.next) {
                top.next += 1;
                let depth = stack.len();
                stack.push(frame(child, depth));
                continue;
            }
            let Some(done) = stack.pop() else { break };
            let Some(thread) = build(done) else { continue };
            match stack.last_mut() {
                Some(parent) => parent.built.push(thread),
                None => out.push(thread),
            }
        }
    }
    out
}

/// The thread of a finished frame: its run, then its branches; a dummy's branches nested.
fn build(frame: Frame) -> Option<Thread> {
    let Frame { mut run, mut built, .. } = frame;
    if built.len() == 1 {
        // One branch left (the others were empty): it continues the run.
        return match built.pop()? {
            Thread::Members { prefix, answers } => {
                run.extend(prefix.into_inner());
                Some(Thread::Members { prefix: Vec1::try_from(run).ok()?, answers })
            }
            Thread::Nested { answers } => match Vec1::try_from(run) {
                Ok(prefix) => Some(Thread::Members { prefix, answers: Some(answers) }),
                Err(_) => Some(Thread::Nested { answers }),
            },
        };
    }
    let answers = Vec2::try_from(built).ok();
    match Vec1::try_from(run) {
        Ok(prefix) => Some(Thread::Members { prefix, answers }),
        Err(_) => answers.map(|answers| Thread::Nested { answers }),
    }
}

#[cfg(test)]
mod tests {
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
