//! Cross-CPU function calls: run a function on one CPU, a set, or all, and wait for them.
//!
//! Each CPU has two lock-free LIFO queues in its per-CPU area (Linux's `call_single_queue`
//! idea): `calls` for arbitrary functions and `flushes` for TLB flushes. A caller pushes one
//! node per target (nodes and the shared call record live on the caller's stack, so no heap is
//! touched) and sends the IPI only when it made the queue non-empty. Functions run in process
//! context, never inside the interrupt handler: an AP runs them from its idle loop, and any CPU
//! runs its pending ones while it waits for its own calls (so two CPUs calling each other, or a
//! caller with interrupts off, cannot deadlock). Flushes are small and lock-free, so they also
//! run inside the IPI handler and in `IrqSpinLock`'s spin loop.
//!
//! Rules: do not call these while holding a lock that the function takes, nor from inside an
//! interrupt handler.

use core::ptr;
use core::sync::atomic::{AtomicUsize, Ordering};

use super::queue::{push, Linked};
use super::{PerCpuSmp, MAX_CPUS};
use crate::percpu::{self, PerCpu};
use crate::topology::CpuId;

/// A pending function call on one target.
pub struct CallNode {
    next: *mut CallNode,
    data: *const CallData,
}

/// What all targets of one call share: the function and how many have not finished.
struct CallData {
    func: *const (dyn Fn(CpuId) + Sync + 'static),
    remaining: AtomicUsize,
}

impl Linked for CallNode {
    fn set_next(&mut self, next: *mut Self) {
        self.next = next;
    }
}

/// Runs every function queued for the calling CPU (process context only).
pub fn run_pending_calls() {
    let cpu = percpu::cpu_id();
    let me = PerCpuSmp::of(cpu);
    if me.calls.load(Ordering::Relaxed).is_null() {
        return;
    }
    let mut node = me.calls.swap(ptr::null_mut(), Ordering::Acquire);
    while !node.is_null() {
        // SAFETY: the caller keeps the node and its CallData alive until `remaining` drops to
        // zero, which happens only after this CPU's fetch_sub below; `next` is read before.
        let (next, data) = unsafe { ((*node).next, &*(*node).data) };
        // SAFETY: the function outlives the call (the caller waits), see `run_on_cpus`.
        let func = unsafe { &*data.func };
        func(cpu);
        me.stats.calls_run.fetch_add(1, Ordering::Relaxed);
        // After this the caller may return and free the node and data: touch neither again.
        data.remaining.fetch_sub(1, Ordering::Release);
        node = next;
    }
}

/// A small set of CPUs (bit per CpuId).
struct CpuSet([u64; MAX_CPUS / 64]);

impl CpuSet {
    /// Inserts `cpu`; false when it was already present.
    fn insert(&mut self, cpu: CpuId) -> bool {
        let (word, bit) = (cpu.index() / 64, cpu.index() % 64);
        let fresh = self.0[word] & (1 << bit) == 0;
        self.0[word] |= 1 << bit;
        fresh
    }
}

/// Runs `f(cpu)` on every CPU in `cpus` at the same time (the caller runs its own share if it
/// is listed) and returns when all have finished. CPUs that are not online are skipped with a
/// warning; a CPU listed twice runs `f` once.
pub fn run_on_cpus(cpus: &[CpuId], f: &(dyn Fn(CpuId) + Sync)) {
    let me = percpu::this();
    let self_cpu = me.cpu();
    let mut seen = CpuSet([0; MAX_CPUS / 64]);
    let mut targets: [Option<&'static PerCpu>; MAX_CPUS] = [None; MAX_CPUS];
    let mut nr_targets = 0;
    let mut run_self = false;
    for &cpu in cpus {
        let area = if cpu.index() < MAX_CPUS {
            percpu::of(cpu)
        } else {
            None
        };
        let Some(area) = area else {
            crate::warn!("smp: run_on_cpus: CPU {} is not online; skipped", cpu.0);
            continue;
        };
        if !seen.insert(cpu) {
            continue;
        }
        if cpu == self_cpu {
            run_self = true;
        } else {
            targets[nr_targets] = Some(area);
            nr_targets += 1;
        }
    }
    // SAFETY: only the lifetime bound of the trait object is erased; this function does not
    // return before every target has finished with `f` (the wait below), so the erased
    // reference is never used after `f`'s real lifetime ends.
    let func: *const (dyn Fn(CpuId) + Sync + 'static) = unsafe {
        core::mem::transmute::<
            *const (dyn Fn(CpuId) + Sync + '_),
            *const (dyn Fn(CpuId) + Sync + 'static),
        >(f)
    };
    let data = CallData {
        func,
        remaining: AtomicUsize::new(nr_targets),
    };
    let mut nodes: [CallNode; MAX_CPUS] = core::array::from_fn(|_| CallNode {
        next: ptr::null_mut(),
        data: &data,
    });
    for (node, target) in nodes.iter_mut().zip(&targets[..nr_targets]) {
        let target = target.expect("filled above");
        // SAFETY: `node` lives on this stack frame until `data.remaining` is zero, i.e. until
        // the target has consumed it; nothing else touches it meanwhile.
        if unsafe { push(&PerCpuSmp::of(target.cpu()).calls, node) } {
            super::send_call_ipi(target);
        }
        PerCpuSmp::of(self_cpu)
            .stats
            .calls_sent
            .fetch_add(1, Ordering::Relaxed);
    }
    if run_self {
        f(self_cpu);
    }
    while data.remaining.load(Ordering::Acquire) != 0 {
        super::tlb::run_pending_flushes();
        run_pending_calls();
        // A waiting CPU outside read-side sections is quiescent (report only: the caller may
        // hold locks that callbacks take).
        super::report_qs();
        core::hint::spin_loop();
    }
}

/// Runs `f` on every online CPU, the caller included, and waits for all.
pub fn on_each_cpu(f: &(dyn Fn(CpuId) + Sync)) {
    run_on_cpus(super::online_cpus(), f);
}

/// Why a call could not be made.
#[cfg(feature = "ktest")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CallError {
    /// The CPU is not online (never existed, did not answer at boot).
    NotOnline(CpuId),
}

/// Runs `f` on `cpu` (an IPI unless it is the caller) and waits for it to finish.
#[cfg(feature = "ktest")]
pub fn call_on_cpu(cpu: CpuId, f: &(dyn Fn(CpuId) + Sync)) -> Result<(), CallError> {
    if percpu::of(cpu).is_none() || cpu.index() >= MAX_CPUS {
        return Err(CallError::NotOnline(cpu));
    }
    run_on_cpus(&[cpu], f);
    Ok(())
}
