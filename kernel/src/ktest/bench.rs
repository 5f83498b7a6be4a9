//! The kernel side of the BENCH output contract: clock, records, progress lines, smoke scaling.
//!
//! Every measurement is one serial line `BENCH {json}` (numalab_algo::bench::Record::line())
//! with `cpus` (CPUs taking part), `nodes` (NUMA nodes of the machine) and `clock` filled in
//! here. Its bench and case must be in the experiment catalog (numalab_algo::bench::catalog,
//! re-exported as `catalog`): `emit` refuses any other pair, prints a warning instead of the
//! line, and the runner fails the test that emitted it (`refused`). The clock is what the
//! host told the kernel: boot's `--icount` adds the kernel option `bench.clock=icount` (rdtsc
//! then counts executed guest instructions, exact and repeatable);
//! otherwise it is `tsc` (host time under TCG, a trend only). The kernel does not try to detect
//! icount itself: under TCG a TSC that counts instructions cannot be told reliably from a slow
//! host TSC.
//!
//! `bench=NAME[,NAME]` selects experiments (empty: all; `ktest::run` asks `selected`),
//! `bench.smoke=1` runs short variants (`scaled`). Long loops call `progress`, which prints
//! `# bench progress: EXPERIMENT CASE PERCENT%` at most once per second of guest time.
//! Experiments meant for the multi-CPU boot skip themselves in the one-CPU icount boot
//! (`needs_cpus`), and instruction-count experiments emit only when it is one
//! (`instruction_boot`: icount clock and one CPU online). Under icount with several CPUs online
//! (the host's `det` boot: QEMU runs the vCPUs round-robin on one host thread) the multi-CPU
//! experiments run, and every count they print is a function of the code alone.
//! `bench.rep=N` (set by the host for its N-th repetition) reverses the case order of
//! multi-case experiments on odd repetitions (`rep_order`).
//!
//! A leaf like the rest of ktest: serial, options and arch only; the node count comes from the
//! runner's context (`set_machine`).

use super::{Ctx, TestError, TestResult};
use core::sync::atomic::{AtomicU32, Ordering::Relaxed};
pub use numalab_algo::bench::catalog;
pub use numalab_algo::bench::plan::Selection;
use numalab_algo::bench::plan::{is_case_name, is_snake_name, smoke_scaled, ProgressLimiter};
use numalab_algo::bench::{Clock, Record};
use spin::{Mutex, Once};

/// Guest ticks per second under `-icount shift=0`: one instruction advances virtual time 1 ns.
const ICOUNT_TICKS_PER_SEC: u64 = 1_000_000_000;
/// Assumed TSC rate when calibration failed (arch::tsc_hz() is 0).
const TSC_HZ_ASSUMED: u64 = 3_000_000_000;

static SELECTION: Once<Selection> = Once::new();
/// The first record the catalog refused since the running test started, and how many.
static REFUSED: Mutex<(Option<alloc::string::String>, u32)> = Mutex::new((None, 0));
static PROGRESS: Mutex<Option<ProgressLimiter>> = Mutex::new(None);
/// NUMA nodes of the machine, for the records' `nodes` field (set by `ktest::run`).
static NR_NODES: AtomicU32 = AtomicU32::new(1);
/// CPUs online when the tests started (set by `ktest::run`).
static CPUS_ONLINE: AtomicU32 = AtomicU32::new(1);

/// Remembers the machine's node count for `record` and the CPUs online for
/// `instruction_boot` (called by the runner before any test).
pub(super) fn set_machine(nr_nodes: usize, cpus_online: usize) {
    NR_NODES.store(nr_nodes as u32, Relaxed);
    CPUS_ONLINE.store(cpus_online as u32, Relaxed);
}

/// The experiments `bench=` selects.
pub fn selection() -> &'static Selection {
    SELECTION.call_once(|| crate::options::load().get(&crate::options::BENCH))
}

/// Whether `bench=` selects the experiment `name`.
pub fn selected(name: &str) -> bool {
    selection().includes(name)
}

/// How this boot's tick counts are to be read (`bench.clock`, set by the host).
pub fn clock() -> Clock {
    crate::options::load().get(&crate::options::BENCH_CLOCK)
}

/// True in the host's one-CPU `--icount` boot: instruction metrics run, contention ones skip.
/// Under icount with several CPUs online (the host's deterministic `det` boot) it is false:
/// the multi-CPU experiments run there, with ticks counted in instructions.
pub fn instruction_boot() -> bool {
    clock() == Clock::Icount && CPUS_ONLINE.load(Relaxed) <= 1
}

/// CPUs online when the tests started.
pub fn cpus_online() -> u32 {
    CPUS_ONLINE.load(Relaxed)
}

/// This boot's repetition number (`bench.rep`, 0 unless the host repeats the boot).
pub fn rep() -> u64 {
    crate::options::load().get(&crate::options::BENCH_REP)
}

