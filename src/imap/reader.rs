//! The command reader alone, without a socket or a store: the fuzz target's way in. Bytes go
//! through the gate and the flow with the options and the BAD answers the server uses (a LOGIN
//! counts as logged in, so the gate's limits of both states are reached), and every event is
//! answered the way that lets the flow go on (AUTHENTICATE continued then finished, IDLE
//! accepted), so each of the flow's states is reachable.

use imap_next::server::{Event, Server};
use imap_next::{Interrupt, Io, State};
use imap_types::command::CommandBody;
use imap_types::response::{CommandContinuationRequest, Greeting, Status};

use super::gate::{Gate, Pumped};

/// Feeds `data` to a fresh flow `chunk` bytes at a time, as a network would deliver it.
pub fn read_commands(data: &[u8], chunk: usize) {
    let greeting = Greeting::ok(None, "fuzz").unwrap_or_else(|_| unreachable!()); // ok: constant text
    let mut server = Server::new(super::conn::options(), greeting);
    let mut gate = Gate::new(super::gate::budget(1 << 20));
    let mut pieces = data.chunks(chunk.max(1));
    loop {
        match server.next() {
            Ok(event) => {
                if let Event::CommandReceived { command } = &event
                    && matches!(command.body, CommandBody::Login { .. })
                {
                    gate.logged_in();
                }
                answer(&mut server, event)
            }
            Err(Interrupt::Io(Io::Output(bytes))) => {
                assert!(bytes.ends_with(b"\r\n"), "a response ends with CRLF");
            }
            Err(Interrupt::Io(Io::NeedMoreInput)) => match gate.pump(&mut server) {
                Pumped::Fed => {}
                Pumped::Refused(refusal) => {
                    server.enqueue_status(refusal);
                }
                Pumped::Close(_) => return,
                Pumped::Starved => match pieces.next() {
                    Some(piece) => gate.take(piece),
                    None => return,
                },
            },
            Err(Interrupt::Error(e)) => super::conn::refuse(&mut server, e),
        }
    }
}

fn answer(server: &mut Server, event: Event) {
    let go_on =
        || CommandContinuationRequest::basic(None, "go on").unwrap_or_else(|_| unreachable!()); // ok: constant text
    match event {
        Event::CommandReceived { command } => {
            if let Ok(done) = Status::ok(Some(command.tag), None, "done") {
                server.enqueue_status(done);
            }
        }
        Event::CommandAuthenticateReceived { command_authenticate: c } => {
            if c.initial_response.is_some() {
                finish(server, c.tag);
            } else {
                let _ = server.authenticate_continue(go_on());
            }
        }
        Event::AuthenticateDataReceived { .. } => {
            if let Ok(refused) = Status::no(None, None, "no") {
                let _ = server.authenticate_finish(refused);
            }
        }
        Event::IdleCommandReceived { .. } => {
            let _ = server.idle_accept(go_on());
        }
        Event::IdleDoneReceived | Event::GreetingSent { .. } | Event::ResponseSent { .. } => {}
    }
}

fn finish(server: &mut Server, tag: imap_types::core::Tag<'static>) {
    if let Ok(refused) = Status::no(Some(tag), None, "no") {
        let _ = server.authenticate_finish(refused);
    }
}
