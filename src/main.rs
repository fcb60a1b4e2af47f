//! Thin entry point: parse the command line and hand over to the library.

use std::process::ExitCode;

use clap::Parser;
use edgemail::admin::{self, Command as Admin};
use edgemail::cli::{Cli, Command, Common, DomainCommand, KeyCommand, ServeArgs};
use edgemail::config::{self, Config};
use edgemail::error::Error;
use edgemail::store::{self, Store};
use edgemail::{app, demo, logging, shutdown};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // One TLS provider for the whole process (STARTTLS in and out).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cli = Cli::parse();
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Demo(mut args) => {
            args.demo = true;
            serve(args)
        }
        Command::Domain { command } => match command {
            DomainCommand::Add { name, common } => administer(&common, Admin::DomainAdd { name }),
            DomainCommand::List { common } => administer(&common, Admin::DomainList),
            DomainCommand::Remove { name, common } => {
                administer(&common, Admin::DomainRemove { name })
            }
        },
        Command::Key { command } => match command {
            KeyCommand::Create { name, domain, org: _, common } => {
                administer(&common, Admin::KeyCreate { name, domain })
            }
            KeyCommand::List { common } => administer(&common, Admin::KeyList),
            KeyCommand::Revoke { id, common } => administer(&common, Admin::KeyRevoke { id }),
        },
        Command::Backup { to, force, common } => match std::path::absolute(&to) {
            Ok(to) => on_existing_store(&common, Admin::Backup { to, force }),
            Err(e) => fail(&format!("{}: {e}", to.display())),
        },
        Command::Check { common } => on_existing_store(&common, Admin::Check),
        Command::Train { mailbox, global: _, spam, ham, common } => {
            // The server resolves paths from its own working directory: send absolute ones.
            let absolute =
                |dir: Option<std::path::PathBuf>| dir.map(|d| std::path::absolute(&d).unwrap_or(d));
            let (spam, ham) = (absolute(spam), absolute(ham));
            on_existing_store(&common, Admin::Train { mailbox, spam, ham })
        }
        Command::Restore { from, force, common } => restore(&common, &from, force),
        Command::Migrate { from, to } => migrate(&from, &to),
        Command::Import {
            mailbox,
            mbox,
            maildir,
            imap,
            password_file,
            insecure,
            ca,
            rate,
            common,
        } => {
            use edgemail::mailmove::Source;
            let absolute = |p: std::path::PathBuf| std::path::absolute(&p).unwrap_or(p);
            let source = match (mbox, maildir, imap) {
                (Some(path), _, _) => Source::Mbox { path: absolute(path) },
                (None, Some(path), _) => Source::Maildir { path: absolute(path) },
                (None, None, Some(url)) => {
                    let password = match import_password(password_file.as_deref()) {
                        Ok(password) => password,
                        Err(message) => return fail(&message),
                    };
                    Source::Imap(edgemail::mailmove::imap::ImapSource {
                        url,
                        password: edgemail::mailmove::imap::Password(password),
                        insecure,
                        ca: ca.map(absolute),
                        rate,
                    })
                }
                (None, None, None) => return fail("pass --mbox, --maildir or --imap"),
            };
            on_existing_store(&common, Admin::Import { mailbox, source })
        }
        Command::Export { mailbox, mbox, maildir, common } => {
            let absolute =
                |p: Option<std::path::PathBuf>| p.map(|p| std::path::absolute(&p).unwrap_or(p));
            on_existing_store(
                &common,
                Admin::Export { mailbox, mbox: absolute(mbox), maildir: absolute(maildir) },
            )
        }
    }
}

/// The IMAP source's password: the first line of `file`, else `EDGEMAIL_IMPORT_PASSWORD`.
fn import_password(file: Option<&std::path::Path>) -> Result<String, String> {
    if let Some(file) = file {
        let text = std::fs::read_to_string(file).map_err(|e| format!("{}: {e}", file.display()))?;
        return Ok(text.lines().next().unwrap_or("").to_owned());
    }
    std::env::var("EDGEMAIL_IMPORT_PASSWORD").map_err(|_| {
        "the IMAP password: pass --password-file FILE or set EDGEMAIL_IMPORT_PASSWORD".to_owned()
    })
}

fn fail(message: &str) -> ExitCode {
    eprintln!("edgemail: {message}");
    ExitCode::FAILURE
}

