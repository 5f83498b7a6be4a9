//! Benchmarks: the kernel side of the BENCH output contract, and the seed experiments.
//!
//! Every measurement is one serial line `BENCH {json}` (numalab_algo::bench::Record::line())
//! with `cpus` (CPUs taking part), `nodes` (NUMA nodes of the machine) and `clock` filled in
//! here. The clock is what the host told the kernel: boot's `--icount` adds the kernel option
//! `bench.clock=icount` (rdtsc then counts executed guest instructions, exact and repeatable);
//! otherwise it is `tsc` (host time under TCG, a trend only). The kernel does not try to detect
//! icount itself: under TCG a TSC that counts instructions cannot be told reliably from a slow
//! host TSC.
//!
//! Each experiment is a `Kind::Bench` KTest whose name is the bench name. `bench=NAME[,NAME]`
//! selects experiments (empty: all; ktest::run asks `wanted`), `bench.smoke=1` runs short
//! variants (`scaled`). Long loops call `progress`, which prints
//! `# bench progress: EXPERIMENT CASE PERCENT%` at most once per second of guest time.
//! Experiments meant for the multi-CPU boot skip themselves in the one-CPU icount boot
//! (`instruction_boot`), and instruction-count experiments emit only when it is one.

mod memoryless_node;
mod numa_locality;
mod slabinfo_reader;
mod slub_cache;
mod slub_list_lock;
mod workload;

use crate::ktest::{KTest, Kind, TestError, TestResult};
use numalab_algo::bench::{Clock, Record};
use numalab_algo::bench_plan::{
    is_case_name, is_snake_name, smoke_scaled, ProgressLimiter, Selection,
};
use numalab_algo::options::Options;
use spin::{Mutex, Once};

/// Guest ticks per second under `-icount shift=0`: one instruction advances virtual time 1 ns.
const ICOUNT_TICKS_PER_SEC: u64 = 1_000_000_000;
/// Assumed TSC rate when calibration failed (arch::tsc_hz() is 0).
const TSC_HZ_ASSUMED: u64 = 3_000_000_000;

static SELECTION: Once<Selection> = Once::new();
static PROGRESS: Mutex<Option<ProgressLimiter>> = Mutex::new(None);

fn selection() -> &'static Selection {
    SELECTION.call_once(|| Selection::parse(crate::options::load().text("bench")))
}

/// How this boot's tick counts are to be read (`bench.clock`, set by the host).
pub fn clock() -> Clock {
    match crate::options::load().text("bench.clock") {
        "icount" => Clock::Icount,
        _ => Clock::Tsc,
    }
}

/// True in the host's one-CPU `--icount` boot: instruction metrics run, contention ones skip.
pub fn instruction_boot() -> bool {
    clock() == Clock::Icount
}

/// True for the short variants (`bench.smoke=1`).
pub fn smoke() -> bool {
    crate::options::load().bool("bench.smoke")
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

/// Whether `bench=` selects the experiment `name`.
pub fn selected(name: &str) -> bool {
    selection().includes(name)
}

/// Whether ktest::run should run `test`: every non-bench test, `bench.plan`, and the selected
/// experiments.
pub fn wanted(test: &KTest) -> bool {
    test.kind != Kind::Bench
        || (test.module == "bench" && test.name == "plan")
        || selected(test.name)
}

/// NUMA nodes of the machine (the `nodes` field).
pub fn nr_nodes() -> u32 {
    crate::topology::get().nr_nodes() as u32
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
pub fn emit(record: &Record) {
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
            "# bench progress: {} {} {}%",
            experiment,
            case,
            percent.min(100)
        );
    }
}

/// `Err(Skip)` in the one-CPU instruction boot (contention experiments run in the multi-CPU
/// boot), or when fewer than `min_cpus` CPUs are online.
pub fn needs_cpus(experiment: &str, min_cpus: usize) -> TestResult {
    if instruction_boot() {
        return Err(TestError::Skip(alloc::format!(
            "{experiment}: contention experiment, runs in the multi-CPU (tsc) boot"
        )));
    }
    let online = crate::percpu::nr_cpus_online();
    if online < min_cpus {
        return Err(TestError::Skip(alloc::format!(
            "{experiment}: needs {min_cpus} CPUs online, {online} are"
        )));
    }
    Ok(())
}

/// `bench.plan`: lists the registered experiments and this boot's settings, and fails when
/// `bench=` names an experiment that does not exist (the message lists the valid names).
fn plan(_opts: &Options) -> TestResult {
    let names: alloc::vec::Vec<&str> = crate::ktest::registered()
        .filter(|t| t.kind == Kind::Bench && !(t.module == "bench" && t.name == "plan"))
        .map(|t| t.name)
        .collect();
    let mut line = alloc::string::String::from("# bench: registered");
    for n in &names {
        line.push(' ');
        line.push_str(n);
    }
    crate::println!("{}", line);
    crate::println!(
        "# bench: clock={} smoke={} cpus_online={} nodes={} selected={}",
        clock().name(),
        smoke() as u8,
        crate::percpu::nr_cpus_online(),
        nr_nodes(),
        if selection().is_all() {
            alloc::string::String::from("all")
        } else {
            selection().names().join(",")
        }
    );
    let errors = selection().unknown(names.iter().copied());
    if errors.is_empty() {
        Ok(())
    } else {
        Err(TestError::Fail(errors.join("; ")))
    }
}

/// `clock_overhead`: ticks between two back-to-back `now()` reads, the floor of every short
/// measurement in this boot (about 1-2 instructions under icount; host time under tsc).
fn clock_overhead(_opts: &Options) -> TestResult {
    let reads = scaled(1_000_000, 10_000);
    let mut min_ticks = u64::MAX;
    let mut sum_ticks = 0u64;
    for i in 0..reads {
        let t0 = now();
        let t1 = now();
        let d = t1.wrapping_sub(t0);
        min_ticks = min_ticks.min(d);
        sum_ticks = sum_ticks.wrapping_add(d);
        if i % 4096 == 0 {
            progress("clock_overhead", "rdtsc", (i * 100 / reads) as u32);
        }
    }
    let unit = if instruction_boot() {
        "instructions"
    } else {
        "tsc_ticks"
    };
    record(
        "clock_overhead",
        "rdtsc",
        "min_ticks_per_read",
        min_ticks as f64,
        unit,
        1,
    );
    record(
        "clock_overhead",
        "rdtsc",
        "mean_ticks_per_read",
        sum_ticks as f64 / reads as f64,
        unit,
        1,
    );
    Ok(())
}

pub const TESTS: &[KTest] = &[
    KTest {
        module: "bench",
        name: "plan",
        kind: Kind::Bench,
        func: plan,
    },
    KTest {
        module: "bench",
        name: "clock_overhead",
        kind: Kind::Bench,
        func: clock_overhead,
    },
    slub_list_lock::TEST,
    slabinfo_reader::TEST,
    memoryless_node::TEST,
    numa_locality::TEST,
];
