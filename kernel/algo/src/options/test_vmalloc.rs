//! Kernel options of the `test_vmalloc` group: the module parameters of Linux's
//! lib/test_vmalloc.c under their own names (`test_vmalloc.nr_threads=4` is how Linux's
//! command line sets them too), read by the `test_vmalloc` experiment
//! (kernel/src/bench/test_vmalloc.rs) so that one sweep replays its grid.

use super::{Kind, Spec};

/// Linux's `run_test_mask` default (INT_MAX): every test.
pub const ALL_TESTS_MASK: u64 = i32::MAX as u64;

/// Linux's cap on `nr_threads` (USHRT_MAX).
pub const MAX_THREADS: u64 = u16::MAX as u64;

super::declare! {
    TEST_VMALLOC = "test_vmalloc";
    TEST_VMALLOC_RUN_TEST_MASK: u64 = Spec {
        key: "test_vmalloc.run_test_mask",
        kind: Kind::U64 { min: 0, max: ALL_TESTS_MASK },
        default: "2147483647",
        help: "tests to run, one bit each in test_vmalloc.c's order: 1 fix_size, 2 full_fit, 4 long_busy_list, 8 random_size, 16 fix_align, 32 random_size_align, 64 align_shift, 128 pcpu, 256 kvfree_rcu_1_arg, 512 kvfree_rcu_2_arg, 1024 vm_map_ram",
    };
    TEST_VMALLOC_NR_THREADS: u64 = Spec {
        key: "test_vmalloc.nr_threads",
        kind: Kind::U64 { min: 0, max: MAX_THREADS },
        default: "0",
        help: "workers (0 counts as 1, as Linux clamps it); worker i runs on online CPU i mod CPUs, a CPU's workers one after another",
    };
    TEST_VMALLOC_NR_PAGES: u64 = Spec {
        key: "test_vmalloc.nr_pages",
        kind: Kind::U64 { min: 0, max: 1 << 16 },
        default: "0",
        help: "pages of fix_size_alloc_test's areas and of vm_map_ram_test's mapping (0 counts as 1)",
    };
    TEST_VMALLOC_SEQUENTIAL_TEST_ORDER: bool = Spec {
        key: "test_vmalloc.sequential_test_order",
        kind: Kind::Bool,
        default: "0",
        help: "1: every worker runs the tests in the table's order; 0: each worker shuffles its order (test_vmalloc.c's shuffle_array)",
    };
    TEST_VMALLOC_TEST_REPEAT_COUNT: u64 = Spec {
        key: "test_vmalloc.test_repeat_count",
        kind: Kind::U64 { min: 0, max: 1_000_000 },
        default: "1",
        help: "runs of each test per worker (0 counts as 1); avg is one run's time",
    };
    TEST_VMALLOC_TEST_LOOP_COUNT: u64 = Spec {
        key: "test_vmalloc.test_loop_count",
        kind: Kind::U64 { min: 0, max: 1_000_000 },
        default: "100",
        help: "loops of each test (0 counts as 1; Linux's default 1000000 is hours under TCG)",
    };
}
