//! The coherence directory: per 64-byte guest-physical line, Modified by one owner vCPU, Shared
//! by a set of vCPUs, or uncached. Pure MESI-like rules; nodes are the accountant's business.

use std::collections::HashMap;

use crate::config::MAX_VCPUS;
use crate::fasthash::FastBuild;

pub const LINE_BYTES: u64 = 64;
pub const PAGE_BYTES: u64 = 4096;
const LINES_PER_PAGE: usize = (PAGE_BYTES / LINE_BYTES) as usize;
const WORDS: usize = MAX_VCPUS / 64;

/// One line's state. `owner` 0: not modified; else Modified by vCPU `owner - 1` (then `sharers`
/// is empty).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct LineState {
    owner: u16,
    sharers: [u64; WORDS],
}

impl LineState {
    fn has(&self, cpu: usize) -> bool {
        self.sharers[cpu / 64] & (1 << (cpu % 64)) != 0
    }
    fn add(&mut self, cpu: usize) {
        self.sharers[cpu / 64] |= 1 << (cpu % 64);
    }
    fn remove(&mut self, cpu: usize) {
        self.sharers[cpu / 64] &= !(1 << (cpu % 64));
    }
    fn count(&self) -> u32 {
        self.sharers.iter().map(|w| w.count_ones()).sum()
    }
    fn make_modified(&mut self, cpu: usize) {
        self.sharers = [0; WORDS];
        self.owner = cpu as u16 + 1;
    }
}

/// Where an access's data came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Already in the vCPU's cache (Modified by it, or it is a sharer).
    Hit,
    /// From memory.
    Miss,
    /// From another vCPU's Modified copy (perf c2c's HITM); the previous owner.
    Hitm(usize),
}

/// What one access did to the directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub source: Source,
    /// Other vCPUs' copies invalidated.
    pub inval: u32,
}

/// An access's outcome with what the caches need: whether the vCPU already held the line
/// Modified, and the vCPUs whose copies it dropped (a bitset over `MAX_VCPUS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detail {
    pub outcome: Outcome,
    pub was_owner: bool,
    pub dropped: [u64; WORDS],
}

impl Detail {
    /// The vCPUs whose copies the access dropped, ascending.
    pub fn dropped(&self) -> impl Iterator<Item = usize> + '_ {
        self.dropped.iter().enumerate().flat_map(|(w, &bits)| {
            (0..64)
                .filter(move |b| bits & (1 << b) != 0)
                .map(move |b| w * 64 + b)
        })
    }
}

/// Page-granular table of line states.
#[derive(Default)]
pub struct Directory {
    index: HashMap<u64, u32, FastBuild>,
    pages: Vec<[LineState; LINES_PER_PAGE]>,
    /// (page number, index into `pages`) of the last lookup.
    last: Option<(u64, u32)>,
}

impl Directory {
    pub fn new() -> Self {
        Self::default()
    }

    fn line(&mut self, paddr: u64) -> &mut LineState {
        let page = paddr / PAGE_BYTES;
        let slot = ((paddr % PAGE_BYTES) / LINE_BYTES) as usize;
        let at = match self.last {
            Some((p, at)) if p == page => at,
            _ => {
                let next = self.pages.len() as u32;
                let at = *self.index.entry(page).or_insert(next);
                if at == next {
                    self.pages.push([LineState::default(); LINES_PER_PAGE]);
                }
                self.last = Some((page, at));
                at
            }
        };
        &mut self.pages[at as usize][slot]
    }

    /// Applies a load (`write == false`) or a store/atomic (`write == true`) by vCPU `cpu`
    /// (below `MAX_VCPUS`) to the line holding `paddr`.
    pub fn access(&mut self, cpu: usize, paddr: u64, write: bool) -> Outcome {
        self.access_detail(cpu, paddr, write).outcome
    }

    /// `access`, also telling whether `cpu` held the line Modified and whose copies it dropped.
    pub fn access_detail(&mut self, cpu: usize, paddr: u64, write: bool) -> Detail {
        let line = self.line(paddr);
        let owner = (line.owner != 0).then(|| usize::from(line.owner - 1));
        let was_owner = owner == Some(cpu);
        let out = |source, inval, dropped| Detail {
            outcome: Outcome { source, inval },
            was_owner,
            dropped,
        };
        let none = [0; WORDS];
        if !write {
            return match owner {
                Some(o) if o == cpu => out(Source::Hit, 0, none),
                Some(o) => {
                    line.owner = 0;
                    line.add(o);
                    line.add(cpu);
                    out(Source::Hitm(o), 0, none)
                }
                None if line.has(cpu) => out(Source::Hit, 0, none),
                None => {
                    line.add(cpu);
                    out(Source::Miss, 0, none)
                }
            };
        }
        let detail = match owner {
            Some(o) if o == cpu => out(Source::Hit, 0, none),
            Some(o) => {
                let mut dropped = none;
                dropped[o / 64] |= 1 << (o % 64);
                out(Source::Hitm(o), 1, dropped)
            }
            None => {
                let mine = line.has(cpu);
                let others = line.count() - u32::from(mine);
                let mut dropped = line.sharers;
                dropped[cpu / 64] &= !(1 << (cpu % 64));
                out(
                    if mine { Source::Hit } else { Source::Miss },
                    others,
                    dropped,
                )
            }
        };
        line.make_modified(cpu);
        detail
    }

    /// vCPU `cpu`'s cache evicted the line holding `paddr`: it leaves the sharers; returns
    /// true when it held the line Modified (a writeback; the line is then uncached).
    pub fn evict(&mut self, cpu: usize, paddr: u64) -> bool {
        let line = self.line(paddr);
        if usize::from(line.owner) == cpu + 1 {
            line.owner = 0;
            return true;
        }
        line.remove(cpu);
        false
    }

