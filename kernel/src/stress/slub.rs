//! The SLUB stress test: every online CPU at once, many caches of different sizes, random
//! sizes and lifetimes, producer/consumer hand-offs so objects are freed by other CPUs, and
//! an owner tag in every object so an object handed out twice is caught. Ends with the
//! caches validated and destroyed, pages conserved, and slabinfo and stats printed.

use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::slub::cross_cpu::{online_cpus, run_on_cpus};
use crate::mm::slub::{self as slub, default_tunables, KmemCache};
use crate::sync::IrqSpinLock;
use crate::{kassert, kassert_eq};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use numalab_algo::rng::XorShift64;
use numalab_algo::slub::SlabinfoMode;
use numalab_algo::topology::CpuId;

const SIZES: [usize; 8] = [16, 24, 64, 100, 256, 700, 2048, 4000];
const OPS_PER_CPU: usize = 20_000;
const MAX_LIVE_PER_CPU: usize = 400;
/// High 32 bits of an owner tag: a live object carries MAGIC | cpu << 24 | sequence.
const MAGIC: u64 = 0xa11c_0b1e << 32;

fn tag_word(obj: usize) -> &'static AtomicU64 {
    // SAFETY: `obj` is an object of at least 16 bytes (every stress size), either live and
    // owned by this test or just built by its slab's constructor; its first word is the owner
    // tag and is only accessed atomically while it is allocated or being constructed.
    unsafe { AtomicU64::from_ptr(obj as *mut u64) }
}

/// Slab constructor: a new object carries no tag.
fn clear_tag(obj: usize) {
    tag_word(obj).store(0, Relaxed);
}

struct Shared {
    caches: Vec<&'static KmemCache>,
    /// Per CPU: objects handed to it by others, to free.
    inbox: Vec<IrqSpinLock<Vec<(usize, usize, u64)>>>,
    double_handouts: AtomicUsize,
    tag_mismatches: AtomicUsize,
    allocs: AtomicUsize,
    oom: AtomicUsize,
}

fn release(s: &Shared, ci: usize, obj: usize, tag: u64) {
    if tag_word(obj).swap(0, Relaxed) != tag {
        s.tag_mismatches.fetch_add(1, Relaxed);
    }
    if let Some(p) = NonNull::new(obj as *mut u8) {
        // SAFETY: the object came from caches[ci], its tag proved we own it, and it is
        // not touched after this free.
        unsafe { s.caches[ci].free(p) };
    }
}

fn worker(s: &Shared, cpu: CpuId, cpus: &[CpuId]) {
    let mut rng = XorShift64::new(
        0x9e37_79b9_7f4a_7c15u64 ^ (cpu.0 as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d),
    );
    let mut rnd = || rng.next_u64();
    let mut live: Vec<(usize, usize, u64)> = Vec::with_capacity(MAX_LIVE_PER_CPU + 1);
    let me = cpus.iter().position(|&c| c == cpu).unwrap_or(0);
    for seq in 0..OPS_PER_CPU as u64 {
        let r = rnd();
        if live.len() < MAX_LIVE_PER_CPU && (r % 3 != 0 || live.is_empty()) {
            let ci = (r >> 8) as usize % s.caches.len();
            let Some(p) = s.caches[ci].alloc() else {
                s.oom.fetch_add(1, Relaxed);
                continue;
            };
            let obj = p.as_ptr() as usize;
            let tag = MAGIC | (cpu.0 as u64) << 24 | (seq & 0xff_ffff);
            if tag_word(obj).swap(tag, Relaxed) >> 32 == MAGIC >> 32 {
                s.double_handouts.fetch_add(1, Relaxed);
            }
            s.allocs.fetch_add(1, Relaxed);
            live.push((ci, obj, tag));
        } else if !live.is_empty() {
            let i = (r >> 16) as usize % live.len();
            let item = live.swap_remove(i);
            if r % 4 == 0 && cpus.len() > 1 {
                // Hand it to another CPU to free (producer/consumer).
                let to = (me + 1 + (r >> 40) as usize % (cpus.len() - 1)) % cpus.len();
                s.inbox[to].lock().push(item);
            } else {
                release(s, item.0, item.1, item.2);
            }
        }
        if seq % 64 == 0 {
            let batch = core::mem::take(&mut *s.inbox[me].lock());
            for (ci, obj, tag) in batch {
                release(s, ci, obj, tag);
            }
        }
    }
    for (ci, obj, tag) in live {
        release(s, ci, obj, tag);
    }
}

