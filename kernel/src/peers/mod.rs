//! The allocators the instructions-per-pair experiments measure, and the harness that drives
//! them by raw pointer (ktest feature only; only kernel/src/bench uses it, which then needs no
//! `unsafe`):
//!
//! - `Peer`, an `unsafe trait`: an allocator's raw entry points (alloc by layout, free by
//!   pointer and layout) and a `mark` hook; implemented here for numalab's kmalloc, one
//!   kmem_cache and a kmalloc-like set of private caches (slub.rs), the peer crates talc,
//!   linked_list_allocator, buddy_system_allocator and slabmalloc on arenas of frame pages
//!   they own (heaps.rs), the empty harness (`Empty`), `OutOfLine` (the same allocator
//!   behind `#[inline(never)]` entry points: the measured call, as a caller of Linux's
//!   exported kmalloc/kfree pays it) and `Profiled` (an allocator with a safe `Mark` of the
//!   experiment's: its events per workload, read outside the timed loops).
//! - `run`: the three workloads (fast64, random, burst256), a safe function: it frees every
//!   pointer it allocated exactly once, with the layout it allocated it with, into the peer
//!   it came from.
//!
//! Why the harness is here and not in bench/ with owned blocks: under `--icount` the figures
//! are instruction counts of `run`'s loops and the entry points they call, and LLVM passes a
//! peer's state in registers (argument promotion) only when the entry points and `run` are
//! in one codegen unit; rustc places `OutOfLine<P>`'s methods with `OutOfLine`'s module. A
//! safe front of owned, branded blocks in bench/ (commit 0ba4d86) moved `run` away from
//! them and changed the counts (harness/fast64 18.0004 -> 26.0004 instructions per pair,
//! numalab/fast64 125.0001 -> 122.9999; `./qemu-run.sh --topology 4node --smp 1 --icount
//! --suite bench --set bench=alloc_peers`), so `run`, `OutOfLine` and `Empty` share this
//! module and `run` is the loop the experiments measured before, verbatim but for the
//! `unsafe` around `alloc`.

pub mod heaps;
pub mod slub;

use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;
use numalab_algo::rng::XorShift64;

pub const RANDOM_LIVE: usize = 1000;
pub const FAST_PAIRS: u64 = 20_000;
pub const RANDOM_STEPS: u64 = 20_000;
pub const BURST: usize = 256;
pub const BURST_ROUNDS: u64 = 40;

/// One allocator under test.
///
/// # Safety
/// Implementors promise: `alloc` returns None or a block of at least `layout` that nothing else uses until it is
/// passed to `free` with the same layout; `free` accepts exactly such blocks.
pub unsafe trait Peer {
    /// # Safety
    /// `layout` has a non-zero size (talc's contract).
    unsafe fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>>;
    /// # Safety
    /// `ptr` came from `alloc(layout)` on this peer and is not used again.
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout);
    /// Called right before a workload's timed loop (`end` false) and right after it (true),
    /// outside the timed region.
    fn mark(&mut self, _workload: &str, _end: bool) {}
}

/// A profile of an allocator `P` (safe: it only reads the allocator).
pub trait Mark<P> {
    fn mark(&mut self, peer: &P, workload: &str, end: bool);
}

/// `P` profiled by `M`.
pub struct Profiled<P, M> {
    pub peer: P,
    pub profile: M,
}

// SAFETY: alloc and free are P's.
unsafe impl<P: Peer, M: Mark<P>> Peer for Profiled<P, M> {
    fn mark(&mut self, workload: &str, end: bool) {
        self.profile.mark(&self.peer, workload, end);
    }
    #[inline(always)]
    unsafe fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.peer.alloc(layout) }
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.peer.free(ptr, layout) }
    }
}

/// The same allocator behind `#[inline(never)]` entry points: the loop pays a call and a
/// return per operation, and the allocator its own prologue, as a caller of Linux's exported
/// kmalloc/kfree does.
pub struct OutOfLine<P>(pub P);

// SAFETY: alloc and free are P's.
unsafe impl<P: Peer> Peer for OutOfLine<P> {
    fn mark(&mut self, workload: &str, end: bool) {
        self.0.mark(workload, end);
    }
    #[inline(never)]
    unsafe fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.0.alloc(layout) }
    }
    #[inline(never)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.0.free(ptr, layout) }
    }
}

/// No allocator at all: the loop, the call and the bookkeeping of each workload (the
/// harness cost subtracted from every other figure). Every "block" is one static address,
/// never dereferenced.
pub struct Empty(NonNull<u8>);

impl Empty {
    pub fn new() -> Empty {
        static mut SINK: [u64; 512] = [0; 512];
        // Only the address is taken; Empty never dereferences it.
        Empty(NonNull::new(core::ptr::addr_of_mut!(SINK) as *mut u8).expect("static address"))
    }
}

// SAFETY: nothing is allocated; "freeing" does not touch the pointer.
unsafe impl Peer for Empty {
    #[inline(always)]
    unsafe fn alloc(&mut self, _layout: Layout) -> Option<NonNull<u8>> {
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
pub fn run<P: Peer>(peer: &mut P) -> [Option<f64>; 3] {
    let rdtsc = crate::arch::rdtsc;
    let l64 = Layout::from_size_align(64, 8).expect("valid layout");
    // fast64
    let fast = (|| {
        // SAFETY: a workload layout (64, 256 or 8..4096 bytes): non-zero.
        let held = unsafe { peer.alloc(l64) }?;
        // SAFETY: a workload layout (64, 256 or 8..4096 bytes): non-zero.
        let p = unsafe { peer.alloc(l64) }?;
        // SAFETY: p came from this peer.
        unsafe { peer.free(p, l64) };
        peer.mark("fast64", false);
        let t0 = rdtsc();
        for _ in 0..FAST_PAIRS {
            // SAFETY: a workload layout (64, 256 or 8..4096 bytes): non-zero.
            let p = unsafe { peer.alloc(l64) }?;
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
            // SAFETY: a workload layout (64, 256 or 8..4096 bytes): non-zero.
            live.push((unsafe { peer.alloc(l) }?, l));
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
            // SAFETY: a workload layout (64, 256 or 8..4096 bytes): non-zero.
            match unsafe { peer.alloc(l) } {
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
        // SAFETY: a workload layout (64, 256 or 8..4096 bytes): non-zero.
        let held = unsafe { peer.alloc(l) }?;
        let mut objs: Vec<NonNull<u8>> = Vec::with_capacity(BURST);
        let mut total = 0u64;
        let mut ok = true;
        peer.mark("burst256", false);
        for _ in 0..BURST_ROUNDS {
            let t0 = rdtsc();
            for _ in 0..BURST {
                // SAFETY: a workload layout (64, 256 or 8..4096 bytes): non-zero.
                match unsafe { peer.alloc(l) } {
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
