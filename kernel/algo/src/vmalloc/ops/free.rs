//! Freeing an area: find and detach it from its busy tree, say why an address is no live
//! area, and queue a detached area on its vmap node's lazy list.

use super::{on_node, Scope, Shards};
use crate::topology::NodeId;
use crate::vmalloc::layout::{Policy, VnId};
use crate::vmalloc::PAGE_SIZE;

/// Why an address given to vfree/vunmap is not a live area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FreeFault {
    /// Outside this vmalloc range.
    NotInRange,
    /// Inside the live area starting at `start`, but not its start.
    InsideArea { start: u64 },
    /// An area freed already and not reused yet (double free).
    AlreadyFreed { start: u64 },
    /// Free virtual space (never allocated, or freed and purged).
    NotAllocated,
}

impl FreeFault {
    pub fn reason(&self) -> &'static str {
        match self {
            FreeFault::NotInRange => "not a vmalloc address",
            FreeFault::InsideArea { .. } => "not the start of an area",
            FreeFault::AlreadyFreed { .. } => "area already freed (double free)",
            FreeFault::NotAllocated => "no area there",
        }
    }
}

/// A live area taken out of its busy tree by [`detach`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Detached<M: Copy> {
    /// The vmap node whose busy tree held it.
    pub busy_vn: VnId,
    /// The vmap node whose lazy list it goes to.
    pub lazy_vn: VnId,
    pub size_bytes: u64,
    pub meta: M,
}

/// Finds the live area starting at `addr` and removes it from its busy tree. The caller
/// unmaps it and then calls [`queue_lazy`] with `lazy_vn`.
pub fn detach<M: Copy, S: Shards<M>>(
    s: &S,
    addr: u64,
    range_start: u64,
    hint_numa: NodeId,
) -> Result<Detached<M>, FreeFault> {
    if addr < range_start || addr - range_start >= s.range_bytes() {
        return Err(FreeFault::NotInRange);
    }
    let layout = *s.layout();
    if addr.is_multiple_of(PAGE_SIZE) {
        for i in 0..layout.lookup_len() {
            let vn = layout.lookup_node(addr, hint_numa, i);
            if let Some((size_bytes, b)) = on_node(s, vn, |n| n.busy_remove(addr)) {
                return Ok(Detached {
                    busy_vn: vn,
                    lazy_vn: b.lazy_vn,
                    size_bytes,
                    meta: b.meta,
                });
            }
        }
    }
    Err(diagnose(s, addr))
}

/// Says what `addr` is, for a bad free (slow path: looks at every node).
pub fn diagnose<M: Copy, S: Shards<M>>(s: &S, addr: u64) -> FreeFault {
    let layout = *s.layout();
    for i in 0..layout.nr_nodes {
        let vn = VnId(i as u16);
        let found = on_node(s, vn, |n| {
            if let Some((start, _, _)) = n.busy_containing(addr) {
                return Some(FreeFault::InsideArea { start });
            }
            n.lazy_containing(addr)
                .or_else(|| n.pool_containing(addr))
                .map(|a| FreeFault::AlreadyFreed { start: a.start })
        });
        if let Some(f) = found {
            return f;
        }
    }
    FreeFault::NotAllocated
}

/// Puts a detached, unmapped area on node `vn`'s lazy list. Returns the purge the caller
/// should run now, if the lazy pages passed the threshold.
pub fn queue_lazy<M: Copy, S: Shards<M>>(
    s: &S,
    vn: VnId,
    start: u64,
    size_bytes: u64,
) -> Option<Scope> {
    let layout = *s.layout();
    // Count the pages before the area is visible on a list: a purge on another CPU can take
    // the list right after the push, and subtracts what it took; counted after, the total
    // would go below zero in between (an unsigned wrap that forces purges).
    let total = s.lazy_add((size_bytes / PAGE_SIZE) as i64);
    let node_lazy = on_node(s, vn, |n| n.lazy_push(start, size_bytes));
    match layout.policy {
        Policy::Numa if node_lazy > layout.lazy_max_pages => Some(Scope::Node(vn)),
        Policy::Numa => None,
        _ if total > layout.lazy_max_pages => Some(Scope::All),
        _ => None,
    }
}
