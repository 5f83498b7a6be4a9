//! In-kernel RCU tests (suite `rcu`): callbacks run after a grace period on the CPU that
//! queued them; a reader that spans a grace period holds its end and its callbacks back (with
//! the tick firing inside it and `quiescent_point` called inside it); `rcu_barrier` waits for
//! every CPU's callbacks; the counters move; and nothing is freed early: every CPU walks an
//! RCU-protected table while replacing its entries, freed entries are poisoned and reused,
//! and no reader ever sees a poisoned or reused entry.

use super::{call_rcu, rcu_barrier, read_lock, stats, synchronize_rcu, RcuHead, RcuStats};
use crate::arch::apic;
use crate::ktest::{Ctx, TestError, TestResult};
use crate::percpu;
use crate::smp::{on_each_cpu, online_cpus, run_on_cpus};
use crate::topology::CpuId;
use crate::{kassert, kassert_eq, ktest};
use alloc::vec::Vec;
use core::ptr::NonNull;
use core::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering::*};

use crate::ktest::suites::RCU as SUITE;

/// A callback's record: which CPU queued it, which ran it, how often.
#[repr(C)]
struct Probe {
    head: RcuHead,
    queued_on: AtomicU16,
    ran_on: AtomicU16,
    runs: AtomicU64,
}

impl Probe {
    fn new() -> Probe {
        Probe {
            head: RcuHead::new(),
            queued_on: AtomicU16::new(u16::MAX),
            ran_on: AtomicU16::new(u16::MAX),
            runs: AtomicU64::new(0),
        }
    }

    fn queue(&self) {
        self.queued_on.store(percpu::cpu_id().0, Relaxed);
        call_rcu(NonNull::from(&self.head), probe_ran);
    }
}

/// # Safety
/// `head` is the first field of a live `Probe`.
unsafe fn probe_ran(head: NonNull<RcuHead>) {
    // SAFETY: Probe is repr(C) with the head first, and lives until the test checked it.
    let p = unsafe { &*(head.as_ptr() as *const Probe) };
    p.ran_on.store(percpu::cpu_id().0, Relaxed);
    p.runs.fetch_add(1, Release);
}

/// One callback on the boot CPU: not run at once, run by `synchronize_rcu`'s wait (a grace
/// period later, at least one counted), exactly once, on the boot CPU; the counters moved.
fn call_rcu_runs_after_a_grace_period(_ctx: &Ctx) -> TestResult {
    kassert!(super::is_ready(), "rcu::init did not run");
    let before = stats();
    let p = Probe::new();
    p.queue();
    kassert_eq!(p.runs.load(Acquire), 0);
    synchronize_rcu();
    synchronize_rcu();
    let after = stats();
    kassert_eq!(p.runs.load(Acquire), 1);
    kassert_eq!(p.ran_on.load(Relaxed), percpu::cpu_id().0);
    kassert!(
        after.grace_periods >= before.grace_periods + 2,
        "grace periods {} -> {}",
        before.grace_periods,
        after.grace_periods
    );
    // The probe and the two synchronize_rcu waiters.
    kassert_eq!(after.cbs_queued - before.cbs_queued, 3);
    kassert_eq!(after.cbs_invoked - before.cbs_invoked, 3);
    kassert!(after.longest_gp_ticks > 0);
    Ok(())
}

static READER_IN: AtomicBool = AtomicBool::new(false);
static WRITER_STARTED: AtomicBool = AtomicBool::new(false);
static READER_OUT: AtomicBool = AtomicBool::new(false);
static CB_SAW_OUT: AtomicBool = AtomicBool::new(false);
static EARLY: AtomicU64 = AtomicU64::new(0);

#[repr(C)]
struct Watch {
    head: RcuHead,
}

/// # Safety
/// Any head (the callback only reads statics).
unsafe fn watch_ran(_head: NonNull<RcuHead>) {
    CB_SAW_OUT.store(READER_OUT.load(SeqCst), SeqCst);
}

/// Reader iterations: `quiescent_point` calls inside the section (all must be no-ops).
const READER_SPINS: u64 = 200_000;

