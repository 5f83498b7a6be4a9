//! Fault injection (Linux's fail_page_alloc, failslab and a vmalloc point): the options
//! `fault.page_alloc`, `fault.slab` and `fault.vmalloc` (`PROBABILITY[,INTERVAL[,SEED]]`, see
//! `numalab_algo::fault`) make a share of the calls at each point fail as if memory had run
//! out, so every caller's failure path runs. Armed after boot (the boot itself never sees an
//! injected failure); tests arm and disarm points themselves.
//!
//! Points: `PageAlloc` in `frame::alloc_pages` (every order and policy), `Slab` where SLUB
//! takes a new slab from the page allocator, `Vmalloc` at the start of vmalloc/vmap. The
//! kernel heap (`#[global_allocator]`, which Rust's collections cannot see fail) is exempt,
//! as Linux exempts `__GFP_NOFAIL`: it runs its page and kmalloc calls under `exempt()`.
//!
//! Cost when no point is armed: one relaxed load of the point's `armed` flag per call.

#[cfg(feature = "ktest")]
mod tests;

use crate::percpu::per_cpu;
use crate::topology::CpuId;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering::Relaxed};
use numalab_algo::fault::FaultAttr;
use numalab_algo::options::Opt;

/// An injection point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Point {
    PageAlloc = 0,
    Slab = 1,
    Vmalloc = 2,
}

/// Every point, in `Point` order.
pub const POINTS: [Point; 3] = [Point::PageAlloc, Point::Slab, Point::Vmalloc];

impl Point {
    /// The option that arms it.
    pub fn option(self) -> &'static Opt<FaultAttr> {
        match self {
            Point::PageAlloc => &crate::options::FAULT_PAGE_ALLOC,
            Point::Slab => &crate::options::FAULT_SLAB,
            Point::Vmalloc => &crate::options::FAULT_VMALLOC,
        }
    }
}

/// One point's attribute and counters.
struct State {
    armed: AtomicBool,
    probability_pct: AtomicU32,
    interval: AtomicU64,
    seed: AtomicU64,
    /// Calls seen while armed (outside exempt sections): the `n` of `should_fail`.
    calls: AtomicU64,
    /// Failures injected.
    injected: AtomicU64,
}

impl State {
    const fn new() -> State {
        State {
            armed: AtomicBool::new(false),
            probability_pct: AtomicU32::new(0),
            interval: AtomicU64::new(1),
            seed: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            injected: AtomicU64::new(0),
        }
    }
}

static STATES: [State; 3] = [State::new(), State::new(), State::new()];

per_cpu! {
    /// Per CPU: how many exempt sections are open (the heap's calls).
    static EXEMPT: AtomicU32 = AtomicU32::new(0);
}

/// Whether any point is armed (the heap opens exempt sections only then).
static ANY_ARMED: AtomicBool = AtomicBool::new(false);

/// Arms the points the options name (boot CPU, after the allocators are up). A bad value is
/// a warning and leaves that point off.
pub fn init(opts: &numalab_algo::options::Options) {
    for p in POINTS {
        let opt = p.option();
        // A bad value never reaches here: the parser kept the default (off) and the
        // `options.valid` test reports it.
        if let Some(attr) = opts.get(opt) {
            arm(p, attr);
            crate::println!(
                "numalab: fault: {} armed: probability {}%, interval {}, seed {}",
                opt.spec.key,
                attr.probability_pct,
                attr.interval,
                attr.seed
            );
        }
    }
}

/// Arms `p` with `attr`, restarting its call count (so a seeded run fails the same calls).
pub fn arm(p: Point, attr: FaultAttr) {
    let s = &STATES[p as usize];
    s.armed.store(false, Relaxed);
    s.probability_pct.store(attr.probability_pct, Relaxed);
    s.interval.store(attr.interval, Relaxed);
    s.seed.store(attr.seed, Relaxed);
    s.calls.store(0, Relaxed);
    s.armed.store(true, Relaxed);
    ANY_ARMED.store(true, Relaxed);
}

/// Disarms `p`.
#[cfg(feature = "ktest")]
pub fn disarm(p: Point) {
    STATES[p as usize].armed.store(false, Relaxed);
    ANY_ARMED.store(STATES.iter().any(|s| s.armed.load(Relaxed)), Relaxed);
}

/// The attribute `p` is armed with, if it is.
pub fn armed(p: Point) -> Option<FaultAttr> {
    let s = &STATES[p as usize];
    s.armed.load(Relaxed).then(|| FaultAttr {
        probability_pct: s.probability_pct.load(Relaxed),
        interval: s.interval.load(Relaxed),
        seed: s.seed.load(Relaxed),
    })
}

/// Failures injected at `p` since boot.
#[cfg(feature = "ktest")]
pub fn injected(p: Point) -> u64 {
    STATES[p as usize].injected.load(Relaxed)
}

/// Whether this call at `p` fails (the hook every point calls first).
#[inline(always)]
pub fn should_fail(p: Point) -> bool {
    STATES[p as usize].armed.load(Relaxed) && should_fail_armed(p)
}

#[cold]
#[inline(never)]
fn should_fail_armed(p: Point) -> bool {
    if EXEMPT.get_with(&crate::percpu::pin()).load(Relaxed) != 0 {
        return false;
    }
    let Some(attr) = armed(p) else { return false };
    let s = &STATES[p as usize];
    let n = s.calls.fetch_add(1, Relaxed);
    let fail = attr.should_fail(n);
    if fail {
        s.injected.fetch_add(1, Relaxed);
    }
    fail
}

/// An open exempt section of the calling CPU (closed on drop).
pub struct Exempt(Option<CpuId>);

/// Opens an exempt section: until the guard drops, no point fails on this CPU. Used by the
/// kernel heap (whose callers cannot see a failure) and by code that must not fail while it
/// cleans up. Free (nothing stored) while no point is armed.
#[inline(always)]
pub fn exempt() -> Exempt {
    if !ANY_ARMED.load(Relaxed) {
        return Exempt(None);
    }
    let cpu = crate::percpu::cpu_id();
    let e = EXEMPT.on(cpu);
    // Only this CPU changes its count (interrupt handlers restore what they change).
    e.store(e.load(Relaxed) + 1, Relaxed);
    Exempt(Some(cpu))
}

impl Drop for Exempt {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(e) = self.0.map(|cpu| EXEMPT.on(cpu)) {
            e.store(e.load(Relaxed) - 1, Relaxed);
        }
    }
}
