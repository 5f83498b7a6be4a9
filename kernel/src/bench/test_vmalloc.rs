//! Benchmark `test_vmalloc`: Linux's lib/test_vmalloc.c with its parameter grid. The tests
//! `test_vmalloc.run_test_mask` selects (all eleven: mm/vmalloc/test_cases.rs and
//! kfree_rcu/vmalloc_cases.rs) run on
//! `test_vmalloc.nr_threads` workers against the vmalloc design behind the kernel's API
//! (`vmalloc.nodes`, with `vmalloc.page_order` and `vmalloc.nr_vmalloc` as booted), each worker
//! in table order (`sequential_test_order=1`) or its own shuffled order, each test
//! `test_repeat_count` times with `test_loop_count` loops (`nr_pages` for fix_size and
//! vm_map_ram). Worker `w` runs on online CPU `w mod CPUs`, a CPU's workers one after another
//! (numalab has no scheduler; Linux's kthreads are not pinned either). Arm's 7.0-vs-7.1
//! regression report ran 1 to 512 workers: `./qemu-run.sh sweep --axis
//! test_vmalloc.nr_threads=1,2,4,8` replays that axis (docs/vmalloc.md).
//!
//! Console: per worker and test the `Summary:` line as Linux prints it (avg in usec in the tsc
//! boot, a TCG trend; in instructions under icount), then `All test took workerN=T cycles`.
//! Records: per test `passed`, `failed` (summed over workers; align_shift_alloc_test's
//! expected failure counts as failed, as in Linux), `loops`, `repeat`, and the workers' mean
//! run as `avg_usec` (tsc) or `avg_instructions` (icount); per run (`all_tests`) the
//! counted events, exact in the det and icount boots, and in the icount boot `instructions`
//! of the whole run. A test that really fails, or a page or range not back after the run,
//! fails the experiment. The kvfree_rcu tests give their vmalloc areas to kvfree_rcu (the
//! way `rcu.kfree` picks); after the workers `kvfree_rcu_barrier` frees what still waits, and
//! a `#` line counts what went through RCU (areas queued, vfree'd after a grace period,
//! callbacks, grace periods) before the conservation check.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use numalab_algo::bench::catalog::ALL_TESTS;
use numalab_algo::bench::Clock;
use numalab_algo::options::test_vmalloc::MAX_THREADS;
use numalab_algo::options::Options;
use numalab_algo::rng::Rng;
use numalab_algo::vmalloc::test_grid::{self, TESTS};

use super::workload::Barrier;
use crate::kfree_rcu::vmalloc_cases;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::vmalloc::test_cases::{self, Outcome, Params};
use crate::options as o;

const BENCH: &str = super::catalog::TEST_VMALLOC.name;

/// One worker's results: per test of the table, (passed, failed, xfailed, ticks of one run),
/// and the objects it gave to kvfree_rcu (its CPU's count: a CPU runs one worker at a time).
struct Worker {
    id: u64,
    tests: [(u64, u64, u64, u64); TESTS.len()],
    kvfree_rcu_queued: [u64; TESTS.len()],
    ticks: u64,
    error: Option<String>,
}

/// The grid point of this boot.
struct Grid {
    mask: u64,
    threads: u64,
    sequential: bool,
    repeat: u64,
    params: Params,
}

impl Grid {
    fn of(opts: &Options) -> Grid {
        let pages = opts.get(&o::TEST_VMALLOC_NR_PAGES).max(1);
        Grid {
            mask: opts.get(&o::TEST_VMALLOC_RUN_TEST_MASK),
            threads: opts.get(&o::TEST_VMALLOC_NR_THREADS).clamp(1, MAX_THREADS),
            sequential: opts.get(&o::TEST_VMALLOC_SEQUENTIAL_TEST_ORDER),
            repeat: test_grid::at_least_one(opts.get(&o::TEST_VMALLOC_TEST_REPEAT_COUNT)),
            params: Params {
                // A tenth in smoke runs (the main job).
                loops: super::scaled(
                    test_grid::at_least_one(opts.get(&o::TEST_VMALLOC_TEST_LOOP_COUNT)),
                    1,
                ),
                fix_size_pages: pages,
                map_pages: pages,
                may_sleep: crate::rcu::quiescent_point,
            },
        }
    }
}

