//! QEMU 7.2's "physical address" of a RAM access, mapped back to guest-physical.
//!
//! In QEMU 7.2 `qemu_plugin_hwaddr_phys_addr` returns, for RAM, `block->offset + offset +
//! block->mr->addr`: the RAM block's offset in QEMU's ram_addr space, plus the offset in the
//! block, plus the block's address in its container (QEMU 8.2 replaced this by the TLB's
//! physical address: "plugin: Simplify struct qemu_plugin_hwaddr", qemu-devel, 2023-09-16).
//! `ram_offset` below is the address in the machine's RAM: guest-physical below 4 GiB; above it,
//! 4 GiB less the RAM below 4 GiB (the config's highest range end at or below 4 GiB).
//! - `qemu_ram per_node` (the presets): each node with memory has one `memory-backend-ram`, in
//!   node order, created before the board's own RAM blocks; so node n's block starts at the same
//!   offset A(n) in ram_addr space and in the NUMA memory container, and QEMU reports
//!   `A(n) + ram_offset`. Node 0's block is at 0, so its addresses come back unchanged.
//! - `qemu_ram single` (no memdev: UMA, replayed machines): one block at 0, QEMU reports
//!   `ram_offset`.
//!
//! Addresses of QEMU's other RAM blocks (firmware ROM, video RAM) map to no range: `unmapped`.

use crate::config::{Config, QemuRam};

const FOUR_GIB: u64 = 1 << 32;

/// One config range as QEMU 7.2 reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    /// First reported address.
    start: u64,
    end: u64,
    /// Guest-physical address of `start`.
    gpa: u64,
}

/// The config's ranges in QEMU 7.2's reported addresses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    /// Sorted by `start`.
    spans: Vec<Span>,
}

impl Layout {
    /// The layout for the config's `mem` ranges (guest-physical, per node).
    pub fn qemu72(cfg: &Config) -> Layout {
        // RAM below 4 GiB: the highest range end at or below 4 GiB.
        let low = cfg
            .mem
            .iter()
            .map(|r| r.end)
            .filter(|&e| e <= FOUR_GIB)
            .max()
            .unwrap_or(0);
        let ram_offset = |gpa: u64| {
            if gpa >= FOUR_GIB {
                gpa - FOUR_GIB + low
            } else {
                gpa
            }
        };
        let mut spans: Vec<Span> = cfg
            .mem
            .iter()
            .map(|r| {
                // A(n): where node n's block starts (0 for the single block).
                let base = match cfg.qemu_ram {
                    QemuRam::Single => 0,
                    QemuRam::PerNode => cfg
                        .mem
                        .iter()
                        .filter(|o| o.node == r.node)
                        .map(|o| ram_offset(o.start))
                        .min()
                        .unwrap_or(0),
                };
                let start = base + ram_offset(r.start);
                Span {
                    start,
                    end: start + (r.end - r.start),
                    gpa: r.start,
                }
            })
            .collect();
        spans.sort_by_key(|s| s.start);
        Layout { spans }
    }

    /// Guest-physical address of reported address `h`, or None outside every range.
    pub fn to_gpa(&self, h: u64) -> Option<u64> {
        let i = self.spans.partition_point(|s| s.end <= h);
        let s = self.spans.get(i).filter(|s| s.start <= h)?;
        Some(s.gpa + (h - s.start))
    }

    /// The reported address of guest-physical `gpa` (tests and docs).
    pub fn to_reported(&self, gpa: u64) -> Option<u64> {
        self.spans
            .iter()
            .find(|s| s.gpa <= gpa && gpa < s.gpa + (s.end - s.start))
            .map(|s| s.start + (gpa - s.gpa))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::parse;

    fn layout(mem: &str, nodes: u32) -> Layout {
        let mut text = format!("nodes {nodes}\n");
        for i in 0..nodes {
            text += &format!("distance {i}{}\n", " 10".repeat(nodes as usize));
        }
        text += mem;
        text += "vcpu 0 0\n";
        Layout::qemu72(&parse(&text).unwrap())
    }

    #[test]
    fn two_nodes_of_512_mib() {
        // Node 1's block is at 512 MiB in both spaces: QEMU reports 1 GiB + offset.
        let l = layout("mem 0x0 0x20000000 0\nmem 0x20000000 0x40000000 1\n", 2);
        assert_eq!(l.to_gpa(0x1234), Some(0x1234));
        assert_eq!(l.to_gpa(0x1fff_ffff), Some(0x1fff_ffff));
        assert_eq!(l.to_gpa(0x2000_0000), None);
        assert_eq!(l.to_gpa(0x3fff_ffff), None);
        assert_eq!(l.to_gpa(0x4000_0000), Some(0x2000_0000));
        assert_eq!(l.to_gpa(0x5fbe_0000), Some(0x3fbe_0000));
        assert_eq!(l.to_gpa(0x6000_0000), None);
        assert_eq!(l.to_reported(0x3fbe_0000), Some(0x5fbe_0000));
    }

    #[test]
    fn one_block_for_every_node() {
        let mem = "mem 0x0 0x20000000 0\nmem 0x20000000 0x40000000 1\nqemu_ram single\n";
        let l = layout(mem, 2);
        assert_eq!(l.to_gpa(0x2000_0000), Some(0x2000_0000));
        assert_eq!(l.to_gpa(0x3fff_ffff), Some(0x3fff_ffff));
        assert_eq!(l.to_gpa(0x4000_0000), None);
        // Above 4 GiB: the RAM offset continues after the RAM below 4 GiB.
        let mem = "mem 0x0 0xc0000000 0\nmem 0x100000000 0x140000000 1\nqemu_ram single\n";
        let l = layout(mem, 2);
        assert_eq!(l.to_gpa(0xc000_0000), Some(0x1_0000_0000));
        assert_eq!(l.to_gpa(0xffff_ffff), Some(0x1_3fff_ffff));
        assert_eq!(l.to_gpa(0x1_0000_0000), None);
    }

    #[test]
    fn one_node_is_unchanged() {
        let l = layout("mem 0x0 0x80000000 0\n", 1);
        assert_eq!(l.to_gpa(0x7fff_ffff), Some(0x7fff_ffff));
        assert_eq!(l.to_gpa(0x8000_0000), None);
    }

    #[test]
    fn memory_above_4_gib() {
        // 4 nodes of 1 GiB with RAM split at 2 GiB below 4 GiB (q35): nodes 2 and 3 sit above
        // 4 GiB in guest-physical, at 2 and 3 GiB in the machine's RAM.
        let l = layout(
            "mem 0x0 0x40000000 0\nmem 0x40000000 0x80000000 1\n\
             mem 0x100000000 0x140000000 2\nmem 0x140000000 0x180000000 3\n",
            4,
        );
        assert_eq!(l.to_gpa(0x8000_0000), Some(0x4000_0000));
        assert_eq!(l.to_gpa(0x1_0000_0000), Some(0x1_0000_0000));
        assert_eq!(l.to_gpa(0x1_8000_0000), Some(0x1_4000_0000));
        assert_eq!(l.to_gpa(0x1_bfff_ffff), Some(0x1_7fff_ffff));
        assert_eq!(l.to_gpa(0x1_c000_0000), None);
    }
}
