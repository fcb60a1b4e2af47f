//! One connection, driven by whoever waits on it (`drive`), with the statements it prepared.
//! Opening one is done here as libpq does for the URL's parameters that matter to us: each
//! host in turn (a name, an address from `hostaddr`, or a Unix socket directory) with its
//! port, in the URL's order or shuffled (`load_balance_hosts=random`), `connect_timeout` for the
//! connect and the startup, TCP keepalives (`keepalives*`), `tcp_user_timeout`, and
//! `target_session_attrs=read-write` (a standby is skipped). TLS is negotiated by tokio-postgres
//! over our socket with the `tls` connector.

use std::collections::HashMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rand::seq::SliceRandom;
use tokio_postgres::config::{Host, LoadBalanceHosts, TargetSessionAttrs};
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::{Client, Config, SimpleQueryMessage, Statement};

use super::super::super::error::{Error, Result};
use super::drive::{Driver, Sock};
use super::tls::MakeRustls;

/// One open connection.
pub(super) struct Conn {
    client: Client,
    driver: Mutex<Driver>,
    /// Statements prepared on this connection, by their text.
    statements: Mutex<HashMap<String, Statement>>,
}

impl std::ops::Deref for Conn {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Conn {
    /// Runs `work` (statements of this connection) on this thread to its end.
    pub fn wait<T>(
        &self,
        work: impl Future<Output = std::result::Result<T, tokio_postgres::Error>>,
    ) -> Result<T> {
        let mut driver = self.driver.lock().unwrap_or_else(|p| p.into_inner());
        driver.run(work, None)
    }

    /// Whether it is still open, looking at what the server sent while it was not in use.
    pub fn alive(&self) -> bool {
        self.driver.lock().unwrap_or_else(|p| p.into_inner()).alive()
    }

    /// `sql` prepared on this connection, once.
    pub async fn prepared(
        &self,
        sql: &str,
    ) -> std::result::Result<Statement, tokio_postgres::Error> {
        let known = self.statements().get(sql).cloned();
        if let Some(statement) = known {
            return Ok(statement);
        }
        let statement = self.client.prepare(sql).await?;
        self.statements().insert(sql.to_owned(), statement.clone());
        Ok(statement)
    }

    fn statements(&self) -> MutexGuard<'_, HashMap<String, Statement>> {
        self.statements.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Opens connections as the URL says.
pub(super) struct Connector {
    config: Config,
    tls: MakeRustls,
    /// The hosts and ports, for errors (the URL may hold a password).
    hosts: String,
}

/// Where one attempt goes: the name for TLS, and the socket's address.
enum Place {
    Tcp(SocketAddr),
    Unix(std::path::PathBuf),
}

impl Connector {
    pub fn new(config: Config, tls: MakeRustls, hosts: String) -> Connector {
        Connector { config, tls, hosts }
    }

    /// A connection to the first host that takes one.
    pub fn open(&self) -> Result<Conn> {
        let mut failure = None;
        for (name, places) in self.targets() {
            for place in places {
                match self.open_at(&name, place) {
                    Ok(conn) => return Ok(conn),
                    Err(e) => failure = Some(e),
                }
            }
        }
        Err(failure.unwrap_or_else(|| {
            Error::Unavailable(format!("PostgreSQL at {}: no host or hostaddr given", self.hosts))
        }))
    }

    /// Each host's name (for TLS) and the places it may be reached at.
    fn targets(&self) -> Vec<(String, Vec<std::result::Result<Place, Error>>)> {
        let (hosts, addrs, ports) =
            (self.config.get_hosts(), self.config.get_hostaddrs(), self.config.get_ports());
        let mut targets: Vec<_> = (0..hosts.len().max(addrs.len()))
            .map(|i| {
                let port = ports.get(i).or(ports.first()).copied().unwrap_or(5432);
                let name = match hosts.get(i) {
                    Some(Host::Tcp(name)) => name.clone(),
                    _ => String::new(),
                };
                let places = match (addrs.get(i), hosts.get(i)) {
                    (Some(addr), _) => vec![Ok(Place::Tcp(SocketAddr::new(*addr, port)))],
                    (None, Some(Host::Unix(dir))) => {
                        vec![Ok(Place::Unix(dir.join(format!(".s.PGSQL.{port}"))))]
                    }
                    (None, Some(Host::Tcp(name))) => {
                        match (name.as_str(), port).to_socket_addrs() {
                            Ok(found) => found.map(|a| Ok(Place::Tcp(a))).collect(),
                            Err(e) => vec![Err(self.io(&format!("{name}:{port}"), e))],
                        }
                    }
                    (None, None) => Vec::new(),
                };
                (name, places)
            })
            .collect();
        if self.config.get_load_balance_hosts() == LoadBalanceHosts::Random {
            let mut rng = rand::rng();
            targets.shuffle(&mut rng);
            targets.iter_mut().for_each(|(_, places)| places.shuffle(&mut rng));
        }
        targets
    }

