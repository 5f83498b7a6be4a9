//! Counters and dumps of the frame allocator in the formats users know: /proc/buddyinfo,
//! numastat, per-CPU list figures, and the conservation check the tests run.

use super::node::Node;
use super::{FrameAllocator, FRAME};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};
use numalab_algo::frame::buddy::{CheckError, ScanCounts, NR_ORDERS};
use numalab_algo::page::Pfn;
use numalab_algo::topology::NodeId;

/// One node's figures at one moment.
#[derive(Clone, Copy, Debug, Default)]
pub struct NodeCounters {
    pub managed_pages: usize,
    pub buddy_free_pages: usize,
    /// Pages on all CPUs' lists for this node.
    pub pcp_pages: usize,
    pub nr_free: [usize; NR_ORDERS],
    pub numa_hit: u64,
    pub numa_miss: u64,
    pub numa_foreign: u64,
    pub interleave_hit: u64,
    pub local_node: u64,
    pub other_node: u64,
    pub pcp_hit: u64,
    pub pcp_refill: u64,
    pub pcp_drain: u64,
    pub invalid_frees: u64,
}

pub(super) fn collect(fa: &FrameAllocator, node: &Node) -> NodeCounters {
    let (buddy_free_pages, nr_free) = {
        let b = node.buddy.lock();
        (b.free_pages(), b.nr_free())
    };
    let mut c = NodeCounters {
        managed_pages: node.managed_pages,
        buddy_free_pages,
        nr_free,
        invalid_frees: node.invalid_frees.load(Relaxed),
        ..NodeCounters::default()
    };
    let sum = |f: fn(&super::pcp::PcpStats) -> &AtomicU64| -> u64 {
        fa.cpu_ids()
            .map(|cpu| f(&fa.pcp(cpu, node.id).stats).load(Relaxed))
            .sum()
    };
    c.pcp_pages = fa
        .cpu_ids()
        .map(|cpu| fa.pcp(cpu, node.id).pages() as usize)
        .sum();
    c.numa_hit = sum(|s| &s.numa_hit);
    c.numa_miss = sum(|s| &s.numa_miss);
    c.numa_foreign = sum(|s| &s.numa_foreign);
    c.interleave_hit = sum(|s| &s.interleave_hit);
    c.local_node = sum(|s| &s.local_node);
    c.other_node = sum(|s| &s.other_node);
    c.pcp_hit = sum(|s| &s.pcp_hit);
    c.pcp_refill = sum(|s| &s.pcp_refill);
    c.pcp_drain = sum(|s| &s.pcp_drain);
    // Listed blocks the buddy refused on drain (leaked, warned about): invalid frees too.
    c.invalid_frees += sum(|s| &s.drain_refused);
    for (_, ctx) in fa.cpus.iter() {
        let fast = ctx.lists[node.id.index()].stats.fast_hits.load(Relaxed);
        c.numa_hit += fast;
        c.pcp_hit += fast;
        if ctx.node == node.id {
            c.local_node += fast;
        } else {
            c.other_node += fast;
        }
    }
    c
}

fn all_counters() -> Vec<(NodeId, Option<NodeCounters>)> {
    let Some(fa) = FRAME.get() else {
        return Vec::new();
    };
    fa.topo
        .nodes
        .iter()
        .map(|info| (info.id, super::node_counters(info.id)))
        .collect()
}

/// /proc/buddyinfo: free blocks per order of each node with memory, Linux's exact layout
/// (`"Node %d, zone %8s "` then `"%6lu "` per order).
pub fn buddyinfo_lines() -> Vec<String> {
    all_counters()
        .into_iter()
        .filter_map(|(id, c)| {
            let c = c?;
            let mut line = format!("Node {}, zone {:>8} ", id.0, "Normal");
            for n in c.nr_free {
                line.push_str(&format!("{:>6} ", n));
            }
            Some(line)
        })
        .collect()
}

