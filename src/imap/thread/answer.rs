//! The THREAD response built from a forest, iteratively and at most `MAX_DEPTH` levels deep.

use std::num::NonZeroU32;

use imap_types::core::{Vec1, Vec2};
use imap_types::extensions::thread::Thread;

use super::forest::Forest;

/// Nesting levels of the answer before a subtree is flattened.
pub const MAX_DEPTH: usize = 100;

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
