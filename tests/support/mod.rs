//! Shared helpers for the host tests: boot a configuration, and assert on what the kernel said.
//!
//! Every QEMU test lives in one test binary (tests/qemu.rs), so one process sees every boot the
//! selected tests ask for and can plan them:
//! - the kernel and each firmware's image are built once per process ([`image`]);
//! - a configuration that several tests need is booted once and its outcome shared
//!   ([`shared`]; [`shapes`] names the machine shapes the test files check together);
//! - at most `NUMALAB_QEMU_JOBS` QEMUs run at once (default: the host's cores), and when a slot
//!   frees, the waiting boot with the largest estimated cost gets it, so the long boots start
//!   first and the short ones fill the gaps. Run with many test threads (qemu-run.sh sets
//!   `RUST_TEST_THREADS`) so that every selected test's boot is waiting from the start.

pub mod elf;
pub mod shapes;

pub use numalab_boot::{Firmware, Outcome, RunConfig, Verdict};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// A quiet run of the `test` suite on `topology` with a timeout suitable for 2 host cores.
pub fn config(topology: &str) -> RunConfig {
    let mut c = RunConfig::new(topology, numalab_algo::options::Suite::Test);
    c.host.timeout = Duration::from_secs(240);
    c
}

/// The kernel image for `firmware`, built once per test process.
pub fn image(firmware: Firmware) -> PathBuf {
    static KERNEL: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    static IMAGES: Mutex<Vec<(&str, PathBuf)>> = Mutex::new(Vec::new());
    let kernel = KERNEL
        .get_or_init(numalab_boot::build::image::build_kernel)
        .as_ref()
        .unwrap_or_else(|e| panic!("build failed: {e}"));
    let mut images = IMAGES.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, path)) = images.iter().find(|(n, _)| *n == firmware.name()) {
        return path.clone();
    }
    let path = numalab_boot::build::image::build_image(kernel, firmware)
        .unwrap_or_else(|e| panic!("build failed: {e}"));
    images.push((firmware.name(), path.clone()));
    path
}

/// Builds (once) and boots `config`, waiting for a QEMU slot; a build failure fails the test.
pub fn boot(config: &RunConfig) -> Outcome {
    let img = image(config.machine.firmware);
    let outcome = with_qemu_slot(cost(config), || numalab_boot::qemu::boot(config, &img));
    // Shown with --nocapture (and on failure): where the time of a test run goes.
    println!(
        "numalab: boot took {:.1} s (estimated cost {}): {} {} {}",
        outcome.elapsed.as_secs_f64(),
        cost(config),
        config.machine.firmware.name(),
        config.machine.topology.name,
        config.kernel_cmdline()
    );
    outcome
}

/// Boots and requires a pass; on failure the panic message carries the command and whole log.
pub fn boot_pass(config: &RunConfig) -> Outcome {
    let outcome = boot(config);
    assert!(outcome.passed(), "{}", outcome.failure_report());
    outcome
}

/// The outcome of `config`, booted once per test process however many tests ask for it.
/// Tests that ask while it runs wait for it.
pub fn shared(config: &RunConfig) -> Arc<Outcome> {
    /// One cell per configuration (its Debug text), filled by the first test that asks.
    type Cells = HashMap<String, Arc<OnceLock<Arc<Outcome>>>>;
    static BOOTS: Mutex<Option<Cells>> = Mutex::new(None);
    let cell = {
        let mut boots = BOOTS.lock().unwrap_or_else(|e| e.into_inner());
        Arc::clone(
            boots
                .get_or_insert_with(HashMap::new)
                .entry(format!("{config:?}"))
                .or_default(),
        )
    };
    Arc::clone(cell.get_or_init(|| Arc::new(boot(config))))
}

/// [`shared`], requiring a pass.
pub fn shared_pass(config: &RunConfig) -> Arc<Outcome> {
    let outcome = shared(config);
    assert!(outcome.passed(), "{}", outcome.failure_report());
    outcome
}

/// Writes `bytes` (an ACPI table, from numalab_algo's builders) to a temporary file for QEMU's
/// `-acpitable file=`; `name` must be unique among the tests of one process.
pub fn acpi_table_file(name: &str, bytes: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("numalab-{}-{name}.aml", std::process::id()));
    std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// The lines of the log that start with `prefix`.
pub fn lines_with<'a>(outcome: &'a Outcome, prefix: &str) -> Vec<&'a str> {
    outcome
        .log
        .lines()
        .filter(|l| l.starts_with(prefix))
        .collect()
}

/// The warning lines the kernel printed while it booted, before the first test started
/// (topology and bring-up warnings; the tests' own provoked warnings come later).
pub fn boot_warnings(log: &str) -> Vec<&str> {
    log.lines()
        .take_while(|l| !l.starts_with("KTAP version"))
        .filter(|l| l.starts_with("numalab: warning: "))
        .collect()
}

