//! The module graph stays a graph a newcomer can read: no import circle among the modules of
//! kernel/src or boot/src at any level, and the architecture layer imports nothing from the
//! layers above it (mm, smp, percpu, topology).
//!
//! No compiler involved: each file's paths (`use` lines and qualified names, comments and
//! strings removed) are resolved to module files by the crate's file layout. An import
//! circle is looked for at every level of the tree: for a module M with submodules, every file
//! under M is folded into the child of M it lives in, and the references between different
//! children must not form a cycle (so `percpu <-> smp` at the top, `smp::call <-> smp::tlb`
//! inside smp). References between a module and its own descendants do not count (a parent
//! and its parts are one mechanism).
//!
//! Run: `cargo test --test structure` (prints every circle it finds). structure/wire.rs
//! checks that only the wire module matches prefixes of the serial log, structure/comments.rs
//! that no comment names an issue by number.

#[path = "structure/comments.rs"]
mod comments;
#[path = "structure/percpu.rs"]
mod percpu;
#[path = "structure/seams.rs"]
mod seams;
#[path = "structure/wire.rs"]
mod wire;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

type ModPath = Vec<String>;

/// One crate's module files: module path -> source with comments and strings removed.
struct Crate {
    files: BTreeMap<ModPath, String>,
    /// Modules that re-export a child with `pub use CHILD::*` (resolution looks inside).
    globs: BTreeMap<ModPath, Vec<String>>,
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Removes comments, string and char literals (keeps line structure roughly; only paths matter).
fn strip(source: &str) -> String {
    let b = source.as_bytes();
    let mut out = String::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'/' && b.get(i + 1) == Some(&b'/') {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
            i += 2;
            while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                i += 1;
            }
            i += 2;
        } else if b[i] == b'"' {
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'r' && b.get(i + 1) == Some(&b'#') && b.get(i + 2) == Some(&b'"') {
            // r#"..."#
            i += 3;
            while i + 1 < b.len() && !(b[i] == b'"' && b[i + 1] == b'#') {
                i += 1;
            }
            i += 2;
            out.push_str("\"\"");
        } else if b[i] == b'\''
            && b.get(i + 2) == Some(&b'\'')
            && b.get(i + 1).is_some_and(|c| *c != b'\\')
        {
            i += 3;
        } else if b[i] == b'\'' && b.get(i + 1) == Some(&b'\\') {
            i += 2;
            while i < b.len() && b[i] != b'\'' {
                i += 1;
            }
            i += 1;
        } else {
            out.push(b[i] as char);
            i += 1;
        }
    }
    out
}

/// Reads every .rs file under `src` into module paths (`a/b.rs`, `a/b/mod.rs` -> [a, b]; the
/// crate roots main.rs and lib.rs -> []); `#[path = "DIR/mod.rs"] mod NAME;` renames DIR.
fn read_crate(src: &Path) -> Crate {
    let mut raw: Vec<(PathBuf, String)> = Vec::new();
    let mut dirs = vec![src.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        for entry in fs::read_dir(&dir).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                let text = fs::read_to_string(&p).unwrap();
                raw.push((p.strip_prefix(src).unwrap().to_path_buf(), text));
            }
        }
    }
    // Directory renames from #[path] attributes: "x86_64" -> "amd64" under its parent.
    let mut renames: BTreeMap<String, String> = BTreeMap::new();
    for (_, text) in &raw {
        let mut rest = text.as_str();
        while let Some(at) = rest.find("#[path = \"") {
            rest = &rest[at + 10..];
            let end = rest.find('"').unwrap();
            let target = &rest[..end];
            let after = &rest[end..];
            if let Some(m) = after.find("mod ") {
                let name: String = after[m + 4..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if let Some(dir) = target.strip_suffix("/mod.rs") {
                    renames.insert(dir.to_string(), name);
                }
            }
        }
    }
    let mut files = BTreeMap::new();
    let mut globs: BTreeMap<ModPath, Vec<String>> = BTreeMap::new();
    for (rel, text) in raw {
        let mut parts: ModPath = rel
            .iter()
            .map(|c| c.to_string_lossy().to_string())
            .collect();
        let last = parts.pop().unwrap();
        let stem = last.trim_end_matches(".rs").to_string();
        for p in parts.iter_mut() {
            if let Some(n) = renames.get(p.as_str()) {
                *p = n.clone();
            }
        }
        if !(stem == "mod" || (parts.is_empty() && (stem == "main" || stem == "lib"))) {
            parts.push(stem);
        }
        let mut stripped = strip(&text);
        // An inline test module (`#[cfg(test)] mod tests { .. }`, by convention at the end of
        // its file) is a leaf like a test file: cut it off.
        if let Some(at) = stripped.find("#[cfg(test)]\nmod tests") {
            stripped.truncate(at);
        }
        for line in stripped.lines() {
            let t = line.trim();
            if let Some(r) = t.strip_prefix("pub use ") {
                if let Some(child) = r.strip_suffix("::*;") {
                    if !child.contains("::") {
                        globs
                            .entry(parts.clone())
                            .or_default()
                            .push(child.to_string());
                    }
                }
            }
        }
        files.insert(parts, stripped);
    }
    Crate { files, globs }
}

