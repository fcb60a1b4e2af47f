//! THREAD=REFERENCES (RFC 5256 section 3): messages linked by their References into trees,
//! loops refused within a walking budget, empty containers pruned, siblings ordered, and roots
//! of one base subject gathered.

use std::collections::HashMap;

use super::super::sortable::Sortable;
use super::forest::{Forest, Node, date_key};

/// Loop-check steps allowed per message threaded (real threads are a few dozen deep).
const WALK_PER_MESSAGE: usize = 1024;

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
