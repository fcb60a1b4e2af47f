//! The import graph of `src/` points down the map in `src/lib.rs`: a module may use only modules
//! listed below it. A new back-edge (or a module missing from the map) fails here.

use std::collections::HashMap;
use std::path::Path;

/// Module names in map order, top first.
fn map(lib: &str) -> Vec<String> {
    lib.lines()
        .filter_map(|l| l.strip_prefix("//! - `"))
        .filter_map(|l| l.split('`').next())
        .map(str::to_owned)
        .collect()
}

/// Source without comments and without `#[cfg(test)]` modules (tests may reach anywhere).
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]").next().unwrap_or("");
    text.lines()
        .map(|l| match l.find("//") {
            Some(at) => &l[..at],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn uses(code: &str) -> Vec<String> {
    code.match_indices("crate::")
        .map(|(at, _)| {
            code[at + 7..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
        })
        .collect()
}

fn files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_import_points_down_the_lib_map() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let order = map(&lib);
    let rank: HashMap<&str, usize> =
        order.iter().enumerate().map(|(i, m)| (m.as_str(), i)).collect();
    let declared: Vec<&str> = lib
        .lines()
        .filter_map(|l| {
            l.trim().strip_prefix("pub mod ").or(l.trim().strip_prefix("pub(crate) mod "))
        })
        .map(|l| l.trim_end_matches(';'))
        .collect();
    for m in &declared {
        assert!(rank.contains_key(m), "module `{m}` is missing from the map in src/lib.rs");
    }
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut back_edges = Vec::new();
    for path in all {
        let rel = path.strip_prefix(&src).expect("under src");
        let first = rel.components().next().expect("a component");
        let module = first.as_os_str().to_string_lossy().trim_end_matches(".rs").to_owned();
        let Some(&own) = rank.get(module.as_str()) else { continue };
        let text = std::fs::read_to_string(&path).expect("read");
        for used in uses(&code(&text)) {
            if let Some(&target) = rank.get(used.as_str())
                && target < own
            {
                back_edges.push(format!("{} uses crate::{used}", rel.display()));
            }
        }
    }
    back_edges.sort();
    back_edges.dedup();
    assert!(back_edges.is_empty(), "imports pointing up the map:\n{}", back_edges.join("\n"));
}
