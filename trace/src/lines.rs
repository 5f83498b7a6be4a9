//! One region's live per-line counters: a line -> slot index and the counters in one `Vec`.
//! A region can touch millions of lines (latency_matrix's buffers); a `HashMap` of the 64-byte
//! counters would double at each growth, while this table's index entries are 12 bytes and the
//! `Vec` grows in place (a large realloc is an mremap).

use std::collections::HashMap;

use crate::account::LineStats;
use crate::fasthash::FastBuild;

#[derive(Default)]
pub struct LineTable {
    /// Line paddr -> index into `stats`.
    index: HashMap<u64, u32, FastBuild>,
    stats: Vec<LineStats>,
}

impl LineTable {
    /// The counters of `line`, made by `init` on its first access.
    pub fn entry(&mut self, line: u64, init: impl FnOnce() -> LineStats) -> &mut LineStats {
        let next = self.stats.len() as u32;
        let at = *self.index.entry(line).or_insert(next);
        if at == next {
            self.stats.push(init());
        }
        &mut self.stats[at as usize]
    }

    /// Adds counters kept from an earlier visit of the region: a line seen again keeps the
    /// kept address and node, and the counts add up.
    pub fn merge_kept(&mut self, line: u64, kept: LineStats) {
        let mut seen = true;
        let cur = self.entry(line, || {
            seen = false;
            kept
        });
        if seen {
            let mut merged = kept;
            merged.merge(cur);
            *cur = merged;
        }
    }

    pub fn get(&self, line: u64) -> Option<&LineStats> {
        self.index.get(&line).map(|&i| &self.stats[i as usize])
    }

    /// Every line, in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &LineStats)> + '_ {
        self.index
            .iter()
            .map(|(&line, &i)| (line, &self.stats[i as usize]))
    }

    pub fn len(&self) -> usize {
        self.stats.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stats.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(vaddr: u64, loads: u64) -> LineStats {
        LineStats {
            vaddr,
            node: 1,
            loads,
            ..LineStats::default()
        }
    }

    #[test]
    fn entry_makes_each_line_once_and_merge_adds_counts() {
        let mut t = LineTable::default();
        t.entry(0x40, || stats(0x1040, 0)).loads += 2;
        t.entry(0x40, || stats(0x9999, 0)).loads += 3;
        t.entry(0x80, || stats(0x1080, 0)).stores += 1;
        assert_eq!(t.len(), 2);
        assert_eq!(t.get(0x40), Some(&stats(0x1040, 5)));
        // A kept line seen again: the kept address, the counts summed (also when both are
        // equal); a kept line not seen again comes in as it was.
        t.merge_kept(0x40, stats(0x2040, 5));
        assert_eq!(t.get(0x40), Some(&stats(0x2040, 10)));
        t.merge_kept(0xc0, stats(0x20c0, 4));
        assert_eq!(t.get(0xc0), Some(&stats(0x20c0, 4)));
        let mut lines: Vec<u64> = t.iter().map(|(l, _)| l).collect();
        lines.sort_unstable();
        assert_eq!(lines, vec![0x40, 0x80, 0xc0]);
        assert_eq!(t.get(0x100), None);
    }
}
