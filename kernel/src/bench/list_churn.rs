//! The list_lock churn workload two experiments share (the partial-list one and the
//! sheaves-versus-partial one): bulk batches of 256-byte objects on a fresh cache, half of
//! each batch freed by the next CPU (a mailbox ring), counted in operations, list_lock and
//! barn lock acquisitions and SLUB statistics (`run_case`).

use super::slub_cache::{BenchCache, Obj, BULK_MAX};
use super::workload::{self, Barrier, Mailboxes};
use crate::topology::CpuId;
use alloc::format;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};
use numalab_algo::slub::Tunables;

/// Object size of the churned cache.
pub(super) const OBJ_BYTES: usize = 256;
/// Objects per bulk batch.
const BATCH: usize = 32;

/// What one run measured.
pub(super) struct Sample {
    pub ops: u64,
    pub elapsed_ticks: u64,
    pub acquisitions: u64,
    pub contended: u64,
    /// Ticks waited for list_locks, summed (sync::spinlock).
    pub wait_ticks: u64,
    /// The per-CPU partial bound of the case's cache, in slabs.
    pub cpu_partial_slabs: usize,
    /// SLUB statistics of the run (alloc_slab, free_slab, cpu_partial_alloc ...).
    pub stats: numalab_algo::slub::StatsSnapshot,
    /// Barn lock acquisitions, summed over nodes (0 in the partial design).
    pub barn_acquisitions: u64,
    /// Bytes of slab pages the cache still held once every object was freed.
    pub slab_bytes_after: u64,
}

/// Runs `rounds` batches on each of `cpus` against a fresh cache with `tunables` (named
/// after `experiment`, which also names the progress lines).
pub(super) fn run_case(
    experiment: &str,
    case: &str,
    tunables: Tunables,
    cpus: &[CpuId],
    rounds: u64,
) -> Result<Sample, alloc::string::String> {
    let cache = BenchCache::create(experiment, OBJ_BYTES, tunables)?;
    let (order, objects, min_partial, cpu_partial) = cache.shape();
    let cpu_partial_slabs = cache.cpu_partial_slabs();
    crate::println!(
        "# {experiment}: case {case} cpus {}: slab order {order}, {objects} objects/slab, min_partial {min_partial}, cpu_partial {cpu_partial} objects = {cpu_partial_slabs} slabs",
        cpus.len()
    );
    let stats0 = cache.stats();
    let k = cpus.len();
    let mail = Mailboxes::new(k, BATCH * 4);
    mail.name_for_trace(experiment);
    let barrier = Barrier::new(k);
    let start = AtomicU64::new(0);
    let end = AtomicU64::new(0);
    let ops = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    cache.reset_list_lock_stats();
    cache.reset_barn_lock_stats();
    let region = super::region::run_on_cpus(experiment, case, cpus, &|cpu| {
        let me = cpus.iter().position(|&c| c == cpu).unwrap_or(0);
        let next = (me + 1) % k;
        let mut batch: Vec<Obj> = Vec::with_capacity(BULK_MAX);
        let mut give: Vec<Obj> = Vec::with_capacity(BULK_MAX);
        let mut mine: Vec<Obj> = Vec::with_capacity(BATCH * 8);
        let mut my_ops = 0u64;
        barrier.wait();
        if me == 0 {
            start.store(super::now(), Ordering::Release);
        }
        for round in 0..rounds {
            let n = cache.alloc_bulk(&mut batch, BATCH);
            if n < BATCH {
                failed.fetch_add(1, Ordering::Relaxed);
            }
            give.extend(batch.drain(n / 2..));
            my_ops += n as u64 + batch.len() as u64;
            cache.free_bulk(&mut batch);
            if k > 1 {
                mail.send(next, &mut give);
            } else {
                cache.free_bulk(&mut give);
            }
            mail.take(me, &mut mine);
            my_ops += mine.len() as u64;
            cache.free_bulk(&mut mine);
            if me == 0 && round % 64 == 0 {
                super::progress(experiment, case, (round * 100 / rounds) as u32);
            }
        }
        workload::store_max(&end, super::now());
        ops.fetch_add(my_ops, Ordering::Relaxed);
    });
    // Objects sent after their receiver's last round are still in the mailboxes.
    let mut rest = Vec::new();
    for i in 0..k {
        mail.take(i, &mut rest);
    }
    let extra = rest.len() as u64;
    region.ops(ops.load(Ordering::Relaxed) + extra);
    cache.free_bulk(&mut rest);
    let stats = cache.list_lock_stats();
    let barn_acquisitions = cache.barn_lock_stats().acquisitions;
    let slub_stats = cache.stats().since(&stats0);
    let slab_bytes_after = cache.slab_bytes();
    cache.finish()?;
    if failed.load(Ordering::Relaxed) > 0 {
        return Err(format!(
            "{experiment}: {case}: {} bulk allocations came back short (out of memory?)",
            failed.load(Ordering::Relaxed)
        ));
    }
    Ok(Sample {
        ops: ops.load(Ordering::Relaxed) + extra,
        elapsed_ticks: end
            .load(Ordering::Acquire)
            .saturating_sub(start.load(Ordering::Acquire))
            .max(1),
        acquisitions: stats.acquisitions,
        contended: stats.contended,
        wait_ticks: stats.wait_ticks,
        cpu_partial_slabs,
        stats: slub_stats,
        barn_acquisitions,
        slab_bytes_after,
    })
}
