//! QEMU: the command line for a run, starting it with a timeout, capturing the serial console,
//! and decoding how it ended. The only place in numalab that knows QEMU's arguments.

use crate::wire::ktap::{Summary, WarningLine, WarningWatch};
use crate::wire::BootLog;
use numalab_algo::wire::bench::BenchLine;
use numalab_algo::wire::console::ConsoleLine;
use numalab_algo::wire::ktap::KtapLine;
use numalab_algo::wire::{classify, Line};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use stderr::StderrWatch;
use time_limit::Limit;

pub mod accel;
mod config;
pub mod failure;
pub mod guest_memory;
pub mod host_numa;
pub mod host_pin;
pub mod interrupt;
mod kvm;
mod linux_boot;
pub mod machine;
pub mod plugin;
pub mod presets;
pub mod serial_capture;
pub mod stderr;
pub mod time_limit;
pub use config::{parse_mem_mib, HostSpec, KernelSpec, MachineSpec, OutputSpec, RunConfig};
pub use linux_boot::LinuxBoot;

/// Exit status QEMU reports when the kernel wrote 0x10 to isa-debug-exit.
pub const STATUS_SUCCESS: i32 = 33;
/// Exit status QEMU reports when the kernel wrote 0x11 (test failure, panic, exception).
pub const STATUS_FAILURE: i32 = 35;

/// How a run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Status 33 and at least one test ran.
    Pass,
    /// Status 35: a test failed, or the kernel panicked or faulted.
    Fail,
    /// Status 33 but no KTAP result line: nothing was tested.
    NoTests,
    /// Status 33 but the KTAP log is not whole (`Summary::structure_errors`: a suite whose
    /// plan its results do not fill, no totals): the output was cut short, so "passed"
    /// cannot be told.
    Incomplete(Vec<String>),
    /// Status 33, but the log has this many watched warnings (an `invalid free`: a leaked
    /// block) that no test declared it would provoke (`BootLog::unexpected_warnings`).
    UnexpectedWarnings(usize),
    /// QEMU itself failed (status 1, or could not start).
    QemuError(String),
    /// Killed after the timeout.
    Timeout,
    /// The guest ran out of memory (guest_memory.rs): the kernel's `numalab: out of memory`
    /// line (status 37), or the bootloader's failure to map the machine (QEMU stopped then).
    OutOfMemory(String),
    /// Any other status.
    Unexpected(i32),
}

/// The result of one boot.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub verdict: Verdict,
    pub command: String,
    /// The serial log as it came (shown on failure, saved).
    pub log: String,
    /// The serial log read once: KTAP, warnings (the watched ones no test declared, see
    /// `Verdict::UnexpectedWarnings`, and those the tests declared), records, blocks.
    pub boot_log: BootLog,
    pub stderr: String,
    pub elapsed: Duration,
    /// For a run killed at its `--timeout`: the host's load when it was killed (the 1-minute
    /// load average and the host's cores), so a report tells a slow host from a hung kernel.
    pub host_load_at_timeout: Option<String>,
    /// For a run killed at its limit: QEMU's CPU time then and the limit (time_limit.rs);
    /// None where /proc could not be read (the limit was wall time).
    pub cpu_at_timeout: Option<(Duration, Limit)>,
}

impl Outcome {
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Pass
    }
}

fn shell_quote(arg: &str) -> String {
    if arg
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "-_=,./:+".contains(c))
    {
        arg.to_string()
    } else {
        format!("'{}'", arg.replace('\'', "'\\''"))
    }
}

/// Limits how many QEMUs this process runs at once (`NUMALAB_QEMU_JOBS`, default the host's
/// cores: every vCPU is a host thread).
struct Slots {
    free: Mutex<usize>,
    cv: Condvar,
}

static SLOTS: std::sync::OnceLock<Slots> = std::sync::OnceLock::new();

fn slots() -> &'static Slots {
    SLOTS.get_or_init(|| {
        let n = std::env::var("NUMALAB_QEMU_JOBS")
            .ok()
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()));
        Slots {
            free: Mutex::new(n),
            cv: Condvar::new(),
        }
    })
}

struct SlotGuard;

