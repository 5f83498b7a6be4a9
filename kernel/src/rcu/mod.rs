//! RCU: Linux's non-preemptible Tree RCU in a kernel without tasks (docs/rcu.md). The
//! grace-period state machine, the tree and the segmented callback lists are
//! numalab_algo::rcu's; this module gives them locks, per-CPU data and quiescent states.
//!
//! Quiescent states (a CPU outside every read-side section): the LAPIC timer tick when it
//! interrupted code with `nesting` 0 (`tick`, from smp's handler), the idle loop (`enter_idle`
//! before hlt, and the idle CPU reported for it by whoever starts a grace period or waits for
//! one), `quiescent_point()` (Linux's cond_resched: busy loops must call it), and the
//! wait loops of `synchronize_rcu`, `rcu_barrier` and smp's `run_on_cpus` (report only).
//! Callbacks run in process context on the CPU that queued them: at its idle loop pass, its
//! `quiescent_point`, its `synchronize_rcu`/`rcu_barrier` wait loop; never in the tick. A
//! grace period's end sends the call IPI to idle CPUs whose callbacks became ready.
//!
//! Lock order: a CPU's list lock, then the tree's node locks (the root's, then the others in
//! index order, or one node at a time child to parent); all are IrqSpinLocks, so the tick
//! never finds its own CPU holding one.

mod data;
pub mod expedited;
#[cfg(feature = "ktest")]
mod expedited_tests;
#[cfg(feature = "ktest")]
pub(crate) mod freed_early_tests;
mod stats;
#[cfg(feature = "ktest")]
mod tests;

use core::ptr::NonNull;
use core::sync::atomic::{compiler_fence, AtomicU64, Ordering};
use numalab_algo::rcu::{self as algo, seq, tree, Geometry, Report};
use spin::Once;

use crate::percpu::{self, per_cpu};
use crate::topology::CpuId;
use data::{RcuCpu, TreeNodes, NO_WAIT};
pub use stats::{dump, stats, RcuStats};

/// Linux's `struct callback_head` / `rcu_head`: embedded in the object, two words.
#[repr(C)]
pub struct RcuHead {
    pub next: *mut RcuHead,
    pub func: Option<RcuCallback>,
}

// SAFETY: a head's words are written only by the call_rcu caller that owns it, then by RCU
// under its CPU's list lock until the callback runs; sharing the enclosing object shares no
// unsynchronized access to them.
unsafe impl Send for RcuHead {}
// SAFETY: as above.
unsafe impl Sync for RcuHead {}

impl RcuHead {
    pub const fn new() -> RcuHead {
        RcuHead {
            next: core::ptr::null_mut(),
            func: None,
        }
    }
}

impl Default for RcuHead {
    fn default() -> Self {
        Self::new()
    }
}

/// A callback: runs once, in process context on the queuing CPU, after a grace period.
pub type RcuCallback = unsafe fn(head: NonNull<RcuHead>);

per_cpu! {
    /// Each CPU's rcu_data, in its per-CPU area (the APs' on their own node).
    static RCU_CPU: RcuCpu = RcuCpu::new();
}

struct Rcu {
    geo: Geometry,
    tree: TreeNodes,
    /// The CPUs in the tree (online at `init`; percpu's areas, so rcu needs nothing of smp,
    /// which calls into rcu).
    online: alloc::vec::Vec<CpuId>,
}

static RCU: Once<Rcu> = Once::new();

/// Whether `init` ran: before it, callers must not queue callbacks.
pub fn is_ready() -> bool {
    RCU.get().is_some()
}

