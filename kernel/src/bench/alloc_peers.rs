//! Benchmark `alloc_peers`: instructions per allocation+free pair (rdtsc in an `--icount`
//! boot on one CPU) of numalab's kmalloc and kmem_cache against linked_list_allocator, talc,
//! slabmalloc (one ZoneAllocator for the CPU, as NrOS uses it) and buddy_system_allocator,
//! on three workloads: fast64 (one 64-byte object allocated and freed, repeated), random
//! (sizes 8..4096, 1000 live objects, fixed seed) and burst256 (256 objects of 256 bytes
//! allocated, then freed).
//!
//! Measured the same way for everyone: every allocator holds one live
//! object of the workload's size class before timing (1000 in random), every call goes
//! through an `#[inline(never)]` entry point (as Linux's exported kmalloc/kfree), interrupts
//! are enabled, and the cost of the same loop around empty entry points (`harness`, reported
//! as its own metric) is subtracted. numalab is also reported inlined into the loop
//! (`numalab_inline`, `numalab_kmem_cache_inline`, minus the inlined harness) and with
//! interrupts off (`*_irqoff`). Peers run unlocked on arenas of frame pages.
//!
//! numalab's rows run under the boot's `slub.checks` (default `full`); the `*_checks_linux`
//! rows run the same entry points with every cache they use switched to `linux` for the
//! run (docs/slub.md, "Checks").

use super::pairs::{BURST, BURST_ROUNDS, FAST_PAIRS, RANDOM_STEPS, WORKLOADS};
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::frame::{self, Pages, Policy};
use crate::mm::slub::{default_tunables, PrivateCache};
use crate::peers::heaps::{Buddy, LinkedList, Slabmalloc, Talc};
use crate::peers::slub::{Cache, Kmalloc};
use crate::peers::{run, Empty, Mark, OutOfLine, Profiled};
use numalab_algo::bench::{Clock, Record};
use numalab_algo::slub::{Checks, Stat, StatsSnapshot};

/// Arena order for the heap-style peers (4 MiB).
const ARENA_ORDER: u8 = 10;

/// The profile of numalab's kmalloc/kfree: each workload's SLUB events (summed over the
/// kmalloc caches) printed per 1000 pairs, to show where the instructions go.
struct Profile {
    start: StatsSnapshot,
}
impl Profile {
    fn new() -> Profile {
        Profile {
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
impl<P> Mark<P> for Profile {
    fn mark(&mut self, _peer: &P, workload: &str, end: bool) {
        let now = Profile::kmalloc_stats();
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

/// A fresh arena of frame pages for a heap-style peer (it owns it, and gives it back when
/// dropped).
fn arena() -> Result<Pages, TestError> {
    frame::alloc_pages(ARENA_ORDER, Policy::Local)
        .map_err(|e| TestError::Fail(alloc::format!("arena: {}", e)))
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

/// Sets the checks of every kmalloc cache.
fn set_kmalloc_checks(checks: Checks) {
    for c in crate::mm::slub::kmalloc::caches().into_iter().flatten() {
        c.core().set_checks(checks);
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
    let harness_call = run(&mut OutOfLine(Empty::new()));
    let harness_inline = run(&mut Empty::new());
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

    let mut profiled = OutOfLine(Profiled {
        peer: Kmalloc,
        profile: Profile::new(),
    });
    emit("numalab", run(&mut profiled), harness_call, clock);
    emit("numalab_inline", run(&mut Kmalloc), harness_inline, clock);
    emit(
        "numalab_irqoff",
        irqs_off(|| run(&mut OutOfLine(Kmalloc))),
        harness_call,
        clock,
    );

    // The kmem_cache entry points alone, on caches of each workload's size class (random has
    // no single class; it is kmalloc's workload).
    let c64 = PrivateCache::create("bench-64", 64, 0, default_tunables("bench-64"))
        .map_err(|e| alloc::format!("{:?}", e))?;
    let c256 = PrivateCache::create("bench-256", 256, 0, default_tunables("bench-256"))
        .map_err(|e| alloc::format!("{:?}", e))?;
    for (suffix, inline, irqoff) in [
        ("", false, false),
        ("_inline", true, false),
        ("_irqoff", false, true),
    ] {
        let mut fast = [None; 3];
        for (cache, w) in [(&c64, 0), (&c256, 2)] {
            let r = match (inline, irqoff) {
                (true, _) => run(&mut Cache(cache)),
                (false, true) => irqs_off(|| run(&mut OutOfLine(Cache(cache)))),
                (false, false) => run(&mut OutOfLine(Cache(cache))),
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
    // Both checks modes: the same out-of-line entry points under `slub.checks=linux`.
    let boot = crate::mm::slub::boot_checks();
    set_kmalloc_checks(Checks::Linux);
    emit(
        "numalab_checks_linux",
        run(&mut OutOfLine(Kmalloc)),
        harness_call,
        clock,
    );
    set_kmalloc_checks(boot);
    for (cache, w) in [(&c64, 0), (&c256, 2)] {
        cache.core().set_checks(Checks::Linux);
        let r = run(&mut OutOfLine(Cache(cache)));
        cache.core().set_checks(boot);
        let case = alloc::format!("numalab_kmem_cache_checks_linux/{}", WORKLOADS[w]);
        let value = match (r[w], harness_call[w]) {
            (Some(v), Some(h)) => v - h,
            _ => f64::NAN,
        };
        record(&case, "instructions_per_pair", value, clock);
    }
    // Where the kmem_cache variants' instructions went: their caches' SLUB events (Linux's
    // stat names), all three variants together.
    for c in [&c64, &c256] {
        for line in crate::mm::slub::info::stats_lines(c) {
            crate::println!("# alloc_peers: {}", line);
        }
    }
    c64.destroy()
        .map_err(|n| alloc::format!("bench-64: {} live", n))?;
    c256.destroy()
        .map_err(|n| alloc::format!("bench-256: {} live", n))?;

    // Each heap owns its arena and gives it back when dropped (after its run).
    emit(
        "linked_list_allocator",
        run(&mut OutOfLine(LinkedList::new(arena()?))),
        harness_call,
        clock,
    );
    match Talc::new(arena()?) {
        Some(t) => emit("talc", run(&mut OutOfLine(t)), harness_call, clock),
        None => crate::println!("# alloc_peers: talc could not claim its arena"),
    }
    emit(
        "buddy_system_allocator",
        run(&mut OutOfLine(Buddy::new(arena()?))),
        harness_call,
        clock,
    );

    match Slabmalloc::new() {
        None => crate::println!("# alloc_peers: slabmalloc skipped: direct map not 2 MiB aligned"),
        Some(s) => emit("slabmalloc", run(&mut OutOfLine(s)), harness_call, clock),
    }
    Ok(())
}

crate::ktest!(super::BENCH_SUITE, Bench, NAME, alloc_peers);
