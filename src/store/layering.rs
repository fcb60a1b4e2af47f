//! The sub-modules of `store` point down the map in `store/mod.rs`: a module names (`super::x`)
//! and calls (`self.method(`) only what modules listed below it define. A back-edge, or a
//! module missing from the map, fails here. Tests (`#[cfg(test)]` and after) may reach anywhere.

use std::collections::HashMap;
use std::path::Path;

/// Module names in map order, top first.
fn map(doc: &str) -> Vec<String> {
    doc.lines()
        .filter_map(|l| l.strip_prefix("//! - `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

/// Source without comments and without what follows the first `#[cfg(test)]`.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines().map(|l| l.find("//").map_or(l, |at| &l[..at])).collect::<Vec<_>>().join("\n")
}

fn ident(s: &str) -> String {
    s.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

/// Names used through `super::`, including those of a `use super::{a, b::c}` group.
fn super_names(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    for (at, _) in code.match_indices("super::") {
        let rest = &code[at + 7..];
        match rest.strip_prefix('{') {
            Some(group) => {
                let group = group.split('}').next().unwrap_or("");
                out.extend(group.split(',').map(|item| ident(item.trim())));
            }
            None => out.push(ident(rest)),
        }
    }
    out
}

/// Names of the functions a file defines.
fn defined(code: &str) -> Vec<String> {
    code.match_indices("fn ").map(|(at, _)| ident(&code[at + 3..])).collect()
}

/// Methods called on `self`.
fn self_calls(code: &str) -> Vec<String> {
    code.match_indices("self.")
        .map(|(at, _)| &code[at + 5..])
        .filter_map(|rest| {
            let name = ident(rest);
            rest[name.len()..].starts_with('(').then_some(name)
        })
        .collect()
}

/// The code of sub-module `m`: `m.rs`, or `m/mod.rs` with the files beside it, whose
/// `super::super::` is the store (a bare `super::` there names a sibling, outside the map).
fn source(dir: &Path, m: &str) -> String {
    let Ok(text) = std::fs::read_to_string(dir.join(format!("{m}.rs"))) else {
        let sub = dir.join(m);
        let mut out = code(&std::fs::read_to_string(sub.join("mod.rs")).expect("mod.rs")); // ok: test
        let entries = std::fs::read_dir(&sub).expect("sub-module dir"); // ok: test
        for entry in entries.flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("mod.rs") {
                let text = code(&std::fs::read_to_string(&path).expect("source")); // ok: test
                let text =
                    text.replace("super::super::", "STORE::").replace("super::", "sibling::");
                out.push('\n');
                out.push_str(&text.replace("STORE::", "super::"));
            }
        }
        return out;
    };
    code(&text)
}

#[test]
fn sub_modules_point_down_the_store_map() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    let root = code(&std::fs::read_to_string(dir.join("mod.rs")).expect("mod.rs")); // ok: test
    let doc = std::fs::read_to_string(dir.join("mod.rs")).expect("mod.rs"); // ok: test
    let order = map(&doc);
    let rank: HashMap<&str, usize> =
        order.iter().enumerate().map(|(i, m)| (m.as_str(), i)).collect();
    let declared: Vec<String> =
        root.lines().filter_map(|l| l.trim().strip_prefix("mod ")).map(ident).collect();
    for m in &declared {
        assert!(rank.contains_key(m.as_str()), "store::{m} is missing from the map in mod.rs");
    }
    let sources: Vec<(usize, String)> =
        declared.iter().map(|m| (rank[m.as_str()], source(&dir, m))).collect();
    let mut owner: HashMap<String, Vec<usize>> = HashMap::new();
    for (own, code) in &sources {
        for name in defined(code) {
            owner.entry(name).or_default().push(*own);
        }
    }
    let mut back_edges = Vec::new();
    for (own, code) in &sources {
        for used in super_names(code) {
            if rank.get(used.as_str()).is_some_and(|&target| target <= *own) {
                back_edges.push(format!("{} uses super::{used}", order[*own]));
            }
        }
        for called in self_calls(code) {
            let owners = owner.get(&called).map_or(&[][..], Vec::as_slice);
            if owners.contains(own) {
                continue;
            }
            for &target in owners.iter().filter(|&&t| t < *own) {
                back_edges
                    .push(format!("{} calls self.{called}, of {}", order[*own], order[target]));
            }
        }
    }
    back_edges.sort();
    back_edges.dedup();
    assert!(
        back_edges.is_empty(),
        "store sub-modules pointing up the map:\n{}",
        back_edges.join("\n")
    );
}

#[test]
fn the_scan_sees_grouped_imports_and_self_calls() {
    let code =
        code("use super::{Rtx, emails::Email};\nfn f() { self.load_email(id); self.tx.x() }");
    assert_eq!(super_names(&code), ["Rtx", "emails"]);
    assert_eq!(self_calls(&code), ["load_email"]);
    assert_eq!(defined(&code), ["f"]);
}

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let entries = std::fs::read_dir(dir).expect("store dir"); // ok: test
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn redb_stays_inside_the_backend() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/store");
    // The backend itself, and the move of the typed tables older releases wrote.
    let allowed = [dir.join("kv/embedded.rs"), dir.join("migrate/legacy.rs")];
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let leaks: Vec<String> = files
        .iter()
        .filter(|path| !allowed.contains(path))
        .filter(|path| {
            let text = std::fs::read_to_string(path).expect("source"); // ok: test
            let code = code(&text);
            code.contains("redb::") || code.contains("use redb")
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(leaks.is_empty(), "redb named outside store::kv's backend: {leaks:?}");
}
