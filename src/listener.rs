//! Accepting connections the same way on every listener: at most `limit` open at once (at the cap
//! we stop accepting, so the kernel's backlog pushes back on clients), shutdown honoured while
//! waiting, and accept errors (such as running out of descriptors) paused on rather than spun on.

use std::net::SocketAddr;
use std::sync::Arc;
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
