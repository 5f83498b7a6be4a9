//! Benchmark `alloc_peers`: instructions per allocation+free pair (rdtsc in an `--icount`
//! boot on one CPU) of numalab's kmalloc and kmem_cache against linked_list_allocator, talc,
//! slabmalloc (one ZoneAllocator for the CPU, as NrOS uses it) and buddy_system_allocator,
//! on three workloads: fast64 (one 64-byte object allocated and freed, repeated), random
//! (sizes 8..4096, 1000 live objects, fixed seed) and burst256 (256 objects of 256 bytes
//! allocated, then freed). Peers run unlocked on arenas of frame pages; numalab pays for its
//! interrupt masking and counters.

use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::frame::{self, Pages, Policy};
use crate::mm::slub::kmalloc::{kfree, kmalloc};
use crate::mm::slub::{default_tunables, KmemCache};
use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;
use numalab_algo::bench::{Clock, Record};
use numalab_algo::rng::XorShift64;

const FAST_PAIRS: u64 = 20_000;
const RANDOM_LIVE: usize = 1000;
const RANDOM_STEPS: u64 = 20_000;
const BURST: usize = 256;
const BURST_ROUNDS: u64 = 40;
/// Arena order for the heap-style peers (4 MiB).
const ARENA_ORDER: u8 = 10;

/// One allocator under test.
trait Peer {
    fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>>;
    /// # Safety
    /// `ptr` came from `alloc(layout)` on this peer and is not used again.
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout);
}

struct Kmalloc;
impl Peer for Kmalloc {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        kmalloc(layout.size())
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, _layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { kfree(ptr) }
    }
}

struct CachePeer(&'static KmemCache);
impl Peer for CachePeer {
    #[inline(always)]
    fn alloc(&mut self, _layout: Layout) -> Option<NonNull<u8>> {
        self.0.alloc()
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, _layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.0.free(ptr) }
    }
}

struct LinkedList(linked_list_allocator::Heap);
impl Peer for LinkedList {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        self.0.allocate_first_fit(layout).ok()
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.0.deallocate(ptr, layout) }
    }
}

struct Talc(talc::base::Talc<talc::source::Manual, talc::DefaultBinning>);
impl Peer for Talc {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        // SAFETY: the layout has a non-zero size (every workload's sizes are >= 8).
        unsafe { self.0.allocate(layout) }
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.0.deallocate(ptr.as_ptr(), layout) }
    }
}

struct Buddy(buddy_system_allocator::Heap<32>);
impl Peer for Buddy {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        self.0.alloc(layout).ok()
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        // SAFETY: forwarded from the caller's contract.
        unsafe { self.0.dealloc(ptr, layout) }
    }
}