impl SlotGuard {
    fn take() -> SlotGuard {
        let s = slots();
        let mut free = s.free.lock().unwrap_or_else(|e| e.into_inner());
        while *free == 0 {
            free = s.cv.wait(free).unwrap_or_else(|e| e.into_inner());
        }
        *free -= 1;
        SlotGuard
    }
}

impl Drop for SlotGuard {
    fn drop(&mut self) {
        let s = slots();
        *s.free.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        s.cv.notify_one();
    }
}

/// Boots `image` as `config` says and waits for the end (or the timeout).
pub fn boot(config: &RunConfig, image: &Path) -> Outcome {
    let qemu = config.qemu_binary();
    let start = Instant::now();
    let fail = |verdict: Verdict, command: String| Outcome {
        verdict,
        command,
        log: String::new(),
        boot_log: BootLog::default(),
        stderr: String::new(),
        elapsed: start.elapsed(),
        host_load_at_timeout: None,
        cpu_at_timeout: None,
    };
    let mut args = match config.qemu_args(image) {
        Ok(a) => a,
        Err(e) => return fail(Verdict::QemuError(e), String::new()),
    };
    let pinning = config.prepare_pinning(&mut args);
    let command = std::iter::once(qemu.display().to_string())
        .chain(args.iter().cloned())
        .map(|a| shell_quote(&a))
        .collect::<Vec<_>>()
        .join(" ");
    let _slot = SlotGuard::take();
    // Interrupted (a signal came): start nothing more; the watcher ends the run.
    crate::qemu::interrupt::wait_if_requested();
    let (serial, follower, qemu_exited) = match serial_capture::open() {
        Ok(c) => c,
        Err(e) => {
            let why = format!("cannot create the serial console's capture file: {e}");
            return fail(Verdict::QemuError(why), command);
        }
    };
    let mut cmd = Command::new(&qemu);
    // Its own process group, and killed with the runner (interrupt.rs).
    crate::qemu::interrupt::guard(&mut cmd);
    let spawned = cmd
        .args(&args)
        .stdin(Stdio::null())
        .stdout(serial)
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let why = if e.kind() == std::io::ErrorKind::NotFound {
                format!(
                    "QEMU not found: {} (apt-get install qemu-system-x86, or --qemu PATH)",
                    qemu.display()
                )
            } else {
                format!("cannot start {}: {e}", qemu.display())
            };
            return fail(Verdict::QemuError(why), command);
        }
    };
    let _registered = crate::qemu::interrupt::register(child.id(), config.output.log.clone());
    if let Some((qmp, placement)) = pinning {
        crate::qemu::host_pin::spawn(qmp, placement);
    }
    let log = Arc::new(Mutex::new(String::new()));
    let stderr = child.stderr.take().expect("piped stderr");
    // Emptied, then written in append mode: the line an interruption adds (interrupt.rs)
    // is never overwritten by the last lines read.
    let mut log_file = config.output.log.as_ref().and_then(|p| {
        std::fs::File::create(p).ok()?;
        std::fs::OpenOptions::new().append(true).open(p).ok()
    });
    let echo = config.output.echo;
    let echo_failures = config.output.echo_failures;
    let reader_log = Arc::clone(&log);
    // The bootloader halts for good after its panic: the boot is stopped on that line.
    let stuck = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let reader_stuck = Arc::clone(&stuck);
    let reader = std::thread::spawn(move || {
        let mut watch = WarningWatch::default();
        let mut saw_panic = false;
        follower.for_each_line(|raw| {
            let line = String::from_utf8_lossy(raw).replace('\r', "");
            // Echoing everything shows the console as it is; otherwise a warning a test
            // declared stays in the log (counted on the console) and the kernel's progress
            // reports feed the progress line.
            let read = classify(&line);
            let kind = watch.feed_line(&read);
            // The line after the bootloader's panic (its message) is read: stop the boot.
            if saw_panic {
                reader_stuck.store(true, std::sync::atomic::Ordering::Release);
            }
            saw_panic |= read == Line::Console(ConsoleLine::BootloaderPanic);
            let failure = match read {
                Line::Ktap(false, KtapLine::Result(r)) => !r.ok,
                Line::Console(ConsoleLine::Panic(_) | ConsoleLine::Exception(_)) => true,
                Line::Console(ConsoleLine::Warning(_)) => kind != WarningLine::Declared,
                _ => false,
            };
            if echo {
                crate::progress::println(&line);
            } else if let Line::Bench(BenchLine::Progress(text)) = read {
                crate::progress::kernel_says(text.trim_start_matches(':'));
            } else if echo_failures && failure {
                crate::progress::kernel_line(&line);
            }
            if let Some(f) = log_file.as_mut() {
                let _ = f.write_all(line.as_bytes());
            }
            reader_log
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push_str(&line);
        });
    });
    let mut stderr = StderrWatch::start(stderr, config.runs_on() == "kvm");
    let mut load_at_timeout = None;
    let threads = if config.host.icount {
        1
    } else {
        config.vcpus()
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let limit = Limit::new(config.host.timeout, threads, cores);
    let pid = child.id();
    let mut cpu_used = None;
    let status = loop {
        // A signal came: QEMU is being stopped; nothing of this boot is reported.
        crate::qemu::interrupt::wait_if_requested();
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) => {
                let stuck = stuck.load(std::sync::atomic::Ordering::Acquire);
                if stderr.guest_stopped() || stuck {
                    let _ = child.kill();
                    break child.wait().ok();
                }
                cpu_used = time_limit::process_cpu_time(pid);
                if limit.exceeded(start.elapsed(), cpu_used).is_some() {
                    load_at_timeout = Some(host_load());
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(_) => break None,
        }
    };
    crate::qemu::interrupt::wait_if_requested();
    qemu_exited.set();
    let _ = reader.join();
    let (stderr, kvm_stopped) = stderr.finish();
    let log = std::mem::take(&mut *log.lock().unwrap_or_else(|e| e.into_inner()));
    let boot_log = BootLog::parse(&log);
    let unexpected_warnings = boot_log.unexpected_warnings();
    let verdict = match kvm_stopped {
        Some(why) => Verdict::QemuError(why),
        None if stuck.load(std::sync::atomic::Ordering::Acquire) => {
            crate::qemu::guest_memory::out_of_memory_line(&boot_log)
                .map_or(Verdict::Fail, Verdict::OutOfMemory)
        }
        None if status.and_then(|s| s.code())
            == Some(crate::qemu::guest_memory::STATUS_OUT_OF_MEMORY) =>
        {
            Verdict::OutOfMemory(
                crate::qemu::guest_memory::out_of_memory_line(&boot_log)
                    .unwrap_or_else(|| "numalab: out of memory (no line said what)".into()),
            )
        }
        None => verdict_of(
            status.map(|s| s.code()),
            &boot_log.ktap,
            unexpected_warnings.len(),
            &stderr,
        ),
    };
    Outcome {
        verdict,
        command,
        log,
        boot_log,
        stderr,
        elapsed: start.elapsed(),
        cpu_at_timeout: load_at_timeout
            .as_ref()
            .and(cpu_used)
            .map(|cpu| (cpu, limit)),
        host_load_at_timeout: load_at_timeout,
    }
}

