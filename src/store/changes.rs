//! What the nodes sharing a store changed, told rather than polled for. The watched tables are
//! listed here and nowhere else, one per topic an engine or a cache waits on; a write to any
//! other table tells nobody. On PostgreSQL each commit that wrote a watched table notifies every
//! node (`kv::postgres::notify`); on the file one process owns the store, and its own writes wake
//! its engines directly, so nothing is ever told there.

use tokio::sync::broadcast::Receiver;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

use super::Store;
use super::kv::Changed;
use super::tables::{ACME, DOMAINS, ENROLLMENTS_DUE, KEYS, NODES, WEBHOOK_DUE};

/// What a waiter cares about.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Topic {
    /// API keys created or revoked: every node reloads its key table.
    Keys,
    /// Hosted domains and their DKIM keys: signers of a removed or re-keyed domain are dropped,
    /// certificates looked at again.
    Domains,
    /// The nodes sharing the store: one joined, renewed its heartbeat or left (freeing what it
    /// claimed), so mail it held may be another's to deliver. Not the queue itself: each node
    /// delivers what it accepted and wakes its own scheduler, so a notification per queued or
    /// delivered message would only send every other node to look for nothing; and a commit
    /// that notifies takes a lock every such commit of the cluster waits on.
    Nodes,
    /// Webhook deliveries due.
    Webhooks,
    /// Sequence steps due.
    Sequences,
    /// ACME certificates and challenge answers.
    Certificates,
}

/// Each topic's table: every write of its kind writes it (revoking a key rewrites the key,
/// a node's heartbeat, its start and its stop rewrite its row of the nodes, and so on).
const WATCHED: [(Topic, &str); 6] = [
    (Topic::Keys, KEYS.name()),
    (Topic::Domains, DOMAINS.name()),
    (Topic::Nodes, NODES.name()),
    (Topic::Webhooks, WEBHOOK_DUE.name()),
    (Topic::Sequences, ENROLLMENTS_DUE.name()),
    (Topic::Certificates, ACME.name()),
];

/// The watched tables' names, as the backend takes them.
pub(super) static TABLES: [&str; WATCHED.len()] = {
    let mut names = [""; WATCHED.len()];
    let mut at = 0;
    while at < WATCHED.len() {
        names[at] = WATCHED[at].1;
        at += 1;
    }
    names
};

impl Topic {
    fn watched_table(self) -> &'static str {
        WATCHED.iter().find(|(t, _)| *t == self).map_or("", |(_, name)| *name)
    }
}

/// One waiter's view of the notifications. Kept across its loop: what arrives while it works is
/// held for its next wait.
pub struct Changes {
    receiver: Option<Receiver<Changed>>,
}

impl Changes {
    /// Resolves once any node committed a write about one of `topics`, or notifications may
    /// have been missed (the listener reconnected, this waiter fell behind). Never resolves on
    /// the file. Whatever else had already arrived is spent with it: the look the caller takes
    /// next sees it.
    pub async fn wait(&mut self, topics: &[Topic]) {
        let Some(receiver) = self.receiver.as_mut() else {
            return std::future::pending().await;
        };
        let closed = loop {
            match receiver.recv().await {
                Ok(changed) if topics.iter().any(|t| changed.touches(t.watched_table())) => {
                    break false;
                }
                Ok(_) => {}
                Err(RecvError::Lagged(_)) => break false,
                Err(RecvError::Closed) => break true,
            }
        };
        if closed {
            self.receiver = None;
            return std::future::pending().await;
        }
        while !matches!(receiver.try_recv(), Err(TryRecvError::Empty | TryRecvError::Closed)) {}
    }
}

impl Store {
    /// Notifications of what every node sharing the store commits to the watched tables, from
    /// now on. The first call starts the listening connection.
    pub fn changes(&self) -> Changes {
        Changes { receiver: self.file.db().ok().and_then(|db| db.changes()) }
    }

    /// Whether notifications arrive now: false on the file, and while the listening connection
    /// is down (waiters then rely on their polls).
    pub fn listening(&self) -> bool {
        self.file.db().is_ok_and(|db| db.listening())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_topic_has_its_own_table() {
        let topics = [
            Topic::Keys,
            Topic::Domains,
            Topic::Nodes,
            Topic::Webhooks,
            Topic::Sequences,
            Topic::Certificates,
        ];
        let mut names: Vec<&str> = topics.iter().map(|t| t.watched_table()).collect();
        assert!(names.iter().all(|n| !n.is_empty()));
        names.sort();
        names.dedup();
        assert_eq!(names.len(), topics.len());
        assert_eq!(TABLES.len(), topics.len());
    }
}
