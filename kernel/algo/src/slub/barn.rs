//! A node's barn (Linux 7's struct node_barn): a stock of full and of empty sheaves shared
//! by the CPUs of one node, between their per-CPU sheaves and the node's partial slabs.
//! Both lists are stacks linked through the sheaves' `next` words and bounded as Linux
//! bounds them (MAX_FULL_SHEAVES, MAX_EMPTY_SHEAVES); every function here runs with the
//! barn's lock held, which the caller takes through `Platform::with_lock`.

use super::platform::Platform;
use super::sheaf::Sheaf;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Full sheaves a barn keeps (Linux's MAX_FULL_SHEAVES).
pub const MAX_FULL_SHEAVES: usize = 10;
/// Empty sheaves a barn keeps (Linux's MAX_EMPTY_SHEAVES).
pub const MAX_EMPTY_SHEAVES: usize = 10;

/// One node's barn of one cache.
pub(crate) struct Barn<L> {
    pub lock: L,
    /// Whether this node has a barn at all (7.0 as shipped: only nodes with memory).
    pub exists: bool,
    full: AtomicUsize,
    empty: AtomicUsize,
    nr_full: AtomicUsize,
    nr_empty: AtomicUsize,
}

impl<L> Barn<L> {
    pub fn new(lock: L, exists: bool) -> Self {
        Barn {
            lock,
            exists,
            full: AtomicUsize::new(0),
            empty: AtomicUsize::new(0),
            nr_full: AtomicUsize::new(0),
            nr_empty: AtomicUsize::new(0),
        }
    }

    /// Full sheaves held (exact under the lock, a hint without).
    pub fn nr_full(&self) -> usize {
        self.nr_full.load(Relaxed)
    }
    /// Empty sheaves held.
    pub fn nr_empty(&self) -> usize {
        self.nr_empty.load(Relaxed)
    }

    pub fn push_full<P: Platform>(&self, p: &P, s: Sheaf) {
        push(p, &self.full, &self.nr_full, s)
    }
    pub fn pop_full<P: Platform>(&self, p: &P) -> Option<Sheaf> {
        pop(p, &self.full, &self.nr_full)
    }
    pub fn push_empty<P: Platform>(&self, p: &P, s: Sheaf) {
        push(p, &self.empty, &self.nr_empty, s)
    }
    pub fn pop_empty<P: Platform>(&self, p: &P) -> Option<Sheaf> {
        pop(p, &self.empty, &self.nr_empty)
    }
}

fn push<P: Platform>(p: &P, head: &AtomicUsize, nr: &AtomicUsize, s: Sheaf) {
    s.set_next(p, head.load(Relaxed));
    head.store(s.0, Relaxed);
    nr.store(nr.load(Relaxed) + 1, Relaxed);
}

fn pop<P: Platform>(p: &P, head: &AtomicUsize, nr: &AtomicUsize) -> Option<Sheaf> {
    let h = head.load(Relaxed);
    if h == 0 {
        return None;
    }
    let s = Sheaf(h);
    head.store(s.next(p), Relaxed);
    s.set_next(p, 0);
    nr.store(nr.load(Relaxed) - 1, Relaxed);
    Some(s)
}