/// test_vmalloc.c's `test_func` for worker `w`: its order, each selected test timed over
/// its repeats.
fn worker(v: &crate::mm::vmalloc::Vmalloc, g: &Grid, w: u64) -> Worker {
    let mut rng = Rng::new(test_grid::worker_seed(w));
    let order = test_grid::order(g.sequential, &mut rng);
    let mut out = Worker {
        id: w,
        tests: [(0, 0, 0, 0); TESTS.len()],
        kvfree_rcu_queued: [0; TESTS.len()],
        ticks: 0,
        error: None,
    };
    let me = crate::percpu::cpu_id();
    let start = crate::arch::rdtsc();
    for index in order {
        let Some(case) =
            vmalloc_cases::by_index(index).filter(|_| test_grid::selected(g.mask, index))
        else {
            continue;
        };
        // Between tests a quiescent point (numalab has no tick: another CPU's kvfree_rcu
        // test may be waiting for a grace period).
        crate::rcu::quiescent_point();
        let q0 = crate::kfree_rcu::counts(me).queued;
        let t0 = crate::arch::rdtsc();
        let r = &mut out.tests[index];
        for _ in 0..g.repeat {
            match case(v, &g.params, &mut rng) {
                Outcome::Pass => r.0 += 1,
                Outcome::XFail => r.2 += 1,
                Outcome::Fail(e) => {
                    r.1 += 1;
                    out.error
                        .get_or_insert_with(|| format!("worker {w}: {}: {e}", TESTS[index]));
                }
            }
        }
        r.3 = (crate::arch::rdtsc() - t0) / g.repeat;
        out.kvfree_rcu_queued[index] = crate::kfree_rcu::counts(me).queued - q0;
    }
    out.ticks = crate::arch::rdtsc() - start;
    out
}

fn emit(case: &str, metric: &str, value: f64, unit: &str, cpus: usize) {
    super::record(BENCH, case, metric, value, unit, cpus as u32);
}

