//! Sieve (RFC 5228) with sieve-rs: the one compiler and runtime settings every script runs
//! under, so an upload is refused for the same reasons delivery would fail, and a script's run
//! is bounded (instructions, redirects, messages out, variable and header sizes). Vacation
//! settings become a small script of their own, run by the same runtime.

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

    #[test]
    fn vacation_settings_compile() {
        assert!(compile(&vacation_script("Away \"now\"", "Back \\ soon", 7)).is_ok());
    }
}
