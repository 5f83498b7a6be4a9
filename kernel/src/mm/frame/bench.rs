//! Benchmark `page_alloc`: instructions per order-0 allocate+free pair through numalab's
//! per-CPU lists and through the `buddy_system_allocator` crate (one global instance behind a
//! spin lock, fed as many frames as the local node manages), and the local fraction of
//! `Policy::Local` allocations. Instruction counts mean something only in a one-CPU
//! `--icount` boot (rdtsc then counts executed instructions).

use super::{alloc_pages, node_counters, Pages, Policy, PAGE_SHIFT};
use crate::ktest::{TestError, TestResult};
use alloc::format;
use alloc::vec::Vec;
use buddy_system_allocator::FrameAllocator;
use core::hint::black_box;
use numalab_algo::bench::{Clock, Record};
use numalab_algo::options::Options;
use spin::Mutex;

const BENCH: &str = "page_alloc";

/// The comparison allocator: orders 0..=10 like numalab's buddy.
static BSA: Mutex<FrameAllocator<11>> = Mutex::new(FrameAllocator::new());

/// How this boot's rdtsc is to be read: the host sets `bench.clock=icount` with `--icount`
/// (the bench layer's option; unknown keys read as "", i.e. tsc).
fn clock() -> Clock {
    match crate::options::load().text("bench.clock") {
        "icount" => Clock::Icount,
        _ => Clock::Tsc,
    }
}

fn emit(case: &str, metric: &str, value: f64, unit: &str) {
    let record = Record {
        bench: BENCH,
        case,
        metric,
        value,
        unit,
        cpus: 1,
        nodes: crate::topology::get().nr_nodes() as u32,
        clock: clock(),
    };
    println!("{}", record.line());
}

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
    let base = super::node_base_pfn(local).unwrap_or(1 << (20 - PAGE_SHIFT)) as usize;
    {
        let mut bsa = BSA.lock();
        if bsa.alloc(1).is_none() {
            bsa.add_frame(base, base + managed);
        }
    }
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
    Ok((t1 - t0) as f64 / pairs as f64)
}

/// Fraction of `Policy::Local` pages that come from the CPU's nearest memory node while it
/// has free memory (holds `nr` pages at once, then frees them).
fn local_fraction(nr: usize) -> Result<f64, TestError> {
    let local = crate::percpu::mem_node_id();
    let held: Vec<Pages> = (0..nr)
        .map(|_| alloc_pages(0, Policy::Local))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}", e))?;
    let on_local = held.iter().filter(|p| p.node() == local).count();
    Ok(on_local as f64 / nr as f64)
}

pub fn page_alloc(o: &Options) -> TestResult {
    let pairs = if o.bool("bench.smoke") {
        10_000
    } else {
        100_000
    };
    let numalab = numalab_pair(pairs)?;
    emit("numalab", "instructions_per_pair", numalab, "instructions");
    let bsa = bsa_pair(pairs)?;
    emit(
        "buddy_system_allocator",
        "instructions_per_pair",
        bsa,
        "instructions",
    );
    let fraction = local_fraction(4096)?;
    emit("numalab", "local_fraction", fraction, "ratio");
    Ok(())
}
