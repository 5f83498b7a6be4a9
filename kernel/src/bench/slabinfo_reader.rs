//! `slabinfo_reader` (seed 001, Xunlei Pang's "Fix count_partial() problem" and its review):
//! while every CPU but one frees and allocates 256-byte objects at random in a cache with many
//! partial slabs, the last CPU reads that cache's slabinfo over and over, with `scan` (Linux's
//! count_partial: walk the partial lists under each node's list_lock) or `counters` (numalab's
//! per-CPU counters, no list walk).
//!
//! Metrics per case: `max_list_lock_hold` (longest list_lock hold of any read, tsc ticks),
//! `mean_list_lock_hold` (mean over reads of each read's longest hold, tsc ticks; 0 when the
//! mode takes no list_lock), and `active_objs_error` (|slabinfo active_objs - objects really
//! live| once the workers stopped: 0 when exact; scan counts free objects of per-CPU slabs as
//! active, the review's point). What seed 001 complains about, the workers stalled behind the
//! reader, while the reader runs: `worker_max_alloc_latency` (the longest single allocation
//! of any worker, tsc ticks) and `worker_list_lock_wait_per_kop` (ticks the workers waited
//! for a list_lock, from the first failed try to the acquisition, per 1000 worker
//! operations: the locks' measured wait minus the reader's own). The mechanism counters:
//! `partial_slabs_walked_per_read` (slabs) and `reader_list_lock_acquisitions_per_read`; a
//! knob check fails the experiment when both modes print the same ones.
//!
//! Lock order: a worker holds its own pool lock (a plain spin::Mutex that leaves interrupts
//! on, taken by nobody else until the workers are done) around its allocator calls; SLUB's
//! locks come after it.

use super::slub_cache::{BenchCache, Obj};
use super::workload::{self, Barrier};
use crate::ktest::{Ctx, TestResult};
use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use numalab_algo::knob::{self, CaseCounters};
use numalab_algo::rng::Rng;
use numalab_algo::slub::SlabinfoMode;
use spin::Mutex;

const NAME: &str = super::catalog::SLABINFO_READER.name;
const OBJ_BYTES: usize = 256;

struct Sample {
    max_hold: u64,
    mean_hold: f64,
    active_error: u64,
    /// Partial slabs walked and list_lock acquisitions of all reads together.
    walked: u64,
    reader_acquisitions: u64,
    /// The longest single worker allocation, ticks.
    max_alloc_ticks: u64,
    /// Ticks the workers waited for list_locks while the reader ran.
    worker_wait_ticks: u64,
    /// Worker allocations and frees while the reader ran.
    worker_ops: u64,
}

