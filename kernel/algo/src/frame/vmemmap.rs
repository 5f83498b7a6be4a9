//! The vmemmap's layout (Linux's SPARSEMEM_VMEMMAP, mm/sparse-vmemmap.c): one virtually
//! contiguous array of page descriptors indexed by pfn, so that pfn_to_page is
//! `VMEMMAP + pfn * size` and page_to_pfn its inverse. This file decides, from the nodes'
//! managed ranges, which 2 MiB sections get descriptors and whose memory backs them; the
//! kernel (kernel/src/mm/vmemmap.rs) maps them.
//!
//! A section whose managed pages all belong to one node is mapped onto that node's own
//! memmap (carved from the node's memory, as Linux's vmemmap_populate allocates a section's
//! struct pages with the section's node id). A section no node manages a page of is a hole
//! and stays unmapped. A section two nodes share is left unmapped too: each node keeps its
//! own entries for it in its memmap, one virtual slot cannot show both, and its pages are
//! looked up by range (Linux avoids the case by requiring node boundaries on its 128 MiB
//! sections; numalab's machines may put them anywhere, e.g. `--machine` texts).

use crate::page::SECTION_PAGES_SHIFT;
use alloc::vec::Vec;

/// Pages per section.
pub const SECTION_PAGES: u64 = 1 << SECTION_PAGES_SHIFT;

/// One node's memmap as the vmemmap sees it.
#[derive(Clone, Copy, Debug)]
pub struct NodeMemmap<'a> {
    /// Index of the node (its NodeId).
    pub node: usize,
    /// The pfn of the memmap's first entry (a section boundary).
    pub base_pfn: u64,
    /// Entries in the memmap (a whole number of sections).
    pub pages: u64,
    /// The node's managed pages, [start_pfn, end_pfn) ranges.
    pub ranges: &'a [(u64, u64)],
}

/// What backs one section of the vmemmap.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Section {
    /// No node manages a page of it: unmapped.
    Hole,
    /// Only this node (an index into the slice given to `layout`) manages pages of it, and
    /// its memmap covers the whole section at `memmap_index` (the entry of the section's
    /// first pfn).
    Node { owner: usize, memmap_index: u64 },
    /// Two nodes manage pages of it: unmapped, looked up by range.
    Shared,
}

/// The vmemmap of a machine: per section up to the highest managed pfn, what backs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    pub sections: Vec<Section>,
}

impl Layout {
    /// Sections the vmemmap spans (the highest managed pfn's section + 1).
    pub fn nr_sections(&self) -> usize {
        self.sections.len()
    }

    /// Pfns the vmemmap spans.
    pub fn end_pfn(&self) -> u64 {
        (self.sections.len() as u64) << SECTION_PAGES_SHIFT
    }

    /// What backs `pfn`'s descriptor (None: beyond the vmemmap).
    pub fn section_of(&self, pfn: u64) -> Option<Section> {
        self.sections
            .get((pfn >> SECTION_PAGES_SHIFT) as usize)
            .copied()
    }

    /// Sections mapped onto a node's memmap.
    pub fn mapped_sections(&self) -> usize {
        self.sections
            .iter()
            .filter(|s| matches!(s, Section::Node { .. }))
            .count()
    }
}

