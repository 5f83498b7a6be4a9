//! vmalloc: virtually contiguous kernel memory from scattered pages, with vmap nodes.
//!
//! Words: a *vmap node* is a shard of vmalloc's bookkeeping (lock, busy tree, lazy list,
//! pools); a *NUMA node* is a memory/CPU locality domain. `vmalloc_node(size, node)` takes a
//! NUMA node; `vmalloc.nodes=global|cpu|numa` says how vmap nodes are formed (only `numa`
//! makes them one per NUMA node). See numalab_algo::vmalloc for the pure core.
//!
//! Layout: one free higher-half PML4 slot (512 GiB) is split in four quarters of 128 GiB:
//!
//! ```text
//!   slot base + 0       global design   (one lock for everything)
//!   slot base + 128G    cpu design      (Linux 6.9: CPU-count vmap nodes)
//!   slot base + 256G    numa design     (one vmap node per NUMA node)
//!   slot base + 384G    scratch         (small short-lived instances made by tests)
//! ```
//!
//! All three designs exist in every boot; `vmalloc.nodes=` picks the one behind the
//! kernel-wide API (vmalloc, vfree, ...), and tests and the benchmark use each directly.
//! vfree/vunmap find the design owning an address by its quarter.
//!
//! Lock order (outermost first): purge lock > free-space ("global") lock > vmap node lock >
//! page allocator; no printing under any of them (instance.rs).

mod accounting;
mod area;
mod backing;
mod blocks;
mod counter;
mod info;
mod instance;
mod map;
#[cfg(feature = "ktest")]
mod nr_vmalloc_tests;
#[cfg(feature = "ktest")]
pub mod page_order_run;
#[cfg(feature = "ktest")]
mod page_order_tests;
#[cfg(feature = "ktest")]
mod placement_tests;
mod probe;
#[cfg(feature = "ktest")]
pub mod test_cases;
#[cfg(feature = "ktest")]
mod tests;

use core::panic::Location;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use numalab_algo::options::Options;
pub use numalab_algo::vmalloc::{Layout, Policy, VmError, PAGE_SIZE};
use spin::Once;

pub use area::VmArea;
pub use info::{print_counters, vmallocinfo};
pub use instance::{AreaKind, BadFree, Vmalloc};
/// The physical page mapped at a vmalloc address, if any (Linux's vmalloc_to_page).
pub use map::translate;

use crate::topology::NodeId;

/// The error type of the vmalloc API (the contract's name).
pub type VmallocError = VmError;

use numalab_algo::page::PhysAddr;
/// The kernel virtual addresses vmalloc/vmap return and vfree/vunmap take.
pub use numalab_algo::page::VirtAddr;

const QUARTER_BYTES: u64 = 128 << 30;

struct System {
    designs: [Vmalloc; 3],
    default: Policy,
    scratch_base: u64,
}

static SYSTEM: Once<System> = Once::new();
/// Bad vfree/vunmap addresses outside every vmalloc range.
static BAD_OUTSIDE: AtomicU64 = AtomicU64::new(0);

fn index(p: Policy) -> usize {
    match p {
        Policy::Global => 0,
        Policy::Cpu => 1,
        Policy::Numa => 2,
    }
}

/// Reserves the range and builds the three designs. Prints one line; on failure (no free
/// PML4 slot, no page for its table) prints a warning and leaves vmalloc unavailable.
pub fn init(opts: &Options) {
    if !probe::init() {
        crate::warn!("vmalloc: exception fixup table full; fault probes will not work");
    }
    map::init_holder(crate::topology::get().nr_nodes());
    let Some((base, slot)) = map::claim_slot() else {
        crate::warn!("vmalloc: no free PML4 slot for the vmalloc range; vmalloc unavailable");
        return;
    };
    let topo = crate::topology::get();
    let lazy = opts.get(&crate::options::VMALLOC_LAZY_MAX_PAGES);
    let order = opts.get(&crate::options::VMALLOC_PAGE_ORDER) as u8;
    accounting::init(
        opts.get(&crate::options::VMALLOC_NR_VMALLOC),
        crate::topology::get().nr_nodes(),
    );
    let default = opts.get(&crate::options::VMALLOC_NODES);
    let sys = SYSTEM.call_once(|| {
        let make = |i: u64, p: Policy| {
            let layout = Layout::new(p, topo.nr_cpus(), topo.nr_nodes(), lazy);
            Vmalloc::new(layout, base + i * QUARTER_BYTES, QUARTER_BYTES).with_page_order(order)
        };
        System {
            designs: [
                make(0, Policy::Global),
                make(1, Policy::Cpu),
                make(2, Policy::Numa),
            ],
            default,
            scratch_base: base + 3 * QUARTER_BYTES,
        }
    });
    let d = &sys.designs;
    crate::println!(
        "vmalloc: range {:#x}-{:#x} (PML4 slot {}), vmap nodes: global 1, cpu {}, numa {}; lazy_max_pages {}/{}/{} (numa: per node); page_order {}; API uses vmalloc.nodes={}",
        base,
        base + 4 * QUARTER_BYTES,
        slot,
        d[1].layout.nr_nodes,
        d[2].layout.nr_nodes,
        d[0].layout.lazy_max_pages,
        d[1].layout.lazy_max_pages,
        d[2].layout.lazy_max_pages,
        d[0].page_order,
        sys.default.name()
    );
}

