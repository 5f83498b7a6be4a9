//! Slab descriptors (Linux's struct slab) as words in platform memory, and the per-node
//! partial and full lists threaded through them. The list functions run under the node's
//! list_lock; the state word is changed only by compare-and-swap.

use super::freelist::SlabWord;
use super::geometry::OrderObjects;
use super::platform::Platform;
use crate::topology::NodeId;
use core::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// Word offsets inside a descriptor.
const D_CACHE: usize = 0;
const D_STATE: usize = 8;
const D_BASE: usize = 16;
/// node (16 bits) | order << 16 | objects << 32.
const D_META: usize = 24;
const D_NEXT: usize = 32;
const D_PREV: usize = 40;
const D_CPU_NEXT: usize = 48;
/// Which node list holds the slab: LIST_NONE, LIST_PARTIAL or LIST_FULL.
const D_LIST: usize = 56;

pub(crate) const LIST_NONE: usize = 0;
pub(crate) const LIST_PARTIAL: usize = 1;
pub(crate) const LIST_FULL: usize = 2;

/// A slab, named by the address of its descriptor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Slab(pub usize);

impl Slab {
    /// Fills a fresh descriptor.
    pub fn init<P: Platform>(
        self,
        p: &P,
        cache_id: usize,
        base: usize,
        node: NodeId,
        oo: OrderObjects,
        state: SlabWord,
    ) {
        let (order, objects) = (oo.order, oo.objects);
        p.store(self.0 + D_CACHE, cache_id);
        p.store(self.0 + D_BASE, base);
        p.store(
            self.0 + D_META,
            node.0 as usize | (order as usize) << 16 | objects << 32,
        );
        p.store(self.0 + D_NEXT, 0);
        p.store(self.0 + D_PREV, 0);
        p.store(self.0 + D_CPU_NEXT, 0);
        p.store(self.0 + D_LIST, LIST_NONE);
        p.store(self.0 + D_STATE, state.0);
    }

    #[inline]
    pub fn cache_id<P: Platform>(self, p: &P) -> usize {
        p.load(self.0 + D_CACHE)
    }
    #[inline]
    pub fn base<P: Platform>(self, p: &P) -> usize {
        p.load(self.0 + D_BASE)
    }
    #[inline]
    pub fn node<P: Platform>(self, p: &P) -> NodeId {
        NodeId(p.load(self.0 + D_META) as u16)
    }
    /// The node and the object count from one load of the meta word (the free fast path's
    /// two checks).
    #[inline]
    pub fn node_objects<P: Platform>(self, p: &P) -> (NodeId, usize) {
        let meta = p.load(self.0 + D_META);
        (NodeId(meta as u16), meta >> 32)
    }
    #[inline]
    pub fn order<P: Platform>(self, p: &P) -> u8 {
        (p.load(self.0 + D_META) >> 16) as u8
    }
    #[inline]
    pub fn objects<P: Platform>(self, p: &P) -> usize {
        p.load(self.0 + D_META) >> 32
    }
    #[inline]
    pub fn state<P: Platform>(self, p: &P) -> SlabWord {
        SlabWord(p.load(self.0 + D_STATE))
    }
    #[inline]
    pub fn cas_state<P: Platform>(self, p: &P, old: SlabWord, new: SlabWord) -> bool {
        p.cas(self.0 + D_STATE, old.0, new.0)
    }
    pub fn cpu_next<P: Platform>(self, p: &P) -> usize {
        p.load(self.0 + D_CPU_NEXT)
    }
    pub fn set_cpu_next<P: Platform>(self, p: &P, next: usize) {
        p.store(self.0 + D_CPU_NEXT, next)
    }
    pub fn list<P: Platform>(self, p: &P) -> usize {
        p.load(self.0 + D_LIST)
    }
    pub fn next<P: Platform>(self, p: &P) -> usize {
        p.load(self.0 + D_NEXT)
    }
}

/// A doubly linked list of slabs (head, tail and length), changed only under list_lock.
#[derive(Default)]
pub(crate) struct SlabList {
    head: AtomicUsize,
    tail: AtomicUsize,
    len: AtomicUsize,
}

impl SlabList {
    pub fn head(&self) -> usize {
        self.head.load(Relaxed)
    }

    /// Length, readable without the lock (a hint then; exact under the lock).
    pub fn len(&self) -> usize {
        self.len.load(Relaxed)
    }

    /// Links `slab` at the head or the tail and marks it as on list `which`.
    pub fn push<P: Platform>(&self, p: &P, slab: Slab, to_tail: bool, which: usize) {
        let (head, tail) = (self.head.load(Relaxed), self.tail.load(Relaxed));
        if head == 0 {
            p.store(slab.0 + D_NEXT, 0);
            p.store(slab.0 + D_PREV, 0);
            self.head.store(slab.0, Relaxed);
            self.tail.store(slab.0, Relaxed);
        } else if to_tail {
            p.store(slab.0 + D_PREV, tail);
            p.store(slab.0 + D_NEXT, 0);
            p.store(tail + D_NEXT, slab.0);
            self.tail.store(slab.0, Relaxed);
        } else {
            p.store(slab.0 + D_PREV, 0);
            p.store(slab.0 + D_NEXT, head);
            p.store(head + D_PREV, slab.0);
            self.head.store(slab.0, Relaxed);
        }
        p.store(slab.0 + D_LIST, which);
        self.len.store(self.len.load(Relaxed) + 1, Relaxed);
    }

    /// Unlinks `slab` (which must be on this list).
    pub fn remove<P: Platform>(&self, p: &P, slab: Slab) {
        let next = p.load(slab.0 + D_NEXT);
        let prev = p.load(slab.0 + D_PREV);
        if prev == 0 {
            self.head.store(next, Relaxed);
        } else {
            p.store(prev + D_NEXT, next);
        }
        if next == 0 {
            self.tail.store(prev, Relaxed);
        } else {
            p.store(next + D_PREV, prev);
        }
        p.store(slab.0 + D_NEXT, 0);
        p.store(slab.0 + D_PREV, 0);
        p.store(slab.0 + D_LIST, LIST_NONE);
        self.len.store(self.len.load(Relaxed) - 1, Relaxed);
    }
}

/// One node's share of a cache (Linux's struct kmem_cache_node).
pub(crate) struct NodeLists<L> {
    pub list_lock: L,
    pub partial: SlabList,
    /// Full slabs, kept only for debug caches.
    pub full: SlabList,
    /// Slabs of this node, and the objects they hold (kept as slabs come and go: slabinfo
    /// reads them without the lock).
    pub nr_slabs: AtomicUsize,
    pub total_objects: AtomicUsize,
    pub nr_pages: AtomicUsize,
}

impl<L> NodeLists<L> {
    pub fn new(list_lock: L) -> Self {
        NodeLists {
            list_lock,
            partial: SlabList::default(),
            full: SlabList::default(),
            nr_slabs: AtomicUsize::new(0),
            total_objects: AtomicUsize::new(0),
            nr_pages: AtomicUsize::new(0),
        }
    }

    /// Linux's n->nr_partial.
    pub fn nr_partial(&self) -> usize {
        self.partial.len()
    }
}
