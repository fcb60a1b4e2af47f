//! One ManageSieve session: the commands of RFC 5804 2, over a plain connection that may turn
//! to TLS (STARTTLS), for at most one mailbox logged in at a time.

use std::io;
use std::net::IpAddr;

use base64::Engine;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

use super::wire::{self, Fault, Word};
use super::{Deps, LOGIN_WAIT, SESSION_WAIT};
use crate::credentials::Login;
use crate::ids::now_ms;

/// The Sieve extensions delivery runs (what `filters` allows).
const EXTENSIONS: &str = "fileinto reject ereject redirect copy vacation imap4flags envelope body \
                          variables relational subaddress mailbox comparator-i;ascii-numeric";

struct State {
    ip: IpAddr,
    tls: bool,
    /// The mailbox logged in as.
    login: Option<String>,
}

/// What a command asks of the connection.
enum Next {
    Continue,
    StartTls,
    Close,
}

pub async fn run(
    stream: TcpStream,
    ip: IpAddr,
    deps: &Deps,
    tls: Option<TlsAcceptor>,
) -> io::Result<()> {
    let mut state = State { ip, tls: false, login: None };
    let mut reader = BufReader::new(stream);
    greet(&mut reader, &state, tls.is_some()).await?;
    if !serve(&mut reader, &mut state, deps, tls.is_some()).await? {
        return Ok(());
    }
    let Some(acceptor) = tls else { return Ok(()) };
    let stream = reader.into_inner();
    let secured = match tokio::time::timeout(LOGIN_WAIT, acceptor.accept(stream)).await {
        Ok(Ok(s)) => s,
        _ => return Ok(()),
    };
    state.tls = true;
    let mut reader = BufReader::new(secured);
    // RFC 5804 2.2: the capabilities again, now that TLS is up.
    greet(&mut reader, &state, false).await?;
    serve(&mut reader, &mut state, deps, false).await?;
    Ok(())
}

async fn greet<S: AsyncWrite + Unpin>(
    s: &mut S,
    state: &State,
    tls_offered: bool,
) -> io::Result<()> {
    let caps = capabilities(state, tls_offered);
    s.write_all(format!("{caps}OK \"edgemail ManageSieve ready\"\r\n").as_bytes()).await?;
    s.flush().await
}

fn capabilities(state: &State, tls_offered: bool) -> String {
    let mut out = String::from("\"IMPLEMENTATION\" \"edgemail\"\r\n");
    // Logins only after TLS: nothing is offered before it.
    out.push_str(if state.tls { "\"SASL\" \"PLAIN\"\r\n" } else { "\"SASL\" \"\"\r\n" });
    out.push_str(&format!("\"SIEVE\" \"{EXTENSIONS}\"\r\n"));
    if tls_offered && !state.tls {
        out.push_str("\"STARTTLS\"\r\n");
    }
    out.push_str("\"MAXREDIRECTS\" \"3\"\r\n\"VERSION\" \"1.0\"\r\n");
    if let Some(login) = &state.login {
        out.push_str(&format!("\"OWNER\" {}\r\n", wire::string(login)));
    }
    out
}

/// Serves commands until the client leaves (false) or asks for TLS (true).
async fn serve<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut BufReader<S>,
    state: &mut State,
    deps: &Deps,
    tls_offered: bool,
) -> io::Result<bool> {
    loop {
        let wait = if state.login.is_some() { SESSION_WAIT } else { LOGIN_WAIT };
        let words = match wire::command(s, wait).await {
            Ok(w) => w,
            Err(Fault::Gone) => return Ok(false),
            Err(Fault::Bad(why)) => {
                s.write_all(format!("BYE \"{why}\"\r\n").as_bytes()).await?;
                s.flush().await?;
                drain(s).await;
                return Ok(false);
            }
        };
        if words.is_empty() {
            continue;
        }
        let reply = command(s, state, deps, tls_offered, &words).await?;
        match reply {
            Next::Continue => {}
            Next::StartTls => return Ok(true),
            Next::Close => return Ok(false),
        }
    }
}

/// Reads (and drops) a little of what the client is still sending, so that closing does not
/// reset the connection before it reads our BYE; bounded in bytes and time.
async fn drain<S: AsyncRead + Unpin>(s: &mut S) {
    let mut sink = tokio::io::sink();
    let mut limited = tokio::io::AsyncReadExt::take(s, 1024 * 1024);
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(2),
        tokio::io::copy(&mut limited, &mut sink),
    )
    .await;
}

