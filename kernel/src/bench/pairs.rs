//! What the instructions-per-pair experiments share besides the harness itself (`crate::peers::run`, with the
//! allocators it measures): the workload names and sizes, interrupts on while measuring
//! (`with_interrupts`) and the record of a figure less the harness's.

pub(super) use crate::peers::{BURST, BURST_ROUNDS, FAST_PAIRS, RANDOM_STEPS};
use numalab_algo::bench::{Clock, Record};

pub(super) const WORKLOADS: [&str; 3] = ["fast64", "random", "burst256"];

/// Runs `f` with interrupts on (the fair measurement), restoring their state afterwards.
pub(super) fn with_interrupts<R>(f: impl FnOnce() -> R) -> R {
    let irq = x86_64::instructions::interrupts::are_enabled();
    x86_64::instructions::interrupts::enable();
    let r = f();
    if !irq {
        x86_64::instructions::interrupts::disable();
    }
    r
}

/// Records `value - harness` instructions per pair of `bench`/`case` (NaN when either is
/// missing: the allocator ran out).
pub(super) fn record_pair(
    bench: &str,
    case: &str,
    value: Option<f64>,
    harness: Option<f64>,
    clock: Clock,
) -> f64 {
    let v = match (value, harness) {
        (Some(v), Some(h)) => v - h,
        _ => f64::NAN,
    };
    super::emit(&Record {
        bench,
        case,
        metric: "instructions_per_pair",
        value: v,
        unit: "instructions",
        cpus: 1,
        nodes: crate::topology::get().nr_nodes() as u32,
        clock,
    });
    v
}
