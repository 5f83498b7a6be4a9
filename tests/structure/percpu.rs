//! Per-CPU data is of one kind (docs/smp.md, "Per-CPU data"): the kernel declares it with
//! `per_cpu!` (static) or makes it with `PerCpuBox` (run time), both in kernel/src/percpu/,
//! and reaches the running CPU's copy through them. Two rules, checked on the source of
//! kernel/src outside that mechanism:
//! - no `static` array of `MAX_CPUS` copies (what `per_cpu!` replaces), in any file;
//! - in production files, the running CPU's id never becomes an index: no
//!   `cpu_id().index()`, `this_cpu().index()`, `cpu_id().0 as usize` or
//!   `usize::from(cpu_id().0)`, directly or through a `let` that holds the id
//!   (`let me = percpu::cpu_id(); .. v[me.index()]`). A vector, boxed slice or shard array
//!   picked by the running CPU (frame's per-CPU vectors and vmalloc's 64-shard counters before
//!   they became `PerCpuBox`es) needs exactly that. Another CPU's copy is reached with
//!   `on(cpu)`/`get(cpu)` of the mechanism.

use std::fs;
use std::path::Path;

use super::seams::{is_test_file, rust_files};

/// Production files of kernel/src outside the per-CPU mechanism, with their text.
fn checked_files() -> Vec<(String, String)> {
    let repo = super::repo();
    let src = repo.join("kernel/src");
    let mechanism = [src.join("percpu.rs"), src.join("percpu")];
    rust_files(&src)
        .into_iter()
        .filter(|f| !is_test_file(f) && !mechanism.iter().any(|m| f.starts_with(m)))
        .map(|f| (rel(&repo, &f), fs::read_to_string(&f).unwrap()))
        .collect()
}

/// The lines of `source` (comments and literals dropped) that start a `static` whose type is
/// an array of `MAX_CPUS` elements (`static X: [T; MAX_CPUS]`, `[[T; N]; crate::smp::MAX_CPUS]`).
fn per_cpu_arrays(source: &str) -> Vec<usize> {
    let code = super::strip(source);
    let mut out = Vec::new();
    for (i, _) in code.match_indices("static ") {
        let before = code[..i].chars().next_back();
        if before.is_some_and(|c| !c.is_whitespace()) {
            continue; // `&'static`, `MY_static`
        }
        let rest = &code[i..];
        // The declared type: up to the initializer, or to the `;` of an item without one
        // (outside brackets: `[T; N]` has one of its own).
        let mut depth = 0i32;
        let end = rest
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '[' | '(' | '<' => depth += 1,
                    ']' | ')' | '>' => depth -= 1,
                    _ => {}
                }
                depth <= 0 && (c == '=' || c == ';')
            })
            .map_or(rest.len(), |(j, _)| j);
        let ty = &rest[..end];
        if ty.contains("MAX_CPUS]") || ty.contains("MAX_CPUS ]") {
            out.push(code[..i].matches('\n').count() + 1);
        }
    }
    out
}

/// Whether `code[at..]` starts a call of the running CPU's id (`cpu_id()`, `this_cpu()`,
/// any path before it, not a longer name such as `init_this_cpu()`), and where it ends.
fn id_call_at(code: &str, at: usize) -> Option<usize> {
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    if code[..at].chars().next_back().is_some_and(ident) {
        return None;
    }
    ["cpu_id()", "this_cpu()"]
        .iter()
        .find(|call| code[at..].starts_with(*call))
        .map(|call| at + call.len())
}

/// Whether the text right after an id (`code[end..]`) turns it into an index, or the text
/// right before it (`code[..start]`, up to the id's path) is `usize::from(`.
fn made_index(code: &str, start: usize, end: usize) -> bool {
    let after: String = code[end..]
        .chars()
        .filter(|c| !c.is_whitespace())
        .take(16)
        .collect();
    let before =
        code[..start].trim_end_matches(|c: char| c.is_alphanumeric() || c == ':' || c == '_');
    after.starts_with(".index()")
        || after.starts_with(".0asusize")
        || (after.starts_with(".0)") && before.trim_end().ends_with("usize::from("))
}

