//! The lock_stat block: every counted lock (SLUB's list_lock and barn lock per cache per node,
//! the vmap node, free-space and purge locks of each vmalloc design, the page allocator's node
//! locks) in Linux's /proc/lock_stat layout (numalab_algo::formats::lock_stat), printed after
//! the bench suite (ktest calls it through `ktest::set_after_bench`, which the kernel's entry
//! installs) as KTAP diagnostic lines `# lock_stat: ...` that the host cuts out
//! (boot/src/run/lock_stat.rs).
//!
//! Class names follow Linux's where it has the lock: `&n->list_lock` (a kmem_cache_node's),
//! `&barn->lock`, `&zone->lock`, `&vn->busy.lock` (a vmap node's; numalab's one lock also
//! guards what Linux's `vn->lazy.lock` does), `free_vmap_area_lock`, `vmap_purge_lock`; a
//! cache's locks carry the cache name in front (`kmalloc-64:&n->list_lock/2`), the vmalloc
//! designs other than the one behind the API (`vmalloc.nodes=`) their design's
//! (`numa:&vn->busy.lock/1`), and `/N` is the node (vmap node for `&vn->busy.lock`).

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use numalab_algo::bench::Clock;
use numalab_algo::formats::lock_stat::{self, LockCounts, LockStatRow, Unit};
use numalab_algo::vmalloc::Policy;

use crate::mm::{frame, slub, vmalloc};
use crate::sync::LockStatsSnapshot;
use crate::topology::NodeId;

/// The prefix of every line of the block (an empty table line is the prefix alone).
pub const PREFIX: &str = numalab_algo::wire::lock_stat::PREFIX;

/// A lock's counters as the table counts them.
pub fn counts(s: &LockStatsSnapshot) -> LockCounts {
    LockCounts {
        con_bounces: s.con_bounces,
        contentions: s.contended,
        wait_min: s.min_wait_ticks,
        wait_max: s.max_wait_ticks,
        wait_total: s.wait_ticks,
        acq_bounces: s.acq_bounces,
        acquisitions: s.acquisitions,
        holds: s.holds,
        hold_min: s.min_hold_ticks,
        hold_max: s.max_hold_ticks,
        hold_total: s.hold_ticks,
    }
}

/// Every counted lock's row, in a fixed order: caches (registry order, node by node), the
/// vmalloc designs (the API's first), the node locks.
pub fn rows() -> Vec<LockStatRow> {
    let topo = crate::topology::get();
    let nodes: Vec<NodeId> = topo.nodes.iter().map(|n| n.id).collect();
    let mut rows = Vec::new();
    let mut push = |base: &str, sub: Option<u32>, s: &LockStatsSnapshot| {
        rows.push(LockStatRow::new(base, sub, &counts(s)));
    };
    for cache in slub::caches() {
        for &node in &nodes {
            if let Some(s) = cache.list_lock_stats_on(node) {
                push(
                    &format!("{}:&n->list_lock", cache.name()),
                    Some(node.0.into()),
                    &s,
                );
            }
            if let Some(s) = cache.barn_lock_stats_on(node) {
                push(
                    &format!("{}:&barn->lock", cache.name()),
                    Some(node.0.into()),
                    &s,
                );
            }
        }
    }
    let active = vmalloc::active().map(|v| v as *const vmalloc::Vmalloc);
    let mut designs: Vec<(String, &vmalloc::Vmalloc)> = Vec::new();
    for p in [Policy::Global, Policy::Cpu, Policy::Numa] {
        if let Some(v) = vmalloc::design(p) {
            if Some(v as *const vmalloc::Vmalloc) == active {
                designs.insert(0, (String::new(), v));
            } else {
                designs.push((format!("{}:", p.name()), v));
            }
        }
    }
    for (prefix, v) in designs {
        push(
            &format!("{prefix}free_vmap_area_lock"),
            None,
            &v.global_lock_stats(),
        );
        for (i, s) in v.each_node_lock_stats().iter().enumerate() {
            push(&format!("{prefix}&vn->busy.lock"), Some(i as u32), s);
        }
        push(
            &format!("{prefix}vmap_purge_lock"),
            None,
            &v.purge_lock_stats(),
        );
    }
    for &node in &nodes {
        if let Some(s) = frame::zone_lock_stats(node) {
            push("&zone->lock", Some(node.0.into()), &s);
        }
    }
    rows
}

/// Prints the block: the table of [`rows`] with the boot's unit, each line after [`PREFIX`].
pub fn print() {
    let unit = match super::clock() {
        Clock::Icount => Unit::Instructions,
        Clock::Tsc => Unit::TscTicks,
    };
    for line in lock_stat::write(&rows(), unit, crate::sync::lock_stat()) {
        if line.is_empty() {
            crate::println!("{PREFIX}");
        } else {
            crate::println!("{PREFIX} {line}");
        }
    }
}
