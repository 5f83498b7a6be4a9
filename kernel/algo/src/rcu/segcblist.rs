//! The per-CPU segmented callback list (Linux 6.1 kernel/rcu/rcu_segcblist.c): one queue cut
//! into four segments, oldest first. DONE: ready to invoke. WAIT: waiting for the grace period
//! `gp_seq[WAIT]`. NEXT_READY: waiting for a later one, `gp_seq[NEXT_READY]`. NEXT: queued
//! since, no grace period chosen yet.
//!
//! The segments are four queues of the caller's type ([`CbQueue`]: the kernel's intrusive
//! `rcu_head` list, a VecDeque in the tests); Linux keeps one list and four tail pointers,
//! and moving a tail pointer is appending one queue to the next here.

use super::seq;
use super::{mutated, Mutation};

pub const DONE: usize = 0;
pub const WAIT: usize = 1;
pub const NEXT_READY: usize = 2;
pub const NEXT: usize = 3;

/// A FIFO of callbacks.
pub trait CbQueue: Default {
    type Item;
    fn push(&mut self, item: Self::Item);
    /// Moves every item of `other` to the end of `self`.
    fn append(&mut self, other: &mut Self);
    fn len(&self) -> usize;
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `struct rcu_segcblist`.
#[derive(Default)]
pub struct SegCbList<Q: CbQueue> {
    segs: [Q; 4],
    gp_seq: [u64; 4],
}

impl<Q: CbQueue> SegCbList<Q> {
    /// A list of four empty queues (a `const` one for per-CPU statics).
    pub const fn from_empty(segs: [Q; 4]) -> SegCbList<Q> {
        SegCbList {
            segs,
            gp_seq: [0; 4],
        }
    }

    /// `rcu_segcblist_enqueue`: at the end of NEXT.
    pub fn enqueue(&mut self, item: Q::Item) {
        self.segs[NEXT].push(item);
    }

