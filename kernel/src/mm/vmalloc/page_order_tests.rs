//! KTAP test of `vmalloc.page_order` (blocks.rs): the same areas under order 0 and order N,
//! with what each costs in counted events (pages allocated, buddy calls per area, vfree
//! ticks: instructions under `--icount`), and the check that the knob changes them.

use alloc::vec::Vec;

use super::page_order_run::{run_order, AREAS, AREA_PAGES};
use crate::ktest::suites::VMALLOC as SUITE;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::{kassert, kassert_eq, ktest};

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
