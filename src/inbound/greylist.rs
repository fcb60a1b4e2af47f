//! Greylisting at the end of DATA (RFC 6647, off by default): the first attempt of a new (client
//! network, envelope sender, recipient) triplet is answered 451 4.7.1; a real mail server retries
//! after minutes and passes, while much bulk spam never retries. Networks, not addresses, make
//! the triplet (an IPv4 /24, an IPv6 /64), since large senders retry from another address of
//! their pool.

use std::net::IpAddr;

use crate::config::Inbound;
use crate::error::Result;
use crate::store::{Greylisting, Store};

/// The answer to a greylisted attempt.
pub const GREYLISTED: &str = "451 4.7.1 greylisted: please try again in a few minutes\r\n";

/// The network a client address belongs to, for the triplet.
fn network(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            format!("{a}.{b}.{c}.0/24")
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
        }
    }
}

/// Whether every recipient's triplet passes (each one is recorded either way).
pub async fn passes(
    store: &Store,
    config: &Inbound,
    ip: IpAddr,
    sender: &str,
    recipients: &[String],
    now: u64,
) -> Result<bool> {
    if !config.greylisting {
        return Ok(true);
    }
    let g = Greylisting {
        delay_ms: config.greylist_delay.as_millis() as u64,
        keep_ms: config.greylist_keep.as_millis() as u64,
    };
    let net = network(ip);
    let sender = sender.to_ascii_lowercase();
    let recipients: Vec<String> = recipients.iter().map(|r| r.to_ascii_lowercase()).collect();
    let all = store
        .write(move |w| -> crate::store::Result<bool> {
            let mut all = true;
            for r in &recipients {
                all &= w.greylist_pass((&net, &sender, r), now, g)?;
            }
            Ok(all)
        })
        .await?;
    Ok(all)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triplets_name_networks() {
        assert_eq!(network("203.0.113.77".parse().expect("ip")), "203.0.113.0/24"); // ok: test
        let v6 = network("2001:db8:1:2:3:4:5:6".parse().expect("ip")); // ok: test
        assert_eq!(v6, "2001:db8:1:2::/64");
    }
}
