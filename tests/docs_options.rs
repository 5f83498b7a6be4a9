//! The documentation matches the code and stands alone: every kernel option key of the spec
//! table (kernel/src/options.rs) is in docs/running.md's kernel options table and vice versa,
//! README.md stays a short front door, and no document points outside the repository.
//!
//! kernel/src is a no_std crate that is not built on the host, so the spec table is read as
//! text: every `key: "..."` in kernel/src/options.rs is a key.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// The keys of the kernel's options spec table: the string after each `key: "`.
fn spec_keys(source: &str) -> BTreeSet<String> {
    let mut keys = BTreeSet::new();
    let mut rest = source;
    while let Some(at) = rest.find("key: \"") {
        rest = &rest[at + "key: \"".len()..];
        let end = rest
            .find('"')
            .expect("unterminated key string in kernel/src/options.rs");
        keys.insert(rest[..end].to_string());
        rest = &rest[end..];
    }
    keys
}

/// The keys of the kernel options table in docs/running.md: the table under the heading
/// `## Kernel options` whose first column is `key`; each row's first cell is a key in backticks.
fn documented_keys(running: &str) -> BTreeSet<String> {
    let section = running
        .split("\n## ")
        .find(|s| s.starts_with("Kernel options"))
        .expect("docs/running.md has no '## Kernel options' section");
    let mut keys = BTreeSet::new();
    let mut in_table = false;
    for line in section.lines() {
        let line = line.trim();
        if !line.starts_with('|') {
            if in_table {
                break;
            }
            continue;
        }
        let first = line
            .trim_matches('|')
            .split('|')
            .next()
            .unwrap_or("")
            .trim();
        if !in_table {
            in_table = first == "key";
            continue;
        }
        if first.starts_with("---") {
            continue;
        }
        let key = first.trim_matches('`');
        assert!(
            !key.is_empty(),
            "docs/running.md: kernel options row without a key: {line}"
        );
        keys.insert(key.to_string());
    }
    assert!(
        in_table,
        "docs/running.md: no table with a 'key' column under '## Kernel options'"
    );
    keys
}

#[test]
fn every_kernel_option_is_documented_and_every_documented_option_exists() {
    let root = repo();
    let spec = spec_keys(&read(&root.join("kernel/src/options.rs")));
    let docs = documented_keys(&read(&root.join("docs/running.md")));
    assert!(
        spec.len() >= 10,
        "only {} keys found in kernel/src/options.rs: {spec:?}",
        spec.len()
    );
    let undocumented: Vec<_> = spec.difference(&docs).collect();
    let unknown: Vec<_> = docs.difference(&spec).collect();
    assert!(
        undocumented.is_empty() && unknown.is_empty(),
        "kernel options and docs/running.md disagree\n  \
         in kernel/src/options.rs but not in docs/running.md: {undocumented:?}\n  \
         in docs/running.md but not in kernel/src/options.rs: {unknown:?}"
    );
}

/// README.md and every file under docs/ (recursively).
fn documents() -> Vec<PathBuf> {
    let root = repo();
    let mut files = vec![root.join("README.md")];
    let mut dirs = vec![root.join("docs")];
    while let Some(dir) = dirs.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("docs/ entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

#[test]
fn readme_is_a_short_front_door() {
    let size = fs::metadata(repo().join("README.md"))
        .expect("README.md")
        .len();
    assert!(
        size < 12 * 1024,
        "README.md is {size} bytes; keep it under 12 KiB and move detail to docs/"
    );
}

#[test]
fn documents_point_nowhere_outside_the_repository() {
    let root = repo();
    let mut offenders = Vec::new();
    for path in documents() {
        let text = read(&path);
        for (n, line) in text.lines().enumerate() {
            for bad in ["../shared", "/work/"] {
                if line.contains(bad) {
                    let shown = path.strip_prefix(&root).unwrap_or(&path);
                    offenders.push(format!("{}:{}: {bad}: {line}", shown.display(), n + 1));
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "documents point outside the repository:\n{}",
        offenders.join("\n")
    );
}
