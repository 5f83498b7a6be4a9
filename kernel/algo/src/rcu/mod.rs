//! Tree RCU's pure parts (Linux 6.1's kernel/rcu/tree.c, tree.h, rcu_segcblist.c, rcu.h),
//! host-tested and model-checked; kernel/src/rcu wraps them with locks, per-CPU data and the
//! quiescent-state sources (docs/rcu.md).
//!
//! - `seq`: the grace-period sequence numbers (rcu.h's `rcu_seq_*`): a counter whose two low
//!   bits are the state (0 idle, 1 in progress).
//! - `tree`: the shape (leaves of CPUs, one per NUMA node or per `fanout_leaf` CPUs, inner
//!   nodes of up to 64 children, as `rcu_node`), and the grace-period state machine over it:
//!   start (every node's `qsmask` from `qsmaskinit`), quiescent-state reports clearing bits up
//!   to the root, the end, and the next start when one is needed (`gp_seq_needed`).
//! - `segcblist`: the per-CPU segmented callback list (done / wait / next-ready / next, each
//!   non-done segment tagged with the `gp_seq` after which it may run), `advance` and
//!   `accelerate` as `rcu_segcblist_advance` / `rcu_segcblist_accelerate`.
//! - `model` (tests only): shuttle interleavings of readers, ticks, idle, writers and callbacks
//!   on three CPUs, with the mutations the checks must catch.

pub mod segcblist;
pub mod tree;

#[cfg(test)]
mod model;

pub use segcblist::{CbQueue, SegCbList, DONE, NEXT, NEXT_READY, WAIT};
pub use tree::{Geometry, Nodes, RcuNode, Report, ROOT};

/// Grace-period sequence numbers, as rcu.h's `rcu_seq_*` (RCU_SEQ_CTR_SHIFT 2).
pub mod seq {
    /// The state bits: 0 idle, 1 a grace period in progress.
    pub const STATE_MASK: u64 = 3;

    /// Whether a grace period is in progress (`rcu_seq_state(s) != 0`).
    pub fn in_progress(s: u64) -> bool {
        s & STATE_MASK != 0
    }

    /// `rcu_seq_start`: the number of the grace period that starts after `s`.
    pub fn start(s: u64) -> u64 {
        debug_assert!(!in_progress(s), "grace period started twice");
        s.wrapping_add(1)
    }

    /// `rcu_seq_end`: the number after the grace period `s` ends.
    pub fn end(s: u64) -> u64 {
        debug_assert!(in_progress(s), "grace period ended while idle");
        (s | STATE_MASK).wrapping_add(1)
    }

    /// `rcu_seq_snap`: the sequence number at which a full grace period that starts after now
    /// (`s` read now) has ended: the next end when idle, the end after the current one's
    /// successor when one is in progress (a grace period that already started may not wait
    /// for a reader that began before the caller's removal).
    pub fn snap(s: u64) -> u64 {
        if super::mutated(super::Mutation::EarlySnap) {
            return s.wrapping_add(STATE_MASK) & !STATE_MASK;
        }
        s.wrapping_add(2 * STATE_MASK + 1) & !STATE_MASK
    }

    /// `rcu_seq_done`: whether `cur` has reached `snap` (wrap-safe, ULONG_CMP_GE).
    pub fn done(cur: u64, snap: u64) -> bool {
        (cur.wrapping_sub(snap) as i64) >= 0
    }

    /// Whether `a` is before `b` (ULONG_CMP_LT).
    pub fn before(a: u64, b: u64) -> bool {
        (a.wrapping_sub(b) as i64) < 0
    }

    /// Completed grace periods between two sequence numbers taken when idle.
    pub fn gps_between(from: u64, to: u64) -> u64 {
        to.wrapping_sub(from) >> 2
    }
}

/// Deliberately broken rules the model check must catch (tests only; `mutated` is a constant
/// false in the kernel).
#[cfg(test)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mutation {
    None,
    /// `rcu_seq_snap` one grace period short: a callback queued during a grace period waits
    /// only for the end of that one.
    EarlySnap,
    /// `accelerate` forgets the callbacks it merges (a lost callback).
    LostCallback,
    /// A leaf counts as done with one CPU still owing its quiescent state.
    EndOneQsEarly,
    /// `advance` moves the next-ready segment to done without its grace period ending.
    AdvanceTooFar,
    /// The tick reports a quiescent state inside a read-side section (kernel glue's rule,
    /// `tick_may_report`).
    QsInReader,
}