/// The design `p` (None before init or when init failed).
pub fn design(p: Policy) -> Option<&'static Vmalloc> {
    SYSTEM.get().map(|s| &s.designs[index(p)])
}

/// The design behind the kernel-wide API (`vmalloc.nodes=`).
pub fn active() -> Option<&'static Vmalloc> {
    SYSTEM.get().map(|s| &s.designs[index(s.default)])
}

/// A fresh instance over the first `range_bytes` of the scratch quarter, for tests that need
/// a small range or a tiny lazy threshold. The caller must free and purge everything in it
/// before making another one (the page tables of the quarter are shared).
pub fn scratch(layout: Layout, range_bytes: u64) -> Option<Vmalloc> {
    let s = SYSTEM.get()?;
    Some(Vmalloc::new(
        layout,
        s.scratch_base,
        range_bytes.min(QUARTER_BYTES),
    ))
}

fn owner_of(addr: VirtAddr) -> Option<&'static Vmalloc> {
    SYSTEM.get()?.designs.iter().find(|d| d.contains(addr))
}

/// Allocates `size_bytes` of virtually contiguous memory from the calling CPU's memory node.
#[track_caller]
pub fn vmalloc(size_bytes: usize) -> Result<VirtAddr, VmError> {
    let v = active().ok_or(VmError::NoMemory)?;
    v.alloc(
        size_bytes as u64,
        PAGE_SIZE,
        None,
        false,
        Location::caller(),
    )
}

/// Like `vmalloc`, with pages from NUMA node `node` (falling back to the nearest with memory).
#[track_caller]
pub fn vmalloc_node(size_bytes: usize, node: NodeId) -> Result<VirtAddr, VmError> {
    let v = active().ok_or(VmError::NoMemory)?;
    v.alloc(
        size_bytes as u64,
        PAGE_SIZE,
        Some(node),
        false,
        Location::caller(),
    )
}

/// `vmalloc` with the memory zero-filled.
#[track_caller]
pub fn vzalloc(size_bytes: usize) -> Result<VirtAddr, VmError> {
    let v = active().ok_or(VmError::NoMemory)?;
    v.alloc(size_bytes as u64, PAGE_SIZE, None, true, Location::caller())
}

/// Maps the pages at physical addresses `pages` contiguously (they stay the caller's).
#[track_caller]
pub fn vmap(pages: &[PhysAddr]) -> Result<VirtAddr, VmError> {
    let v = active().ok_or(VmError::NoMemory)?;
    v.vmap(pages, Location::caller())
}

/// What every refused vfree/vunmap warning contains (tests declare it: `expect_warnings`).
pub const BAD_FREE_WARNING: &str = "bad frees so far";

fn report(op: &str, addr: u64, reason: &str, total: u64) {
    crate::warn!(
        "{}({:#x}): {}; ignored ({} {})",
        op,
        addr,
        reason,
        total,
        BAD_FREE_WARNING
    );
}

fn free_any(op: &str, addr: VirtAddr, kind: AreaKind) -> Result<(), BadFree> {
    match owner_of(addr) {
        Some(v) => v.free(addr, kind).inspect_err(|b| {
            report(op, b.addr, b.reason(), v.counters.bad_frees.get());
        }),
        None => {
            let n = BAD_OUTSIDE.fetch_add(1, Relaxed) + 1;
            report(op, addr.as_u64(), "not a vmalloc address", n);
            Err(BadFree {
                addr: addr.as_u64(),
                fault: numalab_algo::vmalloc::FreeFault::NotInRange,
                wrong_kind: false,
            })
        }
    }
}

/// Frees a vmalloc area. An address that is not the start of a live vmalloc area is reported
/// (address, reason), counted and otherwise ignored; the result says which.
pub fn vfree(addr: VirtAddr) -> Result<(), BadFree> {
    free_any("vfree", addr, AreaKind::Vmalloc)
}

/// Unmaps a vmap area (its pages are not freed). Bad addresses as for `vfree`.
pub fn vunmap(addr: VirtAddr) -> Result<(), BadFree> {
    free_any("vunmap", addr, AreaKind::Vmap)
}

/// Bad frees of addresses outside every vmalloc range.
pub fn bad_outside() -> u64 {
    BAD_OUTSIDE.load(Relaxed)
}

/// Reads a u64 at `addr` through the fault probe: Err((freed area start, end, former
/// owner)) when it faults in a recently freed area, Err with None when it faults elsewhere.
#[allow(clippy::type_complexity)]
pub fn probe_read(addr: u64) -> Result<u64, Option<(u64, u64, &'static Location<'static>)>> {
    probe::read_u64(addr).map_err(|()| probe::former_owner(addr))
}
