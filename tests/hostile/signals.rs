//! End to end: SIGINT and SIGTERM to a running `./qemu-run.sh bench` (as a
//! shell's Ctrl-C or a CI cancel sends them), SIGTERM to a `timeout` wrapping it and to a
//! `sweep` (GNU parallel's jobs) leave no process of the run behind (the process tree is read,
//! not the exit status), no result file that looks whole, and exit with 128 + the signal. `--timeout` at its largest value runs
//! (it overflowed the time limit's arithmetic and panicked, leaving QEMU behind).
//!
//! No sleep assumes the host's speed: each case waits for the runner's progress line that a
//! boot starts and then for a QEMU of the run to show in /proc, and only then signals.

use super::script::scratch;
use numalab_boot::build::image::repo_root;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The environment variable that tags every process of one run (inherited down to QEMU).
const TAG: &str = "NUMALAB_HOSTILE_RUN";

/// The start of a bench's progress line for its first boot.
const BOOT_LINE: &str = "numalab: boot 1/";

/// The live processes (zombies aside) whose environment holds `TAG=tag`: pid and command name.
fn tagged(tag: &str) -> Vec<(u32, String)> {
    let want = format!("{TAG}={tag}");
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(env) = std::fs::read(e.path().join("environ")) else {
            continue;
        };
        if !env.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let state = stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .unwrap_or("X");
        if state != "Z" && state != "X" {
            let comm = std::fs::read_to_string(e.path().join("comm")).unwrap_or_default();
            found.push((pid, comm.trim().to_string()));
        }
    }
    found
}

/// Runs `prefix ./qemu-run.sh ARGS` tagged with `tag`, waits until a boot has started (a bench:
/// its progress line) and a QEMU of the run is alive, sends `sig` to the first process (`kill -SIG`), and returns the
/// exit status and everything printed.
fn interrupt(tag: &str, prefix: &[&str], args: &[&str], sig: &str) -> (Option<i32>, String) {
    let script = repo_root().join("qemu-run.sh");
    let mut words: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
    words.push(script.display().to_string());
    words.extend(args.iter().map(|s| s.to_string()));
    let mut child = Command::new(&words[0])
        .args(&words[1..])
        .env(TAG, tag)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start qemu-run.sh");
    let stderr = child.stderr.take().unwrap();
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        for l in BufReader::new(stderr).lines().map_while(Result::ok) {
            text.push_str(&l);
            text.push('\n');
        }
        text
    });
    let mut out = String::new();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    // A bench's progress line of its first boot (piped: one line per boot).
    if args.first() == Some(&"bench") {
        for l in lines.by_ref().map_while(Result::ok) {
            out.push_str(&l);
            out.push('\n');
            if l.starts_with(BOOT_LINE) {
                break;
            }
        }
        assert!(out.contains(BOOT_LINE), "no boot started:\n{out}");
    }
    // QEMU is spawned right after that line; a bound against a runner that never starts one,
    // not a guess at the host's speed.
    let bound = Instant::now() + Duration::from_secs(600);
    while !tagged(tag)
        .iter()
        .any(|(_, c)| c.starts_with("qemu-system"))
    {
        assert!(Instant::now() < bound, "no QEMU started:\n{out}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Command::new("kill")
        .args([format!("-{sig}"), child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    for l in lines.map_while(Result::ok) {
        out.push_str(&l);
        out.push('\n');
    }
    let status = child.wait().unwrap();
    out.push_str(&errors.join().unwrap());
    (status.code(), out)
}

/// Checks what an interrupted run left: no process, no whole-looking JSONL in `out_dir`, and
/// compare refusing the folder.
fn check_left(label: &str, tag: &str, out_dir: &Path, printed: &str) {
    let left = tagged(tag);
    assert!(
        left.is_empty(),
        "{label}: left running: {left:?}\n{printed}"
    );
    let files: Vec<String> = walk(out_dir);
    assert!(
        !files.iter().any(|f| f.ends_with(".jsonl")),
        "{label}: a result file that looks whole: {files:?}"
    );
    if out_dir.exists() {
        let o = Command::new(repo_root().join("qemu-run.sh"))
            .args(["bench", "--compare"])
            .args([out_dir, out_dir])
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(2), "{label}: compare of what is left");
    }
}

fn walk(dir: &Path) -> Vec<String> {
    let mut all = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            all.extend(walk(&p));
        }
        all.push(p.display().to_string());
    }
    all
}