/// Builds the tree over the online CPUs (boot CPU, after SMP and SLUB: the nodes are
/// allocated on their home nodes). `rcu.fanout_leaf` 0: one leaf per NUMA node.
pub fn init(fanout_leaf: usize) {
    let topo = crate::topology::get();
    let online: alloc::vec::Vec<CpuId> = (0..percpu::MAX_CPUS as u16)
        .map(CpuId)
        .filter(|&c| percpu::of(c).is_some())
        .collect();
    let cpus: alloc::vec::Vec<(u16, u16)> = online
        .iter()
        .map(|&c| (c.0, topo.node_of_cpu(c).0))
        .collect();
    let geo = match Geometry::new(&cpus, fanout_leaf) {
        Ok(g) => g,
        Err(why) => {
            crate::warn!("{}; RCU not started", why);
            return;
        }
    };
    let Some(tree) = TreeNodes::new(&geo, |n| topo.mem_node(numalab_algo::topology::NodeId(n)))
    else {
        crate::warn!("rcu: no memory for the rcu_node tree; RCU not started");
        return;
    };
    let leaves = geo.leaves().count();
    let levels = geo.levels;
    let nodes = geo.shapes.len();
    // The APs sat in hlt before there was anything to tell: mark them idle (their next wake
    // clears it) before smp's idle loop, tick and wait loops start calling in.
    let me = percpu::cpu_id();
    for &cpu in online.iter().filter(|&&c| c != me) {
        RCU_CPU.on(cpu).idle.store(true, Ordering::SeqCst);
    }
    RCU.call_once(|| Rcu { geo, tree, online });
    crate::smp::set_qs_hooks(crate::smp::QsHooks {
        tick,
        exit_idle,
        idle_pass,
        enter_idle,
        report_qs,
        ipi: expedited::ipi,
    });
    println!(
        "numalab: rcu: {} CPUs, {} rcu_node ({} leaves{}, {} levels)",
        cpus.len(),
        nodes,
        leaves,
        if fanout_leaf == 0 {
            alloc::string::String::from(", one per NUMA node")
        } else {
            alloc::format!(", {} CPUs each", fanout_leaf)
        },
        levels
    );
}

fn now() -> u64 {
    crate::arch::rdtsc()
}

/// Whether `cpu` is idle now: asked only of CPUs that owe a quiescent state, so a true
/// answer is a report made for it (counted as forced).
fn in_eqs(cpu: u16) -> bool {
    let Some(d) = RCU_CPU.get(CpuId(cpu)) else {
        return false;
    };
    let idle = d.idle.load(Ordering::SeqCst);
    if idle {
        d.qs_forced.fetch_add(1, Ordering::Relaxed);
    }
    idle
}

/// A read-side critical section: `rcu_read_unlock` when dropped.
pub struct ReadGuard {
    _not_send: core::marker::PhantomData<*const ()>,
}

/// `rcu_read_lock`: nests; interrupts may stay on (the tick sees the depth).
#[inline]
pub fn read_lock() -> ReadGuard {
    RCU_CPU
        .get_with(&crate::percpu::pin())
        .nesting
        .fetch_add(1, Ordering::Relaxed);
    compiler_fence(Ordering::SeqCst);
    ReadGuard {
        _not_send: core::marker::PhantomData,
    }
}

