//! The instructions-per-pair harness the one-CPU icount experiments share (catalog: the
//! experiments with an `instructions_per_pair` metric): the three workloads (fast64, random, burst256) over an
//! allocator under test (a `crate::peers::Peer`: owned blocks, out-of-line entry points, the
//! empty harness) and the record of a figure less the harness's. Interrupts are on while it
//! measures (`with_interrupts`).

use crate::peers::{Dyn, Fixed, Mark, Peer, RawPeer};
use alloc::vec::Vec;
use numalab_algo::bench::{Clock, Record};
use numalab_algo::rng::XorShift64;

pub(super) const RANDOM_LIVE: usize = 1000;
pub(super) const FAST_PAIRS: u64 = 20_000;
pub(super) const RANDOM_STEPS: u64 = 20_000;
pub(super) const BURST: usize = 256;
pub(super) const BURST_ROUNDS: u64 = 40;

/// Instructions (or cycles) per pair for each workload on `peer`, or None if it ran out.
/// `peer` holds one live object of the workload's size class while fast64 and burst256 are
/// timed (random keeps 1000).
pub(super) fn run<P: RawPeer, M: Mark<P>>(peer: &mut Peer<'_, P, M>) -> [Option<f64>; 3] {
    let rdtsc = crate::arch::rdtsc;
    let l64 = Fixed::<64>;
    // fast64
    let fast = (|| {
        let held = peer.alloc(l64)?;
        let p = peer.alloc(l64)?;
        peer.free(p);
        peer.mark("fast64", false);
        let t0 = rdtsc();
        for _ in 0..FAST_PAIRS {
            let p = peer.alloc(l64)?;
            peer.free(core::hint::black_box(p));
        }
        let t = rdtsc() - t0;
        peer.mark("fast64", true);
        peer.free(held);
        Some(t as f64 / FAST_PAIRS as f64)
    })();
    // random
    let random = (|| {
        let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1du64);
        let mut rnd = || rng.next_u64();
        let layout_of = |r: u64| Dyn::new(8 + (r % 4089) as usize, 8).expect("valid layout");
        let mut live = Vec::with_capacity(RANDOM_LIVE);
        for _ in 0..RANDOM_LIVE {
            let l = layout_of(rnd());
            live.push(peer.alloc(l)?);
        }
        let mut failed = false;
        peer.mark("random", false);
        let t0 = rdtsc();
        for _ in 0..RANDOM_STEPS {
            let r = rnd();
            let i = (r >> 20) as usize % RANDOM_LIVE;
            // Frees live[i] and allocates its successor in its place.
            if !peer.replace(&mut live, i, || layout_of(r)) {
                failed = true;
                break;
            }
        }
        let t = rdtsc() - t0;
        peer.mark("random", true);
        for b in live {
            peer.free(b);
        }
        (!failed).then_some(t as f64 / RANDOM_STEPS as f64)
    })();
    // burst256
    let burst = (|| {
        let l = Fixed::<256>;
        let held = peer.alloc(l)?;
        let mut objs = Vec::with_capacity(BURST);
        let mut total = 0u64;
        let mut ok = true;
        peer.mark("burst256", false);
        for _ in 0..BURST_ROUNDS {
            let t0 = rdtsc();
            for _ in 0..BURST {
                match peer.alloc(l) {
                    Some(p) => objs.push(p),
                    None => break,
                }
            }
            let freed = peer.free_all(objs);
            total += rdtsc() - t0;
            if freed.count() != BURST {
                ok = false;
                break;
            }
            objs = freed.clear();
        }
        peer.mark("burst256", true);
        peer.free(held);
        ok.then_some(total as f64 / (BURST_ROUNDS * BURST as u64) as f64)
    })();
    [fast, random, burst]
}

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
