//! Which NUMA node a page frame belongs to, looked up by the node's own ranges (never by its
//! span): a sorted table of disjoint pfn ranges, searched by bisection.
//!
//! A node's memory need not be contiguous, and another node's memory may lie inside its span:
//! an SRAT with PXM 0 at [0, 256M) + [512M, 1G) and PXM 1 at [256M, 512M) is legal, and so is
//! RAM that no SRAT entry covers being given to node 0 above another node's range. A lookup
//! by span ("the first node whose first-to-last range holds the page") then answers node 0
//! for node 1's pages. Linux answers from the page itself (`page_to_nid`: node bits in
//! `page->flags`, or the memory section's node); the ranges here need not be section
//! aligned, so the table keeps exact ranges instead.

use crate::topology::NodeId;
use alloc::vec::Vec;

/// One range of page frames, [start_pfn, end_pfn), of one node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeRange {
    pub start_pfn: u64,
    pub end_pfn: u64,
    pub node: NodeId,
}

/// Every node's page ranges, sorted and disjoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeMap {
    ranges: Vec<NodeRange>,
}

/// A `NodeMap` and the pages it had to drop to stay disjoint.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Built {
    pub map: NodeMap,
    /// Pages claimed by two ranges: each belongs to the range that starts first (on a tie,
    /// the one given first), and the later one is trimmed. Zero for a sane topology (the
    /// SRAT reader keeps memory entries disjoint); the kernel warns otherwise.
    pub overlap_pages: u64,
}

impl NodeMap {
    /// Builds the map from `(node, start_pfn, end_pfn)` ranges in any order. Empty ranges
    /// are dropped; touching ranges of the same node are merged.
    pub fn build(ranges: impl IntoIterator<Item = (NodeId, u64, u64)>) -> Built {
        let mut input: Vec<(u64, usize, u64, NodeId)> = ranges
            .into_iter()
            .enumerate()
            .filter(|(_, (_, s, e))| s < e)
            .map(|(i, (node, s, e))| (s, i, e, node))
            .collect();
        // By start, then by input order: the sort is total, so the result is deterministic.
        input.sort_unstable_by_key(|&(s, i, _, _)| (s, i));
        let mut out: Vec<NodeRange> = Vec::with_capacity(input.len());
        let mut overlap_pages = 0;
        for (mut s, _, e, node) in input {
            if let Some(last) = out.last_mut() {
                if s < last.end_pfn {
                    overlap_pages += last.end_pfn.min(e) - s;
                    s = last.end_pfn;
                    if s >= e {
                        continue;
                    }
                }
                if s == last.end_pfn && node == last.node {
                    last.end_pfn = e;
                    continue;
                }
            }
            out.push(NodeRange {
                start_pfn: s,
                end_pfn: e,
                node,
            });
        }
        Built {
            map: NodeMap { ranges: out },
            overlap_pages,
        }
    }

    /// The node whose ranges hold `pfn` (None: in no range, a hole or unmanaged memory).
    #[inline]
    pub fn node_of(&self, pfn: u64) -> Option<NodeId> {
        // The ranges are sorted and disjoint: the only candidate is the last one starting at
        // or below pfn.
        let after = self.ranges.partition_point(|r| r.start_pfn <= pfn);
        let r = self.ranges.get(after.checked_sub(1)?)?;
        (pfn < r.end_pfn).then_some(r.node)
    }

