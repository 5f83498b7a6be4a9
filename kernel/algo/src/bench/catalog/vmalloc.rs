//! Catalog entries of the vmalloc experiments: `test_vmalloc` (Linux's
//! lib/test_vmalloc.c with its parameter grid, the `test_vmalloc.*` kernel options: one case
//! per test it can run, and `all_tests` for the counts of the whole run) and
//! `vmalloc_page_order` (both backing orders in one boot).

use super::{
    case, sometimes, Baseline, Boot, Boots, Case, Cases, Designs, Experiment, Headline, Required,
};
use crate::vmalloc::test_grid::TESTS;

const BOOTS: Boots = super::TSC_DET.and(Boots::ICOUNT);

/// The whole run's counts (every worker, every test).
pub const ALL_TESTS: &str = "all_tests";

/// test_vmalloc.c's tests (its whole table, kvfree_rcu's two included), then `all_tests`.
const CASES: [Case; TESTS.len() + 1] = {
    let mut out = [sometimes(ALL_TESTS, BOOTS); TESTS.len() + 1];
    let mut i = 0;
    while i < TESTS.len() {
        out[i] = sometimes(TESTS[i], BOOTS);
        i += 1;
    }
    out[TESTS.len()] = case(ALL_TESTS, BOOTS);
    out
};

/// kernel/src/bench/test_vmalloc.rs: the tests `test_vmalloc.run_test_mask` selects, run by
/// `test_vmalloc.nr_threads` workers on the boot's vmalloc design, each test's `Summary:`
/// line as Linux prints it; per test `passed`, `failed`, `loops`, `repeat` and its average run
/// (`avg_usec` in the tsc boot, a TCG trend; `avg_instructions` in the icount boot, exact),
/// and for `all_tests` the counts of the whole run (exact in the det and icount boots).
pub const TEST_VMALLOC: Experiment = Experiment {
    name: "test_vmalloc",
    cases: &CASES,
    baseline: Baseline::Case(ALL_TESTS),
    boots: BOOTS,
    numa_only: false,
    designs: Designs::NoSlab,
    required: &[
        Required {
            cases: Cases::Only(&[ALL_TESTS]),
            metrics: &COUNTS,
            boot: Boot::Icount,
        },
        Required {
            cases: Cases::Only(&[ALL_TESTS]),
            metrics: &["instructions"],
            boot: Boot::Icount,
        },
        Required {
            cases: Cases::Only(&[ALL_TESTS]),
            metrics: &COUNTS,
            boot: Boot::Det,
        },
        Required {
            cases: Cases::Only(&[ALL_TESTS]),
            metrics: &COUNTS,
            boot: Boot::Tsc,
        },
    ],
    seeds: &[],
    headline: Headline::Value {
        metric: "instructions",
        case: ALL_TESTS,
        boot: Boot::Icount,
    },
    twin: None,
};

/// What `all_tests` prints in every boot (and `instructions`, the whole run's, in the icount
/// boot).
pub const COUNTS: [&str; 5] = [
    "workers",
    "purges",
    "global_lock_acquisitions",
    "node_lock_acquisitions",
    "pool_allocs",
];

/// What `vmalloc_page_order` prints per order.
const PAGE_ORDER_METRICS: [&str; 6] = [
    "order",
    "pages_in_blocks_per_area",
    "vmalloc_buddy_calls_per_area",
    "vfree_buddy_calls_per_area",
    "vmalloc_instructions_per_area",
    "vfree_instructions_per_area",
];

/// kernel/src/bench/vmalloc_page_order.rs: `vmalloc.page_order` (Linux 6.19's large-order
/// backing pages) at order 0 and order N in one boot, 64 areas of 16 pages each: pages in
/// blocks, buddy calls and instructions of vmalloc and vfree per area (icount boot, exact),
/// with a knob check on the buddy counters.
pub const VMALLOC_PAGE_ORDER: Experiment = Experiment {
    name: "vmalloc_page_order",
    cases: &[
        case("order_0", Boots::ICOUNT),
        case("order_n", Boots::ICOUNT),
    ],
    baseline: Baseline::Case("order_0"),
    boots: Boots::ICOUNT,
    numa_only: false,
    designs: Designs::NoSlab,
    required: &[Required {
        cases: Cases::Every,
        metrics: &PAGE_ORDER_METRICS,
        boot: Boot::Icount,
    }],
    seeds: &[],
    headline: Headline::Ratio {
        metric: "vfree_instructions_per_area",
        case: "order_n",
        base: "order_0",
        boot: Boot::Icount,
    },
    twin: None,
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_test_of_the_table_is_a_case() {
        for name in TESTS {
            assert!(TEST_VMALLOC.has_case(name), "{name}");
        }
        assert!(TEST_VMALLOC.has_case("kvfree_rcu_2_arg_vmalloc_test"));
        assert!(TEST_VMALLOC.has_case(ALL_TESTS));
    }
}
