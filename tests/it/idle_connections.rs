//! A client must send each request head within `http.header_timeout` of its connection going
//! idle: a silent connection, one that trickles its head, and a keep-alive connection left
//! unused are closed without an answer, while one that keeps asking stays open however long.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use crate::harness::{Seed, Server, TempDir};
use crate::security::read_response;

fn connect(server: &Server) -> TcpStream {
    let stream = TcpStream::connect(server.addr).expect("connect");
    // Far past the limit of 1 s: only a server that never closes makes a read wait this long.
    stream.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    stream
}

/// Reads until the server closes the connection, which must come without an answer.
fn closed_without_answer(mut stream: TcpStream, what: &str) {
    let mut rest = Vec::new();
    match stream.read_to_end(&mut rest) {
        Ok(_) => assert!(rest.is_empty(), "{what}: {:?}", String::from_utf8_lossy(&rest)),
        Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
        Err(e) => panic!("{what}: the connection stayed open ({e})"),
    }
}

const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: t\r\n\r\n";

#[test]
fn silent_slow_and_unused_connections_are_closed_and_a_busy_one_stays() {
    let dir = TempDir::new("idle");
    Seed::open(&dir.0).close();
    let server = Server::start_with(&dir.0, &[], &[("EDGEMAIL_HTTP_HEADER_TIMEOUT", "1s")]);

    let silent = connect(&server);

    // One header line every 250 ms: the head would be whole after 10 s.
    let slow = connect(&server);
    let mut trickle = slow.try_clone().expect("clone");
    let writer = std::thread::spawn(move || {
        let mut lines = vec![b"GET /healthz HTTP/1.1\r\nHost: t\r\n".to_vec()];
        lines.extend((0..40).map(|i| format!("X-Slow-{i}: 1\r\n").into_bytes()));
        lines.push(b"\r\n".to_vec());
        for line in lines {
            if trickle.write_all(&line).is_err() {
                return false;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        true
    });

    let mut unused = connect(&server);
    unused.write_all(HEALTHZ).expect("write");
    assert_eq!(read_response(&mut unused).status, 200);

    // Eight requests 400 ms apart: 3.2 s on one connection, past the limit in all but never
    // idle for it.
    let mut busy = connect(&server);
    for _ in 0..8 {
        busy.write_all(HEALTHZ).expect("write");
        assert_eq!(read_response(&mut busy).status, 200, "a connection in use stays open");
        std::thread::sleep(Duration::from_millis(400));
    }

    closed_without_answer(silent, "a connection that never sends");
    closed_without_answer(slow, "a head trickled past the limit");
    closed_without_answer(unused, "a keep-alive connection left unused");
    assert!(!writer.join().expect("writer"), "the slow head was cut off before it was whole");
}
