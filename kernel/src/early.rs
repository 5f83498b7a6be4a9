//! Early boot memory: the direct map, the boot memory map, and a bootstrap heap
//! (linked_list_allocator) carved from the largest usable region.
//!
//! The bootstrap heap's physical range is recorded so later allocators reserve it. The
//! `#[global_allocator]` lives in mm/heap.rs and uses this heap for small (and early) requests.

use bootloader_api::info::{MemoryRegionKind, MemoryRegions};
use bootloader_api::BootInfo;
use linked_list_allocator::LockedHeap;
use spin::Once;

/// Upper bound of the bootstrap heap.
const BOOTSTRAP_HEAP_MAX_BYTES: u64 = 32 * 1024 * 1024;
use crate::arch::direct_map::phys_to_ptr;
use numalab_algo::page::{PhysAddr, VirtAddr, PAGE_SIZE};

/// The bootstrap heap (served through mm::heap's global allocator).
pub(super) static HEAP: LockedHeap = LockedHeap::empty();

/// What early boot learned about memory, for the subsystems that start later.
pub struct EarlyMemory {
    /// The bootloader's memory map.
    pub regions: &'static MemoryRegions,
    /// Physical range [start, end) of the bootstrap heap (reserved: not free memory).
    pub heap_phys: (u64, u64),
    /// Physical address of the ACPI RSDP, if the firmware gave one.
    pub rsdp_phys: Option<u64>,
}

static EARLY: Once<EarlyMemory> = Once::new();

/// Sets up the bootstrap heap. Halts with a clear message if the boot memory map has no
/// usable region or the bootloader did not map physical memory (both are boot/ bugs).
pub fn init(boot_info: &'static mut BootInfo) {
    let Some(direct_map_offset) = boot_info.physical_memory_offset.into_option() else {
        crate::println!("numalab: fatal: bootloader did not map physical memory");
        crate::arch::qemu_exit::exit(crate::arch::qemu_exit::ExitCode::Failure);
    };
    crate::arch::direct_map::init(direct_map_offset);
    let rsdp_phys = boot_info.rsdp_addr.into_option();
    let regions: &'static MemoryRegions = &boot_info.memory_regions;
    let best = regions
        .iter()
        .filter(|r| r.kind == MemoryRegionKind::Usable)
        .map(|r| {
            let start = r.start.div_ceil(PAGE_SIZE) * PAGE_SIZE;
            (start, r.end.max(start))
        })
        .max_by_key(|(start, end)| end - start);
    let Some((start, end)) = best.filter(|(s, e)| e - s >= PAGE_SIZE * 64) else {
        crate::println!("numalab: fatal: no usable memory region for the bootstrap heap");
        crate::arch::qemu_exit::exit(crate::arch::qemu_exit::ExitCode::Failure);
    };
    let size = (end - start).min(BOOTSTRAP_HEAP_MAX_BYTES) / PAGE_SIZE * PAGE_SIZE;
    // SAFETY: [start, start+size) is usable RAM per the bootloader's map, mapped at
    // the direct map; it is handed to the heap exactly once and recorded in `heap_phys` so no
    // other allocator hands it out.
    unsafe {
        HEAP.lock()
            .init(phys_to_ptr(PhysAddr::new(start)), size as usize);
    }
    EARLY.call_once(|| EarlyMemory {
        regions,
        heap_phys: (start, start + size),
        rsdp_phys,
    });
}

/// What `init` recorded. Panics only if called before `init` (a boot-order bug).
pub fn info() -> &'static EarlyMemory {
    EARLY.get().expect("early::info() before early::init()")
}

/// Whether `virt` lies in the bootstrap heap (false before `init`).
pub fn in_bootstrap_heap(virt: VirtAddr) -> bool {
    let Some(phys) = crate::arch::direct_map::virt_to_phys(virt) else {
        return false;
    };
    EARLY.get().is_some_and(|e| {
        let (start, end) = e.heap_phys;
        (start..end).contains(&phys.as_u64())
    })
}

/// Bytes used and free in the bootstrap heap.
#[cfg(feature = "ktest")]
pub fn heap_usage() -> (usize, usize) {
    let heap = HEAP.lock();
    (heap.used(), heap.free())
}

/// The bootstrap heap's own test (white-box: it reads the heap's usage).
#[cfg(feature = "ktest")]
mod tests {
    use crate::ktest::{Ctx, TestResult};
    use crate::{kassert, kassert_eq, ktest};

    use crate::ktest::suites::EARLY;

    fn heap_alloc(_ctx: &Ctx) -> TestResult {
        let v: alloc::vec::Vec<u64> = (0..1000).collect();
        kassert_eq!(v.iter().sum::<u64>(), 499_500);
        let (used, free) = super::heap_usage();
        kassert!(
            used > 0 && free > 0,
            "bootstrap heap used {} free {}",
            used,
            free
        );
        Ok(())
    }

    ktest!(EARLY, Test, "bootstrap_heap", heap_alloc);
}
