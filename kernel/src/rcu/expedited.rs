//! `synchronize_rcu_expedited`: a grace period driven by IPIs. numalab has no periodic tick,
//! so a CPU in a busy loop without `quiescent_point` holds a normal grace period up until its
//! loop ends; the expedited wait sends the call IPI to every CPU that still owes the grace
//! period and is not idle, and the IPI's handler reports a quiescent state for the code it
//! interrupted when that code is outside every read-side section (Linux's `rcu_exp_handler` of
//! non-preemptible RCU: the IPI is the quiescent state unless it landed in a reader). A CPU
//! inside a reader is sent the IPI again every `RESEND_PASSES` passes of the wait. Unlike
//! Linux (`rcu_state.expedited_sequence`, its own per-node masks), the grace period waited for
//! is the normal one, reached sooner.

use super::{call_rcu, in_reader, wait_pass, wake_sync, SyncWait, RCU, RCU_CPU};
use crate::percpu;
use crate::topology::CpuId;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use numalab_algo::rcu::tree;

/// Expedited waits under way: the IPI handler reports only while one is.
static WAITERS: AtomicU64 = AtomicU64::new(0);
/// Passes of the wait between IPIs to a CPU that still owes the grace period.
const RESEND_PASSES: u64 = 4096;

/// The call IPI's part (interrupts off): a quiescent state for the interrupted code when an
/// expedited wait is under way and the code is outside every read-side section.
pub(super) fn ipi() {
    if WAITERS.load(Ordering::Acquire) == 0 {
        return;
    }
    let Some(r) = RCU.get() else { return };
    let pin = crate::percpu::pin();
    let d = RCU_CPU.get_with(&pin);
    d.exp_ipis.fetch_add(1, Ordering::Relaxed);
    if d.nesting.load(Ordering::Relaxed) == 0 && super::note_qs(r, d) {
        d.qs_from_ipi.fetch_add(1, Ordering::Relaxed);
    }
}

/// `synchronize_rcu_expedited`: as `synchronize_rcu` (a full grace period, process context,
/// outside every read-side section), with every CPU that owes the grace period and is not idle
/// sent an IPI at once and again every `RESEND_PASSES` passes while it still owes it. Returns
/// the IPIs it sent.
pub fn synchronize_rcu_expedited() -> u64 {
    let Some(r) = RCU.get() else { return 0 };
    assert!(
        !in_reader(),
        "rcu: synchronize_rcu_expedited inside a read-side section"
    );
    WAITERS.fetch_add(1, Ordering::AcqRel);
    let w = SyncWait {
        head: super::RcuHead::new(),
        done: AtomicBool::new(false),
    };
    call_rcu(NonNull::from(&w.head), wake_sync);
    let me = percpu::cpu_id();
    let mut sent = 0;
    let mut pass = 0;
    while !w.done.load(Ordering::Acquire) {
        if pass % RESEND_PASSES == 0 {
            for &cpu in r.online.iter().filter(|&&c| c != me) {
                if owes_and_busy(r, cpu) {
                    crate::smp::kick_cpu(cpu);
                    sent += 1;
                }
            }
        }
        pass += 1;
        wait_pass(r, pass, "synchronize_rcu_expedited");
    }
    WAITERS.fetch_sub(1, Ordering::AcqRel);
    sent
}

/// Whether `cpu` owes the grace period under way and is not idle (an idle CPU is forced by
/// the wait itself).
fn owes_and_busy(r: &super::Rcu, cpu: CpuId) -> bool {
    let idle = RCU_CPU
        .get(cpu)
        .is_none_or(|d| d.idle.load(Ordering::SeqCst));
    !idle && tree::owes_qs(&r.geo, &r.tree, cpu.0)
}
