//! Memory for starting CPUs: the SMP virtual region, AP stacks with guard pages, per-CPU areas
//! (`PerCpu` and the `per_cpu!` copies) and descriptor tables placed on the CPU's memory node,
//! and the trampoline's low page.

use core::alloc::Layout;
#[cfg(feature = "ktest")]
use core::sync::atomic::{AtomicU64, Ordering};
use numalab_algo::page::{PhysAddr, VirtAddr};
use spin::Once;
use x86_64::structures::paging::PageTableFlags;

use super::{ApRequest, IST_BYTES, KERNEL_STACK_BYTES};
use crate::arch::direct_map;
use crate::arch::gdt::CpuTables;
use crate::arch::paging::{self, PAGE_SIZE};
use crate::percpu::{self, PerCpu};
use crate::topology::NodeId;

const GIB: u64 = 1 << 30;
/// Offset of the per-CPU stack blocks in the region.
const STACKS_OFFSET: u64 = GIB;
/// Virtual bytes per CPU stack block.
const STACK_STRIDE: u64 = 128 * 1024;
/// Offset of the test scratch pages.
#[cfg(feature = "ktest")]
const SCRATCH_OFFSET: u64 = 256 * GIB;

static REGION: Once<Result<u64, paging::PagingError>> = Once::new();
#[cfg(feature = "ktest")]
static SCRATCH_NEXT: AtomicU64 = AtomicU64::new(0);

/// Base of the SMP region (claimed on first use).
pub fn region_base() -> Option<u64> {
    REGION.call_once(paging::reserve_pml4_slot).ok()
}

/// Virtual address of the xAPIC register page.
pub fn apic_mmio_virt() -> Option<VirtAddr> {
    region_base().map(VirtAddr::new)
}

/// `nr_pages` (rounded up to a power of two) zeroed, physically contiguous pages from memory
/// node `node` (the frame allocator's `Preferred` policy: the nearest node with free memory if
/// `node` has none left); returns their physical address. They are never freed. Before the
/// frame allocator is up they come from the heap.
pub fn node_pages_phys(nr_pages: usize, node: NodeId) -> Option<u64> {
    node_pages_phys_from(NODE_PAGES.get().copied(), nr_pages, node)
}

/// Where node pages come from once the frame allocator is up: `(order, node)` -> the physical
/// address of 2^order pages nobody else uses (registered by the frame allocator's init; smp
/// imports no mm code).
static NODE_PAGES: Once<fn(u8, NodeId) -> Option<u64>> = Once::new();

/// Registers the source of node pages (the frame allocator, once it is up).
pub fn set_node_page_source(source: fn(order: u8, node: NodeId) -> Option<u64>) {
    NODE_PAGES.call_once(|| source);
}

fn node_pages_phys_from(
    source: Option<fn(u8, NodeId) -> Option<u64>>,
    nr_pages: usize,
    node: NodeId,
) -> Option<u64> {
    let bytes = nr_pages.next_power_of_two() * PAGE_SIZE as usize;
    let phys = if let Some(source) = source {
        let order = nr_pages.next_power_of_two().trailing_zeros() as u8;
        source(order, node)?
    } else {
        let layout = Layout::from_size_align(bytes, PAGE_SIZE as usize).ok()?;
        // SAFETY: non-zero size.
        let ptr = unsafe { alloc::alloc::alloc(layout) };
        if ptr.is_null() {
            return None;
        }
        direct_map::ptr_to_phys(ptr)?.as_u64()
    };
    // SAFETY: the block was just allocated for the caller (leaked) and is mapped in the
    // direct map.
    unsafe { core::ptr::write_bytes(direct_map::phys_to_ptr::<u8>(PhysAddr::new(phys)), 0, bytes) };
    Some(phys)
}

/// `nr_pages` fresh, unmapped virtual pages in the SMP region for tests (never reused).
#[cfg(feature = "ktest")]
pub fn alloc_scratch_virt(nr_pages: u64) -> Option<VirtAddr> {
    let base = region_base()?;
    let off = SCRATCH_NEXT.fetch_add((nr_pages + 1) * PAGE_SIZE, Ordering::Relaxed);
    Some(VirtAddr::new(base + SCRATCH_OFFSET + off + PAGE_SIZE))
}

/// Maps `bytes` of fresh node-local memory at `virt` (writable, not executable).
fn map_fresh(virt: VirtAddr, bytes: u64, node: NodeId) -> Option<()> {
    let phys = PhysAddr::new(node_pages_phys((bytes / PAGE_SIZE) as usize, node)?);
    let flags = PageTableFlags::WRITABLE | PageTableFlags::NO_EXECUTE;
    for page in 0..bytes / PAGE_SIZE {
        // SAFETY: `virt` lies in this CPU's own block of the SMP region, which nothing else
        // maps; the frames were just allocated for it and are never freed.
        unsafe { paging::map_4k(virt + page * PAGE_SIZE, phys + page * PAGE_SIZE, flags) }.ok()?;
    }
    Some(())
}