/// slabmalloc's ZoneAllocator refilled from frame pages on OutOfMemory (4 KiB pages for
/// objects up to 256 bytes, 2 MiB pages above), like NrOS's per-core allocator.
struct Slabmalloc {
    zone: slabmalloc::ZoneAllocator<'static>,
    pages: Vec<(u64, u8)>,
}
impl Peer for Slabmalloc {
    #[inline(always)]
    fn alloc(&mut self, layout: Layout) -> Option<NonNull<u8>> {
        use slabmalloc::Allocator;
        loop {
            match self.zone.allocate(layout) {
                Ok(p) => return Some(p),
                Err(slabmalloc::AllocationError::OutOfMemory) => {
                    let large = layout.size() > slabmalloc::ZoneAllocator::MAX_BASE_ALLOC_SIZE;
                    let order = if large { 9 } else { 0 };
                    let (phys, order) = frame::alloc_pages(order, Policy::Local).ok()?.into_raw();
                    self.pages.push((phys, order));
                    let virt = frame::phys_to_virt(phys);
                    let r = if large {
                        // SAFETY: a fresh, exclusively owned, zeroed-or-not 2 MiB block, 2 MiB
                        // aligned in the direct map (checked before the run); slabmalloc
                        // initialises the page header on refill.
                        unsafe {
                            self.zone.refill_large(
                                layout,
                                &mut *(virt as *mut slabmalloc::LargeObjectPage<'static>),
                            )
                        }
                    } else {
                        // SAFETY: as above for a 4 KiB page.
                        unsafe {
                            self.zone.refill(
                                layout,
                                &mut *(virt as *mut slabmalloc::ObjectPage<'static>),
                            )
                        }
                    };
                    r.ok()?;
                }
                Err(_) => return None,
            }
        }
    }
    #[inline(always)]
    unsafe fn free(&mut self, ptr: NonNull<u8>, layout: Layout) {
        use slabmalloc::Allocator;
        let _ = self.zone.deallocate(ptr, layout);
    }
}

fn arena() -> Result<(usize, usize, u64), TestError> {
    let pages = frame::alloc_pages(ARENA_ORDER, Policy::Local)
        .map_err(|e| TestError::Fail(alloc::format!("arena: {}", e)))?;
    let size = pages.size_bytes();
    let (phys, _) = pages.into_raw();
    Ok((frame::phys_to_virt(phys) as usize, size, phys))
}

fn free_arena(phys: u64, order: u8) {
    // SAFETY: (phys, order) came from into_raw in `arena`/the slabmalloc refill, and the
    // allocator using it has been dropped with every object freed.
    drop(unsafe { Pages::from_raw(phys, order) });
}

/// Instructions (or cycles) per pair for each workload on `peer`, or None if it ran out.
fn run<P: Peer>(peer: &mut P) -> [Option<f64>; 3] {
    let rdtsc = crate::arch::rdtsc;
    let l64 = Layout::from_size_align(64, 8).expect("valid layout");
    // fast64
    let fast = (|| {
        let p = peer.alloc(l64)?;
        // SAFETY: p came from this peer.
        unsafe { peer.free(p, l64) };
        let t0 = rdtsc();
        for _ in 0..FAST_PAIRS {
            let p = peer.alloc(l64)?;
            // SAFETY: p came from this peer and is dropped right away.
            unsafe { peer.free(core::hint::black_box(p), l64) };
        }
        Some((rdtsc() - t0) as f64 / FAST_PAIRS as f64)
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
        for (p, l) in live {
            // SAFETY: every remaining object came from this peer.
            unsafe { peer.free(p, l) };
        }
        (!failed).then_some(t as f64 / RANDOM_STEPS as f64)
    })();
    // burst256
    let burst = (|| {
        let l = Layout::from_size_align(256, 8).expect("valid layout");
        let mut objs: Vec<NonNull<u8>> = Vec::with_capacity(BURST);
        let mut total = 0u64;
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
                return None;
            }
            objs.clear();
        }
        Some(total as f64 / (BURST_ROUNDS * BURST as u64) as f64)
    })();
    [fast, random, burst]
}

fn emit(allocator: &str, results: [Option<f64>; 3], clock: Clock) {
    let topo = crate::topology::get();
    for (workload, v) in ["fast64", "random", "burst256"].iter().zip(results) {
        let case = alloc::format!("{}/{}", allocator, workload);
        let line = Record {
            bench: "alloc_peers",
            case: &case,
            metric: "instructions_per_pair",
            value: v.unwrap_or(f64::NAN),
            unit: if clock == Clock::Icount {
                "instructions"
            } else {
                "cycles"
            },
            cpus: 1,
            nodes: topo.nr_nodes() as u32,
            clock,
        }
        .line();
        crate::println!("{}", line);
        if v.is_none() {
            crate::println!(
                "# alloc_peers: {} ran out of memory on {}",
                allocator,
                workload
            );
        }
    }
}

/// The alloc_peers experiment.
fn alloc_peers(_ctx: &Ctx) -> TestResult {
    let clock = super::clock();
    let irq = x86_64::instructions::interrupts::are_enabled();
    x86_64::instructions::interrupts::disable();
    let result = alloc_peers_inner(clock);
    if irq {
        x86_64::instructions::interrupts::enable();
    }
    result
}

