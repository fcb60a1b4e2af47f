//! A small authoritative DNS server for tests: answers from an in-memory table that tests edit
//! while it runs, over UDP and TCP on the same 127.0.0.1 port.
//!
//! Answer rules: records of the asked type give NOERROR with those answers; a name that holds
//! other records only (or that is the parent of a name with records: an empty non-terminal) gives
//! NOERROR with no answers; any other name gives NXDOMAIN. Names marked with `set_timeout` are
//! never answered and names marked with `set_servfail` get SERVFAIL. Over UDP an answer larger
//! than the client's limit (512 bytes, or the EDNS payload size it advertised) is sent truncated
//! (TC set) so that the client retries over TCP.

#![allow(dead_code)]

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::Duration;

use hickory_resolver::proto::op::{Edns, Message, MessageType, Metadata, OpCode, ResponseCode};
use hickory_resolver::proto::rr::rdata::{A, AAAA, MX, PTR, TXT};
use hickory_resolver::proto::rr::{Name, RData, Record, RecordType};

/// TTL of every answer unless a test changes it with `Dns::set_ttl`.
const DEFAULT_TTL: u32 = 60;
/// The UDP payload limit of a client that sent no EDNS OPT record.
const PLAIN_UDP_LIMIT: usize = 512;
/// The payload size this server advertises in its own OPT record.
const ADVERTISED_PAYLOAD: u16 = 1232;
/// How long a TCP client may stay idle before the server closes the connection.
const TCP_IDLE: Duration = Duration::from_secs(30);

/// One question the server received, in arrival order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedQuery {
    /// The asked name, lowercased, without the trailing dot.
    pub name: String,
    /// The asked type, as written in zone files ("MX", "TXT", "A", ...).
    pub record_type: String,
    /// Whether the question came over TCP (false: UDP).
    pub tcp: bool,
}

struct Zone {
    records: HashMap<String, Vec<RData>>,
    timeouts: HashSet<String>,
    servfails: HashSet<String>,
    ttl: u32,
    log: Vec<LoggedQuery>,
}

struct Shared {
    zone: Mutex<Zone>,
    stop: AtomicBool,
}

impl Shared {
    fn zone(&self) -> MutexGuard<'_, Zone> {
        // A panicking test thread must not take every later lookup down with it.
        self.zone.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The running server. Dropping it stops both listeners.
pub struct Dns {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Dns {
    /// A resolver that asks only this server: no cache, one attempt, a 500 ms timeout.
    pub fn resolver(&self, edns: bool) -> hickory_resolver::TokioResolver {
        use hickory_resolver::config::{
            ConnectionConfig, NameServerConfig, ResolverConfig, ResolverOpts,
        };
        use hickory_resolver::net::runtime::TokioRuntimeProvider;
        let port = self.addr().port();
        let mut udp = ConnectionConfig::udp();
        udp.port = port;
        let mut tcp = ConnectionConfig::tcp();
        tcp.port = port;
        let server = NameServerConfig::new(self.addr().ip(), true, vec![udp, tcp]);
        let config = ResolverConfig::from_name_servers(vec![server]);
        let mut options = ResolverOpts::default();
        options.timeout = Duration::from_millis(500);
        options.attempts = 1;
        options.cache_size = 0;
        options.edns0 = edns;
        hickory_resolver::TokioResolver::builder_with_config(
            config,
            TokioRuntimeProvider::default(),
        )
        .with_options(options)
        .build()
        .expect("build resolver")
    }

    /// Binds UDP and TCP on one free port of 127.0.0.1 and starts serving an empty table.
    pub fn start() -> Dns {
        let (udp, tcp) = bind_same_port();
        let addr = udp.local_addr().expect("dns: local address of the UDP socket");
        let shared = Arc::new(Shared {
            zone: Mutex::new(Zone {
                records: HashMap::new(),
                timeouts: HashSet::new(),
                servfails: HashSet::new(),
                ttl: DEFAULT_TTL,
                log: Vec::new(),
            }),
            stop: AtomicBool::new(false),
        });

        let udp_shared = Arc::clone(&shared);
        thread::Builder::new()
            .name("dns-udp".into())
            .spawn(move || serve_udp(&udp, &udp_shared))
            .expect("dns: spawn the UDP thread");

        let tcp_shared = Arc::clone(&shared);
        thread::Builder::new()
            .name("dns-tcp".into())
            .spawn(move || serve_tcp(&tcp, &tcp_shared))
            .expect("dns: spawn the TCP thread");

        Dns { addr, shared }
    }

