//! The seams, checked on the source: kernel option keys are written only where the
//! options are declared (kernel/algo/src/options) and in tests, everything else goes through
//! the typed handles; `MAX_CPUS` is defined once (per-CPU data: structure/percpu.rs); the
//! production kernel has no crate-wide lint allow and imports no `tests` module, and its
//! test option group is compiled out (the ELF itself is read by tests/s00_boot.rs
//! `s00_the_production_kernel_carries_no_tests`).

use std::fs;
use std::path::{Path, PathBuf};

/// Every .rs file under `dir`.
pub(super) fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|e| e == "rs") {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// A test file: `tests.rs`, `*_tests.rs`, or under a `tests` folder.
pub(super) fn is_test_file(p: &Path) -> bool {
    let name = p.file_name().unwrap().to_string_lossy();
    name == "tests.rs"
        || name.ends_with("_tests.rs")
        || p.components().any(|c| c.as_os_str() == "tests")
}

/// The source before its inline test module (`#[cfg(test)]`, by convention at the end).
fn production_part(text: &str) -> &str {
    text.find("#[cfg(test)]").map_or(text, |i| &text[..i])
}

/// The string literals of `source` with their line numbers (comments skipped; raw strings
/// `r"..."`/`r#"..."#` included).
fn string_literals(source: &str) -> Vec<(usize, String)> {
    let b = source.as_bytes();
    let (mut i, mut line) = (0, 1);
    let mut out = Vec::new();
    while i < b.len() {
        match b[i] {
            b'\n' => {
                line += 1;
                i += 1;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i += 2;
                while i + 1 < b.len() && !(b[i] == b'*' && b[i + 1] == b'/') {
                    line += usize::from(b[i] == b'\n');
                    i += 1;
                }
                i += 2;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || b.get(i + 1) == Some(&b'\\') => {
                // A char literal ('"', '\'', '\n'): skip to its closing quote.
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'r' if b.get(i + 1) == Some(&b'#') || b.get(i + 1) == Some(&b'"') => {
                let hashes = b[i + 1..].iter().take_while(|c| **c == b'#').count();
                if b.get(i + 1 + hashes) != Some(&b'"') {
                    i += 1;
                    continue;
                }
                let start = i + 2 + hashes;
                let close: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let len = b[start..]
                    .windows(close.len())
                    .position(|w| w == close.as_slice())
                    .unwrap_or(b.len() - start);
                let text = String::from_utf8_lossy(&b[start..start + len]).into_owned();
                out.push((line, text.clone()));
                line += text.matches('\n').count();
                i = start + len + close.len();
            }
            b'"' => {
                let mut text = Vec::new();
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        text.push(b[i]);
                        i += 1;
                    }
                    text.push(b[i]);
                    i += 1;
                }
                i += 1;
                let text = String::from_utf8_lossy(&text).into_owned();
                out.push((line, text.clone()));
                line += text.matches('\n').count();
            }
            c if c.is_ascii_alphanumeric() || c == b'_' => {
                // Skip an identifier whole, so the `r` of `for"` or `br` is not a raw string.
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The keys the option tables declare (`key: "..."` in kernel/algo/src/options).
fn declared_keys() -> Vec<String> {
    let mut keys = Vec::new();
    for p in rust_files(&super::repo().join("kernel/algo/src/options")) {
        let text = fs::read_to_string(&p).unwrap();
        for (i, _) in text.match_indices("key: \"") {
            let rest = &text[i + 6..];
            keys.push(rest[..rest.find('"').unwrap()].to_string());
        }
    }
    assert!(keys.len() > 40, "option tables not found: {keys:?}");
    keys
}

/// Whether a literal is an option word made or matched by hand: a dotted key alone
/// (`"slub.design"`), or text starting `KEY=` (`"bench="` in `starts_with`, `"lock_stat=1"`,
/// `format!("bench={only}")`). A message that names an option mid-sentence (`"... ran
/// slub.design={} ..."`, help text) documents it and is not one.
fn key_text_in(literal: &str, keys: &[String]) -> Option<String> {
    keys.iter()
        .find(|k| {
            (k.contains('.') && literal == k.as_str()) || literal.starts_with(&format!("{k}="))
        })
        .cloned()
}

/// Every production literal that writes a kernel option's key, as `file:line: literal`.
fn key_text_outside_declarations(roots: &[&str], keys: &[String]) -> Vec<String> {
    let repo = super::repo();
    let declarations = repo.join("kernel/algo/src/options");
    let mut found = Vec::new();
    for root in roots {
        for p in rust_files(&repo.join(root)) {
            if p.starts_with(&declarations) || is_test_file(&p) {
                continue;
            }
            let text = fs::read_to_string(&p).unwrap();
            for (line, literal) in string_literals(production_part(&text)) {
                if let Some(key) = key_text_in(&literal, keys) {
                    found.push(format!(
                        "{}:{line}: {literal:?} (key {key})",
                        p.strip_prefix(&repo).unwrap().display()
                    ));
                }
            }
        }
    }
    found
}

#[test]
fn option_keys_are_written_only_where_options_are_declared() {
    // Options travel typed (`cmdline.set(&SLUB_DESIGN, Design::Partial)`,
    // `opts.get(&SLUB_DESIGN)`): no production file writes `"slub.design=partial"`,
    // `starts_with("bench=")` or compares a key's text.
    let keys = declared_keys();
    let found =
        key_text_outside_declarations(&["boot/src", "kernel/src", "kernel/algo/src"], &keys);
    assert!(
        found.is_empty(),
        "kernel option keys written by hand (use the Opt handles of kernel/algo/src/options):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_key_check_finds_key_text() {
    let keys = vec!["slub.design".to_string(), "bench".to_string()];
    for (literal, hit) in [
        ("slub.design=partial", true),
        ("slub.design", true),
        ("bench=", true),
        ("bench={only}", true),
        ("numalab_twin.bench=", false),
        ("vmalloc.bench_pairs=1", false),
        ("bench", false),
        ("numalab ran slub.design={} here", false),
    ] {
        assert_eq!(key_text_in(literal, &keys).is_some(), hit, "{literal}");
    }
    let lits =
        string_literals("let a = \"x=1\"; // \"no\"\nlet b = r#\"y \"q\"\"#; let c = '\"';\n\"z\"");
    let texts: Vec<(usize, &str)> = lits.iter().map(|(l, t)| (*l, t.as_str())).collect();
    assert_eq!(texts, [(1, "x=1"), (2, "y \"q\""), (3, "z")]);
}

#[test]
fn max_cpus_is_defined_once() {
    // One bound of the kernel's per-CPU arrays and bring-up (kernel/src/percpu.rs);
    // the ACPI parse limit and the host's numactl text limit have names of their own.
    let repo = super::repo();
    let mut found = Vec::new();
    for root in ["boot/src", "kernel/src", "kernel/algo/src", "trace/src"] {
        if !repo.join(root).is_dir() {
            continue;
        }
        for p in rust_files(&repo.join(root)) {
            let text = super::strip(&fs::read_to_string(&p).unwrap());
            for def in ["const MAX_CPUS:", "static MAX_CPUS:"] {
                if text.contains(def) {
                    found.push(p.strip_prefix(&repo).unwrap().display().to_string());
                }
            }
        }
    }
    assert_eq!(found, ["kernel/src/percpu.rs"], "MAX_CPUS definitions");
}

#[test]
fn the_production_kernel_has_no_test_hooks_or_crate_wide_allows() {
    let repo = super::repo();
    let main = fs::read_to_string(repo.join("kernel/src/main.rs")).unwrap();
    for lint in ["dead_code", "unused_imports", "unused_macros"] {
        let crate_wide = main
            .lines()
            .filter(|l| l.trim_start().starts_with("#!["))
            .any(|l| l.contains(lint));
        assert!(!crate_wide, "kernel/src/main.rs silences {lint} crate-wide");
    }
    // The test option group exists only with the algo crate's `ktest` feature, which the
    // kernel turns on only in its own `ktest` feature: a production build that named a hook
    // (ACPI_CORRUPT, SMP_HOLD_APIC, TEST_FAIL ...) outside `#[cfg(feature = "ktest")]` would
    // not compile.
    let options = fs::read_to_string(repo.join("kernel/algo/src/options/mod.rs")).unwrap();
    assert!(
        options.contains("#[cfg(feature = \"ktest\")]\npub mod test;"),
        "the test option group is not behind the ktest feature"
    );
    let manifest = fs::read_to_string(repo.join("kernel/Cargo.toml")).unwrap();
    assert!(
        manifest.contains("numalab-algo = { path = \"algo\", default-features = false }")
            && manifest.contains("ktest = [\"numalab-algo/ktest\"]"),
        "kernel/Cargo.toml must take the algo crate without its ktest feature unless ktest"
    );
    // The product imports no `tests` module: only test code and the ktest-only subsystems
    // (stress, bench, soak, ktest, peers) may name one.
    let ktest_only = ["stress", "bench", "soak", "ktest", "peers"];
    let src = repo.join("kernel/src");
    let mut found = Vec::new();
    for p in rust_files(&src) {
        let rel = p.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        if is_test_file(&p) || ktest_only.contains(&top.trim_end_matches(".rs")) {
            continue;
        }
        let text = super::strip(&fs::read_to_string(&p).unwrap());
        if text.contains("tests::") {
            found.push(rel.display().to_string());
        }
    }
    assert!(
        found.is_empty(),
        "production files naming a tests module: {found:?}"
    );
    // Every `tests::` path in the ktest-only subsystems is gone too (stress used slub's).
    for dir in ktest_only {
        for p in rust_files(&src.join(dir))
            .into_iter()
            .filter(|p| !is_test_file(p))
        {
            let text = super::strip(&fs::read_to_string(&p).unwrap());
            assert!(
                !text.contains("::tests::"),
                "{} imports a tests module",
                p.display()
            );
        }
    }
}

/// The lines of `source` (comments dropped) that name the direct map's offset: the
/// identifiers `phys_offset`/`PHYS_OFFSET` or the boot information's `physical_memory_offset`.
fn offset_uses(source: &str) -> Vec<usize> {
    let mut out = Vec::new();
    for (n, line) in source.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let named = ["phys_offset", "PHYS_OFFSET", "physical_memory_offset"]
            .iter()
            .any(|w| {
                code.match_indices(w).any(|(i, _)| {
                    let before = code[..i].chars().next_back();
                    let after = code[i + w.len()..].chars().next();
                    let ident =
                        |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
                    !ident(before) && !ident(after)
                })
            });
        if named {
            out.push(n + 1);
        }
    }
    out
}

#[test]
fn the_direct_map_offset_lives_in_one_module() {
    // Arch/x86_64/direct_map.rs owns the offset (phys_to_virt, virt_to_phys); early
    // boot hands the bootloader's value to it and nothing else reads or adds it. Before the
    // module existed, 44 lines in 13 files named the offset (the same rule run with grep over
    // the tree at the merge before it).
    let repo = super::repo();
    let owner = repo.join("kernel/src/arch/x86_64/direct_map.rs");
    let early = repo.join("kernel/src/early.rs");
    let mut found = Vec::new();
    for file in rust_files(&repo.join("kernel/src")) {
        if file == owner {
            continue;
        }
        let text = fs::read_to_string(&file).unwrap();
        for line in offset_uses(&text) {
            // early.rs reads the bootloader's field once and hands it to direct_map::init.
            if file == early
                && text
                    .lines()
                    .nth(line - 1)
                    .unwrap()
                    .contains("physical_memory_offset")
            {
                continue;
            }
            found.push(format!(
                "{}:{line}",
                file.strip_prefix(&repo).unwrap().display()
            ));
        }
    }
    assert!(
        found.is_empty(),
        "the direct map's offset outside direct_map.rs: {found:?}"
    );
}

#[test]
fn the_offset_check_finds_offset_arithmetic() {
    let sample = "let v = early.phys_offset + p;\n// phys_offset in a comment\nlet my_phys_offset_x = 1;\nstatic PHYS_OFFSET: u64 = 0;\n";
    assert_eq!(offset_uses(sample), vec![1, 4]);
}