/// A boot's verdict from QEMU's exit (None: killed at the limit; Some(None): by a signal),
/// the parsed KTAP log, the watched warnings no test declared and QEMU's stderr.
pub fn verdict_of(
    code: Option<Option<i32>>,
    summary: &Summary,
    unexpected_warnings: usize,
    stderr: &str,
) -> Verdict {
    match code {
        None => Verdict::Timeout,
        Some(Some(STATUS_SUCCESS)) if summary.results.is_empty() => Verdict::NoTests,
        Some(Some(STATUS_SUCCESS)) if !summary.structure_errors().is_empty() => {
            Verdict::Incomplete(summary.structure_errors())
        }
        Some(Some(STATUS_SUCCESS)) if unexpected_warnings > 0 => {
            Verdict::UnexpectedWarnings(unexpected_warnings)
        }
        Some(Some(STATUS_SUCCESS)) => Verdict::Pass,
        Some(Some(STATUS_FAILURE)) => Verdict::Fail,
        Some(Some(1)) => Verdict::QemuError(format!("QEMU exited with 1: {}", stderr.trim())),
        Some(Some(code)) => Verdict::Unexpected(code),
        Some(None) => Verdict::Unexpected(-1),
    }
}

/// The host's 1-minute load average and its cores, e.g. `7.93 on 2 cores` (/proc/loadavg;
/// `unknown` where it cannot be read).
fn host_load() -> String {
    let load = std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().map(String::from))
        .unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{load} on {cores} cores")
}
