//! The lazy purge: one TLB flush for everything purged, then areas to their node's pools or
//! back to the free space, and pool decay.

use alloc::vec::Vec;

use super::{on_node, Shards};
use crate::vmalloc::layout::VnId;
use crate::vmalloc::node::LazyArea;

/// Which lazy lists a purge takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    All,
    /// One vmap node only (`numa`: the node under pressure).
    Node(VnId),
}

/// What a purge did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PurgeReport {
    pub areas: u64,
    pub pages: u64,
    /// TLB shootdowns issued (0 or 1).
    pub flushes: u64,
    pub to_pools: u64,
    pub to_free_space: u64,
    /// Pool areas given back by decay.
    pub decayed: u64,
    /// Ranges the free space refused (overlap: a bookkeeping bug); never expected.
    pub refused: u64,
}

/// Purges the lazy lists of `scope`: one TLB flush for the whole purged range, then areas go
/// to their node's pools (up to 256 pages, policies with pools) or back to the free space;
/// pools not used since the last purge decay by a quarter (`full`: pools are emptied and
/// nothing is pooled, as when the range is exhausted). A purge that finds every lazy list of
/// its scope empty (another CPU purged first) does nothing, decay included, and is not counted.
///
/// A lazy purge (not `full`) first only tries the purge lock, as Linux's
/// try_purge_vmap_area_lazy does: when another CPU is purging and the scope's lazy pages are
/// at most [`Layout::lazy_wait_pages`] (twice the threshold), it returns at once and the area
/// stays queued for the next purge. Waiting every time piles every freeing CPU up behind one
/// purge, each then purging in turn: on 255 vCPUs, 920 of 1020 sampled CPUs were spinning on
/// the purge lock in align_shift_alloc_test.
///
/// Past twice the threshold it waits for the purge in progress, and then purges only if the
/// scope is still over the threshold (CPUs that waited together share the next purge). Never
/// waiting let the lazy lists grow without bound while one purge's TLB shootdown waited for
/// the other CPUs: in the det boot (vCPUs round-robin) that shootdown lasts until every other
/// vCPU has run its slice, all their purges failed the trylock, the lazy lists reached 8000
/// pages against a threshold of 256, and the pools, filled only by purges, ran dry
/// (vmalloc_scaling's global-lock acquisitions per pair: cpu 0.2431 -> 0.7494, numa 0.0083 ->
/// 0.827; docs/vmalloc.md). A full purge (exhaustion, teardown) waits for the lock.
pub fn purge<M: Copy, S: Shards<M>>(s: &S, scope: Scope, full: bool) -> PurgeReport {
    let report = if full {
        s.with_purge(|| purge_locked(s, scope, true))
    } else {
        match s.try_with_purge(|| purge_locked(s, scope, false)) {
            Some(r) => r,
            None if lazy_pages(s, scope) > s.layout().lazy_wait_pages() => {
                s.purge_waited();
                s.with_purge(|| {
                    (lazy_pages(s, scope) > s.layout().lazy_max_pages)
                        .then(|| purge_locked(s, scope, false))
                        .flatten()
                })
            }
            None => None,
        }
    };
    counted(s, report)
}

/// The lazy pages of `scope`: of all nodes together, or of the one node.
fn lazy_pages<M: Copy, S: Shards<M>>(s: &S, scope: Scope) -> u64 {
    match scope {
        Scope::All => s.lazy_add(0),
        Scope::Node(vn) => on_node(s, vn, |n| n.lazy_pages()),
    }
}

/// The exhaustion purge of a request whose first try began when [`Shards::full_purges`] read
/// `before`: a full purge of everything, unless another CPU finished one since, which already
/// did what this one would (the request just tries again). It waits for a purge in progress,
/// then finds it counted: CPUs that run out together share one purge and one TLB shootdown.
pub fn purge_unless_done_since<M: Copy, S: Shards<M>>(s: &S, before: u64) -> PurgeReport {
    let report = s.with_purge(|| {
        if s.full_purges() != before {
            return None;
        }
        purge_locked(s, Scope::All, true)
    });
    counted(s, report)
}

fn counted<M: Copy, S: Shards<M>>(s: &S, report: Option<PurgeReport>) -> PurgeReport {
    match report {
        Some(r) => {
            s.purged(&r);
            r
        }
        None => PurgeReport::default(),
    }
}

