//! The vmalloc bookkeeping steps of all three designs, written once over a [`Shards`]
//! (the global free space and the vmap nodes, each behind whatever lock the user provides):
//! reserve an area, find and detach a live area on free, queue it lazily, and purge.
//!
//! Lock discipline the steps follow (the kernel's lock order): the global free-space lock is
//! taken before a vmap node lock and never the other way round; `Policy::Global` holds the
//! free-space lock around every node access (one lock for everything); the other policies
//! take one node lock at a time and the free-space lock only on a pool miss or in a purge.

mod free;
mod purge;
#[cfg(test)]
mod tests;

pub use free::{detach, diagnose, queue_lazy, Detached, FreeFault};
pub use purge::{purge, purge_unless_done_since, PurgeReport, Scope};

use super::free_space::{check_request, FreeSpace};
use super::layout::{Layout, Policy, VnId};
use super::node::{VmapNode, MAX_POOL_PAGES};
use super::{VmError, PAGE_SIZE};
use crate::topology::{CpuId, NodeId};

/// What a busy tree holds per live area: the caller's meta and the vmap node whose lazy list
/// (and so, after the purge, whose pool) the area goes to when freed. In `cpu` that is the
/// node of the allocating CPU (Linux's vn_id), while the busy tree is picked by address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Busy<M: Copy> {
    pub lazy_vn: VnId,
    pub meta: M,
}

/// Access to the shared state; the kernel implements it with spin locks, the host tests with
/// `RefCell`s.
pub trait Shards<M: Copy> {
    fn layout(&self) -> &Layout;
    /// Size of the virtual range (for the "too large" check without a lock).
    fn range_bytes(&self) -> u64;
    /// Runs `f` with the global free space locked.
    fn with_free<R>(&self, f: impl FnOnce(&mut FreeSpace) -> R) -> R;
    /// Runs `f` with vmap node `vn` locked.
    fn with_node<R>(&self, vn: VnId, f: impl FnOnce(&mut VmapNode<Busy<M>>) -> R) -> R;
    /// Adds `delta` to the lazy pages of all nodes together; returns the new total.
    fn lazy_add(&self, delta: i64) -> u64;
    /// Flushes [start, end) from every CPU's TLB (one shootdown).
    fn flush_tlb(&self, start: u64, end: u64);
    /// Runs `f` with the purge lock held (one purge at a time).
    fn with_purge<R>(&self, f: impl FnOnce() -> R) -> R;
    /// Runs `f` with the purge lock held if it is free; None (and `f` not run) when another
    /// CPU holds it.
    fn try_with_purge<R>(&self, f: impl FnOnce() -> R) -> Option<R>;
    /// Called after every purge with what it did (counters).
    fn purged(&self, _report: &PurgeReport) {}
    /// Called when a lazy purge found another CPU purging with its scope past
    /// [`Layout::lazy_wait_pages`], before it waits for the purge lock (a counter).
    fn purge_waited(&self) {}
    /// Full purges finished so far (the exhaustion purge; read without the purge lock).
    fn full_purges(&self) -> u64;
    /// Counts one more finished full purge (called by [`purge`] with the purge lock held).
    fn full_purge_done(&self);
}

/// Runs `f` on node `vn`, inside the free-space lock under `Policy::Global`.
pub fn on_node<M: Copy, S: Shards<M>, R>(
    s: &S,
    vn: VnId,
    f: impl FnOnce(&mut VmapNode<Busy<M>>) -> R,
) -> R {
    if s.layout().policy == Policy::Global {
        s.with_free(|_| s.with_node(vn, f))
    } else {
        s.with_node(vn, f)
    }
}

/// A reserved area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reserved {
    pub start: u64,
    /// The vmap node whose busy tree holds it.
    pub vn: VnId,
    /// The vmap node whose lazy list takes it when freed.
    pub lazy_vn: VnId,
    /// Taken from a pool (no free-space lock).
    pub from_pool: bool,
}

/// Reserves `size_bytes` (page multiple, guard page included by the caller) at
/// `align_bytes`, for CPU `cpu` with pages from NUMA node `numa`, and records it busy with
/// `meta`. On an exhausted range it purges everything (emptying the pools) and tries once more,
/// as Linux does (alloc_vmap_area's `purged` retry); when another CPU finished a full purge
/// after this request's first try began, that purge already did what this one would: it
/// retries without purging again. Otherwise every CPU of a machine that runs out at once
/// (test_vmalloc's align_shift on every CPU) issues its own purge and TLB shootdown to all
/// CPUs, one after another: 255 shootdowns to 255 vCPUs took align_shift 438 s per design.
pub fn reserve<M: Copy, S: Shards<M>>(
    s: &S,
    size_bytes: u64,
    align_bytes: u64,
    cpu: CpuId,
    numa: NodeId,
    meta: M,
) -> Result<Reserved, VmError> {
    check_request(size_bytes, align_bytes, s.range_bytes())?;
    let layout = *s.layout();
    let nr_pages = size_bytes / PAGE_SIZE;
    let lazy_vn = if layout.pools_enabled() {
        layout.pool_node(cpu, numa)
    } else {
        VnId(0)
    };
    let busy = Busy { lazy_vn, meta };
    if layout.pools_enabled() && align_bytes <= PAGE_SIZE && nr_pages as usize <= MAX_POOL_PAGES {
        // One lock when the area's busy node is the pool's node (always in numa).
        let taken = s.with_node(lazy_vn, |n| {
            let start = n.pool_take(nr_pages)?;
            let vn = layout.busy_node(start, numa);
            if vn == lazy_vn {
                n.busy_insert(start, size_bytes, busy);
            }
            Some((start, vn))
        });
        if let Some((start, vn)) = taken {
            if vn != lazy_vn {
                s.with_node(vn, |n| n.busy_insert(start, size_bytes, busy));
            }
            return Ok(Reserved {
                start,
                vn,
                lazy_vn,
                from_pool: true,
            });
        }
    }
    let purges_before = s.full_purges();
    for attempt in 0..2 {
        let got = if layout.policy == Policy::Global {
            s.with_free(|fs| {
                let start = fs.alloc(size_bytes, align_bytes)?;
                s.with_node(VnId(0), |n| n.busy_insert(start, size_bytes, busy));
                Ok(start)
            })
        } else {
            s.with_free(|fs| fs.alloc(size_bytes, align_bytes))
                .inspect(|&start| {
                    let vn = layout.busy_node(start, numa);
                    s.with_node(vn, |n| n.busy_insert(start, size_bytes, busy));
                })
        };
        match got {
            Ok(start) => {
                return Ok(Reserved {
                    start,
                    vn: layout.busy_node(start, numa),
                    lazy_vn,
                    from_pool: false,
                })
            }
            Err(VmError::Exhausted) if attempt == 0 => {
                purge_unless_done_since(s, purges_before);
            }
            Err(e) => return Err(e),
        }
    }
    Err(VmError::Exhausted)
}
