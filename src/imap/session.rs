//! One IMAP session: its state (not logged in, logged in, a folder selected), the loop that
//! takes the client's commands off the connection, the commands valid in any state, and
//! logging in (LOGIN and AUTHENTICATE PLAIN, only once TLS is up).

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use imap_next::server::Event;
use imap_types::auth::{AuthMechanism, AuthenticateData};
use imap_types::command::{Command, CommandBody};
use imap_types::core::{Atom, IString, NString, Tag, Vec1};
use imap_types::response::{Capability, Code, CommandContinuationRequest, Data, StatusKind};
use imap_types::secret::Secret;

use super::Deps;
use super::conn::{Conn, ConnError};
use super::reply::{bad, no, ok, status};
use super::view::View;
use crate::credentials::Login;

/// How a command left the session.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    Go,
    /// STARTTLS was accepted: the TLS handshake comes next.
    StartTls,
    Logout,
}

pub struct Session {
    pub deps: Arc<Deps>,
    pub ip: IpAddr,
    pub tls: bool,
    /// Whether STARTTLS can be offered (a plain connection with a certificate at hand).
    pub can_starttls: bool,
    /// The mailbox logged in as.
    pub user: Option<String>,
    pub view: Option<View>,
    /// Whether the client enabled UTF8=ACCEPT: folder names cross as UTF-8, not modified UTF-7.
    pub utf8: bool,
    /// Whether CONDSTORE is on (ENABLE, or a command that uses it: RFC 7162 3.1): FLAGS in a
    /// FETCH response come with MODSEQ.
    pub condstore: bool,
    /// Whether the client enabled QRESYNC: expunges are told as VANISHED.
    pub qresync: bool,
    /// The AUTHENTICATE exchange under way.
    auth_tag: Option<Tag<'static>>,
}

impl Session {
    pub fn new(deps: Arc<Deps>, ip: IpAddr, tls: bool, can_starttls: bool) -> Session {
        let (utf8, condstore, qresync) = (false, false, false);
        let (user, view, auth_tag) = (None, None, None);
        Session { deps, ip, tls, can_starttls, user, view, utf8, condstore, qresync, auth_tag }
    }

    fn timeout(&self) -> Duration {
        match self.user {
            Some(_) => self.deps.config.idle_timeout,
            None => self.deps.config.login_timeout,
        }
    }

    /// Serves commands until the client leaves or asks for TLS.
    pub async fn run(&mut self, conn: &mut Conn) -> Result<Next, ConnError> {
        loop {
            conn.logged_in(self.user.is_some());
            let event = conn.next(self.timeout()).await?;
            // Commands run boxed: inline, the largest command's state would be part of every
            // session's task for its whole life, idle or not (7 KiB a session).
            let next = match event {
                Event::CommandReceived { command } => Box::pin(self.command(conn, command)).await?,
                Event::CommandAuthenticateReceived { command_authenticate: c } => {
                    Box::pin(self.authenticate(conn, c.tag, c.mechanism, c.initial_response)).await;
                    Next::Go
                }
                Event::AuthenticateDataReceived { authenticate_data } => {
                    Box::pin(self.authenticate_data(conn, authenticate_data)).await;
                    Next::Go
                }
                Event::IdleCommandReceived { tag } => {
                    self.idle(conn, tag).await?;
                    Next::Go
                }
                _ => Next::Go,
            };
            if self.user.is_some() {
                conn.logged_in(true);
            }
            if next != Next::Go {
                conn.flush().await?;
                return Ok(next);
            }
        }
    }

    async fn command(
        &mut self,
        conn: &mut Conn,
        command: Command<'static>,
    ) -> Result<Next, ConnError> {
        let tag = command.tag;
        let done = match command.body {
            CommandBody::Capability => {
                conn.enqueue_data(Data::Capability(self.capabilities()));
                ok(&tag, "CAPABILITY completed")
            }
            CommandBody::Noop | CommandBody::Check => {
                self.announce(conn).await;
                ok(&tag, "NOOP completed")
            }
            CommandBody::Logout => {
                if let Ok(bye) = imap_types::response::Status::bye(None, "logging out") {
                    conn.enqueue(bye);
                }
                conn.enqueue(ok(&tag, "LOGOUT completed"));
                return Ok(Next::Logout);
            }
            CommandBody::StartTLS if self.can_starttls && !self.tls => {
                conn.enqueue(ok(&tag, "begin TLS negotiation now"));
                return Ok(Next::StartTls);
            }
            CommandBody::StartTLS => bad(&tag, "STARTTLS is not available now"),
            CommandBody::Id { .. } => {
                conn.enqueue_data(Data::Id { parameters: Some(id_parameters()) });
                ok(&tag, "ID completed")
            }
            CommandBody::Login { username, password } => {
                let user = String::from_utf8_lossy(username.as_ref()).into_owned();
                let pass = String::from_utf8_lossy(password.declassify().as_ref()).into_owned();
                self.login(&tag, &user, &pass).await
            }
            body if self.user.is_none() => {
                let _ = body;
                bad(&tag, "log in first")
            }
            body => self.authenticated(conn, &tag, body).await?,
        };
        conn.enqueue(done);
        Ok(Next::Go)
    }

