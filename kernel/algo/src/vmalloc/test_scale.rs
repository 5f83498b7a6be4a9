//! How many loops each CPU runs in the test_vmalloc cases: the option's count up to
//! [`REFERENCE_CPUS`] CPUs, and beyond that the same total work spread over more CPUs (every
//! CPU still runs at least one loop, so every CPU pair still meets on the shared trees and
//! locks). Without it, 255 vCPUs on a 2-core host run 32x the work of an 8-CPU machine with
//! 255 threads fighting over the global design's one lock, and the suite takes tens of
//! minutes.

/// The CPU count up to which every CPU runs the full loop count (the default 4node and 8node
/// machines have 8).
pub const REFERENCE_CPUS: u64 = 8;

/// The loops per CPU for `loops` (the `vmalloc.test_loops` option) on `cpus` online CPUs:
/// `loops` up to [`REFERENCE_CPUS`], else `loops * REFERENCE_CPUS / cpus` rounded up.
pub fn loops_per_cpu(loops: u64, cpus: u64) -> u64 {
    if cpus <= REFERENCE_CPUS {
        loops
    } else {
        loops.saturating_mul(REFERENCE_CPUS).div_ceil(cpus).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_machines_keep_the_count_large_ones_share_it() {
        assert_eq!(loops_per_cpu(100, 1), 100);
        assert_eq!(loops_per_cpu(100, 8), 100);
        // 255 CPUs: 4 loops each, 1020 in all (8 CPUs: 800).
        assert_eq!(loops_per_cpu(100, 255), 4);
        assert!(loops_per_cpu(100, 255) * 255 >= 100 * REFERENCE_CPUS);
        assert_eq!(loops_per_cpu(1, 255), 1);
        // No overflow at the option's extremes.
        assert!(loops_per_cpu(u64::MAX, 16) > 0);
    }
}