    /// "127.0.0.1:PORT": the nameserver address to hand to the code under test.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Adds an MX record. `exchange` "." (or "") gives a null MX (RFC 7505).
    pub fn add_mx(&self, name: &str, preference: u16, exchange: &str) {
        let exchange = if exchange.trim_end_matches('.').is_empty() {
            Name::root()
        } else {
            absolute_name(exchange)
        };
        self.add(name, RData::MX(MX::new(preference, exchange)));
    }

    pub fn add_a(&self, name: &str, ip: Ipv4Addr) {
        self.add(name, RData::A(A(ip)));
    }

    pub fn add_aaaa(&self, name: &str, ip: Ipv6Addr) {
        self.add(name, RData::AAAA(AAAA(ip)));
    }

    /// Adds a PTR record at the reverse name of `ip` (`4.3.2.1.in-addr.arpa`, or the nibbles
    /// under `ip6.arpa`) naming `host`.
    pub fn add_ptr(&self, ip: IpAddr, host: &str) {
        self.add(&Name::from(ip).to_ascii(), RData::PTR(PTR(absolute_name(host))));
    }

    /// Adds one TXT record whose text is split into character-strings of at most 255 bytes.
    pub fn add_txt(&self, name: &str, text: &str) {
        let bytes = text.as_bytes();
        let parts: Vec<&[u8]> =
            if bytes.is_empty() { vec![bytes] } else { bytes.chunks(255).collect() };
        self.add(name, RData::TXT(TXT::from_bytes(parts)));
    }

    /// Forgets everything about `name`: its records and any timeout or SERVFAIL marking.
    pub fn remove(&self, name: &str) {
        let key = key_of(name);
        let mut zone = self.shared.zone();
        zone.records.remove(&key);
        zone.timeouts.remove(&key);
        zone.servfails.remove(&key);
    }

    /// Questions about `name` (any type) are dropped without an answer from now on.
    pub fn set_timeout(&self, name: &str) {
        self.shared.zone().timeouts.insert(key_of(name));
    }

    /// Questions about `name` (any type) get SERVFAIL from now on.
    pub fn set_servfail(&self, name: &str) {
        self.shared.zone().servfails.insert(key_of(name));
    }

    /// The TTL put on answers from now on (60 unless changed).
    pub fn set_ttl(&self, ttl: u32) {
        self.shared.zone().ttl = ttl;
    }

    /// Every question received so far, oldest first.
    pub fn queries(&self) -> Vec<LoggedQuery> {
        self.shared.zone().log.clone()
    }

    fn add(&self, name: &str, data: RData) {
        self.shared.zone().records.entry(key_of(name)).or_default().push(data);
    }
}

impl Drop for Dns {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake both blocking loops so that they see the flag and release the port.
        if let Ok(socket) = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)) {
            let _ = socket.send_to(&[], self.addr);
        }
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

/// The table key of a name: lowercase, no trailing dot.
fn key_of(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

fn absolute_name(name: &str) -> Name {
    let mut parsed = Name::from_ascii(name)
        .unwrap_or_else(|e| panic!("dns: {name:?} is not a valid domain name: {e}"));
    parsed.set_fqdn(true);
    parsed
}

/// UDP on an ephemeral port, then TCP on that same port number; tries again with another port when
/// the TCP side is taken.
fn bind_same_port() -> (UdpSocket, TcpListener) {
    let mut last_error = None;
    for _ in 0..50 {
        let udp = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("dns: bind UDP 127.0.0.1:0");
        let port = udp.local_addr().expect("dns: UDP local address").port();
        match TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
            Ok(tcp) => return (udp, tcp),
            Err(e) => last_error = Some(e),
        }
    }
    panic!("dns: no port free for both UDP and TCP on 127.0.0.1: {last_error:?}");
}

fn serve_udp(socket: &UdpSocket, shared: &Shared) {
    let mut buf = vec![0u8; 65_535];
    loop {
        let received = socket.recv_from(&mut buf);
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok((len, peer)) = received else {
            continue;
        };
        if let Some(reply) = respond(shared, &buf[..len], false) {
            let _ = socket.send_to(&reply, peer);
        }
    }
}

fn serve_tcp(listener: &TcpListener, shared: &Arc<Shared>) {
    for stream in listener.incoming() {
        if shared.stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            continue;
        };
        let shared = Arc::clone(shared);
        let _ = thread::Builder::new()
            .name("dns-tcp-conn".into())
            .spawn(move || serve_tcp_connection(stream, &shared));
    }
}

