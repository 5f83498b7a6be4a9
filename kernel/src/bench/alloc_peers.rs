//! Benchmark `alloc_peers`: instructions per allocation+free pair (rdtsc in an `--icount`
//! boot on one CPU) of numalab's kmalloc and kmem_cache against linked_list_allocator, talc,
//! slabmalloc (one ZoneAllocator for the CPU, as NrOS uses it) and buddy_system_allocator,
//! on three workloads: fast64 (one 64-byte object allocated and freed, repeated), random
//! (sizes 8..4096, 1000 live objects, fixed seed) and burst256 (256 objects of 256 bytes
//! allocated, then freed).
//!
//! Measured the same way for everyone (issue 11 item 6): every allocator holds one live
//! object of the workload's size class before timing (1000 in random), every call goes
//! through an `#[inline(never)]` entry point (as Linux's exported kmalloc/kfree), interrupts
//! are enabled, and the cost of the same loop around empty entry points (`harness`, reported
//! as its own metric) is subtracted. numalab is also reported inlined into the loop
//! (`numalab_inline`, `numalab_kmem_cache_inline`, minus the inlined harness) and with
//! interrupts off (`*_irqoff`). Peers run unlocked on arenas of frame pages.

use super::pairs::{
    run, Empty, OutOfLine, Peer, BURST, BURST_ROUNDS, FAST_PAIRS, RANDOM_STEPS, WORKLOADS,
};
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::frame::{self, Pages, Policy};
use crate::mm::slub::kmalloc::{kfree, kmalloc};
use crate::mm::slub::{default_tunables, KmemCache};
use alloc::vec::Vec;
use core::alloc::Layout;
use core::ptr::NonNull;
use numalab_algo::bench::{Clock, Record};
use numalab_algo::page::PhysAddr;
use numalab_algo::slub::{Stat, StatsSnapshot};

/// Arena order for the heap-style peers (4 MiB).
const ARENA_ORDER: u8 = 10;

