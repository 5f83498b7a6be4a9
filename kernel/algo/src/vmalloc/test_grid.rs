//! test_vmalloc's parameter grid (Linux lib/test_vmalloc.c): its test table in its order (the
//! bits of `run_test_mask`), each worker's test order (`sequential_test_order`, else Linux's
//! `shuffle_array`), which workers a CPU runs (`nr_threads` over the online CPUs) and the
//! `Summary:` line as Linux prints it. The kernel's experiment and the host's merged grid
//! (boot/src/sweep/grid.rs) share it.

use crate::rng::Rng;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// test_vmalloc.c's `test_case_array`, in its order: bit `1 << i` of `run_test_mask` selects
/// the i-th name.
pub const TESTS: [&str; 11] = [
    "fix_size_alloc_test",
    "full_fit_alloc_test",
    "long_busy_list_alloc_test",
    "random_size_alloc_test",
    "fix_align_alloc_test",
    "random_size_align_alloc_test",
    "align_shift_alloc_test",
    "pcpu_alloc_test",
    "kvfree_rcu_1_arg_vmalloc_test",
    "kvfree_rcu_2_arg_vmalloc_test",
    "vm_map_ram_test",
];

/// Whether `run_test_mask` selects test `index` (Linux: `(mask & (1 << index)) >> index`).
pub fn selected(mask: u64, index: usize) -> bool {
    mask & (1 << index) != 0
}

/// Linux's clamps: `nr_threads` into 1..=USHRT_MAX, a repeat or loop count of 0 to 1.
pub fn at_least_one(n: u64) -> u64 {
    n.max(1)
}

/// The order in which one worker runs the tests: the table's order when `sequential`, else
/// test_vmalloc.c's `shuffle_array` (for i from n-1 down to 1, swap with j below i: Linux's
/// `get_random_u32_below(i)`, so an element never stays by choice) with `rng`.
pub fn order(sequential: bool, rng: &mut Rng) -> [usize; TESTS.len()] {
    let mut a = core::array::from_fn(|i| i);
    if !sequential {
        for i in (1..a.len()).rev() {
            let j = rng.below(i as u64) as usize;
            a.swap(i, j);
        }
    }
    a
}

/// The workers the `cpu`-th of `cpus` online CPUs runs, one after another: worker `w` runs
/// on CPU `w % cpus` (Linux's kthreads are not pinned; numalab has no scheduler, so workers
/// beyond the CPU count share CPUs in turn).
pub fn workers_of(nr_threads: u64, cpus: u64, cpu: u64) -> impl Iterator<Item = u64> {
    let cpus = cpus.max(1);
    (cpu..nr_threads).step_by(cpus as usize)
}

/// The seed of worker `w`'s generator (its test order and its tests' random sizes).
pub fn worker_seed(w: u64) -> u64 {
    0x9e37_79b9_7f4a_7c15 ^ ((w + 1) << 17)
}

/// One test's line as test_vmalloc.c's `pr_info` prints it (after `test_vmalloc: `):
/// `Summary: NAME passed: P failed: F repeat: R loops: L avg: A UNIT` (UNIT `usec` in Linux).
pub fn summary_line(
    name: &str,
    passed: u64,
    failed: u64,
    repeat: u64,
    loops: u64,
    avg: u64,
    unit: &str,
) -> String {
    format!("Summary: {name} passed: {passed} failed: {failed} repeat: {repeat} loops: {loops} avg: {avg} {unit}")
}

/// The indices of the tests `mask` selects, in table order (numalab runs every test of the
/// table: the kvfree_rcu ones on kernel/src/rcu and kernel/src/kfree_rcu).
pub fn runnable(mask: u64) -> Vec<usize> {
    (0..TESTS.len()).filter(|&i| selected(mask, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mask_selects_by_table_position() {
        assert_eq!(runnable(1), [0]);
        assert_eq!(runnable(1024), [10]);
        // kvfree_rcu_1_arg_vmalloc_test and kvfree_rcu_2_arg_vmalloc_test are bits 8 and 9.
        assert_eq!(runnable(256 | 512), [8, 9]);
        assert_eq!(TESTS[8], "kvfree_rcu_1_arg_vmalloc_test");
        assert_eq!(TESTS[9], "kvfree_rcu_2_arg_vmalloc_test");
        assert_eq!(runnable(i32::MAX as u64).len(), 11);
        assert!(runnable(0).is_empty());
    }

    #[test]
    fn shuffled_orders_are_permutations_and_differ_between_workers() {
        let seq = order(true, &mut Rng::new(1));
        assert_eq!(seq, core::array::from_fn(|i| i));
        let a = order(false, &mut Rng::new(worker_seed(0)));
        let b = order(false, &mut Rng::new(worker_seed(1)));
        for o in [a, b] {
            let mut s = o;
            s.sort_unstable();
            assert_eq!(s, seq);
        }
        assert_ne!(a, seq);
        assert_ne!(a, b);
        // Linux's shuffle never leaves the last element in place (j < i).
        assert_ne!(a[TESTS.len() - 1], TESTS.len() - 1);
    }

    #[test]
    fn workers_spread_over_cpus_in_turn() {
        let w: Vec<u64> = workers_of(5, 2, 0).collect();
        assert_eq!(w, [0, 2, 4]);
        let w: Vec<u64> = workers_of(5, 2, 1).collect();
        assert_eq!(w, [1, 3]);
        // Fewer workers than CPUs: the last CPUs run none.
        assert_eq!(workers_of(2, 8, 5).count(), 0);
        // One CPU runs every worker.
        assert_eq!(workers_of(512, 1, 0).count(), 512);
    }

    #[test]
    fn the_summary_line_is_linuxs() {
        assert_eq!(
            summary_line("fix_size_alloc_test", 1, 0, 1, 1000000, 1266, "usec"),
            "Summary: fix_size_alloc_test passed: 1 failed: 0 repeat: 1 loops: 1000000 avg: 1266 usec"
        );
    }
}
