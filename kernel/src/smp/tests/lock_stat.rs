//! In-kernel test of the lock statistics behind the lock_stat table: a lock made to contend a
//! known number of times between two CPUs counts each contention once, with wait times that
//! agree with each other (min <= avg <= max, total = the sum of the waits seen one by one),
//! and times its holds only while lock_stat is on.

use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering};

use super::super::{online_cpus, run_on_cpus};
use super::SUITE;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::sync::{self, IrqSpinLock, LockStatsSnapshot};
use crate::{kassert, kassert_eq, ktest};

/// Contended acquisitions per phase.
const ROUNDS: u64 = 6;
/// PAUSEs the holder keeps the lock after the waiter started waiting.
const HOLD_SPINS: u64 = 200;

/// One phase: the first CPU takes the lock, waits until the second is spinning for it (its
/// contention count went up), holds a little longer and lets go; `ROUNDS` times. Returns the
/// lock's counters and each round's wait as the waiter saw it (wait_ticks before and after).
fn contend(
    holder: crate::topology::CpuId,
    waiter: crate::topology::CpuId,
) -> (LockStatsSnapshot, Vec<u64>) {
    let lock = IrqSpinLock::new(0u64);
    let taken = AtomicU64::new(0);
    let done = AtomicU64::new(0);
    let waits: Vec<AtomicU64> = (0..ROUNDS).map(|_| AtomicU64::new(0)).collect();
    run_on_cpus(&[holder, waiter], &|cpu| {
        for round in 0..ROUNDS {
            if cpu == holder {
                let mut g = lock.lock();
                taken.store(round + 1, Ordering::Release);
                while lock.stats.contended.load(Ordering::Relaxed) < round + 1 {
                    core::hint::spin_loop();
                }
                for _ in 0..HOLD_SPINS {
                    core::hint::spin_loop();
                }
                *g += 1;
                drop(g);
                while done.load(Ordering::Acquire) < round + 1 {
                    core::hint::spin_loop();
                }
            } else {
                while taken.load(Ordering::Acquire) < round + 1 {
                    core::hint::spin_loop();
                }
                let before = lock.stats.wait_ticks.load(Ordering::Relaxed);
                let mut g = lock.lock();
                let after = lock.stats.wait_ticks.load(Ordering::Relaxed);
                waits[round as usize].store(after - before, Ordering::Relaxed);
                *g += 1;
                drop(g);
                done.store(round + 1, Ordering::Release);
            }
        }
    });
    let seen = waits.iter().map(|w| w.load(Ordering::Relaxed)).collect();
    (lock.stats.snapshot(), seen)
}

/// The counters of one phase agree with each other and with the waits seen one by one.
fn check_phase(s: &LockStatsSnapshot, waits: &[u64], timed: bool) -> TestResult {
    kassert_eq!(s.acquisitions, 2 * ROUNDS, "acquisitions");
    kassert_eq!(s.contended, ROUNDS, "every round contended exactly once");
    kassert_eq!(
        s.wait_ticks,
        waits.iter().sum::<u64>(),
        "waittime-total = sum of the waits"
    );
    kassert_eq!(
        s.min_wait_ticks,
        *waits.iter().min().unwrap_or(&0),
        "waittime-min"
    );
    kassert_eq!(
        s.max_wait_ticks,
        *waits.iter().max().unwrap_or(&0),
        "waittime-max"
    );
    let avg = s.wait_ticks / s.contended;
    kassert!(s.min_wait_ticks > 0, "a contended wait of 0 ticks");
    kassert!(
        s.min_wait_ticks <= avg && avg <= s.max_wait_ticks,
        "min <= avg <= max: {:?}",
        s
    );
    if timed {
        kassert_eq!(s.holds, 2 * ROUNDS, "every hold timed");
        kassert!(s.min_hold_ticks > 0, "a hold of 0 ticks");
        let hold_avg = s.hold_ticks / s.holds;
        kassert!(
            s.min_hold_ticks <= hold_avg && hold_avg <= s.max_hold_ticks,
            "hold min <= avg <= max: {:?}",
            s
        );
        // The two CPUs alternate: every acquisition after the first is by the other CPU, and
        // every contended one (the waiter's, after the holder's) too.
        kassert_eq!(s.acq_bounces, 2 * ROUNDS - 1, "acq-bounces");
        kassert_eq!(s.con_bounces, ROUNDS, "con-bounces");
    } else {
        kassert_eq!(
            (s.holds, s.hold_ticks, s.min_hold_ticks, s.max_hold_ticks),
            (0, 0, 0, 0),
            "holds timed with lock_stat off"
        );
        kassert_eq!(
            (s.acq_bounces, s.con_bounces),
            (0, 0),
            "bounces with lock_stat off"
        );
    }
    Ok(())
}

/// Contention and wait counters are consistent, with lock_stat on and off; hold times and
/// bounces appear only when it is on.
fn lock_stat_consistent(_ctx: &Ctx) -> TestResult {
    let cpus = online_cpus();
    if cpus.len() < 2 {
        return Err(TestError::Skip("needs two CPUs".into()));
    }
    let (holder, waiter) = (cpus[0], cpus[1]);
    let was = sync::lock_stat();
    sync::set_lock_stat(true);
    let on = contend(holder, waiter);
    sync::set_lock_stat(false);
    let off = contend(holder, waiter);
    sync::set_lock_stat(was);
    crate::println!(
        "# smp.lock_stat_consistent: on: {:?} waits {:?}; off: {:?}",
        on.0,
        on.1,
        off.0
    );
    check_phase(&on.0, &on.1, true)?;
    check_phase(&off.0, &off.1, false)
}

ktest!(SUITE, Test, lock_stat_consistent);