/// The lines of `source` (comments and literals dropped) where the running CPU's id becomes
/// an index: directly, or through a name a `let` bound to it in the same function (up to the
/// next `fn`).
fn running_cpu_indexes(source: &str) -> Vec<usize> {
    let code = super::strip(source);
    let line_of = |i: usize| code[..i].matches('\n').count() + 1;
    let mut out = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut i = 0;
    while i < code.len() {
        if !code.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let rest = &code[i..];
        if rest.starts_with("fn ") {
            names.clear();
        }
        if let Some(end) = id_call_at(&code, i) {
            if made_index(&code, i, end) {
                out.push(line_of(i));
            }
            // `let NAME = <path>cpu_id();`: remember NAME.
            let stmt_start = code[..i].rfind([';', '{', '}']).map_or(0, |j| j + 1);
            let stmt = code[stmt_start..i].trim();
            if let Some(name) = stmt.strip_prefix("let ").and_then(|s| s.split('=').next()) {
                let tail_ok = code[end..].trim_start().starts_with(';');
                let name = name.trim().trim_start_matches("mut ").trim();
                if tail_ok
                    && !name.is_empty()
                    && name.chars().all(|c| c.is_alphanumeric() || c == '_')
                {
                    names.push(name.to_string());
                }
            }
            i = end;
            continue;
        }
        let ident_start = !code[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        if ident_start {
            if let Some(n) = names.iter().find(|n| {
                rest.starts_with(n.as_str())
                    && !rest[n.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
            }) {
                if made_index(&code, i, i + n.len()) {
                    out.push(line_of(i));
                }
                i += n.len();
                continue;
            }
        }
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    out.dedup();
    out
}

#[test]
fn per_cpu_data_is_declared_with_the_one_mechanism() {
    // Before per_cpu! the static arrays were fault/mod.rs (EXEMPT), mm/vmalloc/probe.rs
    // (HISTORY, NEXT) and smp/mod.rs (CPU_STATE); before PerCpuBox the running CPU's id
    // indexed mm/frame/mod.rs's vectors (local_lists, cpus, pcp) and mm/vmalloc/sharded.rs's
    // 64 shards.
    let repo = super::repo();
    let src = repo.join("kernel/src");
    let mechanism = [src.join("percpu.rs"), src.join("percpu")];
    let mut arrays = Vec::new();
    for file in rust_files(&src) {
        if mechanism.iter().any(|m| file.starts_with(m)) {
            continue;
        }
        for line in per_cpu_arrays(&fs::read_to_string(&file).unwrap()) {
            arrays.push(format!("{}:{line}", rel(&repo, &file)));
        }
    }
    let mut indexes = Vec::new();
    for (file, text) in checked_files() {
        for line in running_cpu_indexes(&text) {
            indexes.push(format!("{file}:{line}"));
        }
    }
    assert!(
        arrays.is_empty(),
        "per-CPU static arrays outside the mechanism (declare them with per_cpu!): {arrays:?}"
    );
    assert!(
        indexes.is_empty(),
        "the running CPU's id used as an index outside the mechanism (make the data a per_cpu! \
         variable or a PerCpuBox and reach the copy with get_with(&percpu::pin())): {indexes:?}"
    );
}

fn rel(repo: &Path, file: &Path) -> String {
    file.strip_prefix(repo).unwrap().display().to_string()
}

#[test]
fn the_per_cpu_check_finds_static_arrays() {
    let sample = "static A: [AtomicU32; MAX_CPUS] = [const { X }; MAX_CPUS];\n\
        fn f(x: &'static [u8; MAX_CPUS]) {}\n\
        // static C: [u8; MAX_CPUS] = [0; MAX_CPUS];\n\
        pub(crate) static B: [[Freed; 8];\n    crate::percpu::MAX_CPUS] = todo!();\n\
        static D: [u8; 4] = [0; MAX_CPUS];\n\
        let e: [u8; MAX_CPUS] = [0; MAX_CPUS];\n";
    assert_eq!(per_cpu_arrays(sample), vec![1, 4]);
}

#[test]
fn the_per_cpu_check_finds_the_running_cpu_as_an_index() {
    let sample = "fn a() { let l = LISTS[crate::percpu::cpu_id().index()]; }\n\
        fn b() { self.0[backing::this_cpu().index() % 64].add(1); }\n\
        fn c() { let me = percpu::cpu_id();\n    v.get(me.index()); }\n\
        fn d() { let x = usize::from(cpu_id().0); let y = cpu_id().0 as usize; }\n\
        fn e() { if cpu == percpu::cpu_id() { init_this_cpu(); } }\n\
        fn f() { me.index(); let n = percpu::cpu_id().0; tree(cpu_id().0, t); }\n\
        // cpu_id().index() in a comment\n";
    assert_eq!(running_cpu_indexes(sample), vec![1, 2, 4, 5]);
}
