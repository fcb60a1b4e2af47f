//! Sieve (RFC 5228) with sieve-rs: the one compiler and runtime settings every script runs
//! under, so an upload is refused for the same reasons delivery would fail, and a script's run
//! is bounded (instructions, redirects, messages out, variable and header sizes). Vacation
//! settings become a small script of their own, run by the same runtime.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use sieve::compiler::grammar::Capability;
use sieve::{Compiler, Runtime, Sieve};

/// The largest script a mailbox may upload.
pub const MAX_SCRIPT_BYTES: usize = 64 * 1024;
/// Instructions one run may execute before it is stopped (the message is then kept).
const CPU_LIMIT: usize = 20_000;
/// Redirects one run may make.
const MAX_REDIRECTS: usize = 3;
/// Messages (redirects, vacation replies) one run may send.
const MAX_OUT_MESSAGES: usize = 3;

fn compiler() -> Compiler {
    Compiler::new()
        .with_max_script_size(MAX_SCRIPT_BYTES)
        .with_max_string_size(16 * 1024)
        .with_max_nested_blocks(15)
        .with_max_nested_tests(15)
        .with_max_includes(0)
}

/// Compiles `script`; the error names the line and column of the first fault.
pub fn compile(script: &str) -> Result<Sieve, String> {
    compiler().compile(script.as_bytes()).map_err(|e| {
        let text = e.to_string();
        // sieve-rs names the place itself, except for faults of the whole script (its size).
        if text.contains(" at line ") {
            text
        } else {
            format!("{text} at line {}, column {}", e.line_num().max(1), e.line_pos().max(1))
        }
    })
}

/// Script text kept compiled for delivery, at most this many bytes of it, and this many scripts.
const KEPT_BYTES: usize = 2 * 1024 * 1024;
const KEPT_SCRIPTS: usize = 1024;

/// Compiled scripts by their text. A script is the same program wherever its text is the same
/// (the compiler's settings are fixed), so the text is the whole key: a changed script is new
/// text, and nothing needs telling. Process-wide for that reason.
#[derive(Default)]
struct Compiled {
    scripts: HashMap<String, Arc<Sieve>>,
    bytes: usize,
}

/// `script` compiled, as `compile` does, from the scripts delivery already compiled when it is
/// one of them. Delivery ran the compiler on every message and recipient before: with a short
/// script, compiling it was about 3 % of the server's CPU for each received message
/// (`benches/profiles/inbound-filter-sieve.txt`). Failures are not kept (a stored script
/// compiled when it was stored, so they are rare, and each says where it fails).
pub fn compiled(script: &str) -> Result<Arc<Sieve>, String> {
    static KEPT: OnceLock<Mutex<Compiled>> = OnceLock::new();
    let kept = KEPT.get_or_init(Mutex::default);
    let lock = || kept.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some(found) = lock().scripts.get(script) {
        return Ok(found.clone());
    }
    let sieve = Arc::new(compile(script)?);
    let mut kept = lock();
    // Room is made by dropping any kept script (the map's order is arbitrary): a mailbox whose
    // script went compiles it again on its next message, no more.
    while kept.bytes + script.len() > KEPT_BYTES || kept.scripts.len() >= KEPT_SCRIPTS {
        let Some(gone) = kept.scripts.keys().next().cloned() else { break };
        kept.scripts.remove(&gone);
        kept.bytes -= gone.len();
    }
    if kept.scripts.insert(script.to_owned(), sieve.clone()).is_none() {
        kept.bytes += script.len();
    }
    Ok(sieve)
}

/// The runtime delivery runs scripts in: `host` names us in what it writes. Capabilities that
/// would reach outside the mailbox (including other scripts, notifications, external lists,
/// editing the stored header) are off: a script using them stops at run time and its message
/// is kept.
pub fn runtime(host: &str) -> Runtime {
    Runtime::new()
        .with_cpu_limit(CPU_LIMIT)
        .with_max_redirects(MAX_REDIRECTS)
        .with_max_out_messages(MAX_OUT_MESSAGES)
        .with_max_variable_size(8 * 1024)
        .with_max_header_size(4 * 1024)
        .with_max_nested_includes(0)
        .with_local_hostname(host.to_owned())
        .with_vacation_default_subject("Automatic reply")
        .with_vacation_subject_prefix("Auto: ")
        // Delivery names the mailbox's other addresses (aliases, `+tag` forms) as original
        // recipients: vacation answers mail addressed to any of them (RFC 5230 `:addresses`).
        .with_vacation_use_orig_rcpt(true)
        .without_capabilities([
            Capability::Include,
            Capability::Enotify,
            Capability::ExtLists,
            Capability::EditHeader,
        ])
}

/// Vacation settings as a script: `days` between replies to one sender, this subject and text.
pub fn vacation_script(subject: &str, text: &str, days: u32) -> String {
    format!(
        "require [\"vacation\"];\r\nvacation :days {days} :subject {} {};\r\n",
        quoted(subject),
        quoted(text)
    )
}

/// A Sieve quoted string (RFC 5228 2.4.2): backslash and quote escaped.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_line_and_column() {
        let e = compile("require \"fileinto\";\nfileinto \"a\"\nkeep;\n").expect_err("bad"); // ok: test
        assert!(e.contains(" at line ") && e.contains(", column "), "{e}");
        assert!(compile("require \"fileinto\";\nfileinto \"x\";\n").is_ok());
    }

    /// The same text is compiled once and shared; other text, or a fault, is compiled anew.
    #[test]
    fn delivery_compiles_a_script_once() {
        let text = "require \"fileinto\";\nfileinto \"kept-once\";\n";
        let (a, b) = (compiled(text).expect("a"), compiled(text).expect("b")); // ok: test
        assert!(Arc::ptr_eq(&a, &b));
        let other = compiled("require \"fileinto\";\nfileinto \"kept-other\";\n");
        assert!(!Arc::ptr_eq(&a, &other.expect("other"))); // ok: test
        let bad = "require \"fileinto\";\nfileinto \"a\"\nkeep;\n";
        assert_eq!(compiled(bad).err(), compile(bad).err());
    }

    #[test]
    fn vacation_settings_compile() {
        assert!(compile(&vacation_script("Away \"now\"", "Back \\ soon", 7)).is_ok());
    }
}
