//! Benchmark `page_alloc`: instructions per order-0 allocate+free pair through numalab's
//! per-CPU lists and through the `buddy_system_allocator` crate (one global instance behind a
//! spin lock, fed as many frames as the local node manages), in the one-CPU `--icount` boot
//! (rdtsc then counts executed instructions); and a check that every `Policy::Local`
//! allocation on every online CPU came from its own node (always so while the node has free
//! memory: the experiment fails otherwise, it prints no metric for it).

use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::frame::{alloc_pages, node_counters, AllocError, PageChain, Policy, PAGE_SHIFT};
use alloc::format;
use buddy_system_allocator::FrameAllocator;
use core::hint::black_box;
use spin::Mutex;

const BENCH: &str = super::catalog::PAGE_ALLOC.name;

/// The comparison allocator: orders 0..=10 like numalab's buddy.
static BSA: Mutex<FrameAllocator<11>> = Mutex::new(FrameAllocator::new());
static BSA_FED: spin::Once<()> = spin::Once::new();

/// Instructions (ticks) per order-0 pair through `alloc_pages(0, Local)` and `Drop`.
fn numalab_pair(pairs: u64) -> Result<f64, TestError> {
    // Warm up: the first pair refills the per-CPU list.
    drop(alloc_pages(0, Policy::Local).map_err(|e| format!("{}", e))?);
    let t0 = crate::arch::rdtsc();
    for _ in 0..pairs {
        drop(alloc_pages(0, Policy::Local));
    }
    let t1 = crate::arch::rdtsc();
    Ok((t1 - t0) as f64 / pairs as f64)
}

/// The same pair through `buddy_system_allocator` (lock, alloc(1), unlock; lock, dealloc,
/// unlock), fed the local node's managed page count as one frame range.
fn bsa_pair(pairs: u64) -> Result<f64, TestError> {
    let local = crate::percpu::mem_node_id();
    let managed = node_counters(local).map_or(0, |c| c.managed_pages);
    let base = crate::mm::frame::node_base_pfn(local).map_or(1 << (20 - PAGE_SHIFT), |p| p.as_u64())
        as usize;
    BSA_FED.call_once(|| BSA.lock().add_frame(base, base + managed));
    // One frame stays allocated during the loop: its buddy is then a free order-0 block, so
    // the loop measures the steady state (take it, give it back) rather than a split down
    // from the largest block and a merge back, whose depth depends on the region's alignment.
    let held = BSA
        .lock()
        .alloc(1)
        .ok_or_else(|| alloc::string::String::from("bsa: empty"))?;
    let warm = BSA
        .lock()
        .alloc(1)
        .ok_or_else(|| alloc::string::String::from("bsa: empty"))?;
    BSA.lock().dealloc(warm, 1);
    let t0 = crate::arch::rdtsc();
    for _ in 0..pairs {
        let f = BSA.lock().alloc(1);
        if let Some(f) = black_box(f) {
            BSA.lock().dealloc(f, 1);
        }
    }
    let t1 = crate::arch::rdtsc();
    BSA.lock().dealloc(held, 1);
    Ok((t1 - t0) as f64 / pairs as f64)
}

/// How many of `nr` `Policy::Local` pages held at once come from the calling CPU's nearest
/// memory node (which has free memory here); they are freed afterwards. No heap use: the
/// pages are held in a `PageChain` (chained through their own first word).
fn local_count(nr: usize) -> Result<usize, AllocError> {
    let local = crate::percpu::mem_node_id();
    let mut on_local = 0;
    let mut chain = PageChain::new();
    let mut result = Ok(());
    for _ in 0..nr {
        match alloc_pages(0, Policy::Local) {
            Ok(p) => {
                if p.node() == local {
                    on_local += 1;
                }
                chain.push(p);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    // Freed in the order of the old hand-made chain: the last allocated first.
    drop(chain);
    result.map(|()| on_local)
}

/// The experiment: instruction counts in the one-CPU `--icount` boot only (the bench layer's
/// rule); the local-page check in every boot, on every online CPU.
fn page_alloc(_ctx: &Ctx) -> TestResult {
    if super::instruction_boot() {
        let pairs = super::scaled(100_000, 10_000);
        let numalab = numalab_pair(pairs)?;
        super::record(
            BENCH,
            "numalab",
            "instructions_per_pair",
            numalab,
            "instructions",
            1,
        );
        let bsa = bsa_pair(pairs)?;
        super::record(
            BENCH,
            "buddy_system_allocator",
            "instructions_per_pair",
            bsa,
            "instructions",
            1,
        );
    }
    let local = core::sync::atomic::AtomicU64::new(0);
    let failed = core::sync::atomic::AtomicU64::new(0);
    let per_cpu = 1024;
    crate::smp::on_each_cpu(&|_cpu| match local_count(per_cpu) {
        Ok(n) => {
            local.fetch_add(n as u64, core::sync::atomic::Ordering::Relaxed);
        }
        Err(_) => {
            failed.fetch_add(1, core::sync::atomic::Ordering::Relaxed);
        }
    });
    let cpus = crate::percpu::nr_cpus_online();
    if failed.load(core::sync::atomic::Ordering::Relaxed) != 0 {
        return Err(TestError::Fail(alloc::string::String::from(
            "local_fraction: an allocation failed",
        )));
    }
    // Always 1 while the local node has free memory: a check, not a measurement.
    let on_local = local.load(core::sync::atomic::Ordering::Relaxed);
    let asked = (per_cpu * cpus) as u64;
    if on_local != asked {
        return Err(TestError::Fail(format!(
            "local pages: {on_local} of {asked} Policy::Local pages came from the CPU's own node"
        )));
    }
    crate::println!(
        "# {BENCH}: {asked} Policy::Local pages on {cpus} CPUs, all from the CPU's own node"
    );
    Ok(())
}

crate::ktest!(super::BENCH_SUITE, Bench, BENCH, page_alloc);
