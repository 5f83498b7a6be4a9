//! Per-CPU page lists in the kernel: the protocol is numalab_algo::frame::pcp (shared with its
//! model checks); this file gives it the memmap's links, builds one list per (CPU, node)
//! pair, and takes the node's buddy lock around refills and drains.
//!
//! Lock order: a list's claim, then its node's buddy lock (never the other way).

use super::memmap::PageMeta;
use super::node::Node;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicU32, AtomicU8};

pub use numalab_algo::frame::pcp::{bump, PcpStats, PCP_MAX_ORDER};

/// The lists of one CPU for one node.
pub type PcpList = numalab_algo::frame::pcp::PcpList<'static, PageMeta>;

// A power of two in size, so indexing the (CPU, node) table is one shift.
const _: () = assert!(core::mem::size_of::<PcpList>().is_power_of_two());

impl numalab_algo::frame::pcp::PcpPage for PageMeta {
    #[inline(always)]
    fn state(&self) -> &AtomicU8 {
        &self.state
    }
    #[inline(always)]
    fn next(&self) -> &AtomicU32 {
        &self.next
    }
}

/// The list of one CPU for `node` (None: a node without memory, never used); `node_bits`
/// are the node code bits of the `Pages` words its fast path hands out.
pub fn new_list(node: Option<&Node>, high_pages: u32, node_bits: u64) -> PcpList {
    match node {
        Some(n) => PcpList::new(n.memmap.pages, n.base_pfn, node_bits, high_pages),
        None => PcpList::new(&[], 0, node_bits, high_pages),
    }
}

/// `PcpList::refill` from `node`'s buddy, under its lock (list entered).
pub fn refill(
    list: &PcpList,
    node: &Node,
    order: u8,
    batch_pages: u32,
    pages: u32,
) -> (Option<u64>, u32) {
    list.refill(&mut node.buddy.lock(), order, batch_pages, pages)
}

/// `PcpList::drain` to `node`'s buddy, under its lock (list entered). A listed block the
/// buddy refuses is a bookkeeping bug: it is leaked (the safe side) and warned about, which
/// fails the run.
pub fn drain(
    list: &PcpList,
    node: &Node,
    first_order: u8,
    nr_pages: u32,
    pages: u32,
) -> (u32, u32) {
    let refused = list.stats.drain_refused.load(Relaxed);
    let out = list.drain(&mut node.buddy.lock(), first_order, nr_pages, pages);
    let now = list.stats.drain_refused.load(Relaxed);
    if now != refused {
        crate::warn!(
            "frame: node {}: {} listed blocks refused by the buddy on drain: leaked",
            node.id.0,
            now - refused
        );
    }
    out
}
