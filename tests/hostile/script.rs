//! Runs `./qemu-run.sh` as a user types it, from any folder, and checks a refusal: exit status
//! 2, nothing on stdout, one error line (clap's hint aside, starting `qemu-run.sh: `, `error: `
//! or the bench runner's `numalab: `), no panic or backtrace.

use numalab_boot::build::image::repo_root;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

/// clap's hint after its error line (the one line that says what is wrong).
pub const CLAP_HINT: &str = "For more information, try '--help'.";

/// A fresh scratch folder for one test.
pub fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numalab-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// `./qemu-run.sh ARGS` run in `cwd`; returns its output and wall time (printed, never
/// asserted).
pub fn qemu_run(cwd: &Path, args: &[&str]) -> (Output, f64) {
    let start = Instant::now();
    let out = Command::new(repo_root().join("qemu-run.sh"))
        .current_dir(cwd)
        .args(args)
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("run qemu-run.sh");
    (out, start.elapsed().as_secs_f64())
}

/// Checks that `out` is a refusal and returns its error line.
pub fn check_refused(label: &str, out: &Output, secs: f64) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let all = format!("{stdout}{stderr}");
    for bad in ["panicked", "stack backtrace", "RUST_BACKTRACE"] {
        assert!(!all.contains(bad), "{label}: '{bad}' in:\n{all}");
    }
    assert_eq!(out.status.code(), Some(2), "{label}:\n{all}");
    assert!(stdout.trim().is_empty(), "{label}: stdout:\n{stdout}");
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && l.trim() != CLAP_HINT)
        // qemu-run.sh's progress while it rebuilds the runner (a test that runs first after a
        // change, or beside one that changed it): not error lines.
        .filter(|l| {
            !l.starts_with("qemu-run.sh: building the runner")
                && !l.starts_with("qemu-run.sh: built the runner")
        })
        .collect();
    assert_eq!(lines.len(), 1, "{label}: not one error line:\n{stderr}");
    let line = lines[0];
    assert!(
        // "numalab: " is the bench runner's plan refusing (a cost model, a machine).
        ["qemu-run.sh: ", "error: ", "numalab: "]
            .iter()
            .any(|p| line.starts_with(p)),
        "{label}: {line}"
    );
    println!("hostile: {label}: exit 2 in {secs:.3} s: {line}");
    line.to_string()
}

/// `./qemu-run.sh ARGS` in `cwd`, refused; its error line, which must contain `want`.
pub fn refused_in(cwd: &Path, label: &str, args: &[&str], want: &str) -> String {
    let (out, secs) = qemu_run(cwd, args);
    let line = check_refused(label, &out, secs);
    assert!(line.contains(want), "{label}: wanted '{want}' in: {line}");
    line
}