/// DNS over TCP: each message is preceded by its length as two big-endian bytes; a client may
/// send several questions on one connection.
fn serve_tcp_connection(mut stream: TcpStream, shared: &Shared) {
    if stream.set_read_timeout(Some(TCP_IDLE)).is_err() {
        return;
    }
    loop {
        let mut len = [0u8; 2];
        if stream.read_exact(&mut len).is_err() {
            return;
        }
        let mut packet = vec![0u8; usize::from(u16::from_be_bytes(len))];
        if stream.read_exact(&mut packet).is_err() {
            return;
        }
        let Some(reply) = respond(shared, &packet, true) else {
            continue;
        };
        let Ok(reply_len) = u16::try_from(reply.len()) else {
            return;
        };
        let mut framed = Vec::with_capacity(reply.len() + 2);
        framed.extend_from_slice(&reply_len.to_be_bytes());
        framed.extend_from_slice(&reply);
        if stream.write_all(&framed).is_err() {
            return;
        }
    }
}

/// The encoded reply to one received packet, or None when nothing must be sent back.
fn respond(shared: &Shared, packet: &[u8], tcp: bool) -> Option<Vec<u8>> {
    let request = match Message::from_vec(packet) {
        Ok(request) => request,
        Err(_) => return format_error(packet),
    };
    if request.message_type != MessageType::Query {
        return None;
    }

    let mut response = Message::new(request.id, MessageType::Response, request.op_code);
    response.metadata = Metadata::response_from_request(&request.metadata);
    response.metadata.authoritative = true;
    response.add_queries(request.queries.iter().cloned());
    if request.edns.is_some() {
        let mut edns = Edns::new();
        edns.set_max_payload(ADVERTISED_PAYLOAD);
        response.set_edns(edns);
    }

    if request.op_code != OpCode::Query {
        response.metadata.response_code = ResponseCode::NotImp;
    } else if let [query] = request.queries.as_slice() {
        let key = key_of(&query.name().to_ascii());
        let asked = query.query_type();
        let mut zone = shared.zone();
        zone.log.push(LoggedQuery { name: key.clone(), record_type: asked.to_string(), tcp });
        if zone.timeouts.contains(&key) {
            return None;
        }
        if zone.servfails.contains(&key) {
            response.metadata.response_code = ResponseCode::ServFail;
        } else if let Some(records) = zone.records.get(&key) {
            for data in records {
                if asked == RecordType::ANY || data.record_type() == asked {
                    let record = Record::from_rdata(query.name().clone(), zone.ttl, data.clone());
                    response.add_answer(record);
                }
            }
        } else {
            let below = format!(".{key}");
            let empty_non_terminal =
                zone.records.keys().any(|name| key.is_empty() || name.ends_with(&below));
            if !empty_non_terminal {
                response.metadata.response_code = ResponseCode::NXDomain;
            }
        }
    } else {
        response.metadata.response_code = ResponseCode::FormErr;
    }

    let encoded = response.to_vec().ok()?;
    if tcp {
        return Some(encoded);
    }
    let limit = request
        .edns
        .as_ref()
        .map_or(PLAIN_UDP_LIMIT, |edns| usize::from(edns.max_payload()).max(PLAIN_UDP_LIMIT));
    if encoded.len() <= limit { Some(encoded) } else { response.truncate().to_vec().ok() }
}

