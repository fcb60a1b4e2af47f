//! The thread trees both algorithms make (an arena of nodes linked by index), and
//! THREAD=ORDEREDSUBJECT, the simple one.

use super::super::sortable::Sortable;

/// A node of a thread tree: a message (its index among those threaded) or a dummy.
#[derive(Default, Clone)]
pub(super) struct Node {
    pub(super) message: Option<usize>,
    pub(super) parent: Option<usize>,
    pub(super) children: Vec<usize>,
    /// While linking: how many nodes have this one as parent (none: no loop through it).
    pub(super) linked: usize,
}

/// Thread trees in an arena: `roots` index into `nodes`.
pub struct Forest {
    pub(super) nodes: Vec<Node>,
    pub(super) roots: Vec<usize>,
}

/// The order threads and siblings take: sent date, then sequence number.
pub(super) fn date_key(m: &Sortable) -> (i64, u32) {
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
