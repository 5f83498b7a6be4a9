//! KTAP test of `vmalloc.page_order` (blocks.rs): the same areas under order 0 and order N,
//! with what each costs in counted events (pages allocated, buddy calls per area, vfree
//! ticks: instructions under `--icount`), and the check that the knob changes them.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::panic::Location;

use numalab_algo::page::VirtAddr;
use numalab_algo::vmalloc::{Layout, Policy, PAGE_SIZE};

use super::instance::{AreaKind, Vmalloc};
use super::map;
use super::test_cases::{conserved, snapshot};
use super::tests::SUITE;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::{kassert, kassert_eq, ktest};

/// Areas per order, and pages per area.
const AREAS: u64 = 64;
const AREA_PAGES: u64 = 16;

/// What one order cost.
struct Cost {
    buddy_allocs: u64,
    buddy_frees: u64,
    high_order_pages: u64,
    vfree_ticks: u64,
}

/// Allocates AREAS areas of AREA_PAGES pages with backing order `order`, checks that every
/// block is physically contiguous, frees them (timed) and checks conservation.
fn run_order(order: u8) -> Result<Cost, String> {
    let topo = crate::topology::get();
    let layout = Layout::new(Policy::Cpu, topo.nr_cpus(), topo.nr_nodes(), 1 << 20);
    let v: Vmalloc = super::scratch(layout, 1 << 30)
        .ok_or_else(|| String::from("vmalloc not initialized"))?
        .with_page_order(order);
    let before = snapshot()?;
    let mut areas = Vec::new();
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
        vfree_ticks,
    };
    conserved(&v, &before)?;
    Ok(cost)
}

/// Order 0 against order N (`vmalloc.page_order`, 2 when it is 0): pages allocated, buddy
/// calls per area for vmalloc and vfree, vfree ticks per area. Order 0 makes one buddy call
/// per page each way; order N one per block when the buddy has blocks (the knob check:
/// fewer calls and pages in blocks, or the test fails).
fn page_order(ctx: &Ctx) -> TestResult {
    let n = match ctx.opts.get(&crate::options::VMALLOC_PAGE_ORDER) as u8 {
        0 => 2,
        n => n.min(4),
    };
    let mut costs = Vec::new();
    for order in [0, n] {
        let c = run_order(order).map_err(TestError::Fail)?;
        crate::println!(
            "# vmalloc page_order={}: {} areas of {} pages, pages in blocks of 2^{}: {}, buddy calls per area: vmalloc {} vfree {}, vfree ticks per area {} (instructions under --icount)",
            order,
            AREAS,
            AREA_PAGES,
            order,
            c.high_order_pages,
            c.buddy_allocs / AREAS,
            c.buddy_frees / AREAS,
            c.vfree_ticks / AREAS
        );
        kassert_eq!(
            c.buddy_allocs,
            c.buddy_frees,
            "order {}: every block goes back in one call",
            order
        );
        costs.push(c);
    }
    let (zero, high) = (&costs[0], &costs[1]);
    kassert_eq!(
        zero.buddy_allocs,
        AREAS * AREA_PAGES,
        "order 0: a call per page"
    );
    kassert_eq!(zero.high_order_pages, 0);
    kassert!(
        high.high_order_pages > 0 && high.buddy_allocs < zero.buddy_allocs,
        "page_order={} changed nothing: {} pages in blocks, {} buddy calls (order 0: {})",
        n,
        high.high_order_pages,
        high.buddy_allocs,
        zero.buddy_allocs
    );
    Ok(())
}

ktest!(SUITE, Test, page_order);