#[cfg(not(test))]
#[derive(Clone, Copy)]
pub(crate) enum Mutation {
    EarlySnap,
    LostCallback,
    EndOneQsEarly,
    AdvanceTooFar,
    QsInReader,
}

#[cfg(test)]
std::thread_local! {
    static MUTATION: core::cell::Cell<Mutation> = const { core::cell::Cell::new(Mutation::None) };
}

/// Sets this thread's mutation (shuttle runs a model's threads on the test's thread).
#[cfg(test)]
pub(crate) fn set_mutation(m: Mutation) {
    MUTATION.with(|c| c.set(m));
}

#[cfg(test)]
pub(crate) fn mutated(m: Mutation) -> bool {
    MUTATION.with(|c| c.get() == m)
}

#[cfg(not(test))]
#[inline(always)]
pub(crate) fn mutated(_m: Mutation) -> bool {
    false
}

/// `call_rcu`'s bookkeeping on the queuing CPU's list: `item` goes to NEXT, then gets the
/// grace period after which it may run (the root's `rcu_seq_snap`, read after the enqueue),
/// which is asked for and started if none is under way; a start forces the idle CPUs
/// (`in_eqs`, see `kick`). Whether a grace period started.
pub fn queue<N: Nodes, Q: CbQueue>(
    geo: &Geometry,
    nodes: &N,
    list: &mut SegCbList<Q>,
    item: Q::Item,
    now: u64,
    in_eqs: impl Fn(u16) -> bool,
) -> bool {
    list.enqueue(item);
    let (snap, started) = tree::request(geo, nodes, now);
    list.accelerate(snap);
    if started {
        tree::force_qs(geo, nodes, now, in_eqs);
    }
    started
}

/// After a report: when it ended a grace period and started the next, the CPUs idle now are
/// reported for it at once (no periodic force-quiescent-state pass exists: a CPU idle at a
/// start is reported by the starter, one that goes idle later reports on its way in).
pub fn kick<N: Nodes>(
    geo: &Geometry,
    nodes: &N,
    r: Report,
    now: u64,
    in_eqs: impl Fn(u16) -> bool,
) -> Report {
    if let Report::Ended { next: true, .. } = r {
        tree::force_qs(geo, nodes, now, in_eqs);
    }
    r
}

/// A quiescent state of `cpu` in process context (idle loop pass, `quiescent_point`, the
/// wait loops), the caller outside every read-side section: reports it if owed, advances the
/// CPU's list to the grace period completed, gives NEXT's callbacks a grace period (asking
/// for it) and returns the callbacks that are done, to invoke.
pub fn qs_point<N: Nodes, Q: CbQueue>(
    geo: &Geometry,
    nodes: &N,
    cpu: u16,
    list: &mut SegCbList<Q>,
    now: u64,
    in_eqs: impl Fn(u16) -> bool + Copy,
) -> (Report, Q) {
    let r = kick(
        geo,
        nodes,
        tree::report_cpu(geo, nodes, cpu, now),
        now,
        in_eqs,
    );
    list.advance(tree::gp_seq(nodes));
    if list.needs_accelerate() {
        let (snap, started) = tree::request(geo, nodes, now);
        list.accelerate(snap);
        if started {
            tree::force_qs(geo, nodes, now, in_eqs);
        }
    }
    (r, list.take_done())
}

/// The tick's rule (non-preemptible RCU without tasks): an interrupt that finds its CPU
/// outside every read-side section (`nesting` 0) may report a quiescent state for it.
pub fn tick_may_report(nesting: u32) -> bool {
    nesting == 0 || mutated(Mutation::QsInReader)
}

#[cfg(test)]
mod tests {
    use super::seq::*;

    #[test]
    fn seq_numbers_follow_linux() {
        assert_eq!(start(0), 1);
        assert_eq!(end(1), 4);
        // Idle at 4: a grace period that starts now ends at 8.
        assert_eq!(snap(4), 8);
        // In progress at 5: the one under way may not cover a removal made now; wait for 12.
        assert_eq!(snap(5), 12);
        assert!(done(8, 8) && done(12, 8) && !done(4, 8));
        // Wrap: Linux starts gp_seq at -300 << 2 to exercise this.
        let s = 0u64.wrapping_sub(4);
        assert_eq!(snap(s), 0);
        assert!(done(4, snap(s)) && !done(s, snap(s)));
        assert!(before(s, 0));
        assert_eq!(gps_between(4, 12), 2);
    }
}