    /// The capabilities for the session's state: logins only once TLS is up.
    pub fn capabilities(&self) -> Vec1<Capability<'static>> {
        let mut caps = vec![Capability::Imap4Rev1, other("IMAP4rev2")];
        if self.tls {
            if self.user.is_none() {
                caps.push(Capability::Auth(AuthMechanism::Plain));
            }
        } else {
            if self.can_starttls {
                caps.push(Capability::StartTls);
            }
            caps.push(Capability::LoginDisabled);
        }
        caps.extend([
            Capability::Idle,
            Capability::Move,
            Capability::Namespace,
            Capability::Id,
            Capability::Unselect,
            other("SPECIAL-USE"),
            other("UIDPLUS"),
            Capability::LiteralPlus,
            other("SORT"),
            other("SORT=DISPLAY"),
            other("THREAD=ORDEREDSUBJECT"),
            other("THREAD=REFERENCES"),
            Capability::Enable,
            Capability::CondStore,
            Capability::QResync,
            other("UTF8=ACCEPT"),
            Capability::Binary,
            Capability::StatusSize,
            Capability::Quota,
            Capability::QuotaRes(imap_types::extensions::quota::Resource::Storage),
        ]);
        Vec1::try_from(caps).unwrap_or_else(|_| Vec1::from(Capability::Imap4Rev1))
    }

    async fn login(
        &mut self,
        tag: &Tag<'static>,
        user: &str,
        password: &str,
    ) -> imap_types::response::Status<'static> {
        if !self.tls {
            return no(tag, "[PRIVACYREQUIRED] log in over TLS (STARTTLS or port 993)");
        }
        if self.user.is_some() {
            return bad(tag, "already logged in");
        }
        match self.deps.logins.check(self.ip, user, password).await {
            Login::Accepted(mailbox) => {
                self.user = Some(mailbox);
                let caps = Code::Capability(self.capabilities());
                status(tag, StatusKind::Ok, Some(caps), "logged in")
            }
            Login::Refused => no(tag, "[AUTHENTICATIONFAILED] invalid credentials"),
            Login::Throttled => no(tag, "[UNAVAILABLE] too many failed logins, try later"),
            Login::Unavailable => no(tag, "[UNAVAILABLE] try again later"),
        }
    }

    async fn authenticate(
        &mut self,
        conn: &mut Conn,
        tag: Tag<'static>,
        mechanism: AuthMechanism<'static>,
        initial: Option<Secret<std::borrow::Cow<'static, [u8]>>>,
    ) {
        if mechanism != AuthMechanism::Plain || !self.tls || self.user.is_some() {
            let refusal = match (mechanism == AuthMechanism::Plain, self.tls) {
                (true, false) => no(&tag, "[PRIVACYREQUIRED] authenticate over TLS"),
                (false, _) => no(&tag, "only AUTHENTICATE PLAIN is supported"),
                _ => bad(&tag, "already logged in"),
            };
            let _ = conn.flow().authenticate_finish(refusal);
            return;
        }
        match initial {
            Some(data) => self.finish_plain(conn, tag, data.declassify()).await,
            None => {
                self.auth_tag = Some(tag);
                let go_on = CommandContinuationRequest::base64(Vec::<u8>::new());
                let _ = conn.flow().authenticate_continue(go_on);
            }
        }
    }

    async fn authenticate_data(&mut self, conn: &mut Conn, data: AuthenticateData<'static>) {
        let Some(tag) = self.auth_tag.take() else { return };
        match data {
            AuthenticateData::Continue(data) => {
                self.finish_plain(conn, tag, data.declassify()).await
            }
            AuthenticateData::Cancel => {
                let _ = conn.flow().authenticate_finish(bad(&tag, "authentication cancelled"));
            }
        }
    }

    /// `authzid NUL authcid NUL password` (RFC 4616); the authorization identity, when given,
    /// must be the mailbox logging in.
    async fn finish_plain(&mut self, conn: &mut Conn, tag: Tag<'static>, data: &[u8]) {
        let fields: Vec<&[u8]> = data.split(|b| *b == 0).collect();
        let done = match fields.as_slice() {
            [authz, user, pass] if authz.is_empty() || authz.eq_ignore_ascii_case(user) => {
                let (user, pass) = (String::from_utf8_lossy(user), String::from_utf8_lossy(pass));
                self.login(&tag, &user, &pass).await
            }
            _ => no(&tag, "[AUTHENTICATIONFAILED] invalid credentials"),
        };
        let _ = conn.flow().authenticate_finish(done);
    }

    /// Tells the client what changed in the selected folder since it last heard.
    pub async fn announce(&mut self, conn: &mut Conn) {
        let Some(view) = self.view.as_mut() else { return };
        match view.sync(&self.deps.store).await {
            Ok(news) => news.into_iter().for_each(|d| conn.enqueue_data(d)),
            Err(e) => tracing::warn!(error = %e, "imap: folder sync"),
        }
    }
}

fn other(name: &'static str) -> Capability<'static> {
    Capability::from(Atom::unvalidated(name))
}

fn id_parameters() -> Vec<(IString<'static>, NString<'static>)> {
    let pair = |k: &'static str, v: &'static str| {
        (
            IString::from(imap_types::core::Quoted::unvalidated(k)),
            NString(Some(IString::from(imap_types::core::Quoted::unvalidated(v)))),
        )
    };
    vec![pair("name", "edgemail"), pair("version", env!("CARGO_PKG_VERSION"))]
}
