//! Benchmark `vmalloc_page_order`: `vmalloc.page_order` (Linux 6.19's large-order backing
//! pages, blocks.rs) with both orders in one boot, on a scratch instance of the cpu design:
//! 64 areas of 16 pages at order 0 (`order_0`) and at order N (`order_n`: the boot's
//! `vmalloc.page_order`, or 2 when it is 0; at most 4, the areas' 16 pages). Each order's run
//! is mm/vmalloc/page_order_run.rs (contiguity of every block and conservation checked).
//!
//! Metrics, in the one-CPU icount boot (exact): `order`, `pages_in_blocks_per_area`,
//! `vmalloc_buddy_calls_per_area`, `vfree_buddy_calls_per_area`,
//! `vmalloc_instructions_per_area` and `vfree_instructions_per_area`. The other boots run the
//! same checks and print nothing. Knob check: the two orders' buddy calls and pages in
//! blocks (numalab_algo::knob) must differ, or the experiment fails.

use alloc::format;
use alloc::vec::Vec;

use numalab_algo::knob::{self, CaseCounters};

use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::vmalloc::page_order_run::{run_order, AREAS, AREA_PAGES};

const BENCH: &str = super::catalog::VMALLOC_PAGE_ORDER.name;

fn vmalloc_page_order(ctx: &Ctx) -> TestResult {
    let n = match ctx.opts.get(&crate::options::VMALLOC_PAGE_ORDER) as u8 {
        0 => 2,
        n => n.min(AREA_PAGES.trailing_zeros() as u8),
    };
    let mut knobs = Vec::new();
    for (case, order) in super::rep_order([("order_0", 0u8), ("order_n", n)]) {
        let c = run_order(order).map_err(TestError::Fail)?;
        if c.buddy_allocs != c.buddy_frees {
            return Err(TestError::Fail(format!(
                "{case}: {} buddy allocations but {} frees: a block did not go back in one call",
                c.buddy_allocs, c.buddy_frees
            )));
        }
        let per_area = |v: u64| v as f64 / AREAS as f64;
        crate::println!(
            "# {BENCH}[{case}]: order {order}: {AREAS} areas of {AREA_PAGES} pages, pages in blocks {}, buddy calls vmalloc {} vfree {}, ticks vmalloc {} vfree {}",
            c.high_order_pages,
            c.buddy_allocs,
            c.buddy_frees,
            c.vmalloc_ticks,
            c.vfree_ticks
        );
        if super::instruction_boot() {
            let rec = |metric: &str, value: f64, unit: &str| {
                super::record(BENCH, case, metric, value, unit, 1)
            };
            rec("order", order as f64, "order");
            rec(
                "pages_in_blocks_per_area",
                per_area(c.high_order_pages),
                "pages",
            );
            rec(
                "vmalloc_buddy_calls_per_area",
                per_area(c.buddy_allocs),
                "calls",
            );
            rec(
                "vfree_buddy_calls_per_area",
                per_area(c.buddy_frees),
                "calls",
            );
            rec(
                "vmalloc_instructions_per_area",
                per_area(c.vmalloc_ticks),
                "instructions",
            );
            rec(
                "vfree_instructions_per_area",
                per_area(c.vfree_ticks),
                "instructions",
            );
        }
        let mut k = CaseCounters::new(case);
        k.add("buddy_allocs", c.buddy_allocs);
        k.add("buddy_frees", c.buddy_frees);
        k.add("high_order_pages", c.high_order_pages);
        crate::println!("# {BENCH}: knob counters {}: {}", k.case, k.describe());
        knobs.push(k);
    }
    knob::check(BENCH, &knobs).map_err(TestError::Fail)
}

crate::ktest!(super::BENCH_SUITE, Bench, BENCH, vmalloc_page_order);
