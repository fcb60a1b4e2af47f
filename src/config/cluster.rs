//! The store a node keeps its data in, and the node's place among those sharing it.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Cluster {
    /// `store.url`: a PostgreSQL database (`postgres://...`) to keep the data in instead of the
    /// file in the data directory, so that several nodes can share it.
    pub store_url: Option<String>,
    /// `store.connections`: connections to that database, at most.
    pub connections: usize,
    /// `cluster.node`: this node's name among those sharing the store (default: the host name).
    pub node: String,
    /// `cluster.lease`: how long a node's claims outlive it: a node that stops renewing them
    /// (it died) holds its work this long before another node takes it over.
    pub lease: Duration,
}

impl Default for Cluster {
    fn default() -> Self {
        Cluster {
            store_url: None,
            connections: 16,
            node: host_name(),
            lease: Duration::from_secs(60),
        }
    }
}

/// The machine's host name, the default node name.
fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name = name.trim();
    if name.is_empty() { "node".to_owned() } else { name.to_owned() }
}
