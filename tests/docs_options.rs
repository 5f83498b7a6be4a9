//! The documentation matches the code and stands alone: every kernel option of the table
//! (kernel/algo/src/options/, one group per component) is in docs/running.md's kernel options
//! tables under its component's heading, with its default, and vice versa; README.md stays a
//! short front door, and no document points outside the repository.

use numalab_algo::options::GROUPS;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// One documented option: its component heading and its default cell.
#[derive(Debug, PartialEq)]
struct DocRow {
    group: String,
    default: String,
}

/// The rows of the kernel options tables in docs/running.md: under `## Kernel options`, one
/// `### GROUP: ...` heading per component, each with a table whose first column is `key`
/// (each row's first cell a key in backticks, its second the default).
fn documented(running: &str) -> BTreeMap<String, DocRow> {
    let section = running
        .split("\n## ")
        .find(|s| s.starts_with("Kernel options"))
        .expect("docs/running.md has no '## Kernel options' section");
    let mut rows = BTreeMap::new();
    let mut group = String::new();
    for line in section.lines() {
        let line = line.trim();
        if let Some(h) = line.strip_prefix("### ") {
            group = h.split(':').next().unwrap_or("").trim().to_string();
            continue;
        }
        if !line.starts_with("| `") {
            continue;
        }
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        let key = cells[0].trim_matches('`').to_string();
        let default = cells
            .get(1)
            .copied()
            .unwrap_or("")
            .trim_matches('`')
            .to_string();
        let old = rows.insert(
            key.clone(),
            DocRow {
                group: group.clone(),
                default,
            },
        );
        assert!(old.is_none(), "docs/running.md lists {key} twice");
    }
    rows
}

/// How a default reads in the docs: the spec's text, or a description for an empty one.
fn default_matches(spec_default: &str, documented: &str) -> bool {
    if spec_default.is_empty() {
        documented.starts_with("(empty")
    } else {
        documented == spec_default || documented.contains(&format!("default {spec_default}"))
    }
}

#[test]
fn every_kernel_option_is_documented_under_its_component_and_every_documented_option_exists() {
    let docs = documented(&read(&repo().join("docs/running.md")));
    let mut problems = Vec::new();
    let mut table = 0;
    for g in GROUPS {
        for spec in g.specs {
            table += 1;
            match docs.get(spec.key) {
                None => problems.push(format!("{} ({}) is not documented", spec.key, g.name)),
                Some(row) if row.group != g.name => problems.push(format!(
                    "{} is documented under '{}', but belongs to group '{}'",
                    spec.key, row.group, g.name
                )),
                Some(row) if !default_matches(spec.default, &row.default) => {
                    problems.push(format!(
                        "{}: documented default '{}', the table's is '{}'",
                        spec.key, row.default, spec.default
                    ))
                }
                Some(_) => {}
            }
        }
    }
    for key in docs.keys() {
        if numalab_algo::options::find(key).is_none() {
            problems.push(format!("{key} is documented but is no kernel option"));
        }
    }
    assert!(table >= 10, "only {table} options in the table");
    assert!(
        problems.is_empty(),
        "kernel options and docs/running.md disagree:\n  {}",
        problems.join("\n  ")
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