fn run_case(
    case: &str,
    mode: SlabinfoMode,
    pool_objs: usize,
    reads: u64,
) -> Result<Sample, alloc::string::String> {
    let online = workload::online();
    let (workers, reader) = online.split_at(online.len() - 1);
    let reader = reader[0];
    let cache = BenchCache::create(NAME, OBJ_BYTES, BenchCache::partial_tunables(NAME))?;
    let pools: Vec<Mutex<Vec<Option<Obj>>>> = workers
        .iter()
        .map(|_| Mutex::new(Vec::with_capacity(pool_objs)))
        .collect();
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(online.len());
    let max_hold = AtomicU64::new(0);
    let sum_hold = AtomicU64::new(0);
    let (walked, reader_acq, reader_wait) =
        (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let (max_alloc, worker_ops) = (AtomicU64::new(0), AtomicU64::new(0));
    let lock0 = AtomicU64::new(0);
    let short = AtomicU64::new(0);
    super::region::run_on_cpus(NAME, case, &online, &|cpu| {
        if cpu == reader {
            barrier.wait();
            lock0.store(cache.list_lock_stats().wait_ticks, Ordering::Release);
            for r in 0..reads {
                let info = cache.slabinfo(mode);
                workload::store_max(&max_hold, info.max_lock_hold);
                sum_hold.fetch_add(info.max_lock_hold, Ordering::Relaxed);
                walked.fetch_add(info.partial_slabs_walked, Ordering::Relaxed);
                reader_acq.fetch_add(info.lock_acquisitions, Ordering::Relaxed);
                reader_wait.fetch_add(info.lock_wait, Ordering::Relaxed);
                if r % 16 == 0 {
                    super::progress(NAME, case, (r * 100 / reads) as u32);
                }
            }
            stop.store(true, Ordering::Release);
            let wait = cache
                .list_lock_stats()
                .wait_ticks
                .wrapping_sub(lock0.load(Ordering::Acquire));
            lock0.store(wait, Ordering::Release);
            return;
        }
        let me = workers.iter().position(|&c| c == cpu).unwrap_or(0);
        let mut pool = pools[me].lock();
        // Fill, then free every other object: many partially used slabs.
        for i in 0..pool_objs {
            let obj = cache.alloc();
            if obj.is_none() {
                short.fetch_add(1, Ordering::Relaxed);
            }
            pool.push(obj);
            if i % 2 == 1 {
                if let Some(o) = pool[i].take() {
                    cache.free(o);
                }
            }
        }
        barrier.wait();
        let mut rng = Rng::new((0x5eed_0001 + me as u64) | 1);
        let (mut ops, mut longest) = (0u64, 0u64);
        while !stop.load(Ordering::Acquire) {
            for _ in 0..64 {
                let i = rng.below(pool_objs as u64) as usize;
                match pool[i].take() {
                    Some(o) => cache.free(o),
                    None => {
                        let t0 = super::now();
                        pool[i] = cache.alloc();
                        longest = longest.max(super::now().wrapping_sub(t0));
                    }
                }
            }
            ops += 64;
        }
        workload::store_max(&max_alloc, longest);
        worker_ops.fetch_add(ops, Ordering::Relaxed);
    });
    // Quiescent now: count what is really live and ask slabinfo.
    let live: usize = pools
        .iter()
        .map(|p| p.lock().iter().filter(|o| o.is_some()).count())
        .sum();
    let reported = cache.slabinfo(mode).active_objs;
    for p in &pools {
        for o in p.lock().drain(..).flatten() {
            cache.free(o);
        }
    }
    cache.finish()?;
    if short.load(Ordering::Relaxed) > 0 {
        return Err(format!(
            "{NAME}: {case}: allocations failed while filling (out of memory?)"
        ));
    }
    Ok(Sample {
        max_hold: max_hold.load(Ordering::Relaxed),
        mean_hold: sum_hold.load(Ordering::Relaxed) as f64 / reads.max(1) as f64,
        active_error: (reported as i64 - live as i64).unsigned_abs(),
        walked: walked.load(Ordering::Relaxed),
        reader_acquisitions: reader_acq.load(Ordering::Relaxed),
        max_alloc_ticks: max_alloc.load(Ordering::Relaxed),
        worker_wait_ticks: lock0
            .load(Ordering::Acquire)
            .saturating_sub(reader_wait.load(Ordering::Relaxed)),
        worker_ops: worker_ops.load(Ordering::Relaxed).max(1),
    })
}

fn slabinfo_reader(ctx: &Ctx) -> TestResult {
    super::needs_cpus(ctx, NAME, 2)?;
    let cpus = workload::online().len() as u32;
    let pool_objs = super::pick(4096, 512) as usize;
    let reads = super::pick(500, 40);
    let mut knobs = Vec::new();
    for (case, mode) in super::rep_order([
        ("scan", SlabinfoMode::Scan),
        ("counters", SlabinfoMode::Counters),
    ]) {
        let s = run_case(case, mode, pool_objs, reads)?;
        super::record(
            NAME,
            case,
            "max_list_lock_hold",
            s.max_hold as f64,
            "tsc_ticks",
            cpus,
        );
        super::record(
            NAME,
            case,
            "mean_list_lock_hold",
            s.mean_hold,
            "tsc_ticks",
            cpus,
        );
        super::record(
            NAME,
            case,
            "active_objs_error",
            s.active_error as f64,
            "objects",
            cpus,
        );
        super::record(
            NAME,
            case,
            "worker_max_alloc_latency",
            s.max_alloc_ticks as f64,
            "tsc_ticks",
            cpus,
        );
        super::record(
            NAME,
            case,
            "worker_list_lock_wait_per_kop",
            s.worker_wait_ticks as f64 * 1000.0 / s.worker_ops as f64,
            "tsc_ticks",
            cpus,
        );
        let per_read = |v: u64| v as f64 / reads.max(1) as f64;
        super::record(
            NAME,
            case,
            "partial_slabs_walked_per_read",
            per_read(s.walked),
            "slabs",
            cpus,
        );
        super::record(
            NAME,
            case,
            "reader_list_lock_acquisitions_per_read",
            per_read(s.reader_acquisitions),
            "acquisitions",
            cpus,
        );
        let mut counters = CaseCounters::new(case);
        counters.add("partial_slabs_walked", s.walked);
        counters.add("reader_list_lock_acquisitions", s.reader_acquisitions);
        crate::println!("# {NAME}: knob counters {case}: {}", counters.describe());
        knobs.push(counters);
    }
    knob::check(NAME, &knobs).map_err(crate::ktest::TestError::Fail)
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, slabinfo_reader);
