//! A line-oriented SMTP client for transcripts against the server's MX listener.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// A line-oriented SMTP client for transcripts.
pub struct Talk {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Talk {
    pub fn open(addr: SocketAddr) -> (Talk, String) {
        Talk::over(TcpStream::connect(addr).expect("connect"))
    }

    /// A session whose client address is `source` (another loopback address, such as the
    /// 127.0.0.2 every DNS blacklist lists for testing, RFC 5782 5).
    pub fn open_from(addr: SocketAddr, source: std::net::IpAddr) -> (Talk, String) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("rt");
        let stream = rt
            .block_on(async {
                let socket = tokio::net::TcpSocket::new_v4()?;
                socket.bind(SocketAddr::new(source, 0))?;
                socket.connect(addr).await
            })
            .expect("connect from the source address");
        let stream = stream.into_std().expect("std stream");
        stream.set_nonblocking(false).expect("blocking");
        Talk::over(stream)
    }

    fn over(stream: TcpStream) -> (Talk, String) {
        stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let writer = stream.try_clone().expect("clone");
        let mut talk = Talk { reader: BufReader::new(stream), writer };
        let greeting = talk.reply();
        (talk, greeting)
    }

    /// One (possibly multi-line) reply; empty when the server closed the connection.
    pub fn reply(&mut self) -> String {
        let mut all = String::new();
        loop {
            let mut line = String::new();
            if self.reader.read_line(&mut line).unwrap_or(0) == 0 {
                return all;
            }
            all.push_str(&line);
            if line.len() < 4 || line.as_bytes()[3] != b'-' {
                return all;
            }
        }
    }

    pub fn send(&mut self, text: &str) {
        self.writer.write_all(text.as_bytes()).expect("write");
    }

    pub fn cmd(&mut self, line: &str) -> String {
        self.send(&format!("{line}\r\n"));
        self.reply()
    }

    /// A whole transaction; returns the final reply to the message.
    pub fn mail(&mut self, from: &str, to: &[&str], message: &str) -> String {
        assert!(self.cmd(&format!("MAIL FROM:<{from}>")).starts_with("250"));
        for r in to {
            let reply = self.cmd(&format!("RCPT TO:<{r}>"));
            assert!(reply.starts_with("250"), "RCPT {r}: {reply}");
        }
        assert!(self.cmd("DATA").starts_with("354"));
        self.send(&format!("{message}\r\n.\r\n"));
        self.reply()
    }
}

/// One whole session: EHLO, one transaction (MAIL, RCPT and DATA must be accepted), QUIT.
/// Returns the reply to the message.
pub fn send_one(addr: SocketAddr, from: &str, to: &str, message: &str) -> String {
    let (mut talk, greeting) = Talk::open(addr);
    assert!(greeting.starts_with("220"), "{greeting}");
    assert!(talk.cmd("EHLO tester.example.org").starts_with("250"));
    let reply = talk.mail(from, &[to], message);
    talk.cmd("QUIT");
    reply
}