/// Tops of one CPU's stacks.
pub struct CpuStacks {
    pub kernel_top: u64,
    pub ist_tops: [VirtAddr; 2],
}

/// Maps the stacks of the CPU in stack block `index`, each above an unmapped guard page.
pub fn map_cpu_stacks(index: usize, node: NodeId) -> Option<CpuStacks> {
    let block = region_base()? + STACKS_OFFSET + index as u64 * STACK_STRIDE;
    let df = block + PAGE_SIZE;
    let nmi = df + IST_BYTES + PAGE_SIZE;
    let kernel = nmi + IST_BYTES + PAGE_SIZE;
    const _: () = assert!(3 * PAGE_SIZE + 2 * IST_BYTES + KERNEL_STACK_BYTES <= STACK_STRIDE);
    map_fresh(VirtAddr::new(df), IST_BYTES, node)?;
    map_fresh(VirtAddr::new(nmi), IST_BYTES, node)?;
    map_fresh(VirtAddr::new(kernel), KERNEL_STACK_BYTES, node)?;
    Some(CpuStacks {
        kernel_top: kernel + KERNEL_STACK_BYTES,
        ist_tops: [
            VirtAddr::new(df + IST_BYTES),
            VirtAddr::new(nmi + IST_BYTES),
        ],
    })
}

/// Offset of the CPU's descriptor tables in its per-CPU page.
const TABLES_OFFSET: usize = 2048;

/// Builds the per-CPU area and GDT/TSS of `req` in one page on its memory node.
pub fn alloc_cpu_area(
    req: &ApRequest,
    ist_tops: [VirtAddr; 2],
) -> Option<(&'static PerCpu, &'static CpuTables)> {
    const _: () = assert!(core::mem::size_of::<PerCpu>() <= TABLES_OFFSET);
    const _: () =
        assert!(TABLES_OFFSET + core::mem::size_of::<Option<CpuTables>>() <= PAGE_SIZE as usize);
    const _: () = assert!(TABLES_OFFSET.is_multiple_of(core::mem::align_of::<Option<CpuTables>>()));
    let phys = node_pages_phys(1, req.mem_node)?;
    let page = direct_map::phys_to_ptr::<u8>(PhysAddr::new(phys));
    // SAFETY: `page` is a fresh, zeroed, page-aligned page owned by this CPU forever; PerCpu
    // fits at offset 0 and Option<CpuTables> at TABLES_OFFSET (asserted above), both aligned.
    unsafe {
        let area = page as *mut PerCpu;
        area.write(PerCpu::new(req.cpu, req.apic_id, req.node, req.mem_node));
        let slot = page.add(TABLES_OFFSET) as *mut Option<CpuTables>;
        slot.write(None);
        let tables = CpuTables::init(&mut *slot, ist_tops);
        (*area).set_var_delta(alloc_var_area(req)?);
        // Its run-time per-CPU copies (percpu/dynamic.rs: regions taken with the frame
        // allocator, before any CPU started).
        (*area).set_dyn_delta(percpu::dyn_delta_of(req.cpu)?);
        Some((&*area, tables))
    }
}

/// The CPU's `per_cpu!` copies, on its memory node; returns its delta (percpu/local.rs).
fn alloc_var_area(req: &ApRequest) -> Option<usize> {
    let pages = percpu::area_bytes().div_ceil(PAGE_SIZE as usize).max(1);
    let phys = node_pages_phys(pages, req.mem_node)?;
    let vars = direct_map::phys_to_ptr::<u8>(PhysAddr::new(phys));
    // SAFETY: `vars` is fresh, zeroed, page-aligned memory of at least area_bytes(), owned by
    // this CPU forever; the CPU has not started, so nothing reads its copies yet.
    unsafe { percpu::alloc_area(req.cpu, vars) }
}

/// The trampoline's page: the highest usable page below 0x9f000 in the boot memory map (so it
/// stays clear of the real-mode IVT/BDA at the bottom). Deterministic, so the frame allocator
/// can exclude it with `trampoline_reserved_range`.
pub fn trampoline_page() -> Option<u64> {
    if super::trampoline::size_bytes() > PAGE_SIZE as usize {
        return None;
    }
    crate::smp::trampoline_reserved_range().map(|(start, _)| start)
}

/// Identity-maps the trampoline page (executable) so paging can turn on inside it.
pub fn identity_map(phys: PhysAddr) -> Result<(), paging::PagingError> {
    // SAFETY: `phys` is the reserved trampoline page; virtual `phys` (below 1 MiB) is in the
    // lower half, which the kernel does not use for anything else (checked: map_4k fails if
    // it is already mapped).
    unsafe { paging::map_4k(VirtAddr::new(phys.as_u64()), phys, PageTableFlags::WRITABLE) }
}

/// Removes the identity mapping once no AP can still run the trampoline.
pub fn identity_unmap(phys: PhysAddr) {
    // SAFETY: every AP is past the trampoline (all online); nothing else uses this page.
    let _ = unsafe { paging::unmap_4k(VirtAddr::new(phys.as_u64())) };
    // The APs' stale translations of it are shot down by crate::smp::init.
}