/// Expands `a::{b, c::{d, e}}` into paths; `self` inside braces stands for the prefix.
fn expand(prefix: &str, tree: &str, out: &mut Vec<String>) {
    let tree = tree.trim();
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim_end_matches("::");
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let base = join(prefix, head);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&base, &inner[start..i], out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&base, &inner[start..], out);
    } else {
        let item = tree.split(" as ").next().unwrap().trim();
        if item.is_empty() {
            return;
        }
        if item == "self" {
            out.push(prefix.to_string());
        } else {
            out.push(join(prefix, item));
        }
    }
}

fn join(a: &str, b: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}::{b}"),
    }
}

/// Every path a file names: `use` trees (braces expanded) and qualified names `a::b::c`.
fn paths_in(source: &str) -> Vec<String> {
    let mut out = Vec::new();
    // use declarations (may span lines): up to the `;`.
    let mut rest = source;
    while let Some(at) = rest.find("use ") {
        let before = rest[..at].chars().last();
        rest = &rest[at + 4..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        let end = rest.find(';').unwrap_or(rest.len());
        let tree: String = rest[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        if tree.starts_with(|c: char| c.is_alphabetic() || c == '{') {
            expand("", &tree, &mut out);
        }
    }
    // qualified names in code: ident(::ident)+ not preceded by `::` or an identifier char.
    let b = source.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        let prev = if i == 0 { ' ' } else { b[i - 1] as char };
        if (c.is_ascii_alphabetic() || c == '_')
            && !(prev.is_ascii_alphanumeric() || prev == '_' || prev == ':')
        {
            let start = i;
            let mut j = i;
            loop {
                while j < b.len() && ((b[j] as char).is_ascii_alphanumeric() || b[j] == b'_') {
                    j += 1;
                }
                if j + 2 < b.len()
                    && b[j] == b':'
                    && b[j + 1] == b':'
                    && ((b[j + 2] as char).is_ascii_alphabetic() || b[j + 2] == b'_')
                {
                    j += 2;
                } else {
                    break;
                }
            }
            let p = &source[start..j];
            if p.contains("::") {
                out.push(p.to_string());
            }
            i = j.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

impl Crate {
    fn is_module(&self, m: &[String]) -> bool {
        self.files.contains_key(m)
    }

    /// The module file a path from module `from` refers to (None: another crate).
    fn resolve(&self, from: &[String], path: &str) -> Option<ModPath> {
        let segs: Vec<&str> = path.split("::").collect();
        let (mut base, rest): (ModPath, &[&str]) = match segs[0] {
            "crate" => (Vec::new(), &segs[1..]),
            "self" => (from.to_vec(), &segs[1..]),
            "super" => {
                let mut b = from.to_vec();
                let mut k = 0;
                while segs.get(k) == Some(&"super") {
                    b.pop();
                    k += 1;
                }
                (b, &segs[k..])
            }
            first => {
                // A child module of `from`, or of the crate root for 2015-style paths.
                let mut child = from.to_vec();
                child.push(first.to_string());
                if self.is_module(&child) {
                    (from.to_vec(), &segs[..])
                } else {
                    return None;
                }
            }
        };
        for s in rest {
            let mut next = base.clone();
            next.push(s.to_string());
            if self.is_module(&next) {
                base = next;
                continue;
            }
            // Through a glob re-export of a child (`pub use amd64::*`).
            let through = self.globs.get(&base).and_then(|children| {
                children.iter().find_map(|c| {
                    let mut g = base.clone();
                    g.push(c.clone());
                    let mut n = g.clone();
                    n.push(s.to_string());
                    if self.is_module(&n) {
                        Some(n)
                    } else if self.is_module(&g) {
                        Some(g)
                    } else {
                        None
                    }
                })
            });
            match through {
                Some(n) if n.len() > base.len() + 1 => {
                    base = n;
                    continue;
                }
                Some(g) => base = g,
                None => {}
            }
            break;
        }
        Some(base)
    }

    /// Module file -> the module files it refers to (itself excluded). Test modules
    /// (`tests`, `tests_*`) are left out: nothing imports them (ktest finds them through a
    /// linker section), so they close no circle; white-box tests may use any subsystem.
    fn edges(&self) -> BTreeMap<ModPath, BTreeSet<ModPath>> {
        let mut out = BTreeMap::new();
        for (m, src) in &self.files {
            if m.last()
                .is_some_and(|l| l == "tests" || l.starts_with("tests_"))
            {
                continue;
            }
            let mut to = BTreeSet::new();
            for p in paths_in(src) {
                if let Some(t) = self.resolve(m, &p) {
                    if &t != m {
                        to.insert(t);
                    }
                }
            }
            out.insert(m.clone(), to);
        }
        out
    }
}

/// The circles among the children of each module: one line per strongly connected group.
fn circles(krate: &Crate) -> Vec<String> {
    let edges = krate.edges();
    let mut found = Vec::new();
    let parents: BTreeSet<ModPath> = krate
        .files
        .keys()
        .filter(|m| !m.is_empty())
        .map(|m| m[..m.len() - 1].to_vec())
        .collect();
    for parent in parents {
        let child_of = |m: &ModPath| -> Option<String> {
            (m.len() > parent.len() && m[..parent.len()] == parent[..])
                .then(|| m[parent.len()].clone())
        };
        let mut graph: BTreeMap<String, BTreeMap<String, (ModPath, ModPath)>> = BTreeMap::new();
        for (from, tos) in &edges {
            let Some(a) = child_of(from) else { continue };
            for to in tos {
                if let Some(b) = child_of(to) {
                    if a != b {
                        graph
                            .entry(a.clone())
                            .or_default()
                            .entry(b)
                            .or_insert((from.clone(), to.clone()));
                    }
                }
            }
        }
        for group in strongly_connected(&graph) {
            let shown = |m: &ModPath| {
                if m.is_empty() {
                    "crate".to_string()
                } else {
                    m.join("::")
                }
            };
            let mut why = Vec::new();
            for a in &group {
                for (b, (f, t)) in graph.get(a).into_iter().flatten() {
                    if group.contains(b) {
                        why.push(format!("{} -> {}", shown(f), shown(t)));
                    }
                }
            }
            found.push(format!(
                "in {}: {{{}}} ({})",
                shown(&parent),
                group.iter().cloned().collect::<Vec<_>>().join(", "),
                why.join("; ")
            ));
        }
    }
    found
}

/// Groups of more than one node that reach each other (Tarjan's algorithm).
fn strongly_connected(
    graph: &BTreeMap<String, BTreeMap<String, (ModPath, ModPath)>>,
) -> Vec<BTreeSet<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeMap<String, (ModPath, ModPath)>>,
        index: BTreeMap<String, usize>,
        low: BTreeMap<String, usize>,
        stack: Vec<String>,
        on_stack: BTreeSet<String>,
        next: usize,
        out: Vec<BTreeSet<String>>,
    }
    fn visit(s: &mut State, v: &str) {
        s.index.insert(v.to_string(), s.next);
        s.low.insert(v.to_string(), s.next);
        s.next += 1;
        s.stack.push(v.to_string());
        s.on_stack.insert(v.to_string());
        let succ: Vec<String> = s
            .graph
            .get(v)
            .map(|m| m.keys().cloned().collect())
            .unwrap_or_default();
        for w in succ {
            if !s.index.contains_key(&w) {
                visit(s, &w);
                let lw = s.low[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(&w) {
                let iw = s.index[&w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut group = BTreeSet::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(&w);
                group.insert(w.clone());
                if w == v {
                    break;
                }
            }
            if group.len() > 1 {
                s.out.push(group);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    let nodes: Vec<String> = graph.keys().cloned().collect();
    for v in nodes {
        if !s.index.contains_key(&v) {
            visit(&mut s, &v);
        }
    }
    s.out
}

#[test]
#[ignore]
fn print_top_level_edges() {
    let k = read_crate(&repo().join("kernel/src"));
    for (from, tos) in k.edges() {
        for to in tos {
            if from.first() != to.first() && !from.is_empty() && !to.is_empty() {
                println!("{} -> {}", from.join("::"), to.join("::"));
            }
        }
    }
}

#[test]
fn kernel_has_no_import_circle() {
    let k = read_crate(&repo().join("kernel/src"));
    assert!(
        k.files.len() > 50,
        "only {} kernel files read",
        k.files.len()
    );
    let found = circles(&k);
    assert!(
        found.is_empty(),
        "import circles in kernel/src:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn arch_imports_nothing_from_the_layers_above_it() {
    let k = read_crate(&repo().join("kernel/src"));
    let edges = k.edges();
    let mut bad = Vec::new();
    for (from, tos) in &edges {
        if from.first().map(String::as_str) != Some("arch") {
            continue;
        }
        for to in tos {
            if let Some(top) = to.first() {
                if ["mm", "smp", "percpu", "topology"].contains(&top.as_str()) {
                    bad.push(format!("{} -> {}", from.join("::"), to.join("::")));
                }
            }
        }
    }
    assert!(bad.is_empty(), "arch/ reaches up: {bad:?}");
}

#[test]
fn the_checker_finds_a_circle_and_resolves_paths() {
    // A crate in memory: a <-> b through `use crate::b` and `super::a::f()`; c only uses a.
    let mut files = BTreeMap::new();
    let m = |s: &str| -> ModPath {
        s.split('/')
            .filter(|x| !x.is_empty())
            .map(String::from)
            .collect()
    };
    files.insert(m(""), strip("mod a; mod b; mod c;"));
    files.insert(
        m("a"),
        strip("use crate::b::{self, Thing};\nfn f() { b::g(); } // crate::c"),
    );
    files.insert(
        m("b"),
        strip("fn g() { super::a::f(); let s = \"crate::c::x\"; }"),
    );
    files.insert(m("c"), strip("use crate::a;"));
    let k = Crate {
        files,
        globs: BTreeMap::new(),
    };
    let e = k.edges();
    assert_eq!(e[&m("a")], [m("b")].into_iter().collect());
    assert_eq!(e[&m("c")], [m("a")].into_iter().collect());
    let found = circles(&k);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("{a, b}"), "{found:?}");
}

/// Whether `path` (relative to the repository) is test code: tests/, a `tests.rs` or
/// `*_tests.rs`, or a module its parent declares under `#[cfg(test)]`.
fn is_test_file(path: &str) -> bool {
    let p = Path::new(path);
    let name = p.file_stem().and_then(|n| n.to_str()).unwrap_or("");
    if path.starts_with("tests/") || name == "tests" || name.ends_with("_tests") {
        return true;
    }
    let Some(dir) = p.parent() else { return false };
    // A module file's declaration is in its folder's mod.rs or lib.rs (or main.rs).
    ["mod.rs", "lib.rs", "main.rs"].iter().any(|parent| {
        let text = fs::read_to_string(repo().join(dir).join(parent)).unwrap_or_default();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        lines.windows(2).any(|w| {
            w[0].starts_with("#[cfg(test)]")
                && (w[1] == format!("mod {name};") || w[1] == format!("pub mod {name};"))
        })
    })
}

#[test]
fn no_production_file_is_over_600_lines() {
    // Rust sources of every crate, the Linux twin's C files and headers, the scripts.
    let out = std::process::Command::new("git")
        .current_dir(repo())
        .args(["ls-files", "*.rs", "*.c", "*.h", "*.sh"])
        .output()
        .expect("git ls-files");
    let files = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        files.contains("linux/twin/harness.c"),
        "git ls-files: {files}"
    );
    let mut long = Vec::new();
    for path in files.lines().filter(|p| !is_test_file(p)) {
        let lines = fs::read_to_string(repo().join(path))
            .map(|t| t.lines().count())
            .unwrap_or(0);
        if lines > 600 {
            long.push(format!("{path}: {lines} lines"));
        }
    }
    assert!(
        long.is_empty(),
        "production files over 600 lines:\n  {}",
        long.join("\n  ")
    );
}

#[test]
fn a_test_module_is_known_as_test_code() {
    assert!(is_test_file("kernel/algo/src/slub/model.rs"));
    assert!(is_test_file("kernel/algo/src/acpi/numa_tests.rs"));
    assert!(is_test_file("tests/s01_topology.rs"));
    assert!(!is_test_file("kernel/algo/src/acpi/numa.rs"));
    assert!(!is_test_file("linux/twin/harness.c"));
}

#[test]
fn boot_has_no_import_circle() {
    let b = read_crate(&repo().join("boot/src"));
    assert!(b.files.len() > 20, "only {} boot files read", b.files.len());
    let found = circles(&b);
    assert!(
        found.is_empty(),
        "import circles in boot/src:\n  {}",
        found.join("\n  ")
    );
}

#[test]
fn the_page_size_is_defined_once() {
    // `const PAGE_SIZE` and `const PAGE_SHIFT` in kernel/algo/src/page.rs, nowhere else.
    let mut found: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for dir in ["kernel/src", "kernel/algo/src", "boot/src", "tests"] {
        let krate = read_crate(&repo().join(dir));
        for (m, src) in &krate.files {
            for name in ["PAGE_SIZE", "PAGE_SHIFT"] {
                if src.contains(&format!("const {name}:")) {
                    found
                        .entry(name)
                        .or_default()
                        .push(format!("{dir}:{}", m.join("::")));
                }
            }
        }
    }
    assert_eq!(found.get("PAGE_SIZE").map(Vec::len), Some(1), "{found:?}");
    assert_eq!(found.get("PAGE_SHIFT").map(Vec::len), Some(1), "{found:?}");
}
