//! The kernel's `#[global_allocator]`: the bootstrap heap (early) for early boot, whole
//! pages from the frame allocator for requests of a page or more once it is up, and SLUB's
//! kmalloc for smaller requests once SLUB is up (honouring the layout's alignment through
//! the naturally aligned kmalloc classes).
//!
//! Frees go back to where the block came from: inside the bootstrap heap's range -> the
//! bootstrap heap; a page-sized layout -> the frame allocator; anything else -> kfree.
//! The pages held for page-sized layouts are counted per node (a frame page holder), so
//! conservation checks see a heap that grew as held, not as lost.

use super::frame::{self, Pages, Policy, MAX_ORDER, PAGE_SIZE};
use crate::early;
use core::alloc::{GlobalAlloc, Layout};
use core::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering::Relaxed};
use numalab_algo::acpi::numa::MAX_NODES;
use numalab_algo::page::VirtAddr;
use numalab_algo::slub::geometry::{kmalloc_index_aligned, KMALLOC_SIZES};
use numalab_algo::topology::NodeId;

/// Pages held for page-sized layouts, per node (every node id is below MAX_NODES).
static PAGES_ON: [AtomicU64; MAX_NODES] = [const { AtomicU64::new(0) }; MAX_NODES];

fn pages_on(node: NodeId) -> Option<&'static AtomicU64> {
    PAGES_ON.get(node.index())
}

/// The heap as a holder of frame pages.
struct HeapPages;

impl frame::PageHolder for HeapPages {
    fn name(&self) -> &'static str {
        "heap pages"
    }

    fn held_bytes_on(&self, node: NodeId) -> u64 {
        pages_on(node).map_or(0, |n| n.load(Relaxed) * PAGE_SIZE)
    }
}

/// Pages the heap holds for page-sized layouts, all nodes together.
pub fn held_pages() -> u64 {
    PAGES_ON.iter().map(|n| n.load(Relaxed)).sum()
}

/// True until the suite starts (`early_init_done`): a failed allocation before it ends the run
/// through `out_of_memory`.
static EARLY_INIT: AtomicBool = AtomicBool::new(true);

/// Early init is over: from now on a failed allocation is the caller's to handle.
pub fn early_init_done() {
    EARLY_INIT.store(false, Relaxed);
}

/// Registers the heap's pages with the frame allocator's holders (once, after frame::init).
pub fn init() {
    frame::register_holder(&HeapPages);
}

/// Whether the heap counts its kmalloc blocks per class (`count_kmalloc_blocks`).
static KMALLOC_COUNTING: AtomicBool = AtomicBool::new(false);
/// Per kmalloc class: blocks the heap took from kmalloc minus blocks it gave back to kfree
/// since counting was turned on (negative when it frees older blocks).
static KMALLOC_BLOCKS: [AtomicI64; KMALLOC_SIZES.len()] =
    [const { AtomicI64::new(0) }; KMALLOC_SIZES.len()];

/// Turns the per-class count of the heap's kmalloc blocks on (from zero) or off. The soak's
/// per-cache object check uses it: a kmalloc cache's active objects are the soak's, the
/// heap's (this count) and what was live at the start. Off: one relaxed load per small
/// heap call.
pub fn count_kmalloc_blocks(on: bool) {
    KMALLOC_COUNTING.store(false, Relaxed);
    if on {
        for c in &KMALLOC_BLOCKS {
            c.store(0, Relaxed);
        }
        KMALLOC_COUNTING.store(true, Relaxed);
    }
}

/// Heap blocks of kmalloc class `class` (an index into KMALLOC_SIZES) taken minus given back
/// since `count_kmalloc_blocks(true)`.
pub fn kmalloc_blocks(class: usize) -> i64 {
    KMALLOC_BLOCKS.get(class).map_or(0, |c| c.load(Relaxed))
}

/// Counts a heap kmalloc block for the soak (kernels with the `ktest` feature only: the
/// production kernel's heap has no counting in its path).
#[inline(always)]
fn count_kmalloc_block(layout: Layout, delta: i64) {
    if cfg!(feature = "ktest") && KMALLOC_COUNTING.load(Relaxed) {
        if let Some(c) =
            kmalloc_index_aligned(layout.size(), layout.align()).and_then(|i| KMALLOC_BLOCKS.get(i))
        {
            c.fetch_add(delta, Relaxed);
        }
    }
}

