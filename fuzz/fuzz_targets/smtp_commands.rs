//! Arbitrary bytes into a whole SMTP session (the MX or submission, by a bit of the input), split
//! at a size taken from the input as a network would deliver them; recipients and logins are
//! accepted or refused by their length, and STARTTLS "succeeds", so every state of the session
//! is reachable.
#![no_main]

use std::net::IpAddr;
use std::sync::Arc;

use edgemail::credentials::Login;
use edgemail::smtp::data::budget;
use edgemail::smtp::session::{Action, Peer, Session};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&chunk, rest)) = data.split_first() else {
        return;
    };
    let mut cfg = edgemail::config::Config::default().smtp;
    cfg.max_message_size = 4096;
    cfg.max_recipients = 4;
    let peer = Peer { ip: IpAddr::from([192, 0, 2, 1]), tls_available: chunk & 1 == 1 };
    let (cfg, budget) = (Arc::new(cfg), budget(64 * 1024));
    let mut session = match chunk & 6 {
        0 | 2 => Session::new(cfg, peer, budget),
        4 => Session::submission(cfg, peer, budget, false),
        _ => Session::submission(cfg, peer, budget, true),
    };
    let mut pieces = rest.chunks(usize::from(chunk >> 3) + 1);
    loop {
        match session.next_action() {
            Action::Write(bytes) => {
                assert!(bytes.ends_with(b"\r\n"), "a reply ends with CRLF");
            }
            Action::Read(_) => match pieces.next() {
                Some(piece) => session.feed(piece),
                None => return,
            },
            Action::Pause(_) => {}
            Action::CheckRecipient(address) => {
                if address.len() % 3 == 0 {
                    session.recipient_checked(Err("550 5.1.1 no\r\n".into()));
                } else {
                    session.recipient_checked(Ok(()));
                }
            }
            Action::Deliver(envelope, _) => {
                assert!(!envelope.recipients.is_empty(), "a message has recipients");
                session.delivered("250 2.0.0 ok\r\n");
            }
            Action::LogIn { user, password } => {
                let answer =
                    if password.len() % 2 == 0 { Login::Accepted(user) } else { Login::Refused };
                session.logged_in(answer);
            }
            Action::StartTls => session.secured(),
            Action::Close => return,
        }
    }
});