/// FORMERR for a packet that does not parse but still carries a header to take the id from.
fn format_error(packet: &[u8]) -> Option<Vec<u8>> {
    let id = u16::from_be_bytes([*packet.first()?, *packet.get(1)?]);
    if packet.len() < 12 {
        return None;
    }
    Message::error_msg(id, OpCode::Query, ResponseCode::FormErr).to_vec().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    use std::time::Instant;

    use hickory_resolver::TokioResolver;
    use hickory_resolver::lookup::Lookup;
    use hickory_resolver::net::NetError;
    use hickory_resolver::proto::op::Query;
    use mail_auth::spf::verify::SpfParameters;
    use mail_auth::{MessageAuthenticator, SpfResult};
    use std::net::IpAddr;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("tokio runtime")
    }

    fn resolver_with(dns: &Dns, edns: bool) -> TokioResolver {
        dns.resolver(edns)
    }

    fn resolver(dns: &Dns) -> TokioResolver {
        resolver_with(dns, true)
    }

    fn txt_strings(lookup: &Lookup) -> Vec<Vec<u8>> {
        lookup
            .answers()
            .iter()
            .filter_map(|record| match &record.data {
                RData::TXT(txt) => Some(txt.txt_data.iter().flat_map(|s| s.to_vec()).collect()),
                _ => None,
            })
            .collect()
    }

    fn expect_no_records(result: Result<Lookup, NetError>, nxdomain: bool) {
        match result {
            Ok(lookup) => panic!("expected no records, got {:?}", lookup.answers()),
            Err(e) => {
                assert!(e.is_no_records_found(), "expected no records, got {e:?}");
                assert_eq!(e.is_nx_domain(), nxdomain, "NXDOMAIN vs NODATA: {e:?}");
            }
        }
    }

    #[test]
    fn resolves_mx_a_aaaa_and_txt() {
        let dns = Dns::start();
        dns.add_mx("Example.TEST", 20, "mx2.example.test");
        dns.add_mx("example.test.", 10, "mx1.example.test.");
        dns.add_a("mx1.example.test", Ipv4Addr::new(127, 0, 0, 1));
        dns.add_aaaa("mx1.example.test", Ipv6Addr::LOCALHOST);
        dns.add_txt("example.test", "v=spf1 ip4:127.0.0.1 -all");

        let rt = runtime();
        rt.block_on(async {
            let resolver = resolver(&dns);

            let mx = resolver.mx_lookup("example.test.").await.expect("MX");
            let mut got: Vec<(u16, String)> = mx
                .answers()
                .iter()
                .filter_map(|record| match &record.data {
                    RData::MX(mx) => Some((mx.preference, mx.exchange.to_ascii())),
                    _ => None,
                })
                .collect();
            got.sort();
            assert_eq!(
                got,
                vec![(10, "mx1.example.test.".to_owned()), (20, "mx2.example.test.".to_owned())]
            );
            assert!(mx.answers().iter().all(|record| record.ttl <= 60));

            let a = resolver.ipv4_lookup("MX1.example.test.").await.expect("A");
            let ips: Vec<RData> = a.answers().iter().map(|r| r.data.clone()).collect();
            assert_eq!(ips, vec![RData::A(A(Ipv4Addr::new(127, 0, 0, 1)))]);

            let aaaa = resolver.ipv6_lookup("mx1.example.test.").await.expect("AAAA");
            let ips: Vec<RData> = aaaa.answers().iter().map(|r| r.data.clone()).collect();
            assert_eq!(ips, vec![RData::AAAA(AAAA(Ipv6Addr::LOCALHOST))]);

            let txt = resolver.txt_lookup("example.test.").await.expect("TXT");
            assert_eq!(txt_strings(&txt), vec![b"v=spf1 ip4:127.0.0.1 -all".to_vec()]);
        });
    }

    #[test]
    fn nxdomain_nodata_and_null_mx() {
        let dns = Dns::start();
        dns.add_a("host.example.test", Ipv4Addr::new(127, 0, 0, 2));
        dns.add_txt("_dmarc.example.test", "v=DMARC1; p=none");
        dns.add_mx("nullmx.example.test", 0, ".");

        let rt = runtime();
        rt.block_on(async {
            let resolver = resolver(&dns);

            // No records at all under the name: NXDOMAIN (DMARC's parent-domain walk needs it).
            expect_no_records(resolver.txt_lookup("_dmarc.test.").await, true);
            expect_no_records(resolver.mx_lookup("missing.example.test.").await, true);
            // The name exists with another type: NODATA.
            expect_no_records(resolver.mx_lookup("host.example.test.").await, false);
            // An empty non-terminal (parent of a name with records): NODATA too.
            expect_no_records(resolver.ipv4_lookup("example.test.").await, false);

            let mx = resolver.mx_lookup("nullmx.example.test.").await.expect("null MX");
            match mx.answers() {
                [record] => match &record.data {
                    RData::MX(mx) => {
                        assert_eq!(mx.preference, 0);
                        assert!(mx.exchange.is_root(), "exchange {:?}", mx.exchange);
                    }
                    other => panic!("expected MX, got {other:?}"),
                },
                other => panic!("expected one null MX, got {other:?}"),
            }

            dns.remove("host.example.test");
            expect_no_records(resolver.ipv4_lookup("host.example.test.").await, true);
        });
    }

    #[test]
    fn long_txt_records_arrive_whole_over_udp_with_edns_and_over_tcp_without() {
        let dns = Dns::start();
        let text: String =
            (0..500u32).map(|i| char::from(b'a' + u8::try_from(i % 26).expect("small"))).collect();
        dns.add_txt("sel._domainkey.example.test", &text);
        // Several long records so that the answer passes even the 1232-byte EDNS limit.
        dns.add_txt("big.example.test", &text);
        dns.add_txt("big.example.test", &text);
        dns.add_txt("big.example.test", &text);

        let rt = runtime();
        rt.block_on(async {
            let edns = resolver_with(&dns, true);
            let txt =
                edns.txt_lookup("sel._domainkey.example.test.").await.expect("long TXT with EDNS");
            assert_eq!(txt_strings(&txt), vec![text.as_bytes().to_vec()]);
            match &txt.answers()[0].data {
                RData::TXT(record) => {
                    let sizes: Vec<usize> = record.txt_data.iter().map(|s| s.len()).collect();
                    assert_eq!(sizes, vec![255, 245]);
                }
                other => panic!("expected TXT, got {other:?}"),
            }

            let plain = resolver_with(&dns, false);
            let txt = plain
                .txt_lookup("sel._domainkey.example.test.")
                .await
                .expect("long TXT without EDNS");
            assert_eq!(txt_strings(&txt), vec![text.as_bytes().to_vec()]);

            let big = edns.txt_lookup("big.example.test.").await.expect("big TXT");
            assert_eq!(txt_strings(&big).len(), 3);
        });

        let log = dns.queries();
        let transports = |name: &str| -> Vec<bool> {
            log.iter().filter(|q| q.name == name && q.record_type == "TXT").map(|q| q.tcp).collect()
        };
        // With EDNS: UDP only. Without: UDP truncated, then TCP.
        assert_eq!(transports("sel._domainkey.example.test"), vec![false, false, true]);
        assert_eq!(transports("big.example.test"), vec![false, true]);
    }

    #[test]
    fn timeout_and_servfail_names() {
        let dns = Dns::start();
        dns.add_a("slow.example.test", Ipv4Addr::new(127, 0, 0, 3));
        dns.set_timeout("slow.example.test");
        dns.set_servfail("broken.example.test");

        let rt = runtime();
        rt.block_on(async {
            let resolver = resolver(&dns);
            let started = Instant::now();
            let result = resolver.ipv4_lookup("slow.example.test.").await;
            let elapsed = started.elapsed();
            match result {
                Ok(lookup) => panic!("expected a timeout, got {:?}", lookup.answers()),
                Err(e) => assert!(
                    matches!(e, NetError::Timeout) || e.to_string().contains("timed out"),
                    "expected a timeout, got {e:?}"
                ),
            }
            assert!(
                elapsed >= Duration::from_millis(400) && elapsed < Duration::from_secs(5),
                "timed out after {elapsed:?}"
            );

            match resolver.ipv4_lookup("broken.example.test.").await {
                Ok(lookup) => panic!("expected SERVFAIL, got {:?}", lookup.answers()),
                Err(e) => assert!(
                    !e.is_no_records_found() && e.to_string().to_lowercase().contains("serv"),
                    "expected SERVFAIL, got {e:?}"
                ),
            }

            dns.remove("slow.example.test");
            dns.add_a("slow.example.test", Ipv4Addr::new(127, 0, 0, 3));
            let a = resolver
                .ipv4_lookup("slow.example.test.")
                .await
                .expect("answered once the timeout is removed");
            assert_eq!(a.answers().len(), 1);
        });
    }

    #[test]
    fn mail_auth_spf_checks_work_against_the_server() {
        let dns = Dns::start();
        dns.add_txt("origin.test", "v=spf1 ip4:127.0.0.1 -all");

        let rt = runtime();
        rt.block_on(async {
            let auth = MessageAuthenticator(resolver(&dns));
            let check = |ip: Ipv4Addr, sender: &'static str| {
                let auth = auth.clone();
                async move {
                    let params = SpfParameters::verify_mail_from(
                        IpAddr::V4(ip),
                        "client.origin.test",
                        "mx.example.test",
                        sender,
                    );
                    auth.verify_spf(params).await.result()
                }
            };
            assert_eq!(check(Ipv4Addr::new(127, 0, 0, 1), "a@origin.test").await, SpfResult::Pass);
            assert_eq!(check(Ipv4Addr::new(127, 0, 0, 2), "a@origin.test").await, SpfResult::Fail);
            assert_eq!(check(Ipv4Addr::new(127, 0, 0, 1), "a@nowhere.test").await, SpfResult::None);
        });
    }

    #[test]
    fn raw_reply_header_copies_id_and_question_and_sets_aa() {
        let dns = Dns::start();
        dns.add_mx("example.test", 10, "mx.example.test");

        let mut request = Message::new(0x4242, MessageType::Query, OpCode::Query);
        request.metadata.recursion_desired = true;
        let name = Name::from_ascii("EXAMPLE.test.").expect("name");
        request.add_query(Query::query(name.clone(), RecordType::MX));
        let packet = request.to_vec().expect("encode");

        let socket = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind");
        socket.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        socket.send_to(&packet, dns.addr()).expect("send");
        let mut buf = [0u8; 4096];
        let (len, _) = socket.recv_from(&mut buf).expect("reply");
        let reply = Message::from_vec(&buf[..len]).expect("decode reply");

        assert_eq!(reply.id, 0x4242);
        assert_eq!(reply.message_type, MessageType::Response);
        assert!(reply.authoritative);
        assert!(reply.recursion_desired);
        assert!(!reply.truncation);
        assert_eq!(reply.response_code, ResponseCode::NoError);
        assert_eq!(reply.queries.len(), 1);
        assert!(reply.queries[0].name().eq_case(&name));
        assert_eq!(reply.queries[0].query_type(), RecordType::MX);
        assert_eq!(reply.answers.len(), 1);
        assert!(reply.answers[0].name.eq_case(&name));
        assert_eq!(reply.answers[0].ttl, 60);
        assert!(reply.edns.is_none());

        // The same question over TCP.
        let mut stream = TcpStream::connect(dns.addr()).expect("connect TCP");
        stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        let len = u16::try_from(packet.len()).expect("short");
        stream.write_all(&len.to_be_bytes()).expect("write length");
        stream.write_all(&packet).expect("write packet");
        let mut len = [0u8; 2];
        stream.read_exact(&mut len).expect("read length");
        let mut body = vec![0u8; usize::from(u16::from_be_bytes(len))];
        stream.read_exact(&mut body).expect("read body");
        let reply = Message::from_vec(&body).expect("decode TCP reply");
        assert_eq!(reply.id, 0x4242);
        assert_eq!(reply.answers.len(), 1);
    }
}
