//! What the main job prints once its boots ran, in reading order: the machine (the kernel's
//! `numactl -H` block, host cores against vCPUs), the tests (one line per KTAP suite), the
//! count of warnings the tests provoked on purpose, then (report.rs) the seeds table and one
//! headline per experiment, the soak's line, and where everything went.

use super::BootRun;
use crate::bench::Boot;
use crate::progress::clock;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The `numactl -H` block of a boot's log, one `\n` after each line.
pub fn numactl_block(log: &crate::wire::BootLog) -> Option<String> {
    log.numactl
        .as_ref()
        .map(|lines| lines.iter().map(|l| format!("{l}\n")).collect())
}

/// One line per KTAP suite of `run`: passed, failed, skipped.
pub fn suite_lines(run: &BootRun) -> String {
    let mut out = String::new();
    for suite in &run.outcome.boot_log.ktap.suites {
        let cases: Vec<_> = run
            .outcome
            .boot_log
            .ktap
            .results
            .iter()
            .filter(|r| r.suite() == suite.name)
            .collect();
        let passed = cases.iter().filter(|r| r.ok && !r.skipped).count();
        let skipped = cases.iter().filter(|r| r.skipped).count();
        let failed = cases.iter().filter(|r| !r.ok).count();
        let _ = writeln!(
            out,
            "  {:<10} {passed:>3} passed, {failed} failed, {skipped} skipped",
            suite.name
        );
    }
    out
}

/// The machine and tests sections of the main job: the first boot's `numactl -H` block, the
/// host line, its suites, one line per other boot, and the declared warnings' count.
pub fn machine_and_tests(runs: &[BootRun], host_line: &str) -> String {
    let mut out = String::new();
    let Some(main) = runs.first() else {
        return out;
    };
    let _ = writeln!(
        out,
        "== machine: {} ({} vCPUs), as the kernel read it from ACPI (numactl -H) ==",
        main.config.machine.topology.name,
        main.config.vcpus()
    );
    out.push_str(
        &numactl_block(&main.outcome.boot_log)
            .unwrap_or_else(|| "(no numactl -H block in the log)\n".into()),
    );
    let _ = writeln!(out, "{host_line}");
    let _ = writeln!(
        out,
        "\n== tests: KTAP, {} boot (suite={}) ==",
        main.boot.name(),
        main.config.kernel.suite
    );
    out.push_str(&suite_lines(main));
    for r in &runs[1..] {
        let t = &r.outcome.boot_log.ktap;
        let _ = writeln!(
            out,
            "  {:<10} {:>3} passed, {} failed, {} skipped  ({} boot, {}{})",
            r.config.kernel.suite,
            t.passed(),
            t.failed().len(),
            t.results.iter().filter(|x| x.skipped).count(),
            r.boot.name(),
            r.config.machine.topology.name,
            if r.boot == Boot::Icount {
                ", 1 CPU"
            } else {
                ""
            }
        );
    }
    let declared: usize = runs
        .iter()
        .map(|r| r.outcome.boot_log.declared_warnings())
        .sum();
    if declared > 0 {
        let _ = writeln!(
            out,
            "  {declared} warnings provoked on purpose by the tests that declare them: in the logs, not shown"
        );
    }
    out
}

/// `path` relative to `root` when it is inside it.
fn shown(path: &Path, root: &Path) -> String {
    path.strip_prefix(root)
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Where the run's files went: the run folder, the report, the JSONL, the logs and charts.
pub fn where_lines(files: &[PathBuf], root: &Path) -> String {
    let mut out = String::from("\n== results ==\n");
    let is = |ext: &'static str| {
        files
            .iter()
            .filter(move |f| f.extension().is_some_and(|e| e == ext))
    };
    if let Some(dir) = files.iter().find(|f| f.is_dir()) {
        let _ = writeln!(out, "  run folder  {}/", shown(dir, root));
        let mut logs: Vec<String> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".log"))
            .collect();
        logs.sort();
        let _ = writeln!(out, "  logs        {} (in the run folder)", logs.join(" "));
    }
    for f in is("html") {
        let _ = writeln!(out, "  report      {}", shown(f, root));
    }
    for f in is("jsonl") {
        let _ = writeln!(out, "  JSONL       {}", shown(f, root));
    }
    let charts = is("svg").count();
    if charts > 0 {
        let _ = writeln!(out, "  charts      {charts} SVG files (in the run folder)");
    }
    out
}

/// The last line: the verdict, what ran, and how long it took.
pub fn verdict_line(passed: bool, what: &str, took: Duration) -> String {
    format!(
        "numalab: {}: {what} ({} wall)",
        if passed { "PASS" } else { "FAIL" },
        clock(took)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_numactl_block_is_cut_from_the_log() {
        let log = "numalab: frame: node 1: ...\navailable: 2 nodes (0-1)\nnode 0 cpus: 0 1\nnode 0 size: 500 MB\nnode 0 free: 400 MB\nnode 1 cpus: 2 3\nnode 1 size: 500 MB\nnode 1 free: 400 MB\nnode distances:\nnode   0   1\n  0:  10  20\n  1:  20  10\nnumalab: tsc: 2099 MHz\n";
        let b = numactl_block(&crate::wire::BootLog::parse(log)).unwrap();
        assert!(b.starts_with("available: 2 nodes (0-1)\n"), "{b}");
        assert!(b.ends_with("  1:  20  10\n"), "{b}");
        assert_eq!(b.lines().count(), 11, "{b}");
        assert_eq!(
            numactl_block(&crate::wire::BootLog::parse("no block")),
            None
        );
    }
}