/// numalab's kmalloc/kfree. With `profile`, each workload's SLUB events (summed over the
/// kmalloc caches) are printed per 1000 pairs, to show where the instructions go.
struct Kmalloc {
    profile: bool,
    start: StatsSnapshot,
}
impl Kmalloc {
    const fn plain() -> Kmalloc {
        Kmalloc {
            profile: false,
            start: StatsSnapshot {
                counts: [0; numalab_algo::slub::stats::NR_STATS],
            },
        }
    }
    fn kmalloc_stats() -> StatsSnapshot {
        let mut sum = StatsSnapshot::default();
        for c in crate::mm::slub::kmalloc::caches().into_iter().flatten() {
            let s = c.stats();
            for (a, b) in sum.counts.iter_mut().zip(s.counts) {
                *a = a.wrapping_add(b);
            }
        }
        sum
    }
}
impl Peer for Kmalloc {
    fn mark(&mut self, workload: &str, end: bool) {
        if !self.profile {
            return;
        }
        let now = Kmalloc::kmalloc_stats();
        if !end {
            self.start = now;
            return;
        }
        let pairs = match workload {
            "fast64" => FAST_PAIRS,
            "random" => RANDOM_STEPS,
            _ => BURST_ROUNDS * BURST as u64,
        } as f64;
        let per_kpair =
            |st: Stat| now.get(st).wrapping_sub(self.start.get(st)) as f64 * 1000.0 / pairs;
        let mut line = alloc::format!(
            "# alloc_peers: numalab/{} SLUB events per 1000 pairs:",
            workload
        );
        for st in PROFILED {
            line.push_str(&alloc::format!(" {}={:.1}", st.name(), per_kpair(st)));
        }
        crate::println!("{}", line);
    }
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

/// The SLUB events the profile prints (Linux's SLUB stat names).
const PROFILED: [Stat; 17] = [
    Stat::AllocCpuSheaf,
    Stat::FreeCpuSheaf,
    Stat::SheafRefill,
    Stat::SheafFlush,
    Stat::SheafSwap,
    Stat::BarnGet,
    Stat::BarnPut,
    Stat::AllocSlowpath,
    Stat::FreeSlowpath,
    Stat::AllocFromPartial,
    Stat::AllocSlab,
    Stat::FreeSlab,
    Stat::FreeFrozen,
    Stat::FreeAddPartial,
    Stat::FreeRemovePartial,
    Stat::CpuPartialAlloc,
    Stat::CpuPartialFree,
];

pub(super) struct CachePeer(pub &'static KmemCache);
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
    pages: Vec<(PhysAddr, u8)>,
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
                    let pages = frame::alloc_pages(order, Policy::Local).ok()?;
                    let (phys, order) = (pages.phys_addr(), pages.into_raw().1);
                    self.pages.push((phys, order));
                    let virt = frame::phys_to_virt(phys).as_mut_ptr::<u8>();
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

fn arena() -> Result<(usize, usize, PhysAddr), TestError> {
    let pages = frame::alloc_pages(ARENA_ORDER, Policy::Local)
        .map_err(|e| TestError::Fail(alloc::format!("arena: {}", e)))?;
    let size = pages.size_bytes();
    let phys = PhysAddr::new(pages.into_raw().0);
    Ok((frame::phys_to_virt(phys).as_u64() as usize, size, phys))
}

fn free_arena(phys: PhysAddr, order: u8) {
    // SAFETY: (phys, order) came from into_raw in `arena`/the slabmalloc refill, and the
    // allocator using it has been dropped with every object freed.
    drop(unsafe { Pages::from_raw(phys, order) });
}

const NAME: &str = super::catalog::ALLOC_PEERS.name;

fn record(case: &str, metric: &str, value: f64, clock: Clock) {
    super::emit(&Record {
        bench: NAME,
        case,
        metric,
        value,
        unit: if clock == Clock::Icount {
            "instructions"
        } else {
            "cycles"
        },
        cpus: 1,
        nodes: crate::topology::get().nr_nodes() as u32,
        clock,
    });
}

/// Prints `allocator`'s figures less the harness's (None: ran out of memory, printed as NaN).
fn emit(allocator: &str, results: [Option<f64>; 3], harness: [Option<f64>; 3], clock: Clock) {
    for ((workload, v), h) in WORKLOADS.iter().zip(results).zip(harness) {
        let case = alloc::format!("{}/{}", allocator, workload);
        let value = match (v, h) {
            (Some(v), Some(h)) => v - h,
            _ => f64::NAN,
        };
        record(&case, "instructions_per_pair", value, clock);
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
    x86_64::instructions::interrupts::enable();
    let result = alloc_peers_inner(clock);
    if !irq {
        x86_64::instructions::interrupts::disable();
    }
    result
}

/// Runs `f` with interrupts off (the `*_irqoff` variants); they are on around it.
fn irqs_off<R>(f: impl FnOnce() -> R) -> R {
    x86_64::instructions::interrupts::disable();
    let r = f();
    x86_64::instructions::interrupts::enable();
    r
}

fn alloc_peers_inner(clock: Clock) -> TestResult {
    static mut SINK: [u64; 512] = [0; 512];
    // Only the address is taken; Empty never dereferences it.
    let sink = NonNull::new(core::ptr::addr_of_mut!(SINK) as *mut u8).expect("static address");
    let harness_call = run(&mut OutOfLine(Empty(sink)));
    let harness_inline = run(&mut Empty(sink));
    for (workload, (c, i)) in WORKLOADS
        .iter()
        .zip(harness_call.iter().zip(harness_inline))
    {
        let v = c.unwrap_or(f64::NAN);
        record(
            &alloc::format!("harness/{}", workload),
            "harness_instructions_per_pair",
            v,
            clock,
        );
        let v = i.unwrap_or(f64::NAN);
        record(
            &alloc::format!("harness_inline/{}", workload),
            "harness_instructions_per_pair",
            v,
            clock,
        );
    }

    let mut profiled = Kmalloc::plain();
    profiled.profile = true;
    emit(
        "numalab",
        run(&mut OutOfLine(profiled)),
        harness_call,
        clock,
    );
    emit(
        "numalab_inline",
        run(&mut Kmalloc::plain()),
        harness_inline,
        clock,
    );
    emit(
        "numalab_irqoff",
        irqs_off(|| run(&mut OutOfLine(Kmalloc::plain()))),
        harness_call,
        clock,
    );

    // The kmem_cache entry points alone, on caches of each workload's size class (random has
    // no single class; it is kmalloc's workload).
    let c64 = KmemCache::create("bench-64", 64, 0, default_tunables("bench-64"))
        .map_err(|e| alloc::format!("{:?}", e))?;
    let c256 = KmemCache::create("bench-256", 256, 0, default_tunables("bench-256"))
        .map_err(|e| alloc::format!("{:?}", e))?;
    for (suffix, inline, irqoff) in [
        ("", false, false),
        ("_inline", true, false),
        ("_irqoff", false, true),
    ] {
        let mut fast = [None; 3];
        for (cache, w) in [(c64, 0), (c256, 2)] {
            let r = match (inline, irqoff) {
                (true, _) => run(&mut CachePeer(cache)),
                (false, true) => irqs_off(|| run(&mut OutOfLine(CachePeer(cache)))),
                (false, false) => run(&mut OutOfLine(CachePeer(cache))),
            };
            fast[w] = r[w];
        }
        let h = if inline { harness_inline } else { harness_call };
        for w in [0, 2] {
            let case = alloc::format!("numalab_kmem_cache{}/{}", suffix, WORKLOADS[w]);
            let value = match (fast[w], h[w]) {
                (Some(v), Some(h)) => v - h,
                _ => f64::NAN,
            };
            record(&case, "instructions_per_pair", value, clock);
        }
    }
    // Where the kmem_cache variants' instructions went: their caches' SLUB events (Linux's
    // stat names), all three variants together.
    for c in [c64, c256] {
        for line in crate::mm::slub::info::stats_lines(c) {
            crate::println!("# alloc_peers: {}", line);
        }
    }
    // SAFETY: the bench's last use of its caches (their peer wrappers are gone), run on this
    // CPU only.
    unsafe { c64.destroy() }.map_err(|n| alloc::format!("bench-64: {} live", n))?;
    // SAFETY: as above.
    unsafe { c256.destroy() }.map_err(|n| alloc::format!("bench-256: {} live", n))?;

    let (base, size, phys) = arena()?;
    let mut ll = LinkedList(linked_list_allocator::Heap::empty());
    // SAFETY: the arena is fresh, exclusively owned memory of `size` bytes, freed only after
    // this heap is dropped.
    unsafe { ll.0.init(base as *mut u8, size) };
    let mut ll = OutOfLine(ll);
    emit("linked_list_allocator", run(&mut ll), harness_call, clock);
    // The heap is not used past this point; its arena goes back.
    free_arena(phys, ARENA_ORDER);

    let (base, size, phys) = arena()?;
    let mut t = Talc(talc::base::Talc::new(talc::source::Manual));
    // SAFETY: as above.
    let claimed = unsafe { t.0.claim(base as *mut u8, size) };
    if claimed.is_some() {
        emit("talc", run(&mut OutOfLine(t)), harness_call, clock);
    } else {
        crate::println!("# alloc_peers: talc could not claim its arena");
    }
    free_arena(phys, ARENA_ORDER);

    let (base, size, phys) = arena()?;
    let mut b = Buddy(buddy_system_allocator::Heap::<32>::empty());
    // SAFETY: as above.
    unsafe { b.0.init(base, size) };
    emit(
        "buddy_system_allocator",
        run(&mut OutOfLine(b)),
        harness_call,
        clock,
    );
    free_arena(phys, ARENA_ORDER);

    if !crate::early::info().phys_offset.is_multiple_of(2 << 20) {
        crate::println!("# alloc_peers: slabmalloc skipped: direct map not 2 MiB aligned");
    } else {
        let mut s = OutOfLine(Slabmalloc {
            zone: slabmalloc::ZoneAllocator::new(),
            pages: Vec::with_capacity(256),
        });
        let r = run(&mut s);
        emit("slabmalloc", r, harness_call, clock);
        let pages = core::mem::take(&mut s.0.pages);
        drop(s);
        for (phys, order) in pages {
            free_arena(phys, order);
        }
    }
    Ok(())
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, alloc_peers);
