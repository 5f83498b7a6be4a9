//! Suite `rcu`, the expedited grace period: a CPU that first sits in a read-side section and
//! then spins outside one, with interrupts on and no quiescent point, until the boot CPU's
//! `synchronize_rcu_expedited` returns. A normal grace period would wait for that CPU's loop
//! to end, which waits for the grace period: only the IPIs end it. The wait must not end while
//! the CPU is in its section, and the CPU's quiescent state must come from an IPI.

use super::expedited::synchronize_rcu_expedited;
use super::{read_lock, RCU_CPU};
use crate::ktest::suites::RCU as SUITE;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::percpu;
use crate::smp::{online_cpus, run_on_cpus};
use crate::topology::CpuId;
use crate::{kassert, ktest};
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};

/// Spins inside the section (long enough for the first IPI to land in it).
const READER_SPINS: u64 = 2_000_000;
/// The busy loop's bound: a wait that never ends fails the test instead of hanging it.
const BUSY_SPINS_MAX: u64 = 1 << 30;

fn expedited_reaches_a_busy_cpu(_ctx: &Ctx) -> TestResult {
    let cpus = online_cpus();
    if cpus.len() < 2 {
        return Err(TestError::Skip("needs two CPUs".into()));
    }
    let boot = percpu::cpu_id();
    let busy = *cpus.last().expect("two CPUs");
    let (started, out, stop) = (
        AtomicBool::new(false),
        AtomicBool::new(false),
        AtomicBool::new(false),
    );
    let (saw_out, gave_up) = (AtomicBool::new(false), AtomicBool::new(false));
    let sent = AtomicU64::new(0);
    let d = RCU_CPU.on(busy);
    let (ipis0, qs0) = (d.exp_ipis.load(SeqCst), d.qs_from_ipi.load(SeqCst));
    run_on_cpus(&[boot, busy], &|cpu: CpuId| {
        if cpu == busy {
            let g = read_lock();
            started.store(true, SeqCst);
            for _ in 0..READER_SPINS {
                core::hint::spin_loop();
            }
            out.store(true, SeqCst);
            drop(g);
            let mut n = 0u64;
            while !stop.load(SeqCst) {
                n += 1;
                if n == BUSY_SPINS_MAX {
                    gave_up.store(true, SeqCst);
                    break;
                }
                core::hint::spin_loop();
            }
        } else {
            while !started.load(SeqCst) {
                core::hint::spin_loop();
            }
            sent.store(synchronize_rcu_expedited(), SeqCst);
            saw_out.store(out.load(SeqCst), SeqCst);
            stop.store(true, SeqCst);
        }
    });
    let (ipis, qs) = (
        d.exp_ipis.load(SeqCst) - ipis0,
        d.qs_from_ipi.load(SeqCst) - qs0,
    );
    crate::println!(
        "    # busy CPU {}: {} IPIs sent, {} taken, {} quiescent states from them",
        busy.0,
        sent.load(SeqCst),
        ipis,
        qs
    );
    kassert!(
        !gave_up.load(SeqCst),
        "the busy CPU spun {} times and the expedited wait had not returned",
        BUSY_SPINS_MAX
    );
    kassert!(
        saw_out.load(SeqCst),
        "synchronize_rcu_expedited returned while the CPU was still in its section"
    );
    kassert!(
        qs >= 1,
        "no quiescent state came from an IPI ({} taken)",
        ipis
    );
    Ok(())
}

ktest!(SUITE, Test, expedited_reaches_a_busy_cpu);
