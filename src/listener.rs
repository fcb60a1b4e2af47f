//! Accepting connections the same way on every listener: at most `limit` open at once (at the cap
//! we stop accepting, so the kernel's backlog pushes back on clients), shutdown honoured while
//! waiting, and accept errors (such as running out of descriptors) paused on rather than spun on.
//! A per-address count keeps a few clients from holding every slot.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::shutdown::Shutdown;

pub struct Accepted {
    pub stream: TcpStream,
    pub peer: SocketAddr,
    /// Held for the life of the connection.
    pub permit: OwnedSemaphorePermit,
}

/// The next connection, with TCP_NODELAY set; `None` once shutdown is requested.
pub async fn next(
    listener: &TcpListener,
    limit: &Arc<Semaphore>,
    shutdown: &mut Shutdown,
) -> Option<Accepted> {
    let permit = tokio::select! {
        permit = limit.clone().acquire_owned() => permit.ok()?,
        _ = shutdown.wait() => return None,
    };
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    return Some(Accepted { stream, peer, permit });
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            _ = shutdown.wait() => return None,
        }
    }
}

/// Open connections per client address; an entry leaves with its last connection.
#[derive(Default)]
pub struct PerIp(Mutex<HashMap<IpAddr, usize>>);

/// One counted connection; dropping it frees the slot.
pub struct IpSlot(Arc<PerIp>, IpAddr);

impl PerIp {
    /// A slot for `ip`, or `None` when it already has `max` connections open.
    pub fn enter(self: &Arc<Self>, ip: IpAddr, max: usize) -> Option<IpSlot> {
        let mut map = match self.0.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        let count = map.entry(ip).or_default();
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(IpSlot(self.clone(), ip))
    }
}

impl Drop for IpSlot {
    fn drop(&mut self) {
        let mut map = match self.0.0.lock() {
            Ok(map) => map,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(count) = map.get_mut(&self.1) {
            *count -= 1;
            if *count == 0 {
                map.remove(&self.1);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_ip_slots_are_counted_and_freed() {
        let per_ip = Arc::new(PerIp::default());
        let ip: IpAddr = [192, 0, 2, 1].into();
        let a = per_ip.enter(ip, 2);
        let b = per_ip.enter(ip, 2);
        assert!(a.is_some() && b.is_some());
        assert!(per_ip.enter(ip, 2).is_none());
        assert!(per_ip.enter([192, 0, 2, 2].into(), 2).is_some(), "another address");
        drop(a);
        assert!(per_ip.enter(ip, 2).is_some());
        drop(b);
        assert!(per_ip.0.lock().map(|m| m.is_empty()).unwrap_or(false));
    }
}