fn test_vmalloc(ctx: &Ctx) -> TestResult {
    let g = Grid::of(ctx.opts);
    let Some(v) = crate::mm::vmalloc::active() else {
        return Err(TestError::Skip("vmalloc not initialized".into()));
    };
    let online = crate::smp::online_cpus();
    let cpus = online.len().max(1);
    let icount = super::clock() == Clock::Icount;
    // Summary's avg: usec from the TSC (TCG time), instructions under icount.
    let (hz, unit) = match crate::arch::tsc_hz() {
        hz if hz > 0 && !icount => (hz, "usec"),
        _ => (1_000_000, "instructions"),
    };
    crate::println!(
        "# {BENCH}: design {} run_test_mask {:#x} nr_threads {} on {cpus} CPUs sequential_test_order {} test_repeat_count {} test_loop_count {} nr_pages {}",
        v.policy().name(),
        g.mask,
        g.threads,
        g.sequential as u8,
        g.repeat,
        g.params.loops,
        g.params.fix_size_pages
    );
    let before = test_cases::snapshot()?;
    let rcu0 = vmalloc_cases::RcuSnapshot::take();
    let (g0, n0) = (v.global_lock_stats(), v.node_lock_stats());
    let (p0, pool0) = (v.counters.purges.get(), v.counters.pool_allocs.get());
    let results = spin::Mutex::new(Vec::<Worker>::new());
    let barrier = Barrier::new(cpus);
    let (start, end) = (AtomicU64::new(u64::MAX), AtomicU64::new(0));
    let region = super::region::on_each_cpu(BENCH, ALL_TESTS, &|cpu| {
        let me = online.iter().position(|&c| c == cpu).unwrap_or(0) as u64;
        barrier.wait();
        start.fetch_min(crate::arch::rdtsc(), Relaxed);
        let mine: Vec<Worker> = test_grid::workers_of(g.threads, cpus as u64, me)
            .map(|w| worker(v, &g, w))
            .collect();
        end.fetch_max(crate::arch::rdtsc(), Relaxed);
        results.lock().extend(mine);
    });
    region.ops(g.threads * g.repeat * g.params.loops * test_grid::runnable(g.mask).len() as u64);
    let total_ticks = end.load(Relaxed).saturating_sub(start.load(Relaxed));
    let selected: Vec<usize> = test_grid::runnable(g.mask);
    let kvfree_rcu = selected.iter().any(|&i| vmalloc_cases::uses_kvfree_rcu(i));
    if kvfree_rcu {
        // What the kvfree_rcu tests left waiting for a grace period, vfree'd now.
        let k = crate::kfree_rcu::total_counts();
        crate::println!(
            "# {BENCH}: kvfree_rcu ({}): {} areas still waiting after the workers; kvfree_rcu_barrier",
            crate::kfree_rcu::way().name(),
            k.waiting
        );
        crate::kfree_rcu::kvfree_rcu_barrier();
    }
    let rcu = rcu0.since();
    let gl = v.global_lock_stats().since(&g0);
    let nl = v.node_lock_stats().since(&n0);
    let purges = v.counters.purges.get() - p0;
    let pool_allocs = v.counters.pool_allocs.get() - pool0;
    let mut workers = results.into_inner();
    workers.sort_by_key(|w| w.id);
    // The Summary lines, worker by worker, as do_concurrent_test prints them.
    for w in &workers {
        for &i in &selected {
            let (p, f, x, t) = w.tests[i];
            let line = test_grid::summary_line(
                TESTS[i],
                p,
                f + x,
                g.repeat,
                g.params.loops,
                (t as u128 * 1_000_000 / hz.max(1) as u128) as u64,
                unit,
            );
            crate::println!("# {BENCH}: {line}");
            if vmalloc_cases::uses_kvfree_rcu(i) {
                crate::println!(
                    "# {BENCH}: {} worker{}: kvfree_rcu queued {} vmalloc areas",
                    TESTS[i],
                    w.id,
                    w.kvfree_rcu_queued[i]
                );
            }
        }
        crate::println!("# {BENCH}: All test took worker{}={} cycles", w.id, w.ticks);
    }
    let n = workers.len().max(1) as u64;
    for &i in &selected {
        let name = TESTS[i];
        let (p, f, t) = workers.iter().fold((0, 0, 0u128), |a, w| {
            let (p, f, x, t) = w.tests[i];
            (a.0 + p, a.1 + f + x, a.2 + t as u128)
        });
        emit(name, "passed", p as f64, "runs", cpus);
        emit(name, "failed", f as f64, "runs", cpus);
        emit(name, "repeat", g.repeat as f64, "runs", cpus);
        emit(name, "loops", g.params.loops as f64, "loops", cpus);
        let mean = t as f64 / n as f64;
        // The det boot's clock runs with every vCPU's instructions, and it keeps counts only.
        if super::instruction_boot() {
            emit(name, "avg_instructions", mean, "instructions", cpus);
        } else if !icount {
            emit(name, "avg_usec", mean * 1e6 / hz as f64, "usec", cpus);
        }
    }
    emit(ALL_TESTS, "workers", workers.len() as f64, "workers", cpus);
    emit(ALL_TESTS, "purges", purges as f64, "purges", cpus);
    emit(
        ALL_TESTS,
        "global_lock_acquisitions",
        gl.acquisitions as f64,
        "acquisitions",
        cpus,
    );
    emit(
        ALL_TESTS,
        "node_lock_acquisitions",
        nl.acquisitions as f64,
        "acquisitions",
        cpus,
    );
    emit(
        ALL_TESTS,
        "pool_allocs",
        pool_allocs as f64,
        "allocations",
        cpus,
    );
    if super::instruction_boot() {
        emit(
            ALL_TESTS,
            "instructions",
            total_ticks as f64,
            "instructions",
            1,
        );
    }
    let mut failures: Vec<String> = workers.iter().filter_map(|w| w.error.clone()).collect();
    if kvfree_rcu {
        // The mechanism the kvfree_rcu tests name: objects queued, vmalloc areas vfree'd
        // after a grace period, callbacks, grace periods (whole run, barrier included).
        let line = format!(
            "kvfree_rcu ({}): queued {} freed {} vfreed {} waiting {} kfree_rcu_callbacks {} rcu grace_periods {} cbs_invoked {}",
            crate::kfree_rcu::way().name(),
            rcu.queued,
            rcu.freed,
            rcu.vfreed,
            rcu.waiting,
            rcu.kfree_rcu_callbacks,
            rcu.grace_periods,
            rcu.cbs_invoked
        );
        crate::println!("# {BENCH}: {line}");
        if !rcu.settled() {
            failures.push(format!(
                "not every area vfree'd after kvfree_rcu_barrier: {line}"
            ));
        }
    }
    if let Err(e) = test_cases::conserved(v, &before) {
        failures.push(e);
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(TestError::Fail(failures.join("; ")))
    }
}

crate::ktest!(super::BENCH_SUITE, Bench, BENCH, test_vmalloc);