    /// Lines ever touched (for tests and the docs' memory figure).
    pub fn pages(&self) -> usize {
        self.pages.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn o(source: Source, inval: u32) -> Outcome {
        Outcome { source, inval }
    }

    #[test]
    fn load_rules() {
        let mut d = Directory::new();
        // Uncached: miss, then the reader is a sharer and hits.
        assert_eq!(d.access(0, 0x1000, false), o(Source::Miss, 0));
        assert_eq!(d.access(0, 0x1008, false), o(Source::Hit, 0));
        // Another reader misses too (from memory, not a HITM of a shared line).
        assert_eq!(d.access(1, 0x1000, false), o(Source::Miss, 0));
        assert_eq!(d.access(1, 0x1000, false), o(Source::Hit, 0));
        // Modified by 2: its own load hits; 3's load is a HITM and makes it Shared {2, 3}.
        assert_eq!(d.access(2, 0x2000, true), o(Source::Miss, 0));
        assert_eq!(d.access(2, 0x2000, false), o(Source::Hit, 0));
        assert_eq!(d.access(3, 0x2000, false), o(Source::Hitm(2), 0));
        assert_eq!(d.access(2, 0x2000, false), o(Source::Hit, 0));
        assert_eq!(d.access(3, 0x2000, false), o(Source::Hit, 0));
        // Both now share: a store by 3 upgrades, invalidating 2 only.
        assert_eq!(d.access(3, 0x2000, true), o(Source::Hit, 1));
    }

    #[test]
    fn store_rules() {
        let mut d = Directory::new();
        // Uncached store: a miss, nothing to invalidate; then the owner hits.
        assert_eq!(d.access(0, 0x40, true), o(Source::Miss, 0));
        assert_eq!(d.access(0, 0x40, true), o(Source::Hit, 0));
        // Store by another vCPU to a Modified line: HITM and one invalidation.
        assert_eq!(d.access(1, 0x40, true), o(Source::Hitm(0), 1));
        assert_eq!(d.access(0, 0x40, false), o(Source::Hitm(1), 0));
        // Shared {1, 0}: a store by 5 (not a sharer) misses and invalidates both.
        assert_eq!(d.access(5, 0x40, true), o(Source::Miss, 2));
        // Shared by three, a store by one of them: hit (upgrade), two invalidated.
        for c in [7, 8, 9] {
            d.access(c, 0x80, false);
        }
        assert_eq!(d.access(8, 0x80, true), o(Source::Hit, 2));
        assert_eq!(d.access(7, 0x80, false), o(Source::Hitm(8), 0));
        // Becoming Modified dropped 7 and 9's old copies: now Shared {8, 7}, so a store by 10
        // invalidates exactly those two.
        assert_eq!(d.access(10, 0x80, true), o(Source::Miss, 2));
        assert_eq!(d.access(9, 0x80, false), o(Source::Hitm(10), 0));
    }

    #[test]
    fn lines_are_64_bytes_and_independent() {
        let mut d = Directory::new();
        assert_eq!(d.access(0, 0x3f, true), o(Source::Miss, 0));
        assert_eq!(d.access(1, 0x00, false), o(Source::Hitm(0), 0));
        assert_eq!(d.access(1, 0x40, false), o(Source::Miss, 0));
        // The same line offset in another page is another line.
        assert_eq!(d.access(1, 0x1000, false), o(Source::Miss, 0));
        assert_eq!(d.access(1, 0x40, false), o(Source::Hit, 0));
        assert_eq!(d.pages(), 2);
    }

    #[test]
    fn detail_names_the_dropped_copies_and_evict_leaves_the_sharers() {
        let mut d = Directory::new();
        for c in [1, 70, 200] {
            d.access(c, 0x40, false);
        }
        let x = d.access_detail(70, 0x40, true);
        assert_eq!(x.dropped().collect::<Vec<_>>(), vec![1, 200]);
        assert!(!x.was_owner);
        let x = d.access_detail(70, 0x40, true);
        assert!(x.was_owner && x.dropped().next().is_none());
        let x = d.access_detail(3, 0x40, true);
        assert_eq!(
            (x.outcome, x.dropped().collect::<Vec<_>>()),
            (o(Source::Hitm(70), 1), vec![70])
        );
        // A load HITM keeps the old owner as a sharer: nothing dropped.
        let x = d.access_detail(4, 0x40, false);
        assert_eq!(
            (x.outcome.source, x.dropped().count()),
            (Source::Hitm(3), 0)
        );
        // Shared {3, 4}: 3 evicts (no writeback), so a store by 5 invalidates 4 only.
        assert!(!d.evict(3, 0x40));
        assert_eq!(d.access(5, 0x40, true), o(Source::Miss, 1));
        // 5 owns it Modified: its eviction is a writeback and leaves the line uncached.
        assert!(d.evict(5, 0x40));
        assert_eq!(d.access(6, 0x40, false), o(Source::Miss, 0));
        // Evicting a line one does not hold changes nothing.
        assert!(!d.evict(9, 0x40));
        assert_eq!(d.access(6, 0x40, false), o(Source::Hit, 0));
    }

    #[test]
    fn high_vcpu_indices() {
        let mut d = Directory::new();
        d.access(255, 0x40, false);
        d.access(64, 0x40, false);
        assert_eq!(d.access(255, 0x40, false), o(Source::Hit, 0));
        assert_eq!(d.access(0, 0x40, true), o(Source::Miss, 2));
        assert_eq!(d.access(255, 0x40, true), o(Source::Hitm(0), 1));
    }
}