    /// Callbacks in every segment.
    pub fn len(&self) -> usize {
        self.segs.iter().map(|s| s.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.segs.iter().all(|s| s.is_empty())
    }

    /// Callbacks in segment `seg`.
    pub fn seg_len(&self, seg: usize) -> usize {
        self.segs[seg].len()
    }

    /// The grace period segment `seg` (WAIT or NEXT_READY) waits for.
    pub fn seg_gp(&self, seg: usize) -> u64 {
        self.gp_seq[seg]
    }

    /// Whether some callback has no grace period yet (NEXT non-empty).
    pub fn needs_accelerate(&self) -> bool {
        !self.segs[NEXT].is_empty()
    }

    /// Whether some callback waits for a grace period (WAIT, NEXT_READY or NEXT non-empty).
    pub fn pending(&self) -> bool {
        self.segs[WAIT..].iter().any(|s| !s.is_empty())
    }

    /// `rcu_segcblist_advance`: every segment whose grace period `completed` has reached joins
    /// DONE; what remains moves down so that WAIT is the oldest.
    pub fn advance(&mut self, completed: u64) {
        let mut i = WAIT;
        while i < NEXT {
            let ready = self.segs[i].is_empty()
                || seq::done(completed, self.gp_seq[i])
                || (i == NEXT_READY && mutated(Mutation::AdvanceTooFar));
            if !ready {
                break;
            }
            let mut s = core::mem::take(&mut self.segs[i]);
            self.segs[DONE].append(&mut s);
            i += 1;
        }
        if self.segs[WAIT].is_empty() && !self.segs[NEXT_READY].is_empty() {
            let mut s = core::mem::take(&mut self.segs[NEXT_READY]);
            self.segs[WAIT].append(&mut s);
            self.gp_seq[WAIT] = self.gp_seq[NEXT_READY];
        }
    }

    /// `rcu_segcblist_accelerate`: gives NEXT's callbacks the grace period `snap` (the caller's
    /// `rcu_seq_snap`, read after they were queued), merging them into the segment that waits
    /// for `snap` already, or into the first empty one. True when some callback waits for a
    /// grace period after the call; false when none is left after DONE and the segment that
    /// must keep its earlier grace period, or no segment is free (NEXT_READY waits for an
    /// earlier grace period: a later call will do it).
    pub fn accelerate(&mut self, snap: u64) -> bool {
        let mut i = NEXT_READY;
        while i > DONE {
            if !self.segs[i].is_empty() && seq::before(self.gp_seq[i], snap) {
                break;
            }
            i -= 1;
        }
        // Segment i keeps its grace period; everything after it waits for `snap`.
        if self.segs[i + 1..].iter().all(|s| s.is_empty()) {
            return false;
        }
        i += 1;
        if i >= NEXT {
            return false;
        }
        for j in i + 1..=NEXT {
            let mut s = core::mem::take(&mut self.segs[j]);
            if mutated(Mutation::LostCallback) {
                continue;
            }
            self.segs[i].append(&mut s);
        }
        self.gp_seq[i] = snap;
        true
    }

    /// Takes the DONE segment (`rcu_segcblist_extract_done_cbs`): the callbacks to invoke.
    pub fn take_done(&mut self) -> Q {
        core::mem::take(&mut self.segs[DONE])
    }

    /// The segments' lengths, DONE first.
    #[cfg(test)]
    fn snapshot(&self) -> [usize; 4] {
        [0, 1, 2, 3].map(|s| self.segs[s].len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[derive(Default)]
    struct Fifo(VecDeque<u32>);

    impl CbQueue for Fifo {
        type Item = u32;
        fn push(&mut self, item: u32) {
            self.0.push_back(item);
        }
        fn append(&mut self, other: &mut Self) {
            self.0.append(&mut other.0);
        }
        fn len(&self) -> usize {
            self.0.len()
        }
    }

    fn done(l: &mut SegCbList<Fifo>) -> Vec<u32> {
        l.take_done().0.into_iter().collect()
    }

    #[test]
    fn callbacks_wait_for_their_grace_period_in_order() {
        let mut l = SegCbList::<Fifo>::default();
        l.enqueue(1);
        l.enqueue(2);
        // Idle at gp_seq 4: they wait for 8.
        assert!(l.accelerate(seq::snap(4)));
        assert_eq!((l.snapshot(), l.seg_gp(WAIT)), ([0, 2, 0, 0], 8));
        // Grace period 5 under way: callback 3 waits for 12, in NEXT_READY.
        l.enqueue(3);
        assert!(l.accelerate(seq::snap(5)));
        assert_eq!((l.snapshot(), l.seg_gp(NEXT_READY)), ([0, 2, 1, 0], 12));
        // Same snapshot again: callback 4 joins NEXT_READY.
        l.enqueue(4);
        assert!(l.accelerate(seq::snap(6)));
        assert_eq!(l.snapshot(), [0, 2, 2, 0]);
        // A later snapshot with both segments taken: 5 stays in NEXT.
        l.enqueue(5);
        assert!(!l.accelerate(seq::snap(9)));
        assert_eq!(l.snapshot(), [0, 2, 2, 1]);
        assert!(l.needs_accelerate());
        // 4 completed: nothing is ready.
        l.advance(4);
        assert!(done(&mut l).is_empty());
        // 8 completed: 1 and 2 are done; 3 and 4 move down to WAIT.
        l.advance(8);
        assert_eq!(done(&mut l), [1, 2]);
        assert_eq!((l.snapshot(), l.seg_gp(WAIT)), ([0, 2, 0, 1], 12));
        // Now 5 can get its own segment: 9 read -> 16.
        assert!(l.accelerate(seq::snap(9)));
        assert_eq!((l.snapshot(), l.seg_gp(NEXT_READY)), ([0, 2, 1, 0], 16));
        l.advance(16);
        assert_eq!(done(&mut l), [3, 4, 5]);
        assert!(l.is_empty() && !l.pending());
    }

    #[test]
    fn accelerate_with_nothing_new_changes_nothing() {
        let mut l = SegCbList::<Fifo>::default();
        assert!(!l.accelerate(8));
        l.enqueue(1);
        assert!(l.accelerate(8));
        // As Linux: true (callbacks wait for a grace period), the segments unchanged.
        assert!(l.accelerate(8));
        assert_eq!((l.snapshot(), l.seg_gp(WAIT)), ([0, 1, 0, 0], 8));
    }
}
