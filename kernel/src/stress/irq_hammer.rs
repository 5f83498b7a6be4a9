//! The interrupt-vs-fast-path hammer: the LAPIC timer's handler allocates and frees from a
//! cache while the interrupted CPU hammers the same cache, checking that no object is
//! handed out twice and none is lost, and that interrupts really split fast paths (the
//! (freelist, tid) compare failed and was retried: cmpxchg_double_cpu_fail > 0).
//!
//! With `slub.debug=` flags the boot's cache is a debug cache: every allocation and free takes
//! the slow path with interrupts off, so none is split; the hammer then checks that (no fast
//! path, no retry, nothing handed out twice or lost) and hammers a second cache with the flags
//! cleared, so that the fast paths are still split and checked in a debugging boot.

use crate::arch::apic;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::mm::slub::KmemCache;
use alloc::format;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicPtr, AtomicU64, AtomicUsize, Ordering::Relaxed};
use numalab_algo::slub::Stat;

/// The cache under test while the hook is installed.
static CACHE: AtomicPtr<KmemCache> = AtomicPtr::new(core::ptr::null_mut());
/// Timer ticks that ran the hook, and misuses the hook saw (an object whose tag changed
/// while the handler held it).
static HOOK_RUNS: AtomicU64 = AtomicU64::new(0);
static HOOK_ERRORS: AtomicU64 = AtomicU64::new(0);
/// Tag sequence (each holder writes a fresh tag into its object and checks it at free).
static SEQ: AtomicUsize = AtomicUsize::new(1);

/// Objects the handler holds at once, and rounds per tick.
const HOOK_OBJECTS: usize = 6;
const HOOK_ROUNDS: usize = 8;
/// Objects the interrupted loop keeps live.
const MAIN_OBJECTS: usize = 48;
/// Ticks to wait for, the timer rate and the main loop's cap on steps.
const TICKS: u64 = 400;
const TIMER_PER_SECOND: u64 = 20_000;
const MAX_STEPS: u64 = 20_000_000;

/// Tag words: the first and last word of the 64-byte object, whichever the free pointer
/// does not use, both written with the same tag.
fn tag(obj: NonNull<u8>) -> [*mut usize; 2] {
    let p = obj.as_ptr() as *mut usize;
    // SAFETY: 64-byte objects: words 0 and 7 are inside the object.
    [p, unsafe { p.add(7) }]
}

fn write_tag(obj: NonNull<u8>, t: usize) {
    for w in tag(obj) {
        // SAFETY: the caller holds `obj` (just allocated, 8-byte aligned, 64 bytes).
        unsafe { w.write_volatile(t) };
    }
}

fn tag_ok(obj: NonNull<u8>, t: usize) -> bool {
    // SAFETY: as in write_tag.
    tag(obj).iter().all(|w| unsafe { w.read_volatile() } == t)
}

/// Runs in the timer interrupt: several rounds of allocating objects, tagging them,
/// checking the tags and freeing them.
fn hook() {
    let c = CACHE.load(Relaxed);
    if c.is_null() {
        return;
    }
    // SAFETY: CACHE is set while the test holds the cache alive and cleared (with the timer
    // stopped) before it is destroyed.
    let cache = unsafe { &*c };
    HOOK_RUNS.fetch_add(1, Relaxed);
    for _ in 0..HOOK_ROUNDS {
        let mut held: [Option<(NonNull<u8>, usize)>; HOOK_OBJECTS] = [None; HOOK_OBJECTS];
        for slot in held.iter_mut() {
            if let Some(p) = cache.alloc() {
                let t = SEQ.fetch_add(1, Relaxed);
                write_tag(p, t);
                *slot = Some((p, t));
            }
        }
        for (p, t) in held.iter().flatten() {
            if !tag_ok(*p, *t) {
                HOOK_ERRORS.fetch_add(1, Relaxed);
            }
            // SAFETY: allocated above, freed once.
            unsafe { cache.free(*p) };
        }
    }
}

/// Stops the timer and removes the hook (also on the error paths).
fn stop() {
    apic::timer_periodic(0);
    crate::smp::set_timer_hook(None);
    CACHE.store(core::ptr::null_mut(), Relaxed);
}

pub(super) fn irq_hammer(_ctx: &Ctx) -> TestResult {
    if apic::timer_hz() == 0 {
        return Err(TestError::Skip("LAPIC timer not calibrated".into()));
    }
    let t = crate::mm::slub::default_tunables("irq-hammer");
    hammer("irq-hammer", t)?;
    if t.design == numalab_algo::slub::Design::Hybrid && !t.debug.any() {
        // The hybrid design's other kind of cache: sheaves over the CPU slab.
        hammer(
            "irq-hammer-sheaves",
            numalab_algo::slub::Tunables {
                sheaves_opt_in: true,
                ..t
            },
        )?;
    }
    if !t.debug.any() {
        return Ok(());
    }
    hammer(
        "irq-hammer-nodebug",
        numalab_algo::slub::Tunables {
            debug: numalab_algo::slub::DebugFlags::default(),
            ..t
        },
    )
}

/// Interrupts that landed inside a fast path: a failed (freelist, tid) compare in the
/// partial design, a taken sheaf trylock in the sheaves design.
fn split(s: &numalab_algo::slub::StatsSnapshot) -> u64 {
    s.get(Stat::CmpxchgDoubleCpuFail) + s.get(Stat::SheafTrylockFail)
}