fn no(text: &str) -> String {
    format!("NO {}\r\n", wire::string(text))
}

async fn command<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut BufReader<S>,
    state: &mut State,
    deps: &Deps,
    tls_offered: bool,
    words: &[Word],
) -> io::Result<Next> {
    let Word::Atom(name) = &words[0] else {
        s.write_all(no("expected a command").as_bytes()).await?;
        return Ok(Next::Continue);
    };
    let args: Vec<Option<String>> =
        words[1..].iter().map(|w| w.text().or_else(|| w.number())).collect();
    let arg = |i: usize| args.get(i).cloned().flatten();
    let mut next = Next::Continue;
    let reply = match (name.as_str(), &state.login) {
        ("LOGOUT", _) => {
            next = Next::Close;
            "OK \"bye\"\r\n".to_owned()
        }
        // RFC 5804 2.11: a tag is echoed, so a client can find the end of what it skipped.
        ("NOOP", _) => match arg(0) {
            Some(tag) => format!("OK (TAG {}) \"done\"\r\n", wire::string(&tag)),
            None => "OK \"done\"\r\n".to_owned(),
        },
        ("CAPABILITY", _) => format!("{}OK \"capabilities\"\r\n", capabilities(state, tls_offered)),
        ("STARTTLS", _) if tls_offered && !state.tls => {
            next = Next::StartTls;
            "OK \"begin TLS\"\r\n".to_owned()
        }
        ("STARTTLS", _) => no("TLS is not available here"),
        ("AUTHENTICATE", None) => authenticate(s, state, deps, &args).await?,
        ("AUTHENTICATE", Some(_)) => no("already logged in"),
        ("UNAUTHENTICATE", Some(_)) => {
            state.login = None;
            "OK \"logged out\"\r\n".to_owned()
        }
        (_, None) => no("log in first"),
        (_, Some(mailbox)) => {
            let mailbox = mailbox.clone();
            scripts(deps, &mailbox, name, arg(0), arg(1)).await
        }
    };
    s.write_all(reply.as_bytes()).await?;
    s.flush().await?;
    Ok(next)
}

/// AUTHENTICATE "PLAIN" with an initial response, or with one sent after an empty challenge.
async fn authenticate<S: AsyncRead + AsyncWrite + Unpin>(
    s: &mut BufReader<S>,
    state: &mut State,
    deps: &Deps,
    args: &[Option<String>],
) -> io::Result<String> {
    if !state.tls {
        return Ok(no("log in after STARTTLS"));
    }
    if !args.first().cloned().flatten().is_some_and(|m| m.eq_ignore_ascii_case("PLAIN")) {
        return Ok(no("only PLAIN is offered"));
    }
    let response = match args.get(1).cloned().flatten() {
        Some(r) => r,
        None => {
            s.write_all(b"\"\"\r\n").await?;
            s.flush().await?;
            match wire::command(s, LOGIN_WAIT).await {
                Ok(words) => match words.first() {
                    Some(w @ Word::Str(_)) => w.text().unwrap_or_default(),
                    _ => return Ok(no("authentication cancelled")),
                },
                Err(_) => return Ok(no("authentication cancelled")),
            }
        }
    };
    let Ok(decoded) = base64::engine::general_purpose::STANDARD.decode(response.trim()) else {
        return Ok(no("bad base64"));
    };
    let mut parts = decoded.split(|&b| b == 0);
    let (_authz, user, password) = (parts.next(), parts.next(), parts.next());
    let (Some(user), Some(password)) = (user, password) else {
        return Ok(no("bad PLAIN response"));
    };
    let user = String::from_utf8_lossy(user).into_owned();
    let password = String::from_utf8_lossy(password).into_owned();
    Ok(match deps.logins.check(state.ip, &user, &password).await {
        Login::Accepted(mailbox) => {
            state.login = Some(mailbox);
            "OK \"logged in\"\r\n".to_owned()
        }
        Login::Refused => no("authentication failed"),
        Login::Throttled => no("too many failed logins; try later"),
        Login::Unavailable => "NO (TRYLATER) \"try again later\"\r\n".to_owned(),
    })
}