fn alloc_peers_inner(clock: Clock) -> TestResult {
    emit("numalab", run(&mut Kmalloc), clock);
    // The kmem_cache fast path alone (a 64-byte cache; random and burst use size 4096/256
    // caches would not be comparable, so the cache peer uses one 4096-byte cache for all).
    let c64 = KmemCache::create("bench-64", 64, 0, default_tunables("bench-64"))
        .map_err(|e| alloc::format!("{:?}", e))?;
    let mut cp = CachePeer(c64);
    let l64 = Layout::from_size_align(64, 8).expect("valid layout");
    let fast = {
        let p = cp
            .alloc(l64)
            .ok_or_else(|| TestError::Fail("bench-64".into()))?;
        // SAFETY: p came from the cache.
        unsafe { cp.free(p, l64) };
        let t0 = crate::arch::rdtsc();
        for _ in 0..FAST_PAIRS {
            if let Some(p) = cp.alloc(l64) {
                // SAFETY: p came from the cache and is dropped right away.
                unsafe { cp.free(core::hint::black_box(p), l64) };
            }
        }
        (crate::arch::rdtsc() - t0) as f64 / FAST_PAIRS as f64
    };
    let line = Record {
        bench: "alloc_peers",
        case: "numalab_kmem_cache/fast64",
        metric: "instructions_per_pair",
        value: fast,
        unit: if clock == Clock::Icount {
            "instructions"
        } else {
            "cycles"
        },
        cpus: 1,
        nodes: crate::topology::get().nr_nodes() as u32,
        clock,
    }
    .line();
    crate::println!("{}", line);
    // SAFETY: the bench's last use of its cache (its peer wrapper `cp` is not used after
    // this), run on this CPU only.
    unsafe { c64.destroy() }.map_err(|n| alloc::format!("bench-64: {} live", n))?;

    let (base, size, phys) = arena()?;
    let mut ll = LinkedList(linked_list_allocator::Heap::empty());
    // SAFETY: the arena is fresh, exclusively owned memory of `size` bytes, freed only after
    // this heap is dropped.
    unsafe { ll.0.init(base as *mut u8, size) };
    emit("linked_list_allocator", run(&mut ll), clock);
    // The heap is not used past this point; its arena goes back.
    free_arena(phys, ARENA_ORDER);

    let (base, size, phys) = arena()?;
    let mut t = Talc(talc::base::Talc::new(talc::source::Manual));
    // SAFETY: as above.
    let claimed = unsafe { t.0.claim(base as *mut u8, size) };
    if claimed.is_some() {
        emit("talc", run(&mut t), clock);
    } else {
        crate::println!("# alloc_peers: talc could not claim its arena");
    }
    free_arena(phys, ARENA_ORDER);

    let (base, size, phys) = arena()?;
    let mut b = Buddy(buddy_system_allocator::Heap::<32>::empty());
    // SAFETY: as above.
    unsafe { b.0.init(base, size) };
    emit("buddy_system_allocator", run(&mut b), clock);
    free_arena(phys, ARENA_ORDER);

    if !crate::mm::early::info().phys_offset.is_multiple_of(2 << 20) {
        crate::println!("# alloc_peers: slabmalloc skipped: direct map not 2 MiB aligned");
    } else {
        let mut s = Slabmalloc {
            zone: slabmalloc::ZoneAllocator::new(),
            pages: Vec::with_capacity(256),
        };
        let r = run(&mut s);
        emit("slabmalloc", r, clock);
        let pages = core::mem::take(&mut s.pages);
        drop(s);
        for (phys, order) in pages {
            free_arena(phys, order);
        }
    }
    Ok(())
}

crate::ktest!(super::BENCH_SUITE, Bench, alloc_peers);