/// numastat's table: one column per node (memoryless nodes show zeros).
pub fn numastat_lines() -> Vec<String> {
    let all = all_counters();
    let mut header = format!("{:<16}", "");
    for (id, _) in &all {
        header.push_str(&format!("{:>16}", format!("node{}", id.0)));
    }
    type Row = (&'static str, fn(&NodeCounters) -> u64);
    let rows: [Row; 6] = [
        ("numa_hit", |c| c.numa_hit),
        ("numa_miss", |c| c.numa_miss),
        ("numa_foreign", |c| c.numa_foreign),
        ("interleave_hit", |c| c.interleave_hit),
        ("local_node", |c| c.local_node),
        ("other_node", |c| c.other_node),
    ];
    let mut out = alloc::vec![header];
    for (name, get) in rows {
        let mut line = format!("{:<16}", name);
        for (_, c) in &all {
            line.push_str(&format!("{:>16}", c.as_ref().map_or(0, get)));
        }
        out.push(line);
    }
    out
}

/// Per-node per-CPU list figures: pages held, hits, refills, drains, invalid frees.
pub fn pcp_lines() -> Vec<String> {
    all_counters()
        .into_iter()
        .filter_map(|(id, c)| {
            let c = c?;
            Some(format!(
                "Node {} pcp: pages {} pcp_hit {} pcp_refill {} pcp_drain {} invalid_frees {}",
                id.0, c.pcp_pages, c.pcp_hit, c.pcp_refill, c.pcp_drain, c.invalid_frees
            ))
        })
        .collect()
}

/// What the conservation check found.
#[derive(Clone, Copy, Debug)]
pub enum CheckFailure {
    Buddy(CheckError),
    /// A free block (pfn, order) outside the node's managed ranges.
    Outside(u64, u8),
    /// free + cached + allocated != managed (free, cached, allocated, managed).
    Conservation(usize, usize, usize, usize),
    /// Pages marked cached differ from the per-CPU lists' counts (marked, listed).
    PcpMismatch(usize, usize),
}

/// Checks node `id` (no-op for a memoryless node): free lists consistent, every free block
/// inside the node's ranges, and free + per-CPU + allocated == managed pages. Returns the
/// page counts by state. Call it while no other CPU allocates from the node.
pub fn check_node(id: NodeId) -> Result<ScanCounts, String> {
    let Some(fa) = FRAME.get() else {
        return Err(String::from("frame allocator not ready"));
    };
    let Some(Some(node)) = fa.nodes.get(id.index()) else {
        return Ok(ScanCounts::default());
    };
    let pcp_pages: usize = fa
        .cpu_ids()
        .map(|cpu| fa.pcp(cpu, id).pages() as usize)
        .sum();
    let result = {
        let buddy = node.buddy.lock();
        (|| {
            buddy.check_lists().map_err(CheckFailure::Buddy)?;
            let mut outside = None;
            buddy.for_each_free(|pfn, order| {
                if outside.is_none() && !node.holds(Pfn::new(pfn).addr(), 4096u64 << order) {
                    outside = Some(CheckFailure::Outside(pfn, order));
                }
            });
            if let Some(o) = outside {
                return Err(o);
            }
            let c = buddy.scan().map_err(CheckFailure::Buddy)?;
            if c.free_pages + c.cached_pages + c.allocated_pages != node.managed_pages {
                return Err(CheckFailure::Conservation(
                    c.free_pages,
                    c.cached_pages,
                    c.allocated_pages,
                    node.managed_pages,
                ));
            }
            if c.cached_pages != pcp_pages {
                return Err(CheckFailure::PcpMismatch(c.cached_pages, pcp_pages));
            }
            Ok(c)
        })()
    };
    result.map_err(|f| match f {
        CheckFailure::Buddy(e) => format!("node {}: {}", id.0, e),
        CheckFailure::Outside(pfn, order) => format!(
            "node {}: free block pfn {:#x} order {} outside its ranges",
            id.0, pfn, order
        ),
        CheckFailure::Conservation(free, cached, allocated, managed) => format!(
            "node {}: free {} + cached {} + allocated {} != managed {} pages",
            id.0, free, cached, allocated, managed
        ),
        CheckFailure::PcpMismatch(marked, listed) => format!(
            "node {}: {} pages marked cached, per-CPU lists count {}",
            id.0, marked, listed
        ),
    })
}
