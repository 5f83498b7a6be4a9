//! The instructions-per-pair harness that alloc_peers and its followers (sheaves_vs_partial,
//! memoryless_sheaves) measure with: an allocator under test (`Peer`), its out-of-line entry
//! points, the empty harness, the three workloads (fast64, random, burst256) and the record
//! of a figure less the harness's. Interrupts are on while it measures (`with_interrupts`).

use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;
use numalab_algo::bench::{Clock, Record};
use numalab_algo::rng::XorShift64;

pub(super) const RANDOM_LIVE: usize = 1000;
pub(super) const FAST_PAIRS: u64 = 20_000;
pub(super) const RANDOM_STEPS: u64 = 20_000;
pub(super) const BURST: usize = 256;
pub(super) const BURST_ROUNDS: u64 = 40;

/// One allocator under test.
pub(super) trait Peer {
    fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>>;
    /// # Safety
    /// `ptr` came from `alloc(layout)` on this peer and is not used again.
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout);
    /// Called right before a workload's timed loop (`end` false) and right after it (true),
    /// outside the timed region: numalab's profile of SLUB events per workload.
    fn mark(&mut self, _workload: &str, _end: bool) {}
}

/// The same allocator behind `#[inline(never)]` entry points: the loop pays a call and a
/// return per operation, and the allocator its own prologue, as a caller of Linux's exported
/// kmalloc/kfree does.
pub(super) struct OutOfLine<P>(pub P);
impl<P: Peer> Peer for OutOfLine<P> {
    fn mark(&mut self, workload: &str, end: bool) {
        self.0.mark(workload, end);
    }
    #[inline(never)]
    fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        self.0.alloc(layout)
    }
    #[inline(never)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.0.free(ptr, layout) }
    }
}

/// No allocator at all: the loop, the call and the bookkeeping of each workload (the
/// harness cost subtracted from every other figure).
pub(super) struct Empty(pub NonNull<u8>);
impl Peer for Empty {
    #[inline(always)]
    fn alloc(&mut self, _layout: Layout) -> Option<NonNull<u8>> {
        Some(core::hint::black_box(self.0))
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, _layout: Layout) {
        core::hint::black_box(ptr);
    }
}

/// Instructions (or cycles) per pair for each workload on `peer`, or None if it ran out.
/// `peer` holds one live object of the workload's size class while fast64 and burst256 are
/// timed (random keeps 1000).
pub(super) fn run<P: Peer>(peer: &mut P) -> [Option<f64>; 3] {
    let rdtsc = crate::arch::rdtsc;
    let l64 = Layout::from_size_align(64, 8).expect("valid layout");
    // fast64
    let fast = (|| {
        let held = peer.alloc(l64)?;
        let p = peer.alloc(l64)?;
        // SAFETY: p came from this peer.
        unsafe { peer.free(p, l64) };
        peer.mark("fast64", false);
        let t0 = rdtsc();
        for _ in 0..FAST_PAIRS {
            let p = peer.alloc(l64)?;
            // SAFETY: p came from this peer and is dropped right away.
            unsafe { peer.free(core::hint::black_box(p), l64) };
        }
        let t = rdtsc() - t0;
        peer.mark("fast64", true);
        // SAFETY: held came from this peer, freed once.
        unsafe { peer.free(held, l64) };
        Some(t as f64 / FAST_PAIRS as f64)
    })();
    // random
    let random = (|| {
        let mut rng = XorShift64::new(0x2545_f491_4f6c_dd1du64);
        let mut rnd = || rng.next_u64();
        let layout_of =
            |r: u64| Layout::from_size_align(8 + (r % 4089) as usize, 8).expect("valid layout");
        let mut live: Vec<(NonNull<u8>, Layout)> = Vec::with_capacity(RANDOM_LIVE);
        for _ in 0..RANDOM_LIVE {
            let l = layout_of(rnd());
            live.push((peer.alloc(l)?, l));
        }
        let mut failed = false;
        peer.mark("random", false);
        let t0 = rdtsc();
        for _ in 0..RANDOM_STEPS {
            let r = rnd();
            let i = (r >> 20) as usize % RANDOM_LIVE;
            let (p, l) = live[i];
            // SAFETY: live[i] came from this peer; it is replaced below.
            unsafe { peer.free(p, l) };
            let l = layout_of(r);
            match peer.alloc(l) {
                Some(p) => live[i] = (p, l),
                None => {
                    failed = true;
                    live.swap_remove(i);
                    break;
                }
            }
        }
        let t = rdtsc() - t0;
        peer.mark("random", true);
        for (p, l) in live {
            // SAFETY: every remaining object came from this peer.
            unsafe { peer.free(p, l) };
        }
        (!failed).then_some(t as f64 / RANDOM_STEPS as f64)
    })();
    // burst256
    let burst = (|| {
        let l = Layout::from_size_align(256, 8).expect("valid layout");
        let held = peer.alloc(l)?;
        let mut objs: Vec<NonNull<u8>> = Vec::with_capacity(BURST);
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
            for &p in &objs {
                // SAFETY: p came from this peer, freed once.
                unsafe { peer.free(p, l) };
            }
            total += rdtsc() - t0;
            if objs.len() != BURST {
                ok = false;
                break;
            }
            objs.clear();
        }
        peer.mark("burst256", true);
        // SAFETY: held came from this peer, freed once.
        unsafe { peer.free(held, l) };
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