impl Drop for ReadGuard {
    #[inline]
    fn drop(&mut self) {
        compiler_fence(Ordering::SeqCst);
        RCU_CPU
            .get_with(&crate::percpu::pin())
            .nesting
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// Whether the calling CPU is inside a read-side section.
pub fn in_reader() -> bool {
    RCU_CPU
        .get_with(&crate::percpu::pin())
        .nesting
        .load(Ordering::Relaxed)
        != 0
}

/// After a report: force the idle CPUs when it started the next grace period, wake the idle
/// CPUs whose callbacks it made ready.
fn after_report(r: &Rcu, rep: Report, t: u64) {
    if let Report::Ended { next: true, .. } = rep {
        tree::force_qs(&r.geo, &r.tree, t, in_eqs);
    }
    maybe_wake(r);
}

/// The grace-period number for which `wake_ready` last ran.
static WOKEN_FOR: AtomicU64 = AtomicU64::new(0);

/// Runs `wake_ready` once per grace-period number change: whichever CPU first sees a new
/// number after an operation that can end a grace period (every report, every start) does
/// the scan; the ender itself always sees its own end.
fn maybe_wake(r: &Rcu) {
    let gp = r.tree.gp_seq.load(Ordering::SeqCst);
    if WOKEN_FOR.load(Ordering::Relaxed) != gp && WOKEN_FOR.swap(gp, Ordering::SeqCst) != gp {
        wake_ready(r);
    }
}

/// Sends the call IPI to every idle CPU whose oldest waiting callbacks a completed grace
/// period made ready (the idle loop then invokes them).
fn wake_ready(r: &Rcu) {
    let gp = r.tree.gp_seq.load(Ordering::SeqCst);
    let me = percpu::cpu_id();
    for &cpu in &r.online {
        if cpu == me {
            continue;
        }
        let Some(d) = RCU_CPU.get(cpu) else { continue };
        let wait = d.wait_gp.load(Ordering::SeqCst);
        if d.idle.load(Ordering::SeqCst) && wait != NO_WAIT && seq::done(gp, wait) {
            if let Some(area) = percpu::of(cpu) {
                d.wakeups.fetch_add(1, Ordering::Relaxed);
                crate::arch::apic::send_ipi(area.apic_id(), crate::arch::idt::CALL_VECTOR);
            }
        }
    }
}

/// Reports the calling CPU's quiescent state if a grace period under way still needs it
/// (caller outside every read-side section). Whether it reported.
fn note_qs(r: &Rcu, d: &RcuCpu) -> bool {
    let gp = r.tree.gp_seq.load(Ordering::SeqCst);
    if !seq::in_progress(gp) || d.qs_seen_gp.load(Ordering::Relaxed) == gp {
        return false;
    }
    let t = now();
    let rep = tree::report_cpu(&r.geo, &r.tree, percpu::cpu_id().0, t);
    d.qs_seen_gp.store(gp, Ordering::Relaxed);
    if rep == Report::Stale {
        return false;
    }
    d.qs_reported.fetch_add(1, Ordering::Relaxed);
    after_report(r, rep, t);
    true
}

/// The tick's part (LAPIC timer handler, interrupts off): a quiescent state when the tick
/// interrupted code outside every read-side section. Callbacks are not touched here.
#[inline]
pub fn tick() {
    let Some(r) = RCU.get() else { return };
    let pin = crate::percpu::pin();
    let d = RCU_CPU.get_with(&pin);
    if algo::tick_may_report(d.nesting.load(Ordering::Relaxed)) && note_qs(r, d) {
        d.qs_from_tick.fetch_add(1, Ordering::Relaxed);
    }
}

/// A quiescent point for a wait loop that may hold locks (smp's `run_on_cpus`): reports the
/// quiescent state only, never runs callbacks.
#[inline]
pub fn report_qs() {
    let Some(r) = RCU.get() else { return };
    let pin = crate::percpu::pin();
    let d = RCU_CPU.get_with(&pin);
    if d.nesting.load(Ordering::Relaxed) == 0 {
        note_qs(r, d);
    }
}

/// Linux's cond_resched(): a quiescent state when outside every read-side section, and the
/// calling CPU's ready callbacks invoked. Busy loops that never idle must call it.
pub fn quiescent_point() {
    let Some(r) = RCU.get() else { return };
    let pin = crate::percpu::pin();
    let d = RCU_CPU.get_with(&pin);
    if d.nesting.load(Ordering::Relaxed) != 0 {
        return;
    }
    note_qs(r, d);
    if d.pending.load(Ordering::Relaxed) != 0 {
        process_callbacks(r, d);
    }
}

/// Advances the calling CPU's list, asks for the grace periods its new callbacks need, and
/// invokes the done ones (process context, interrupts on or off, outside the list lock).
fn process_callbacks(r: &Rcu, d: &RcuCpu) {
    let t = now();
    let mut done = {
        let mut list = d.list.lock();
        let (_, done) = algo::qs_point(&r.geo, &r.tree, percpu::cpu_id().0, &mut list, t, in_eqs);
        let wait = if list.seg_len(algo::WAIT) != 0 {
            list.seg_gp(algo::WAIT)
        } else {
            NO_WAIT
        };
        d.wait_gp.store(wait, Ordering::SeqCst);
        done
    };
    maybe_wake(r);
    while let Some(head) = done.pop() {
        // SAFETY: the head was queued by call_rcu with its callback and stays valid until
        // the callback runs, which happens once, here, after its grace period.
        let func = unsafe { (*head.as_ptr()).func };
        if let Some(f) = func {
            // SAFETY: call_rcu's caller promised `f` may run on `head` after a grace period.
            unsafe { f(head) };
        }
        d.pending.fetch_sub(1, Ordering::Relaxed);
        d.cbs_invoked.fetch_add(1, Ordering::Release);
    }
}

/// `call_rcu`: `func(head)` runs on this CPU after every read-side section that began before
/// this call has ended. Any context, interrupts on or off; not before `init` (`is_ready`).
pub fn call_rcu(head: NonNull<RcuHead>, func: RcuCallback) {
    let Some(r) = RCU.get() else {
        panic!("rcu: call_rcu before rcu::init");
    };
    // SAFETY: the caller hands the head over until its callback runs.
    unsafe { (*head.as_ptr()).func = Some(func) };
    let pin = crate::percpu::pin();
    let d = RCU_CPU.get_with(&pin);
    let t = now();
    let started = {
        let mut list = d.list.lock();
        d.pending.fetch_add(1, Ordering::Relaxed);
        d.cbs_queued.fetch_add(1, Ordering::Release);
        let started = algo::queue(&r.geo, &r.tree, &mut list, head, t, in_eqs);
        if list.seg_len(algo::WAIT) != 0 {
            d.wait_gp.store(list.seg_gp(algo::WAIT), Ordering::SeqCst);
        }
        started
    };
    if started {
        maybe_wake(r);
    }
}

/// Leaves the extended quiescent state (an AP back from hlt, before it runs any work).
#[inline]
pub fn exit_idle() {
    RCU_CPU
        .get_with(&crate::percpu::pin())
        .idle
        .store(false, Ordering::SeqCst);
}

/// The idle loop's pass (an AP between its queued calls and hlt): a quiescent state, the
/// ready callbacks invoked.
pub fn idle_pass() {
    quiescent_point();
}

/// Idle entry, interrupts off, just before hlt: marks the CPU idle (extended quiescent state)
/// and reports a quiescent state still owed. False when callbacks became ready meanwhile
/// (the caller must not hlt: nobody would wake it for them).
pub fn enter_idle() -> bool {
    let pin = crate::percpu::pin();
    let d = RCU_CPU.get_with(&pin);
    d.idle.store(true, Ordering::SeqCst);
    let Some(r) = RCU.get() else { return true };
    note_qs(r, d);
    let wait = d.wait_gp.load(Ordering::SeqCst);
    let ready = (wait != NO_WAIT && seq::done(r.tree.gp_seq.load(Ordering::SeqCst), wait))
        || d.list.lock().needs_accelerate();
    if ready {
        d.idle.store(false, Ordering::SeqCst);
    }
    !ready
}

/// Passes of a wait loop after which it prints a stall report (once per wait), as Linux's
/// RCU CPU stall warning (counted in passes, not time: the report must not depend on the
/// host's speed to appear or not in a given boot).
const STALL_PASSES: u64 = 1 << 24;

/// One pass of a waiting loop: quiescent point, idle CPUs forced, callbacks; a stall report
/// at pass STALL_PASSES.
fn wait_pass(r: &Rcu, pass: u64, what: &str) {
    if pass == STALL_PASSES {
        crate::warn!(
            "rcu: {} still waiting after {} passes (stall); counters follow",
            what,
            pass
        );
        dump();
    }
    quiescent_point();
    let t = now();
    tree::force_qs(&r.geo, &r.tree, t, in_eqs);
    maybe_wake(r);
    core::hint::spin_loop();
}

#[repr(C)]
struct SyncWait {
    head: RcuHead,
    done: core::sync::atomic::AtomicBool,
}

/// Marks a `synchronize_rcu` waiter done.
///
/// # Safety
/// `head` is the first field of a live `SyncWait` (its waiter does not return before this).
unsafe fn wake_sync(head: NonNull<RcuHead>) {
    // SAFETY: SyncWait is repr(C) with the head first (the caller's contract).
    let w = unsafe { &*(head.as_ptr() as *const SyncWait) };
    w.done.store(true, Ordering::Release);
}

/// `synchronize_rcu`: returns after a full grace period (every read-side section that began
/// before the call has ended). Process context, outside every read-side section; before
/// `init` there is only one CPU running and nothing to wait for.
pub fn synchronize_rcu() {
    let Some(r) = RCU.get() else { return };
    assert!(
        !in_reader(),
        "rcu: synchronize_rcu inside a read-side section"
    );
    let w = SyncWait {
        head: RcuHead::new(),
        done: core::sync::atomic::AtomicBool::new(false),
    };
    call_rcu(NonNull::from(&w.head), wake_sync);
    let mut pass = 0;
    while !w.done.load(Ordering::Acquire) {
        pass += 1;
        wait_pass(r, pass, "synchronize_rcu");
    }
}

/// `rcu_barrier`: returns when every callback queued (on any CPU) before the call has run.
/// Process context, outside every read-side section.
pub fn rcu_barrier() {
    let Some(r) = RCU.get() else { return };
    assert!(!in_reader(), "rcu: rcu_barrier inside a read-side section");
    let mut targets = [0u64; percpu::MAX_CPUS];
    for &cpu in &r.online {
        targets[cpu.index()] = RCU_CPU.on(cpu).cbs_queued.load(Ordering::Acquire);
    }
    // Callbacks run in order on their CPU, so a CPU has run all of those queued before the
    // snapshot once its invoked count reaches the snapshot.
    let mut pass = 0;
    loop {
        let behind = r
            .online
            .iter()
            .any(|&cpu| RCU_CPU.on(cpu).cbs_invoked.load(Ordering::Acquire) < targets[cpu.index()]);
        if !behind {
            return;
        }
        pass += 1;
        wait_pass(r, pass, "rcu_barrier");
    }
}
