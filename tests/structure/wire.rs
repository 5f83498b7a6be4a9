//! The serial log is parsed in one place: numalab_algo::wire declares every line kind and its
//! reader, and boot/src/wire/ builds a boot's `BootLog` from it. No other production file of
//! boot/src matches a prefix (`strip_prefix`, `starts_with`) unless it is listed below with the
//! text it reads instead, none of which is the serial log.

use std::fs;
use std::path::Path;

/// Files of boot/src that match prefixes of text other than the serial log, and that text.
const NOT_THE_SERIAL_LOG: &[(&str, &str)] = &[
    ("qemu/accel.rs", "QEMU's stderr (KVM's errors)"),
    ("costs/mlc.rs", "Intel MLC's output files"),
    ("costs/mod.rs", "cost files (costs/*.txt)"),
    (
        "qemu/host_numa/mod.rs",
        "the host's NUMA words on the command line",
    ),
    ("report/html/mod.rs", "file names in a run folder"),
    (
        "build/linux_kernel.rs",
        "kernel names (a record's `kernel` field)",
    ),
    ("machine/dir.rs", "machine description file names"),
    (
        "machine/mod.rs",
        "a machine description file (which kind of text it is)",
    ),
    (
        "machine/scale.rs",
        "the host's /proc/cpuinfo and /proc/meminfo",
    ),
    (
        "machine/text.rs",
        "a machine description file (numactl -H or acpidump text)",
    ),
    (
        "resolve/out_paths.rs",
        "command-line words and /proc/self/mountinfo",
    ),
    ("qemu/machine.rs", "QEMU arguments after --"),
    ("resolve/mod.rs", "command-line words"),
    ("run/console.rs", "paths (Path::strip_prefix)"),
    ("run/plan.rs", "the runner's own notes"),
    (
        "run/twin/linux7.rs",
        "linux/linux7.pin and Debian's package lists",
    ),
    (
        "run/twin/module.rs",
        "the twin's C sources and /boot file names",
    ),
    ("run/twin/table.rs", "case names"),
    (
        "sweep/mod.rs",
        "the runner's own console lines of a sweep job",
    ),
    ("sweep/plan.rs", "bench arguments"),
    ("trace/elf.rs", "ELF symbol names"),
    ("trace/map.rs", "QEMU arguments"),
    ("trace/output.rs", "the trace plugin's output file"),
    (
        "report/twin_traced/mod.rs",
        "variant words and c2c file names",
    ),
    ("report/twin_traced/hot.rs", "c2c text files"),
    ("report/twin_traced/render.rs", "verdict strings"),
    ("resolve/user_path.rs", "paths"),
];

/// The source without its test modules (`#[cfg(test)] mod NAME { ... }` and the like, by
/// convention at the end; a `#[cfg(test)] mod NAME;` declaration is skipped over).
fn production_part(text: &str) -> &str {
    let mut from = 0;
    while let Some(i) = text[from..].find("#[cfg(test)]") {
        let at = from + i;
        let next = text[at..].lines().nth(1).unwrap_or("").trim();
        if next.ends_with('{') {
            return &text[..at];
        }
        from = at + "#[cfg(test)]".len();
    }
    text
}

/// Production files of boot/src (relative paths) that match prefixes.
fn matching_prefixes() -> Vec<String> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("boot/src");
    let mut out = Vec::new();
    let mut dirs = vec![src.clone()];
    while let Some(d) = dirs.pop() {
        for entry in fs::read_dir(&d).unwrap() {
            let p = entry.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                dirs.push(p);
                continue;
            }
            if !name.ends_with(".rs") || name == "tests.rs" || name.ends_with("_tests.rs") {
                continue;
            }
            let text = fs::read_to_string(&p).unwrap();
            let code = production_part(&text);
            if code.contains(".strip_prefix(") || code.contains(".starts_with(") {
                let rel = p.strip_prefix(&src).unwrap();
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn only_the_wire_module_matches_prefixes_of_the_serial_log() {
    let found = matching_prefixes();
    let listed = |f: &str| NOT_THE_SERIAL_LOG.iter().any(|(l, _)| *l == f);
    let unlisted: Vec<&String> = found
        .iter()
        .filter(|f| !f.starts_with("wire/") && !listed(f))
        .collect();
    assert!(
        unlisted.is_empty(),
        "these boot/src files match prefixes (strip_prefix/starts_with): read serial lines \
         through the BootLog (boot/src/wire/) and numalab_algo::wire, or, when the text is \
         not the serial log, list the file in tests/structure/wire.rs with what it reads:\n  {}",
        unlisted
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n  ")
    );
    let stale: Vec<&str> = NOT_THE_SERIAL_LOG
        .iter()
        .map(|(f, _)| *f)
        .filter(|f| !found.iter().any(|x| x == f))
        .collect();
    assert!(
        stale.is_empty(),
        "listed in tests/structure/wire.rs but matching no prefix any more (remove them): {stale:?}"
    );
}

#[test]
fn the_test_part_is_cut_at_an_inline_test_module() {
    let src = "a\n#[cfg(test)]\nmod tests;\nb\n#[cfg(test)]\nmod more {\nc\n}\n";
    assert_eq!(production_part(src), "a\n#[cfg(test)]\nmod tests;\nb\n");
}
