//! RCU's counters and their dump, in the shape of Linux's old RCU debugfs files (`rcugp`:
//! the grace-period numbers; `rcudata`: one line per CPU; removed from Linux in 4.13 but known
//! to kernel engineers from Documentation/RCU/trace.txt of 3.x/4.x).

use super::{RCU, RCU_CPU};
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;
use numalab_algo::rcu::{seq, tree, Nodes};

/// One CPU's counters.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuRcuStats {
    pub cpu: u16,
    /// Its leaf in the tree (rcu_node index).
    pub leaf: usize,
    pub cbs_queued: u64,
    pub cbs_invoked: u64,
    /// Queued and not yet invoked.
    pub cbs_pending: u64,
    /// Quiescent states it reported itself (of which `qs_from_tick` by the tick).
    pub qs_reported: u64,
    pub qs_from_tick: u64,
    /// Quiescent states reported for it while it was idle.
    pub qs_forced: u64,
    /// Call IPIs that woke it, idle, for callbacks a grace period made ready.
    pub wakeups: u64,
    pub nesting: u32,
    pub idle: bool,
}

/// RCU's counters (all zero before `init`).
#[derive(Clone, Debug, Default)]
pub struct RcuStats {
    /// The root's grace-period number (`gp_seq`, two state bits).
    pub gp_seq: u64,
    pub grace_periods: u64,
    /// The longest grace period, start to end, in TSC ticks.
    pub longest_gp_ticks: u64,
    pub cbs_queued: u64,
    pub cbs_invoked: u64,
    pub per_cpu: Vec<CpuRcuStats>,
}

impl RcuStats {
    /// Quiescent states reported (by the CPUs and for them), all CPUs.
    pub fn qs_reported(&self) -> u64 {
        self.per_cpu
            .iter()
            .map(|c| c.qs_reported + c.qs_forced)
            .sum()
    }
}

/// A snapshot of the counters.
pub fn stats() -> RcuStats {
    let Some(r) = RCU.get() else {
        return RcuStats::default();
    };
    let root = r.tree.with(tree::ROOT, |n| n.clone());
    let mut s = RcuStats {
        gp_seq: root.gp_seq,
        grace_periods: root.grace_periods,
        longest_gp_ticks: root.longest_gp,
        ..RcuStats::default()
    };
    for &cpu in &r.online {
        let d = RCU_CPU.on(cpu);
        let c = CpuRcuStats {
            cpu: cpu.0,
            leaf: r.geo.leaf_of(cpu.0).map_or(usize::MAX, |l| l.0),
            cbs_queued: d.cbs_queued.load(Relaxed),
            cbs_invoked: d.cbs_invoked.load(Relaxed),
            cbs_pending: d.pending.load(Relaxed),
            qs_reported: d.qs_reported.load(Relaxed),
            qs_from_tick: d.qs_from_tick.load(Relaxed),
            qs_forced: d.qs_forced.load(Relaxed),
            wakeups: d.wakeups.load(Relaxed),
            nesting: d.nesting.load(Relaxed),
            idle: d.idle.load(Relaxed),
        };
        s.cbs_queued += c.cbs_queued;
        s.cbs_invoked += c.cbs_invoked;
        s.per_cpu.push(c);
    }
    s
}

/// Prints the counters: an `rcugp` line, an `rcu_node` line per node (its grace period and
/// the bits it still waits for, Linux's `rcuhier`), and an `rcudata` line per CPU.
#[cfg_attr(not(feature = "ktest"), allow(dead_code))]
pub fn dump() {
    let s = stats();
    let Some(r) = RCU.get() else {
        println!("numalab: rcu: not started");
        return;
    };
    let hz = crate::arch::tsc_hz().max(1);
    println!(
        "numalab: rcugp: completed={} gpnum={} gp_seq={:#x} gps={} longest_gp_ticks={} (TSC, {} us) cbs_queued={} cbs_invoked={}",
        s.gp_seq >> 2,
        (s.gp_seq >> 2) + u64::from(seq::in_progress(s.gp_seq)),
        s.gp_seq,
        s.grace_periods,
        s.longest_gp_ticks,
        s.longest_gp_ticks.saturating_mul(1_000_000) / hz,
        s.cbs_queued,
        s.cbs_invoked
    );
    for (i, shape) in r.geo.shapes.iter().enumerate() {
        let n = r.tree.with(i, |n| n.clone());
        println!(
            "numalab: rcuhier: node {} level {} home_node {} gp_seq={:#x} qsmask={:#x}/{:#x} cpus={:?}",
            i, shape.level, shape.home_node, n.gp_seq, n.qsmask, n.qsmaskinit, shape.cpus
        );
    }
    for c in &s.per_cpu {
        println!(
            "numalab: rcudata: {:3} leaf={} qs={} tick={} forced={} ql={} cbq={} ci={} wake={} nest={} idle={}",
            c.cpu,
            c.leaf,
            c.qs_reported,
            c.qs_from_tick,
            c.qs_forced,
            c.cbs_pending,
            c.cbs_queued,
            c.cbs_invoked,
            c.wakeups,
            c.nesting,
            u8::from(c.idle)
        );
    }
}