    fn io(&self, place: &str, e: std::io::Error) -> Error {
        Error::Unavailable(format!("cannot connect to PostgreSQL at {} ({place}): {e}", self.hosts))
    }

    fn timeout(&self) -> Option<Duration> {
        self.config.get_connect_timeout().copied()
    }

    /// Connects to `place` and runs the startup (TLS, authentication) there.
    fn open_at(&self, name: &str, place: std::result::Result<Place, Error>) -> Result<Conn> {
        let deadline = self.timeout().map(|t| Instant::now() + t);
        let mut sock = self.socket(place?)?;
        let mut driver = Driver::new(&mut sock).map_err(|e| self.io("poll", e))?;
        let mut maker = self.tls.clone();
        let tls = MakeTlsConnect::<Sock>::make_tls_connect(&mut maker, name)
            .unwrap_or_else(|never| match never {});
        let (client, connection) = driver.run(self.config.connect_raw(sock, tls), deadline)?;
        driver.attach(Box::pin(connection));
        let conn = Conn { client, driver: driver.into(), statements: Default::default() };
        if self.config.get_target_session_attrs() == TargetSessionAttrs::ReadWrite {
            let answer = conn.wait(conn.simple_query("SHOW transaction_read_only"))?;
            let read_only = answer.iter().any(|message| {
                matches!(message, SimpleQueryMessage::Row(row) if row.get(0) == Some("on"))
            });
            if read_only {
                return Err(Error::Unavailable(format!("PostgreSQL at {name}: read-only")));
            }
        }
        Ok(conn)
    }

    /// TCP's delay off, and the URL's keepalives and user timeout, as libpq sets them.
    fn tune(&self, stream: &std::net::TcpStream) -> std::io::Result<()> {
        stream.set_nodelay(true)?;
        let socket = socket2::SockRef::from(stream);
        if self.config.get_keepalives() {
            let mut keepalive =
                socket2::TcpKeepalive::new().with_time(self.config.get_keepalives_idle());
            if let Some(interval) = self.config.get_keepalives_interval() {
                keepalive = keepalive.with_interval(interval);
            }
            if let Some(retries) = self.config.get_keepalives_retries() {
                keepalive = keepalive.with_retries(retries);
            }
            socket.set_tcp_keepalive(&keepalive)?;
        }
        match self.config.get_tcp_user_timeout() {
            Some(timeout) => socket.set_tcp_user_timeout(Some(*timeout)),
            None => Ok(()),
        }
    }

    /// A connected socket, non-blocking, tuned (`tune`).
    fn socket(&self, place: Place) -> Result<Sock> {
        match place {
            Place::Tcp(addr) => {
                let stream = match self.timeout() {
                    Some(timeout) => std::net::TcpStream::connect_timeout(&addr, timeout),
                    None => std::net::TcpStream::connect(addr),
                };
                let stream = stream.map_err(|e| self.io(&addr.to_string(), e))?;
                let ready = self.tune(&stream).and_then(|()| stream.set_nonblocking(true));
                ready.map_err(|e| self.io(&addr.to_string(), e))?;
                Ok(Sock::Tcp(mio::net::TcpStream::from_std(stream)))
            }
            Place::Unix(path) => {
                let shown = path.display().to_string();
                let stream = std::os::unix::net::UnixStream::connect(&path)
                    .and_then(|s| s.set_nonblocking(true).map(|()| s))
                    .map_err(|e| self.io(&shown, e))?;
                Ok(Sock::Unix(mio::net::UnixStream::from_std(stream)))
            }
        }
    }
}