/// Computes the vmemmap's layout, at most `max_sections` sections (pages above are looked up
/// by range, as in a shared section).
pub fn layout(nodes: &[NodeMemmap], max_sections: usize) -> Layout {
    let end_pfn = nodes
        .iter()
        .flat_map(|n| n.ranges.iter().map(|r| r.1))
        .max()
        .unwrap_or(0);
    let nr = (end_pfn.div_ceil(SECTION_PAGES) as usize).min(max_sections);
    let mut sections = alloc::vec![Section::Hole; nr];
    for (i, node) in nodes.iter().enumerate() {
        for &(s, e) in node.ranges.iter().filter(|r| r.1 > r.0) {
            let first = (s >> SECTION_PAGES_SHIFT) as usize;
            let last = ((e - 1) >> SECTION_PAGES_SHIFT) as usize;
            for (sec, slot) in sections.iter_mut().enumerate().take(last + 1).skip(first) {
                *slot = match *slot {
                    Section::Hole => {
                        let first_pfn = (sec as u64) << SECTION_PAGES_SHIFT;
                        match first_pfn.checked_sub(node.base_pfn) {
                            Some(idx) if idx + SECTION_PAGES <= node.pages => Section::Node {
                                owner: i,
                                memmap_index: idx,
                            },
                            // The memmap does not cover the section (cannot happen: a span
                            // is whole sections around every range); look it up by range.
                            _ => Section::Shared,
                        }
                    }
                    Section::Node { owner, .. } if owner == i => *slot,
                    _ => Section::Shared,
                };
            }
        }
    }
    Layout { sections }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB_PAGES: u64 = 256;

    fn node<'a>(node: usize, ranges: &'a [(u64, u64)]) -> NodeMemmap<'a> {
        let base_pfn = ranges[0].0 & !(SECTION_PAGES - 1);
        let end = ranges.last().unwrap().1.next_multiple_of(SECTION_PAGES);
        NodeMemmap {
            node,
            base_pfn,
            pages: end - base_pfn,
            ranges,
        }
    }

    /// The interleaved machine of tests/s03_frame.rs: node 0 at [1M, 256M) + [512M, 1G),
    /// node 1 at [256M, 512M) (inside node 0's span): node 1's sections are backed by node 1's
    /// memmap, never node 0's, though node 0's memmap has entries for them.
    #[test]
    fn interleaved_nodes_back_their_own_sections() {
        let r0 = [
            (MIB_PAGES, 256 * MIB_PAGES),
            (512 * MIB_PAGES, 1024 * MIB_PAGES),
        ];
        let r1 = [(256 * MIB_PAGES, 512 * MIB_PAGES)];
        let l = layout(&[node(0, &r0), node(1, &r1)], usize::MAX);
        assert_eq!(l.nr_sections(), 512);
        assert_eq!(l.end_pfn(), 1024 * MIB_PAGES);
        for pfn in (0..1024 * MIB_PAGES).step_by(97) {
            let want_owner = usize::from((256 * MIB_PAGES..512 * MIB_PAGES).contains(&pfn));
            let sec_first = pfn & !(SECTION_PAGES - 1);
            let want_index = if want_owner == 0 {
                sec_first
            } else {
                sec_first - 256 * MIB_PAGES
            };
            assert_eq!(
                l.section_of(pfn),
                Some(Section::Node {
                    owner: want_owner,
                    memmap_index: want_index
                }),
                "pfn {pfn:#x}"
            );
        }
        assert_eq!(l.section_of(1024 * MIB_PAGES), None);
    }

    /// A gap of whole sections between two ranges is a hole: unmapped.
    #[test]
    fn holes_stay_unmapped() {
        let r0 = [(0, 64 * MIB_PAGES), (128 * MIB_PAGES, 192 * MIB_PAGES)];
        let l = layout(&[node(0, &r0)], usize::MAX);
        assert_eq!(l.section_of(64 * MIB_PAGES), Some(Section::Hole));
        assert_eq!(l.section_of(128 * MIB_PAGES - 1), Some(Section::Hole));
        assert_eq!(
            l.section_of(128 * MIB_PAGES),
            Some(Section::Node {
                owner: 0,
                memmap_index: 128 * MIB_PAGES
            })
        );
        assert_eq!(l.mapped_sections(), 64);
    }

    /// Two nodes meeting inside a section (a boundary 1 MiB past a section start): that one
    /// section is shared, its neighbours each belong to one node.
    #[test]
    fn a_node_boundary_inside_a_section_leaves_it_to_the_lookup_by_range() {
        let r0 = [(0, 65 * MIB_PAGES)];
        let r1 = [(65 * MIB_PAGES, 128 * MIB_PAGES)];
        let l = layout(&[node(0, &r0), node(1, &r1)], usize::MAX);
        let shared = 64 * MIB_PAGES;
        assert_eq!(l.section_of(shared), Some(Section::Shared));
        assert_eq!(l.section_of(shared + 300), Some(Section::Shared));
        assert!(matches!(
            l.section_of(shared - 1),
            Some(Section::Node { owner: 0, .. })
        ));
        assert_eq!(
            l.section_of(shared + SECTION_PAGES),
            Some(Section::Node {
                owner: 1,
                memmap_index: SECTION_PAGES
            })
        );
    }

    /// Sections past `max_sections` are not in the layout (looked up by range).
    #[test]
    fn the_layout_stops_at_max_sections() {
        let r0 = [(0, 64 * MIB_PAGES)];
        let l = layout(&[node(0, &r0)], 3);
        assert_eq!(l.nr_sections(), 3);
        assert_eq!(l.section_of(3 * SECTION_PAGES), None);
    }
}