    /// The ranges, sorted by start.
    pub fn ranges(&self) -> &[NodeRange] {
        &self.ranges
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::Rng;

    const MIB_PAGES: u64 = 256; // 4 KiB pages per MiB

    fn build(r: &[(u16, u64, u64)]) -> Built {
        NodeMap::build(r.iter().map(|&(n, s, e)| (NodeId(n), s, e)))
    }

    /// PXM 0 at [0, 256M) + [512M, 1G), PXM 1 at [256M, 512M). Node 0's span
    /// [0, 1G) holds node 1's range; every page of node 1 must still be node 1's.
    #[test]
    fn a_node_inside_another_nodes_span_keeps_its_pages() {
        let b = build(&[
            (0, 0, 256 * MIB_PAGES),
            (0, 512 * MIB_PAGES, 1024 * MIB_PAGES),
            (1, 256 * MIB_PAGES, 512 * MIB_PAGES),
        ]);
        assert_eq!(b.overlap_pages, 0);
        let m = &b.map;
        for (pfn, want) in [
            (0, 0),
            (256 * MIB_PAGES - 1, 0),
            (256 * MIB_PAGES, 1),
            (300 * MIB_PAGES, 1),
            (512 * MIB_PAGES - 1, 1),
            (512 * MIB_PAGES, 0),
            (1024 * MIB_PAGES - 1, 0),
        ] {
            assert_eq!(m.node_of(pfn), Some(NodeId(want)), "pfn {pfn:#x}");
        }
        assert_eq!(m.node_of(1024 * MIB_PAGES), None);
        assert_eq!(m.ranges().len(), 3);
    }

    /// RAM in no SRAT entry goes to node 0, above node 1's memory.
    #[test]
    fn uncovered_ram_given_to_node_0_above_node_1() {
        let m = build(&[
            (0, 256, 0x10000),
            (1, 0x10000, 0x30000),
            (0, 0x30000, 0x40000),
        ])
        .map;
        assert_eq!(m.node_of(0x2ffff), Some(NodeId(1)));
        assert_eq!(m.node_of(0x30000), Some(NodeId(0)));
        assert_eq!(m.node_of(255), None, "below the first range");
    }

    #[test]
    fn holes_and_empty_maps_have_no_node() {
        assert_eq!(NodeMap::default().node_of(0), None);
        assert_eq!(build(&[]).map.node_of(u64::MAX), None);
        let m = build(&[(0, 10, 20), (1, 30, 40), (2, 50, 50)]).map;
        assert_eq!(m.ranges().len(), 2, "the empty range is dropped");
        for pfn in [0, 9, 20, 29, 40, 50, u64::MAX] {
            assert_eq!(m.node_of(pfn), None, "pfn {pfn}");
        }
        assert_eq!(m.node_of(10), Some(NodeId(0)));
        assert_eq!(m.node_of(39), Some(NodeId(1)));
    }

    #[test]
    fn touching_ranges_of_one_node_merge_and_of_two_nodes_do_not() {
        let m = build(&[(0, 20, 30), (0, 10, 20), (1, 30, 40)]).map;
        assert_eq!(
            m.ranges(),
            &[
                NodeRange {
                    start_pfn: 10,
                    end_pfn: 30,
                    node: NodeId(0)
                },
                NodeRange {
                    start_pfn: 30,
                    end_pfn: 40,
                    node: NodeId(1)
                }
            ]
        );
    }

    #[test]
    fn overlaps_go_to_the_range_that_starts_first_and_are_counted() {
        let b = build(&[(1, 15, 25), (0, 10, 20), (2, 12, 18), (3, 20, 22)]);
        // [10,20) node 0; node 2's [12,18) is inside it (6 pages); node 1 keeps [20,25)
        // after losing 5; node 3's [20,22) is inside node 1's (2 pages).
        assert_eq!(b.overlap_pages, 6 + 5 + 2);
        let m = &b.map;
        assert_eq!(m.node_of(12), Some(NodeId(0)));
        assert_eq!(m.node_of(19), Some(NodeId(0)));
        assert_eq!(m.node_of(20), Some(NodeId(1)));
        assert_eq!(m.node_of(21), Some(NodeId(1)));
        assert_eq!(m.node_of(25), None);
        // Same start: the range given first wins.
        let tie = build(&[(4, 0, 8), (5, 0, 4)]);
        assert_eq!(tie.overlap_pages, 4);
        assert_eq!(tie.map.node_of(3), Some(NodeId(4)));
    }

    /// Random disjoint ranges of many nodes, in random order: the bisection agrees with a
    /// scan of the node's own ranges for every boundary and a sample inside.
    #[test]
    fn agrees_with_a_scan_of_each_nodes_ranges() {
        let mut rng = Rng::new(14);
        for _ in 0..200 {
            let mut ranges = Vec::new();
            let mut pfn = rng.below(8);
            for _ in 0..rng.below(40) {
                let len = 1 + rng.below(16);
                ranges.push((rng.below(6) as u16, pfn, pfn + len));
                pfn += len + rng.below(3); // sometimes touching, sometimes a hole
            }
            let mut shuffled = ranges.clone();
            for i in (1..shuffled.len()).rev() {
                shuffled.swap(i, rng.below(i as u64 + 1) as usize);
            }
            let b = build(&shuffled);
            assert_eq!(b.overlap_pages, 0);
            for q in 0..pfn + 2 {
                let want = ranges
                    .iter()
                    .find(|&&(_, s, e)| s <= q && q < e)
                    .map(|&(n, _, _)| NodeId(n));
                assert_eq!(b.map.node_of(q), want, "pfn {q} in {ranges:?}");
            }
        }
    }
}