/// `administer` for commands that read a store: a data directory that does not exist is an
/// error, not an empty store to create. A check without a server checks the file itself.
fn on_existing_store(common: &Common, command: Admin) -> ExitCode {
    let Some(config) = load_config(common.config.as_deref(), &common.overrides()) else {
        return ExitCode::from(2);
    };
    if let Some(refused) = missing_data_dir(&config) {
        return refused;
    }
    if config.cluster.store_url.is_some() {
        // The data is in PostgreSQL, which checks its own pages; the command runs on it.
        return administer(common, command);
    }
    if !config.data_dir.join(store::DB_FILE).is_file() {
        return fail(&format!("no edgemail data in {}", config.data_dir.display()));
    }
    let socket = admin::socket_path(&config.data_dir);
    if matches!(command, Admin::Check)
        && matches!(admin::send(&socket, &Admin::DomainList), Ok(None))
    {
        let path = config.data_dir.join(store::DB_FILE);
        return match store::check_file(&path) {
            Ok(checked) => {
                println!("{}: ok ({})", path.display(), admin::describe(&checked));
                ExitCode::SUCCESS
            }
            Err(e) => fail(&Error::from(e).to_string()),
        };
    }
    administer(common, command)
}

fn restore(common: &Common, from: &std::path::Path, force: bool) -> ExitCode {
    let Some(config) = load_config(common.config.as_deref(), &common.overrides()) else {
        return ExitCode::from(2);
    };
    let socket = admin::socket_path(&config.data_dir);
    if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
        return fail(&format!(
            "a server runs on {}; stop it before restoring into it",
            config.data_dir.display()
        ));
    }
    match store::restore(from, &config.data_dir, force) {
        Ok(checked) => {
            println!(
                "restored {} into {} ({})",
                from.display(),
                config.data_dir.display(),
                admin::describe(&checked)
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&Error::from(e).to_string()),
    }
}

/// `edgemail migrate`: opens both stores (a data directory or a postgres:// URL each), copies,
/// and prints each table's sums, which both sides agreed on.
fn migrate(from: &str, to: &str) -> ExitCode {
    let open = |at: &str| {
        let options = if at.starts_with("postgres://") || at.starts_with("postgresql://") {
            store::Options { url: Some(at.to_owned()), ..store::Options::default() }
        } else {
            let dir = std::path::Path::new(at);
            let socket = admin::socket_path(dir);
            if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
                return Err(format!("a server runs on {at}; stop it first"));
            }
            store::Options::default()
        };
        // A PostgreSQL store needs no directory; the path is only the node's, unused here.
        Store::open_with(std::path::Path::new(at), options).map_err(|e| format!("{at}: {e}"))
    };
    // The source first: a target is not touched (opening writes to it) for a source refused.
    let source = match open(from) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let target = match open(to) {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    match source.copy_into(&target) {
        Ok(sums) => {
            for s in &sums {
                println!("{:<24} {:>10} entries  sha256 {}", s.table, s.entries, s.sha256);
            }
            let entries: u64 = sums.iter().map(|s| s.entries).sum();
            println!(
                "copied {} tables, {entries} entries, from {from} to {to}: sums agree",
                sums.len()
            );
            ExitCode::SUCCESS
        }
        Err(e) => fail(&Error::from(e).to_string()),
    }
}