/// The script commands of a logged-in session.
async fn scripts(
    deps: &Deps,
    mailbox: &str,
    name: &str,
    first: Option<String>,
    second: Option<String>,
) -> String {
    let store = &deps.store;
    let mb = mailbox.to_owned();
    let missing = || no("missing argument");
    let result: Result<String, crate::store::Error> = match name {
        "HAVESPACE" => {
            let size = second.and_then(|s| s.parse::<usize>().ok()).unwrap_or(usize::MAX);
            Ok(if size > crate::filters::MAX_SCRIPT_BYTES {
                "NO (QUOTA/MAXSIZE) \"scripts are at most 64 KiB\"\r\n".to_owned()
            } else {
                "OK \"room\"\r\n".to_owned()
            })
        }
        "CHECKSCRIPT" => Ok(match first {
            None => missing(),
            Some(script) => check(&script).unwrap_or_else(|| "OK \"valid\"\r\n".to_owned()),
        }),
        "PUTSCRIPT" => match (first, second) {
            (Some(n), Some(script)) if valid_name(&n) => match check(&script) {
                Some(refusal) => Ok(refusal),
                None => store
                    .write(move |w| w.put_sieve(&mb, &n, &script, now_ms(), false))
                    .await
                    .map(|_| "OK \"stored\"\r\n".to_owned()),
            },
            (Some(_), Some(_)) => Ok(no("bad script name")),
            _ => Ok(missing()),
        },
        "LISTSCRIPTS" => store.read(move |r| r.sieve_scripts(&mb)).await.map(|all| {
            let mut out = String::new();
            for s in all {
                out.push_str(&wire::string(&s.name));
                out.push_str(if s.active { " ACTIVE\r\n" } else { "\r\n" });
            }
            out + "OK \"listed\"\r\n"
        }),
        "SETACTIVE" => match first {
            Some(n) => {
                let which = (!n.is_empty()).then_some(n);
                store
                    .write(move |w| w.set_active_sieve(&mb, which.as_deref()))
                    .await
                    .map(|()| "OK \"active\"\r\n".to_owned())
            }
            None => Ok(missing()),
        },
        "GETSCRIPT" => match first {
            Some(n) => store.read(move |r| r.sieve_scripts(&mb)).await.map(|all| {
                match all.into_iter().find(|s| s.name == n) {
                    Some(s) => {
                        format!("{{{}}}\r\n{}\r\nOK \"script\"\r\n", s.script.len(), s.script)
                    }
                    None => "NO (NONEXISTENT) \"no such script\"\r\n".to_owned(),
                }
            }),
            None => Ok(missing()),
        },
        "DELETESCRIPT" => match first {
            Some(n) => {
                store
                    .write(move |w| {
                        let active = w_active(w, &mb, &n)?;
                        if active {
                            return Ok("NO (ACTIVE) \"deactivate it first\"\r\n".to_owned());
                        }
                        w.delete_sieve(&mb, &n).map(|()| "OK \"deleted\"\r\n".to_owned())
                    })
                    .await
            }
            None => Ok(missing()),
        },
        "RENAMESCRIPT" => match (first, second) {
            (Some(a), Some(b)) if valid_name(&b) => store
                .write(move |w| w.rename_sieve(&mb, &a, &b))
                .await
                .map(|()| "OK \"renamed\"\r\n".to_owned()),
            (Some(_), Some(_)) => Ok(no("bad script name")),
            _ => Ok(missing()),
        },
        _ => Ok(no("unknown command")),
    };
    result.unwrap_or_else(|e| match e {
        crate::store::Error::NotFound(_) => "NO (NONEXISTENT) \"no such script\"\r\n".to_owned(),
        crate::store::Error::Conflict(text) => no(&text),
        other => {
            tracing::warn!(error = %other, "managesieve store call failed");
            "NO (TRYLATER) \"try again later\"\r\n".to_owned()
        }
    })
}

fn w_active(w: &crate::store::Wtx<'_>, mailbox: &str, name: &str) -> crate::store::Result<bool> {
    Ok(w.sieve_active_name(mailbox)?.is_some_and(|a| a == name))
}

/// A refusal naming the first error of a script that does not compile.
fn check(script: &str) -> Option<String> {
    crate::filters::compile(script).err().map(|e| no(&format!("script error: {e}")))
}

/// Script names: 1-128 characters, no control characters (RFC 5804 1.6).
fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.chars().count() <= 128 && !name.chars().any(char::is_control)
}
