//! What vmalloc needs from the layers below it, in one place: 4 KiB physical pages on a NUMA
//! node, the calling CPU's identity, a TLB shootdown, and running a function on every CPU.
//!
//! Until the page frame allocator (issue 5) and SMP (issue 4) are merged, pages come from the
//! bootstrap heap (4 KiB-aligned blocks of the direct map) and only the boot CPU runs; this
//! file is the only one that changes when they land.

use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::topology::{CpuId, NodeId};

/// Pages currently handed out by `alloc_page` and not yet given back (conservation checks).
static PAGES_OUT: AtomicU64 = AtomicU64::new(0);

const PAGE: usize = 4096;

fn page_layout() -> core::alloc::Layout {
    // 4096 is a non-zero power of two and 4096 bytes do not overflow isize.
    core::alloc::Layout::from_size_align(PAGE, PAGE).unwrap_or(core::alloc::Layout::new::<u8>())
}

/// A zero-filled or uninitialized 4 KiB page for NUMA node `node` (preferred, not bound):
/// its physical address and the node it really came from.
pub fn alloc_page(node: NodeId, zero: bool) -> Option<(u64, NodeId)> {
    let layout = page_layout();
    // SAFETY: the layout has a non-zero size.
    let ptr = unsafe {
        if zero {
            alloc::alloc::alloc_zeroed(layout)
        } else {
            alloc::alloc::alloc(layout)
        }
    };
    if ptr.is_null() {
        return None;
    }
    let phys = ptr as u64 - crate::mm::early::info().phys_offset;
    PAGES_OUT.fetch_add(1, Relaxed);
    let got = crate::topology::get().node_of_phys(phys).unwrap_or(node);
    Some((phys, got))
}

/// Gives back a page from `alloc_page`.
///
/// # Safety
/// `phys` came from `alloc_page`, is not given back twice, and nothing uses it any more.
pub unsafe fn free_page(phys: u64) {
    let ptr = (crate::mm::early::info().phys_offset + phys) as *mut u8;
    PAGES_OUT.fetch_sub(1, Relaxed);
    // SAFETY: per this function's contract the block came from `alloc` with this layout.
    unsafe { alloc::alloc::dealloc(ptr, page_layout()) };
}

/// Pages handed out and not given back.
pub fn pages_out() -> u64 {
    PAGES_OUT.load(Relaxed)
}

/// The calling CPU.
#[inline]
pub fn this_cpu() -> CpuId {
    crate::percpu::cpu_id()
}

/// The nearest NUMA node with memory to the calling CPU.
#[inline]
pub fn this_mem_node() -> NodeId {
    crate::percpu::mem_node_id()
}

/// CPUs that can run vmalloc code.
pub fn nr_cpus() -> usize {
    crate::percpu::nr_cpus_online().max(1)
}

/// Flushes [start, end) from every online CPU's TLB and waits (one shootdown).
pub fn tlb_shootdown(start: u64, end: u64) {
    super::map::flush_local(start, end);
}

/// Runs `f` on every online CPU at once and waits for all (the caller runs its share).
pub fn on_each_cpu(f: &(dyn Fn(CpuId) + Sync)) {
    f(this_cpu());
}

/// The TSC frequency, once calibrated (SMP issue); None before.
pub fn tsc_hz() -> Option<u64> {
    None
}

/// Whether QEMU runs with `-icount shift=0` (rdtsc counts instructions): a loop of known
/// instruction count is timed twice; under icount both deltas are exact to a few counts.
pub fn icount_mode() -> bool {
    static MODE: spin::Once<bool> = spin::Once::new();
    *MODE.call_once(|| {
        let time = |n: u64| {
            let t0 = crate::arch::rdtsc();
            // SAFETY: a register-only countdown loop (2 instructions per iteration).
            unsafe {
                core::arch::asm!("2:", "dec {n}", "jnz 2b", n = inout(reg) n => _, options(nomem, nostack));
            }
            crate::arch::rdtsc() - t0
        };
        let (a, b) = (time(10_000), time(20_000));
        (20_000..20_064).contains(&a) && (40_000..40_064).contains(&b)
    })
}