fn load_config(file: Option<&std::path::Path>, flags: &[(&'static str, String)]) -> Option<Config> {
    match config::load(file, std::env::vars(), flags) {
        Ok(c) => Some(c),
        Err(problems) => {
            eprintln!("edgemail: invalid configuration:");
            for p in problems {
                eprintln!("  {p}");
            }
            None
        }
    }
}

fn store_options(config: &Config) -> store::Options {
    store::Options {
        cache_size: config.cache_size,
        url: config.cluster.store_url.clone(),
        connections: config.cluster.connections,
        node: Some(config.cluster.node.clone()),
    }
}

/// The refusal of a command that reads a store when the data directory is not there: only
/// `serve`, `demo` and `restore` create one. A store in PostgreSQL (`--store`) needs none.
fn missing_data_dir(config: &Config) -> Option<ExitCode> {
    let dir = &config.data_dir;
    (!dir.is_dir() && config.cluster.store_url.is_none()).then(|| {
        fail(&format!(
            "the data directory {} does not exist (`edgemail serve` creates it; \
             pass the --data or --config that serve uses)",
            dir.display()
        ))
    })
}

/// Runs an admin command through the running server when there is one, else on the file itself.
fn administer(common: &Common, command: Admin) -> ExitCode {
    let Some(config) = load_config(common.config.as_deref(), &common.overrides()) else {
        return ExitCode::from(2);
    };
    if let Some(refused) = missing_data_dir(&config) {
        return refused;
    }
    let socket = admin::socket_path(&config.data_dir);
    let outcome = match admin::send(&socket, &command) {
        Ok(Some(output)) => Ok(output),
        Ok(None) => Store::open_with(&config.data_dir, store_options(&config))
            .map_err(Error::from)
            .and_then(|store| {
                let bound = edgemail::hosting::Bound::configured(&config);
                let mut terminal = edgemail::mailmove::progress::Terminal::default();
                let progress: edgemail::mailmove::progress::Sink =
                    Box::new(move |tick| terminal.show(&tick));
                let out = admin::execute(&store, command, &config, bound, Some(progress));
                store.close();
                out
            }),
        Err(e) => Err(e),
    };
    match outcome {
        Ok(output) => {
            print!("{output}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("edgemail: {e}");
            ExitCode::FAILURE
        }
    }
}

fn serve(args: ServeArgs) -> ExitCode {
    let Some(config) = load_config(args.common.config.as_deref(), &args.overrides()) else {
        return ExitCode::from(2);
    };
    let _log = logging::init(&config.log.level, config.log.format == config::LogFormat::Json);
    edgemail::ids::set_clock_offset(config.clock_offset);
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if let Some(threads) = runtime_threads(&config) {
        builder.worker_threads(threads);
    }
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("edgemail: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(config, args.demo));
    // Tasks still holding state end here, so the store's file is released before exit.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // Once, on stderr, where the log also goes: not a log line and this line both.
        Err(e) => fail(&e.to_string()),
    }
}

/// The runtime's threads, when not tokio's default of one a core. On PostgreSQL a read waits for
/// the server on the runtime thread that asked (`store::kv::postgres::drive`), so a thread a core
/// would let only that many reads overlap, and the writes behind them would gather in smaller
/// group commits. A node held to a quarter core (which counts as one core) took 2,670-2,895
/// sends/s at 1.25 round trips each on the accept path with eight threads, against 1,350-1,520 at
/// 3.24 with tokio's one (`benches/scaleout.sh`, run f). At least four, for that reason: a small
/// share of the CPU does not make the network's waits shorter. Not more: with eight, a node
/// under that quota spent twice the samples switching threads while it delivered, and accepted
/// 955-1,214 sends/s in run (b) against 1,305-1,432 with four (2,868/s at 1.33 round trips on
/// the accept path). `TOKIO_WORKER_THREADS` still decides when set.
fn runtime_threads(config: &Config) -> Option<usize> {
    if config.cluster.store_url.is_none() || std::env::var_os("TOKIO_WORKER_THREADS").is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    Some((cores * 2).max(4))
}

async fn run(mut config: Config, demo_mode: bool) -> Result<(), Error> {
    let (data_dir, options) = (config.data_dir.clone(), store_options(&config));
    let store = tokio::task::spawn_blocking(move || {
        Store::create_data_dir(&data_dir)?;
        Store::open_with(&data_dir, options)
    })
    .await
    .map_err(Error::internal)??;
    let listeners = app::bind(&config).await?;
    let http = listeners.http.local_addr()?;
    let smtp = listeners.smtp.local_addr()?;
    if config.http.listen.port() == 0 {
        config.http.listen = http;
    }
    config.smtp.listen = smtp;
    let server = app::Server::new(config, store)?;
    if demo_mode {
        let state = server.state.clone();
        let text = tokio::task::spawn_blocking(move || {
            let out = demo::prepare(&state.store, &state.config.public_url());
            state.keys.reload(&state.store)?;
            out
        })
        .await
        .map_err(Error::internal)??;
        println!("{text}");
    }
    eprintln!("listening {}", listeners.describe()?);
    eprintln!("ready");
    let (trigger, stop) = shutdown::channel();
    tokio::spawn(async move {
        shutdown::signal().await;
        trigger.fire();
    });
    app::run(server, listeners, stop).await
}