/// Hammers a fresh 64-byte cache `name` with tunables `t` from the loop and the timer hook.
fn hammer(name: &str, t: numalab_algo::slub::Tunables) -> TestResult {
    let debug = t.debug.any();
    let cache = KmemCache::create(name, 64, 0, t).map_err(|e| format!("create: {:?}", e))?;
    let before = cache.core().stats();
    HOOK_RUNS.store(0, Relaxed);
    HOOK_ERRORS.store(0, Relaxed);
    let were_on = x86_64::instructions::interrupts::are_enabled();
    CACHE.store(cache as *const KmemCache as *mut KmemCache, Relaxed);
    crate::smp::set_timer_hook(Some(hook));
    apic::timer_periodic(TIMER_PER_SECOND);
    x86_64::instructions::interrupts::enable();

    let mut live: [Option<(NonNull<u8>, usize)>; MAIN_OBJECTS] = [None; MAIN_OBJECTS];
    let mut twice = 0u64;
    let mut steps = 0u64;
    let mut rng = numalab_algo::rng::XorShift64::new(0x1234_5678_9abc_def1);
    while steps < MAX_STEPS {
        steps += 1;
        let r = rng.next_u64();
        let i = (r % MAIN_OBJECTS as u64) as usize;
        // Mostly free-then-alloc of one slot; every 4th step a short burst on four slots.
        let n = if r & 0x300 == 0 { 4 } else { 1 };
        for k in 0..n {
            let j = (i + k) % MAIN_OBJECTS;
            if let Some((p, t)) = live[j].take() {
                if !tag_ok(p, t) {
                    twice += 1;
                }
                // SAFETY: allocated by this loop, freed once.
                unsafe { cache.free(p) };
            }
        }
        for k in 0..n {
            let j = (i + k) % MAIN_OBJECTS;
            if let Some(p) = cache.alloc() {
                let t = SEQ.fetch_add(1, Relaxed);
                write_tag(p, t);
                live[j] = Some((p, t));
            }
        }
        // A debug cache has no fast path to split: enough ticks are the whole test.
        if steps.is_multiple_of(1024)
            && HOOK_RUNS.load(Relaxed) >= TICKS
            && (debug || split(&cache.core().stats().since(&before)) > 0)
        {
            break;
        }
    }
    x86_64::instructions::interrupts::disable();
    stop();
    if were_on {
        x86_64::instructions::interrupts::enable();
    }
    for (p, t) in live.iter().flatten() {
        if !tag_ok(*p, *t) {
            twice += 1;
        }
        // SAFETY: allocated by the loop, freed once.
        unsafe { cache.free(*p) };
    }
    let s = cache.core().stats().since(&before);
    let runs = HOOK_RUNS.load(Relaxed);
    let hook_errors = HOOK_ERRORS.load(Relaxed);
    let retries = split(&s);
    crate::println!(
        "# slub irq_hammer: {} (debug {}, sheaf_capacity {}): {} steps, {} timer hooks, alloc_fastpath {} free_fastpath {} alloc_cpu_sheaf {} free_cpu_sheaf {} alloc_slowpath {} free_slowpath {} cmpxchg_double_cpu_fail {} sheaf_trylock_fail {}",
        name,
        t.debug.letters(),
        cache.core().sheaf_capacity(),
        steps,
        runs,
        s.get(Stat::AllocFastpath),
        s.get(Stat::FreeFastpath),
        s.get(Stat::AllocCpuSheaf),
        s.get(Stat::FreeCpuSheaf),
        s.get(Stat::AllocSlowpath),
        s.get(Stat::FreeSlowpath),
        s.get(Stat::CmpxchgDoubleCpuFail),
        s.get(Stat::SheafTrylockFail)
    );
    let live_after = s.live_objects();
    // Destroy fails (and counts) if any object was lost from every freelist.
    // SAFETY: the hook is gone and the timer stopped; this is the cache's last use.
    let destroyed = unsafe { cache.destroy() };
    if twice > 0 || hook_errors > 0 {
        return Err(TestError::Fail(format!(
            "an object was handed out twice: {} tags overwritten in the loop, {} in the handler",
            twice, hook_errors
        )));
    }
    if live_after != 0 {
        return Err(TestError::Fail(format!(
            "counters say {} objects live after every object was freed",
            live_after
        )));
    }
    if let Err(live) = destroyed {
        return Err(TestError::Fail(format!(
            "{} objects lost (live at destroy after every object was freed)",
            live
        )));
    }
    if runs < TICKS {
        return Err(TestError::Fail(format!(
            "only {} timer hooks ran in {} steps",
            runs, steps
        )));
    }
    if debug {
        // Every operation of a debug cache runs with interrupts off: nothing to split.
        let fast = s.get(Stat::AllocFastpath) + s.get(Stat::FreeFastpath);
        if fast != 0 || retries != 0 {
            return Err(TestError::Fail(format!(
                "{}: debug cache took {} fast paths and {} retries (all slow paths expected)",
                name, fast, retries
            )));
        }
    } else if retries == 0 {
        return Err(TestError::Fail(format!(
            "no interrupt split a fast path in {} steps and {} ticks (cmpxchg_double_cpu_fail + sheaf_trylock_fail 0)",
            steps, runs
        )));
    }
    Ok(())
}