struct KernelHeap;

#[global_allocator]
static HEAP: KernelHeap = KernelHeap;

/// Whether small blocks come from kmalloc now (SLUB is up) rather than the bootstrap heap.
pub fn small_blocks_from_kmalloc() -> bool {
    super::slub::is_ready()
}

/// The page order for `layout` when it goes to the frame allocator, else None.
fn page_order(layout: Layout) -> Option<u8> {
    if layout.size() < PAGE_SIZE as usize || layout.align() > PAGE_SIZE as usize {
        return None;
    }
    let pages = layout.size().div_ceil(PAGE_SIZE as usize);
    let order = pages.next_power_of_two().trailing_zeros() as u8;
    (order <= MAX_ORDER).then_some(order)
}

// SAFETY: alloc returns blocks of at least `layout.size()` bytes aligned to `layout.align()`
// (pages are 4 KiB aligned and only layouts with align <= 4 KiB go there; kmalloc_aligned
// picks a class whose objects are aligned to the layout; the bootstrap heap honours layouts
// itself), valid until dealloc; dealloc returns a block to the allocator that produced it,
// decided by its address and then its layout (size < 4 KiB outside the bootstrap heap means
// kmalloc, since page-sized layouts never go to kmalloc).
unsafe impl GlobalAlloc for KernelHeap {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // Rust's collections cannot see a failure: no injected fault here (like __GFP_NOFAIL).
        let _exempt = crate::fault::exempt();
        if layout.size() < PAGE_SIZE as usize && super::slub::is_ready() {
            if let Some(p) = super::slub::kmalloc::kmalloc_aligned(layout.size(), layout.align()) {
                count_kmalloc_block(layout, 1);
                return p.as_ptr();
            }
        }
        if frame::is_ready() {
            if let Some(order) = page_order(layout) {
                if let Ok(pages) = frame::alloc_pages(order, Policy::Local) {
                    if let Some(n) = pages_on(pages.node()) {
                        n.fetch_add(pages.nr_pages() as u64, Relaxed);
                    }
                    let phys = pages.into_raw().0;
                    return frame::phys_to_virt(phys).as_mut_ptr();
                }
            }
        }
        // SAFETY: the caller's layout has non-zero size (GlobalAlloc contract), passed as is.
        let p = unsafe { early::HEAP.alloc(layout) };
        // Nothing before the suite can live without its memory: said as such, not as a
        // panic of Rust's allocation-error handler.
        if p.is_null() && EARLY_INIT.load(Relaxed) {
            super::out_of_memory(format_args!(
                "the kernel heap cannot allocate {} bytes (align {}) during early init",
                layout.size(),
                layout.align()
            ));
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if early::in_bootstrap_heap(VirtAddr::from_ptr(ptr)) {
            // SAFETY: ptr came from the bootstrap heap's alloc with this layout (it lies in
            // that heap's range, and only early::HEAP hands out addresses there).
            unsafe { early::HEAP.dealloc(ptr, layout) };
            return;
        }
        if let Some(order) = page_order(layout) {
            let phys = frame::virt_to_phys(VirtAddr::from_ptr(ptr));
            // SAFETY: a block outside the bootstrap heap came from alloc_pages(order) above,
            // with the same layout and hence the same order; the caller gives it up.
            let pages = unsafe { Pages::from_raw(phys, order) };
            // A refused pair (not from alloc above) has no node and was never counted.
            if let Some(n) = pages_on(pages.node()) {
                n.fetch_sub(1 << order, Relaxed);
            }
            drop(pages);
        } else if let Some(p) = core::ptr::NonNull::new(ptr) {
            count_kmalloc_block(layout, -1);
            // SAFETY: a small block outside the bootstrap heap came from kmalloc_aligned
            // above; the caller gives it up.
            unsafe { super::slub::kmalloc::kfree(p) };
        }
    }
}