#[test]
fn sigint_and_sigterm_to_a_running_bench_leave_no_qemu_and_no_whole_result() {
    let d = scratch("signals");
    let cases: [(&str, &[&str], &str, i32); 3] = [
        ("SIGINT to bench", &[], "INT", 130),
        ("SIGTERM to bench", &[], "TERM", 143),
        // timeout passes the signal it gets on to the run (and to its process group).
        (
            "SIGTERM to timeout 3600 bench",
            &["timeout", "3600"],
            "TERM",
            143,
        ),
    ];
    for (i, (label, prefix, sig, want)) in cases.iter().enumerate() {
        let tag = format!("{}-{i}", std::process::id());
        let out_dir = d.join(format!("out{i}"));
        let out_arg = out_dir.display().to_string();
        let args = ["bench", "--smoke", "--out", &out_arg];
        let (code, printed) = interrupt(&tag, prefix, &args, sig);
        println!("hostile: {label}: exit {code:?}");
        assert_eq!(code, Some(*want), "{label}:\n{printed}");
        assert!(
            printed.contains(&format!("interrupted by SIG{sig}")),
            "{label}: no line says the run was interrupted:\n{printed}"
        );
        check_left(label, &tag, &out_dir, &printed);
    }
    // A sweep: the signal reaches its GNU parallel's jobs, and through them their QEMUs.
    let tag = format!("{}-sweep", std::process::id());
    let out_dir = d.join("sweep");
    let out_arg = out_dir.display().to_string();
    let args = [
        "sweep",
        "--topology",
        "uma,2node",
        "--jobs",
        "2",
        "--out",
        &out_arg,
        "--",
        "--smoke",
    ];
    let (code, printed) = interrupt(&tag, &[], &args, "TERM");
    assert_eq!(code, Some(143), "sweep:\n{printed}");
    assert!(
        printed.contains("the sweep's running jobs were stopped"),
        "{printed}"
    );
    check_left("SIGTERM to sweep", &tag, &out_dir, &printed);
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn the_largest_timeout_runs_and_a_signal_still_stops_it() {
    let tag = format!("{}-max", std::process::id());
    let args = ["--timeout", "18446744073709551615", "--suite", "test"];
    let (code, printed) = interrupt(&tag, &[], &args, "TERM");
    assert!(!printed.contains("panicked"), "{printed}");
    assert_eq!(code, Some(143), "{printed}");
    let left = tagged(&tag);
    assert!(left.is_empty(), "left running: {left:?}\n{printed}");
}

#[test]
fn compare_and_merge_refuse_a_result_left_partial() {
    let d = scratch("partial");
    let whole = super::outputs::job(&d, "whole", 1);
    let cut = super::outputs::job(&d, "cut", 2);
    let stem = "20261201-120000-abc1234";
    let jsonl = cut.join(format!("{stem}.jsonl"));
    let partial = cut.join(format!("{stem}.jsonl.partial"));
    std::fs::rename(&jsonl, &partial).unwrap();
    let w = whole.join(format!("{stem}.jsonl")).display().to_string();
    let p = partial.display().to_string();
    let run_dir = cut.join(stem).display().to_string();
    let out = d.join("merged").display().to_string();
    for (label, args) in [
        (
            "compare of a .partial file",
            vec!["bench", "--compare", &w, &p],
        ),
        (
            "compare of the run folder of a partial result",
            vec!["bench", "--compare", &w, &run_dir],
        ),
        (
            "merge of a job left partial",
            vec![
                "merge",
                whole.to_str().unwrap(),
                cut.to_str().unwrap(),
                "--out",
                &out,
            ],
        ),
    ] {
        super::script::refused_in(
            &d,
            label,
            &args,
            "a partial result: the run was interrupted",
        );
    }
    assert!(!d.join("merged").exists(), "merge wrote something");
    let _ = std::fs::remove_dir_all(&d);
}

/// `--timeout 1` on a stand-in QEMU that spins for ever: killed at its CPU budget, exit 124,
/// nothing of the run left (it held before its fix: a check that it still does).
#[test]
fn a_one_second_timeout_ends_with_124_and_no_qemu_left() {
    let d = scratch("timeout-1");
    let fake = d.join("spinning-qemu");
    std::fs::write(&fake, "#!/bin/sh\nwhile :; do :; done\n").unwrap();
    std::fs::set_permissions(&fake, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let tag = format!("{}-timeout", std::process::id());
    let out = Command::new(repo_root().join("qemu-run.sh"))
        .args(["--qemu", &fake.display().to_string()])
        .args(["--suite", "test", "--timeout", "1"])
        .env(TAG, &tag)
        .output()
        .unwrap();
    let all = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(124), "{all}");
    assert!(all.contains("timed out"), "{all}");
    let left = tagged(&tag);
    assert!(left.is_empty(), "left running: {left:?}");
    let _ = std::fs::remove_dir_all(&d);
}
