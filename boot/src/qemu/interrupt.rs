//! Interrupted runs: SIGINT, SIGTERM or SIGHUP to the runner (a shell's
//! Ctrl-C, a CI job's cancel, `timeout`) stops every QEMU it started, says so in one line and
//! ends the run with status 128 + the signal (130, 143, 129); results not yet whole keep their
//! `.partial` name (`partial_path`), which compare and merge refuse.
//!
//! Every QEMU runs in its own process group (a Ctrl-C reaches the runner alone, which decides)
//! with `PR_SET_PDEATHSIG` set to SIGKILL (a runner killed by SIGKILL, which no handler sees,
//! still takes its QEMUs with it). The handler only records the signal; a watcher thread sees
//! it, kills the registered QEMUs, waits until they are gone, marks their `--log` files as cut
//! short, and exits.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The signal received (0: none yet).
static SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The running QEMUs: process id and `--log` file.
static CHILDREN: Mutex<Vec<(u32, Option<PathBuf>)>> = Mutex::new(Vec::new());

/// The running GNU parallels of a sweep: asked to stop (two SIGTERMs: the first stops new jobs,
/// the second sends its jobs SIGTERM, and each job's runner then stops its own QEMU).
static PARALLELS: Mutex<Vec<u32>> = Mutex::new(Vec::new());

/// What a result file is called while it is written; renamed to its own name once whole.
pub const PARTIAL_SUFFIX: &str = ".partial";

/// The signals that end a run, with their names.
const SIGNALS: [(libc::c_int, &str); 3] = [
    (libc::SIGINT, "SIGINT"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGHUP, "SIGHUP"),
];

extern "C" fn on_signal(sig: libc::c_int) {
    // Only an atomic store: async-signal-safe. The first signal wins.
    let _ = SIGNAL.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst);
}

/// Installs the handlers and starts the watcher (once, at the start of `main`).
pub fn install() {
    for (sig, _) in SIGNALS {
        // SAFETY: a zeroed sigaction is a valid "no flags, empty mask" value; `on_signal` is
        // an `extern "C" fn(c_int)` that only stores into an atomic (async-signal-safe), and
        // `sa_sigaction` holds a plain handler when SA_SIGINFO is not set.
        unsafe {
            let mut act: libc::sigaction = std::mem::zeroed();
            act.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            act.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut act.sa_mask);
            libc::sigaction(sig, &act, std::ptr::null_mut());
        }
    }
    std::thread::spawn(|| loop {
        let sig = SIGNAL.load(Ordering::SeqCst);
        if sig != 0 {
            stop(sig);
        }
        std::thread::sleep(Duration::from_millis(20));
    });
}

/// The exit status of a run ended by `sig`: 128 + its number, as a shell reports it.
pub fn status_of(sig: i32) -> i32 {
    128 + sig
}

/// The name of `sig` (`SIGINT`), or `signal N`.
pub fn name_of(sig: i32) -> String {
    SIGNALS
        .iter()
        .find(|(s, _)| *s == sig)
        .map_or_else(|| format!("signal {sig}"), |(_, n)| n.to_string())
}

/// The interruption line: what was stopped and what is left.
pub fn message(sig: i32, stopped: usize) -> String {
    format!(
        "numalab: interrupted by {}: {stopped} QEMU process{} stopped; no result of this run \
         was completed (an unfinished result file keeps its {PARTIAL_SUFFIX} name); exit \
         status {}",
        name_of(sig),
        if stopped == 1 { "" } else { "es" },
        status_of(sig)
    )
}

