//! Parsing configuration values: lists, addresses, numbers, booleans, durations, sizes.

use std::net::SocketAddr;
use std::time::Duration;

/// A comma-separated list; empty entries are skipped, so `""` is the empty list.
pub(super) fn list(v: &str) -> impl Iterator<Item = &str> {
    v.split(',').map(str::trim).filter(|s| !s.is_empty())
}

pub(super) fn parse_ips(v: &str) -> Result<Vec<std::net::IpAddr>, String> {
    list(v).map(|s| s.parse().map_err(|_| format!("{s:?} is not an IP address"))).collect()
}

/// `IP:PORT`, or `HOST:PORT` with a host name the system resolves (such as `localhost:8080`):
/// its first address is used.
pub(super) fn parse_addr(v: &str) -> Result<SocketAddr, String> {
    if let Ok(addr) = v.parse() {
        return Ok(addr);
    }
    let usage = "expected an address such as 127.0.0.1:8080, [::]:8080 or localhost:8080";
    let Some((host, port)) = v.rsplit_once(':') else {
        return Err(format!("{v:?} has no port; {usage}"));
    };
    if host.is_empty() || port.parse::<u16>().is_err() {
        return Err(format!("{v:?}: {usage}"));
    }
    let found: Vec<SocketAddr> = std::net::ToSocketAddrs::to_socket_addrs(v)
        .map_err(|e| format!("cannot resolve {host:?} ({e}); {usage}"))?
        .collect();
    // IPv4 first: `localhost` then means 127.0.0.1 on hosts where IPv6 is off.
    let first = found.iter().find(|a| a.is_ipv4()).or(found.first()).copied();
    first.ok_or_else(|| format!("{host:?} has no address; {usage}"))
}

/// A whole number greater than zero (counts, limits, rates).
pub(super) fn positive<T: std::str::FromStr + PartialOrd + Default>(v: &str) -> Result<T, String> {
    v.parse().ok().filter(|n| *n > T::default()).ok_or_else(|| "expected a positive integer".into())
}

pub(super) fn parse_bool(v: &str) -> Result<bool, String> {
    match v {
        "true" | "yes" | "on" | "1" => Ok(true),
        "false" | "no" | "off" | "0" => Ok(false),
        _ => Err("expected true or false".into()),
    }
}

/// `500ms`, `30s`, `5m`, `2h`, `3d`.
pub fn parse_duration(v: &str) -> Result<Duration, String> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let n: u64 =
        number.parse().map_err(|_| "expected a duration such as 500ms, 30s, 5m, 2h or 3d")?;
    let ms = match unit {
        "ms" => Some(n),
        "s" => n.checked_mul(1_000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        "d" => n.checked_mul(86_400_000),
        _ => return Err("expected a duration unit: ms, s, m, h or d".into()),
    };
    ms.map(Duration::from_millis).ok_or_else(|| "the duration is too long".into())
}

/// `1048576`, `512KiB`, `1MiB`, `25MiB`, `1GiB`.
pub fn parse_size(v: &str) -> Result<usize, String> {
    let split = v.find(|c: char| !c.is_ascii_digit()).unwrap_or(v.len());
    let (number, unit) = v.split_at(split);
    let n: usize = number.parse().map_err(|_| "expected a size such as 1048576, 512KiB or 1MiB")?;
    let factor = match unit.trim() {
        "" | "B" => 1,
        "KiB" | "K" | "KB" => 1 << 10,
        "MiB" | "M" | "MB" => 1 << 20,
        "GiB" | "G" | "GB" => 1 << 30,
        _ => return Err("expected a size unit: KiB, MiB or GiB".into()),
    };
    n.checked_mul(factor).filter(|n| *n > 0).ok_or_else(|| "the size is out of range".into())
}