/// The purge itself, with the purge lock held; None when a lazy purge found nothing.
fn purge_locked<M: Copy, S: Shards<M>>(s: &S, scope: Scope, full: bool) -> Option<PurgeReport> {
    let layout = *s.layout();
    let nodes = match scope {
        Scope::All => 0..layout.nr_nodes,
        Scope::Node(vn) => vn.index()..vn.index() + 1,
    };
    let mut report = PurgeReport::default();
    let mut lazy: Vec<LazyArea> = Vec::new();
    let mut cuts: Vec<usize> = Vec::with_capacity(nodes.len() + 1);
    let mut pages = 0;
    for i in nodes.clone() {
        cuts.push(lazy.len());
        pages += on_node(s, VnId(i as u16), |n| n.lazy_take(&mut lazy));
    }
    cuts.push(lazy.len());
    s.lazy_add(-(pages as i64));
    if lazy.is_empty() && !full {
        // Another CPU's purge took the lists first: nothing to flush, and decaying the
        // pools again right away would punish CPUs for not allocating in between.
        return None;
    }
    report.areas = lazy.len() as u64;
    report.pages = pages;
    if let (Some(lo), Some(hi)) = (
        lazy.iter().map(|a| a.start).min(),
        lazy.iter().map(|a| a.start + a.size_bytes).max(),
    ) {
        s.flush_tlb(lo, hi);
        report.flushes = 1;
    }
    let mut back: Vec<LazyArea> = Vec::new();
    for (k, i) in nodes.enumerate() {
        let mine = &lazy[cuts[k]..cuts[k + 1]];
        let vn = VnId(i as u16);
        let before = back.len();
        on_node(s, vn, |n| {
            for a in mine {
                if full || !layout.pools_enabled() || !n.pool_put(a.start, a.size_bytes) {
                    back.push(*a);
                }
            }
            let pooled = mine.len() - (back.len() - before);
            report.to_pools += pooled as u64;
            let mid = back.len();
            n.decay_pools(full, &mut back);
            report.decayed += (back.len() - mid) as u64;
        });
    }
    report.to_free_space = back.len() as u64 - report.decayed;
    coalesce(&mut back);
    if !back.is_empty() {
        s.with_free(|fs| {
            for a in &back {
                if fs.free(a.start, a.size_bytes).is_err() {
                    report.refused += 1;
                }
            }
        });
    }
    if full {
        s.full_purge_done();
    }
    Some(report)
}

/// Merges each area into the run before it in `areas` when the two touch (one ends where
/// the other starts), so that the free space takes one range per run instead of one per
/// area. Areas freed one after another sit side by side on a lazy list: global's 1-page pairs
/// made every purge insert and merge each of them into the free-space tree (about 430
/// instructions per pair), where one insert per run does. Areas that overlap are
/// left apart, for the free space to refuse.
fn coalesce(areas: &mut Vec<LazyArea>) {
    let mut runs: usize = 0;
    for i in 0..areas.len() {
        let x = areas[i];
        if let Some(last) = runs.checked_sub(1).map(|r| &mut areas[r]) {
            if last.start + last.size_bytes == x.start {
                last.size_bytes += x.size_bytes;
                continue;
            }
            if x.start + x.size_bytes == last.start {
                *last = LazyArea {
                    start: x.start,
                    size_bytes: x.size_bytes + last.size_bytes,
                };
                continue;
            }
        }
        areas[runs] = x;
        runs += 1;
    }
    areas.truncate(runs);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(start: u64, size_bytes: u64) -> LazyArea {
        LazyArea { start, size_bytes }
    }

    #[test]
    fn touching_areas_become_one_range_in_either_order() {
        let mut v = alloc::vec![a(0, 8), a(8, 8), a(16, 16), a(64, 8), a(56, 8), a(48, 8)];
        coalesce(&mut v);
        assert_eq!(v, [a(0, 32), a(48, 24)]);
        // A gap or an overlap keeps areas apart (an overlap is the free space's to refuse).
        let mut v = alloc::vec![a(0, 8), a(9, 8), a(12, 8)];
        coalesce(&mut v);
        assert_eq!(v, [a(0, 8), a(9, 8), a(12, 8)]);
        let mut v: Vec<LazyArea> = Vec::new();
        coalesce(&mut v);
        assert!(v.is_empty());
    }
}