/// Kills every registered QEMU, waits (at most 5 s) until each is gone, marks their logs and
/// exits with `status_of(sig)`.
fn stop(sig: i32) -> ! {
    let parallels: Vec<u32> = PARALLELS.lock().unwrap_or_else(|e| e.into_inner()).clone();
    // Every process under each parallel (its jobs' shells, runners and QEMUs), waited for below:
    // parallel may be gone before its jobs' runners have stopped their QEMUs.
    let under: Vec<u32> = parallels.iter().flat_map(|p| descendants(*p)).collect();
    for _ in 0..2 {
        for pid in &parallels {
            // SAFETY: kill(2) on a GNU parallel this runner started and is waiting for (it is
            // registered until reaped: `ParallelRegistered`).
            unsafe {
                libc::kill(*pid as libc::pid_t, libc::SIGTERM);
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Its jobs' runners stop their QEMUs at once; parallel waits up to 200 ms per job first.
    let deadline = Instant::now() + Duration::from_secs(30);
    while parallels.iter().chain(&under).any(|pid| alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    let children: Vec<(u32, Option<PathBuf>)> =
        CHILDREN.lock().unwrap_or_else(|e| e.into_inner()).clone();
    for (pid, _) in &children {
        // SAFETY: kill(2) on a QEMU this runner started; it stays registered until `run` has
        // reaped it and returns (while a signal is pending `run` reaps nothing:
        // `wait_if_requested`), so the id is not another process's. SIGKILL cannot be caught.
        unsafe {
            libc::kill(*pid as libc::pid_t, libc::SIGKILL);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while children.iter().any(|(pid, _)| alive(*pid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    for log in children.iter().filter_map(|(_, l)| l.as_ref()) {
        mark_log(log, sig);
    }
    eprintln!();
    if !parallels.is_empty() {
        eprintln!(
            "numalab: interrupted by {}: the sweep's running jobs were stopped",
            name_of(sig)
        );
    }
    eprintln!("{}", message(sig, children.len()));
    std::process::exit(status_of(sig));
}

/// The processes below `pid` (children, their children, ...), from /proc's parent ids.
fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let child: u32 = e.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            // Field 4, the parent's id, is the second after the command name's last ')'.
            let ppid = stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?;
            Some((child, ppid.parse().ok()?))
        })
        .collect();
    let mut found = vec![pid];
    let mut i = 0;
    while i < found.len() {
        let p = found[i];
        found.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    found.remove(0);
    found
}

/// Whether process `pid` still runs (a zombie, killed and waiting to be reaped, does not).
fn alive(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat[i + 1..].split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X"),
        Err(_) => false,
    }
}

/// Appends the line that says a `--log` file is cut short.
fn mark_log(log: &Path, sig: i32) {
    use std::io::Write;
    if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(log) {
        let _ = writeln!(
            f,
            "\nnumalab: interrupted by {}: QEMU was stopped; this log is cut short",
            name_of(sig)
        );
    }
}

/// Makes `cmd` start in its own process group and die with the runner (PR_SET_PDEATHSIG,
/// SIGKILL); for QEMU.
pub fn guard(cmd: &mut Command) {
    // SAFETY: getpid(2) cannot fail.
    let parent = unsafe { libc::getpid() };
    cmd.process_group(0);
    // SAFETY: the closure runs in the child between fork and exec and calls only
    // async-signal-safe functions (prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // The runner died before prctl took effect: go too.
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

/// A running QEMU, known to the watcher until dropped.
pub struct Registered(u32);

/// Registers QEMU `pid` (and its `--log`) so that a signal stops it (one started after the
/// watcher looked dies with the runner, `guard`).
pub fn register(pid: u32, log: Option<PathBuf>) -> Registered {
    CHILDREN
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push((pid, log));
    Registered(pid)
}

impl Drop for Registered {
    fn drop(&mut self) {
        CHILDREN
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(p, _)| *p != self.0);
    }
}

/// A running GNU parallel, known to the watcher until dropped.
pub struct ParallelRegistered(u32);

/// Registers GNU parallel `pid` (a sweep's jobs): a signal stops its jobs and waits for it.
pub fn register_parallel(pid: u32) -> ParallelRegistered {
    PARALLELS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(pid);
    ParallelRegistered(pid)
}

impl Drop for ParallelRegistered {
    fn drop(&mut self) {
        PARALLELS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|p| *p != self.0);
    }
}

/// Whether a signal asked the run to stop.
pub fn requested() -> bool {
    SIGNAL.load(Ordering::SeqCst) != 0
}

/// Waits for the watcher to end the process when a signal came (so that no boot is reported
/// or started meanwhile); returns at once otherwise.
pub fn wait_if_requested() {
    while requested() {
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// `path` with `.partial` appended: where a result file is written until it is whole.
pub fn partial_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(PARTIAL_SUFFIX);
    PathBuf::from(name)
}

/// Why `path` cannot be read as a whole result: its name ends in `.partial` (a run interrupted
/// while writing it). None: it may be read.
pub fn partial_problem(path: &Path) -> Option<String> {
    path.file_name()
        .is_some_and(|n| n.to_string_lossy().ends_with(PARTIAL_SUFFIX))
        .then(|| {
            format!(
                "{}: a partial result: the run was interrupted before this file was whole \
                 (a whole one has no {PARTIAL_SUFFIX} suffix); run it again",
                path.display()
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_and_names_follow_the_shell() {
        assert_eq!(status_of(libc::SIGINT), 130);
        assert_eq!(status_of(libc::SIGTERM), 143);
        assert_eq!(name_of(libc::SIGHUP), "SIGHUP");
        assert!(message(libc::SIGINT, 1).contains("1 QEMU process stopped"));
        assert!(message(libc::SIGINT, 1).ends_with("exit status 130"));
    }

    #[test]
    fn partial_names_are_told_apart() {
        let p = partial_path(Path::new("/r/20261201-120000-abc.jsonl"));
        assert_eq!(p, Path::new("/r/20261201-120000-abc.jsonl.partial"));
        assert!(partial_problem(&p).unwrap().contains("a partial result"));
        assert_eq!(partial_problem(Path::new("/r/a.jsonl")), None);
    }

    #[test]
    fn descendants_are_found_through_the_parent_ids() {
        let mut child = Command::new("sh")
            .args(["-c", "sleep 30 & wait"])
            .spawn()
            .unwrap();
        // The shell's sleep shows up once the shell has started it (a bound, not a guess).
        let mut under = Vec::new();
        for _ in 0..500 {
            under = descendants(child.id());
            if !under.is_empty() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(descendants(std::process::id()).contains(&child.id()));
        assert_eq!(under.len(), 1, "the shell's sleep: {under:?}");
        for pid in under.iter().chain([&child.id()]) {
            // SAFETY: kill(2) on this test's own shell and its sleep, not yet reaped.
            unsafe {
                libc::kill(*pid as libc::pid_t, libc::SIGKILL);
            }
        }
        let _ = child.wait();
    }

    #[test]
    fn a_guarded_child_runs_in_its_own_process_group() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "ps -o pgid= -p $$"]);
        guard(&mut cmd);
        let out = cmd.output().unwrap();
        let pgid: i32 = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
        // SAFETY: getpgrp(2) cannot fail.
        assert_ne!(pgid, unsafe { libc::getpgrp() });
    }
}
