//! One run of `vmalloc.page_order` (blocks.rs): the same areas at one backing order on a
//! scratch instance, with what they cost in counted events (pages in blocks, buddy calls,
//! rdtsc ticks of vmalloc and of vfree: instructions under icount). The page_order ktest and
//! the `vmalloc_page_order` experiment (kernel/src/bench/vmalloc_page_order.rs) run it.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::panic::Location;

use numalab_algo::page::VirtAddr;
use numalab_algo::vmalloc::{Layout, Policy, PAGE_SIZE};

use super::instance::{AreaKind, Vmalloc};
use super::map;
use super::test_cases::{conserved, snapshot};

/// Areas per order, and pages per area.
pub const AREAS: u64 = 64;
pub const AREA_PAGES: u64 = 16;

/// What one order cost.
pub struct Cost {
    pub buddy_allocs: u64,
    pub buddy_frees: u64,
    pub high_order_pages: u64,
    /// rdtsc ticks of all the vmalloc calls, and of all the vfree calls (instructions under
    /// icount).
    pub vmalloc_ticks: u64,
    pub vfree_ticks: u64,
}

/// Allocates AREAS areas of AREA_PAGES pages with backing order `order`, checks that every
/// block is physically contiguous, frees them and checks conservation; the vmalloc calls
/// and the vfree calls are timed apart.
pub fn run_order(order: u8) -> Result<Cost, String> {
    let topo = crate::topology::get();
    let layout = Layout::new(Policy::Cpu, topo.nr_cpus(), topo.nr_nodes(), 1 << 20);
    let v: Vmalloc = super::scratch(layout, 1 << 30)
        .ok_or_else(|| String::from("vmalloc not initialized"))?
        .with_page_order(order);
    let before = snapshot()?;
    let mut areas = Vec::with_capacity(AREAS as usize);
    let t0 = crate::arch::rdtsc();
    for _ in 0..AREAS {
        let a = v
            .alloc(
                AREA_PAGES * PAGE_SIZE,
                PAGE_SIZE,
                None,
                false,
                Location::caller(),
            )
            .map_err(|e| format!("order {order}: {e:?}"))?;
        areas.push(a);
    }
    let vmalloc_ticks = crate::arch::rdtsc() - t0;
    let block = 1u64 << v.page_order;
    for &a in &areas {
        let first = map::translate(a).ok_or("area page not mapped")?;
        for k in 1..AREA_PAGES {
            let phys = map::translate(VirtAddr::new(a.as_u64() + k * PAGE_SIZE))
                .ok_or("area page not mapped")?;
            let base = (k / block) * block;
            let head = map::translate(VirtAddr::new(a.as_u64() + base * PAGE_SIZE))
                .ok_or("area page not mapped")?;
            if k % block != 0 && phys.as_u64() != head.as_u64() + (k - base) * PAGE_SIZE {
                return Err(format!(
                    "order {order}: page {k} of {:#x} at {:#x}, not contiguous with its \
                     block at {:#x} (first page {:#x})",
                    a.as_u64(),
                    phys.as_u64(),
                    head.as_u64(),
                    first.as_u64()
                ));
            }
        }
    }
    let t0 = crate::arch::rdtsc();
    for &a in &areas {
        v.free(a, AreaKind::Vmalloc)
            .map_err(|b| format!("vfree({:#x}): {}", b.addr, b.reason()))?;
    }
    let vfree_ticks = crate::arch::rdtsc() - t0;
    let c = &v.counters;
    let cost = Cost {
        buddy_allocs: c.buddy_allocs.get(),
        buddy_frees: c.buddy_frees.get(),
        high_order_pages: c.high_order_pages.get(),
        vmalloc_ticks,
        vfree_ticks,
    };
    conserved(&v, &before)?;
    Ok(cost)
}