/// `cases` in this repetition's order: as given on even repetitions, reversed on odd ones, so
/// that over repetitions no case always runs first (on a warm or cold machine).
pub fn rep_order<T>(cases: impl IntoIterator<Item = T>) -> alloc::vec::Vec<T> {
    let mut v: alloc::vec::Vec<T> = cases.into_iter().collect();
    if rep() % 2 == 1 {
        v.reverse();
    }
    v
}

/// True for the short variants (`bench.smoke=1`).
pub fn smoke() -> bool {
    crate::options::load().get(&crate::options::BENCH_SMOKE)
}

/// `full` iterations, or a tenth of it (at least `floor`) in a smoke run.
pub fn scaled(full: u64, floor: u64) -> u64 {
    smoke_scaled(full, smoke(), floor)
}

/// `full` in a normal run, `smoke` under `bench.smoke=1`.
pub fn pick(full: u64, smoke_value: u64) -> u64 {
    if smoke() {
        smoke_value
    } else {
        full
    }
}

/// NUMA nodes of the machine (the `nodes` field).
pub fn nr_nodes() -> u32 {
    NR_NODES.load(Relaxed)
}

/// The time-stamp counter (instructions under icount).
#[inline(always)]
pub fn now() -> u64 {
    crate::arch::rdtsc()
}

/// Ticks of `now()` per second of guest time.
pub fn ticks_per_sec() -> u64 {
    match clock() {
        Clock::Icount => ICOUNT_TICKS_PER_SEC,
        Clock::Tsc => match crate::arch::tsc_hz() {
            0 => TSC_HZ_ASSUMED,
            hz => hz,
        },
    }
}

/// Prints `record` as a BENCH line. Names that break the contract (not lower_snake_case, or a
/// non-finite value) are printed anyway, after a warning, so the host collector reports them.
/// A bench/case pair the experiment catalog does not list is refused: a warning instead of
/// the line, and the test that emitted it fails (`refused`).
pub fn emit(record: &Record) {
    if let Err(why) = catalog::check(record.bench, record.case) {
        crate::warn!("{}", why);
        let mut r = REFUSED.lock();
        r.1 += 1;
        r.0.get_or_insert(why);
        return;
    }
    if !is_snake_name(record.bench) || !is_case_name(record.case) || !is_snake_name(record.metric) {
        crate::warn!(
            "bench: names must be lower_snake_case: bench '{}' case '{}' metric '{}'",
            record.bench,
            record.case,
            record.metric
        );
    }
    if !record.value.is_finite() {
        crate::warn!(
            "bench: {} {} {} is not a finite number",
            record.bench,
            record.case,
            record.metric
        );
    }
    crate::println!("{}", record.line());
}

/// `result` of a test, failed when it emitted a record the catalog refused (the message
/// names the first one); resets the refusals for the next test. Called by the runner.
pub(super) fn refused(result: TestResult) -> TestResult {
    let (first, count) = core::mem::take(&mut *REFUSED.lock());
    let Some(why) = first else {
        return result;
    };
    let why = if count > 1 {
        alloc::format!("{why} (and {} more refused records)", count - 1)
    } else {
        why
    };
    match result {
        Err(TestError::Fail(reason)) => Err(TestError::Fail(alloc::format!("{reason}; {why}"))),
        _ => Err(TestError::Fail(why)),
    }
}

/// Emits one measurement of `cpus` CPUs with this machine's node count and this boot's clock.
pub fn record(bench: &str, case: &str, metric: &str, value: f64, unit: &str, cpus: u32) {
    emit(&Record {
        bench,
        case,
        metric,
        value,
        unit,
        cpus,
        nodes: nr_nodes(),
        clock: clock(),
    });
}

/// Prints `# bench progress: EXPERIMENT CASE PERCENT%`, at most once per second of guest time
/// (calls in between return without printing). Never call it with an allocator lock held.
pub fn progress(experiment: &str, case: &str, percent: u32) {
    let now_ticks = now();
    let allowed = {
        let mut limiter = PROGRESS.lock();
        limiter
            .get_or_insert_with(|| ProgressLimiter::new(ticks_per_sec()))
            .allow(now_ticks)
    };
    if allowed {
        crate::println!(
            "{}: {} {} {}%",
            numalab_algo::wire::bench::PROGRESS,
            experiment,
            case,
            percent.min(100)
        );
    }
}

/// `Err(Skip)` in the one-CPU instruction boot (contention experiments run in the multi-CPU
/// boot), or when fewer than `min_cpus` CPUs are online.
pub fn needs_cpus(ctx: &Ctx, experiment: &str, min_cpus: usize) -> TestResult {
    if instruction_boot() {
        return Err(TestError::Skip(alloc::format!(
            "{experiment}: contention experiment, runs in the multi-CPU (tsc) boot"
        )));
    }
    if ctx.cpus_online < min_cpus {
        return Err(TestError::Skip(alloc::format!(
            "{experiment}: needs {min_cpus} CPUs online, {} are",
            ctx.cpus_online
        )));
    }
    Ok(())
}