/// The machine's vCPU count: `-smp` among the extra QEMU arguments, else the preset's.
fn vcpus(config: &RunConfig) -> u64 {
    let from_extra = config
        .host
        .extra
        .iter()
        .position(|a| a == "-smp")
        .and_then(|i| config.host.extra.get(i + 1))
        .and_then(|v| v.split(',').next()?.parse().ok());
    from_extra.unwrap_or(config.machine.smp.unwrap_or(config.machine.topology.cpus)) as u64
}

/// A rough relative estimate of a boot's cost, used only to start the longest boots first:
/// whole-suite boots and many vCPUs first (BIOS and UEFI boots now take about as long).
pub fn cost(config: &RunConfig) -> u64 {
    let filtered = config
        .kernel
        .options
        .is_set(&numalab_algo::options::run::FILTER);
    let whole_suite = !filtered && config.kernel.suite != numalab_algo::options::Suite::Bench;
    let firmware = if config.machine.firmware == Firmware::Uefi {
        20
    } else {
        5
    };
    let per_cpu = if whole_suite { 8 } else { 1 };
    firmware + vcpus(config) * per_cpu + if whole_suite { 60 } else { 0 }
}

/// A counting semaphore whose waiters are served largest cost first (ties: first come).
struct Gate {
    state: Mutex<GateState>,
    cv: Condvar,
    /// No slot is given before this: the tests that start together all queue up first.
    opens: Instant,
}

struct GateState {
    free: usize,
    next_ticket: u64,
    /// (cost, ticket) of every waiter.
    waiting: Vec<(u64, u64)>,
}

fn gate() -> &'static Gate {
    static GATE: OnceLock<Gate> = OnceLock::new();
    GATE.get_or_init(|| Gate {
        state: Mutex::new(GateState {
            free: qemu_jobs(),
            next_ticket: 0,
            waiting: Vec::new(),
        }),
        cv: Condvar::new(),
        opens: Instant::now() + Duration::from_millis(500),
    })
}

/// How many QEMUs may run at once: `NUMALAB_QEMU_JOBS`, else the host's cores.
pub fn qemu_jobs() -> usize {
    std::env::var("NUMALAB_QEMU_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
}

/// Runs `f` (which boots QEMU, one at a time) once a QEMU slot is free and no waiting boot
/// is estimated to cost more.
pub fn with_qemu_slot<T>(cost: u64, f: impl FnOnce() -> T) -> T {
    let g = gate();
    {
        let mut s = g.state.lock().unwrap_or_else(|e| e.into_inner());
        let ticket = s.next_ticket;
        s.next_ticket += 1;
        let me = (cost, ticket);
        s.waiting.push(me);
        // Largest cost first; among equal costs the oldest ticket.
        let first = |w: &[(u64, u64)]| w.iter().copied().max_by_key(|&(c, t)| (c, u64::MAX - t));
        loop {
            let now = Instant::now();
            if now < g.opens {
                s =
                    g.cv.wait_timeout(s, g.opens - now)
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
            } else if s.free > 0 && first(&s.waiting) == Some(me) {
                break;
            } else {
                s = g.cv.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }
        s.waiting.retain(|&w| w != me);
        s.free -= 1;
        // Another slot may still be free for the next waiter.
        g.cv.notify_all();
    }
    struct Release;
    impl Drop for Release {
        fn drop(&mut self) {
            let g = gate();
            g.state.lock().unwrap_or_else(|e| e.into_inner()).free += 1;
            g.cv.notify_all();
        }
    }
    let _release = Release;
    f()
}

/// Runs `qemu-run.sh ARGS` and returns its exit status, stdout and stderr.
pub fn qemu_run_sh(args: &[&str]) -> (Option<i32>, String, String) {
    let root = numalab_boot::build::image::repo_root();
    let out = std::process::Command::new(root.join("qemu-run.sh"))
        .args(args)
        .output()
        .expect("run qemu-run.sh");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// `./qemu-run.sh bench WORDS` run in this process with a 600 s limit and a QEMU slot of four
/// boots' cost: its numalab boots, for the tests that read their records and trace reports
/// (s14_trace.rs, s15_costs.rs).
pub fn bench_boots(words: &str) -> Vec<numalab_boot::run::BootRun> {
    let words: Vec<String> = words.split_whitespace().map(String::from).collect();
    let mut args = numalab_boot::run::parse(&words).expect("bench arguments parse");
    args.base.host.timeout = Duration::from_secs(600);
    let img = image(args.base.machine.firmware);
    let slot = 4 * cost(&args.base);
    with_qemu_slot(slot, || numalab_boot::run::run_boots(&args, &img)).expect("boots start")
}
