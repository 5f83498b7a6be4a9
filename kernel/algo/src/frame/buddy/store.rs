//! The per-page storage the buddy works on (`BuddyStore`: free-list links and a state byte
//! per page) and its `Vec` implementation for the host tests.

use super::NIL;

/// Per-page storage the buddy works on, indexed by page index within the node's span.
pub trait BuddyStore {
    /// Pages in the span.
    fn nr_pages(&self) -> usize;
    fn next(&self, idx: u32) -> u32;
    fn prev(&self, idx: u32) -> u32;
    fn set_next(&mut self, idx: u32, next: u32);
    fn set_prev(&mut self, idx: u32, prev: u32);
    fn state(&self, idx: u32) -> u8;
    fn set_state(&mut self, idx: u32, state: u8);
    /// Sets the state of `idx` to `new` if it is `old`, in one step for stores whose states
    /// other CPUs change without the buddy's lock (the kernel's per-CPU lists move a block
    /// from allocated to cached with a compare-exchange); false when it was not `old`.
    fn replace_state(&mut self, idx: u32, old: u8, new: u8) -> bool {
        if self.state(idx) != old {
            return false;
        }
        self.set_state(idx, new);
        true
    }
}

/// A simple `BuddyStore` on vectors (host tests and small users).
#[derive(Clone, Debug)]
pub struct VecStore {
    links: alloc::vec::Vec<(u32, u32, u8)>,
}

impl VecStore {
    pub fn new(nr_pages: usize) -> VecStore {
        VecStore {
            links: alloc::vec![(NIL, NIL, 0); nr_pages],
        }
    }
}

impl BuddyStore for VecStore {
    fn nr_pages(&self) -> usize {
        self.links.len()
    }
    fn next(&self, idx: u32) -> u32 {
        self.links[idx as usize].0
    }
    fn prev(&self, idx: u32) -> u32 {
        self.links[idx as usize].1
    }
    fn set_next(&mut self, idx: u32, next: u32) {
        self.links[idx as usize].0 = next;
    }
    fn set_prev(&mut self, idx: u32, prev: u32) {
        self.links[idx as usize].1 = prev;
    }
    fn state(&self, idx: u32) -> u8 {
        self.links[idx as usize].2
    }
    fn set_state(&mut self, idx: u32, state: u8) {
        self.links[idx as usize].2 = state;
    }
}