/// A reader on the last CPU stays in its section (tick on at 10 kHz, `quiescent_point` called
/// 200000 times inside) while the boot CPU queues a callback and calls `synchronize_rcu`:
/// neither the callback nor `synchronize_rcu`'s return may come before the reader's unlock.
fn a_reader_spanning_a_grace_period_holds_it(_ctx: &Ctx) -> TestResult {
    let cpus = online_cpus();
    if cpus.len() < 2 {
        return Err(TestError::Skip("needs two CPUs".into()));
    }
    let boot = percpu::cpu_id();
    let reader = *cpus.last().expect("two CPUs");
    for f in [&READER_IN, &WRITER_STARTED, &READER_OUT, &CB_SAW_OUT] {
        f.store(false, SeqCst);
    }
    EARLY.store(0, SeqCst);
    let sync_saw_out = AtomicBool::new(false);
    let ticks_inside = AtomicU64::new(0);
    let w = Watch {
        head: RcuHead::new(),
    };
    let head = NonNull::from(&w.head).as_ptr() as usize;
    run_on_cpus(&[boot, reader], &|cpu: CpuId| {
        if cpu == reader {
            let before = crate::smp::PerCpuSmp::this(&crate::percpu::pin())
                .stats
                .timer_ticks
                .load(Relaxed);
            let g = read_lock();
            READER_IN.store(true, SeqCst);
            let timed = apic::timer_periodic(10_000);
            while !WRITER_STARTED.load(SeqCst) {
                core::hint::spin_loop();
            }
            for _ in 0..READER_SPINS {
                super::quiescent_point();
                core::hint::spin_loop();
            }
            READER_OUT.store(true, SeqCst);
            drop(g);
            if timed {
                apic::timer_periodic(0);
            }
            let after = crate::smp::PerCpuSmp::this(&crate::percpu::pin())
                .stats
                .timer_ticks
                .load(Relaxed);
            ticks_inside.store(after - before, Relaxed);
        } else {
            while !READER_IN.load(SeqCst) {
                core::hint::spin_loop();
            }
            let h = NonNull::new(head as *mut RcuHead).expect("non-null");
            call_rcu(h, watch_ran);
            WRITER_STARTED.store(true, SeqCst);
            synchronize_rcu();
            sync_saw_out.store(READER_OUT.load(SeqCst), SeqCst);
        }
    });
    rcu_barrier();
    println!(
        "    # reader on CPU {}: {} ticks during its section",
        reader.0,
        ticks_inside.load(Relaxed)
    );
    kassert!(
        sync_saw_out.load(SeqCst),
        "synchronize_rcu returned while the reader was still inside its section"
    );
    kassert!(
        CB_SAW_OUT.load(SeqCst),
        "the callback ran while the reader was still inside its section"
    );
    Ok(())
}

/// Callbacks per CPU in the barrier test.
const PER_CPU: usize = 16;

/// Every CPU queues 16 callbacks; `rcu_barrier` on the boot CPU returns only when all ran,
/// each once, on the CPU that queued it; every CPU's quiescent-state count moved.
fn rcu_barrier_waits_for_every_cpu(_ctx: &Ctx) -> TestResult {
    let cpus = online_cpus();
    let probes: Vec<Probe> = (0..PER_CPU * cpus.len()).map(|_| Probe::new()).collect();
    let before = stats();
    on_each_cpu(&|cpu: CpuId| {
        let i = cpus.iter().position(|&c| c == cpu).expect("online");
        for p in &probes[i * PER_CPU..(i + 1) * PER_CPU] {
            p.queue();
        }
    });
    rcu_barrier();
    let after: RcuStats = stats();
    kassert!(after.qs_reported() > before.qs_reported());
    for (i, p) in probes.iter().enumerate() {
        kassert_eq!(
            p.runs.load(Acquire),
            1,
            "callback {} ran {} times",
            i,
            p.runs.load(Acquire)
        );
        kassert_eq!(
            p.ran_on.load(Relaxed),
            p.queued_on.load(Relaxed),
            "callback {} ran on another CPU",
            i
        );
    }
    kassert_eq!(after.cbs_invoked - before.cbs_invoked, probes.len() as u64);
    kassert!(after.grace_periods > before.grace_periods);
    for (b, a) in before.per_cpu.iter().zip(&after.per_cpu) {
        kassert!(
            a.qs_reported + a.qs_forced > b.qs_reported + b.qs_forced,
            "CPU {} reported no quiescent state",
            a.cpu
        );
    }
    super::dump();
    Ok(())
}

ktest!(SUITE, Test, call_rcu_runs_after_a_grace_period);
ktest!(SUITE, Test, a_reader_spanning_a_grace_period_holds_it);
ktest!(SUITE, Test, rcu_barrier_waits_for_every_cpu);