pub fn stress(_ctx: &Ctx) -> TestResult {
    let cpus = online_cpus();
    let topo = crate::topology::get();
    crate::mm::frame::drain_all();
    let before: Vec<u64> = topo
        .nodes
        .iter()
        .map(|n| crate::mm::frame::free_bytes(n.id) + slub::held_bytes_on(n.id))
        .collect();
    let mut caches = Vec::new();
    for &size in &SIZES {
        let name = format!("stress-{}", size);
        // The constructor clears the tag word of every new object, so a tag found at
        // allocation can only be a live object's (pages may hold old data).
        // Under slub.design=hybrid the 256-byte cache opts in to sheaves as its creator
        // (Linux 6.18's maple_node, also 256 bytes) does; the others run the partial design.
        let mut t = default_tunables(&name);
        t.sheaves_opt_in |= size == 256;
        let c = KmemCache::create_with_ctor(&name, size, 0, t, Some(clear_tag))
            .map_err(|e| format!("{:?}", e))?;
        caches.push(c);
    }
    let shared = Shared {
        caches,
        inbox: cpus
            .iter()
            .map(|_| IrqSpinLock::new(Vec::with_capacity(1024)))
            .collect(),
        double_handouts: AtomicUsize::new(0),
        tag_mismatches: AtomicUsize::new(0),
        allocs: AtomicUsize::new(0),
        oom: AtomicUsize::new(0),
    };
    let start = crate::arch::rdtsc();
    run_on_cpus(&cpus, &|cpu| worker(&shared, cpu, &cpus));
    // Leftovers handed over after their receiver finished.
    for inbox in &shared.inbox {
        let batch = core::mem::take(&mut *inbox.lock());
        for (ci, obj, tag) in batch {
            release(&shared, ci, obj, tag);
        }
    }
    let cycles = crate::arch::rdtsc().wrapping_sub(start);
    crate::println!(
        "# slub stress: {} CPUs, {} caches, {} allocations in {} cycles; double hand-outs {}, tag mismatches {}, out of memory {}",
        cpus.len(),
        SIZES.len(),
        shared.allocs.load(Relaxed),
        cycles,
        shared.double_handouts.load(Relaxed),
        shared.tag_mismatches.load(Relaxed),
        shared.oom.load(Relaxed)
    );
    // The mode slub.slabinfo chose first, then the other one for comparison.
    let mode = slub::boot_slabinfo_mode();
    slub::info::print_slabinfo(mode);
    crate::println!(
        "# slub: {} KiB held from the page allocator (slabs, descriptors, large kmallocs)",
        slub::held_bytes() / 1024
    );
    slub::info::print_slabinfo(if mode == SlabinfoMode::Scan {
        SlabinfoMode::Counters
    } else {
        SlabinfoMode::Scan
    });
    for c in &shared.caches {
        for line in slub::info::stats_lines(c) {
            crate::println!("{}", line);
        }
    }
    kassert_eq!(shared.double_handouts.load(Relaxed), 0);
    kassert_eq!(shared.tag_mismatches.load(Relaxed), 0);
    kassert_eq!(shared.oom.load(Relaxed), 0);
    let mut problems = String::new();
    for c in &shared.caches {
        if c.stats().live_objects() != 0 {
            problems.push_str(&format!(
                "{}: {} live; ",
                c.name(),
                c.stats().live_objects()
            ));
        }
        if let Err(e) = c.core().validate() {
            problems.push_str(&e);
        }
    }
    kassert!(problems.is_empty(), "{}", problems);
    for c in shared.caches.iter() {
        // SAFETY: every CPU's workers have finished; this is the last use of each cache
        // (on Err it stays valid for the message).
        unsafe { c.destroy() }
            .map_err(|live| TestError::Fail(format!("{}: {} live at destroy", c.name(), live)))?;
    }
    drop(shared);
    crate::mm::frame::drain_all();
    let after: Vec<u64> = topo
        .nodes
        .iter()
        .map(|n| crate::mm::frame::free_bytes(n.id) + slub::held_bytes_on(n.id))
        .collect();
    kassert_eq!(
        after,
        before,
        "free + slub-held bytes per node after the stress run"
    );
    Ok(())
}
