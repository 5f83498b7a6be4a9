//! The finite cache hierarchy: per vCPU an L1d and an L2 (inclusive of its L1d), one LLC per
//! domain (inclusive, non-inclusive or victim), kept consistent with the coherence directory
//! (a vCPU holds a line in the directory exactly when the line is in its L2). Rules: docs/trace.md.

use crate::cache::Cache;
use crate::config::{Caches, Policy};
use crate::directory::{Directory, Source, LINE_BYTES};

/// Where an access was served from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Served {
    L1,
    L2,
    Llc,
    /// A DRAM read from the line's home node.
    Dram,
    /// From another vCPU's Modified copy: that vCPU.
    Hitm(usize),
}

/// One access's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outcome {
    pub served: Served,
    /// Other vCPUs' copies invalidated (the directory's `inval`).
    pub inval: u32,
}

pub struct Hierarchy {
    l1: Vec<Cache>,
    l2: Vec<Cache>,
    llc: Vec<Cache>,
    policy: Policy,
    /// The LLC domain of each vCPU.
    domain: Vec<usize>,
    /// The vCPUs of each domain.
    members: Vec<Vec<usize>>,
    /// (vCPU, line number) of the dirty lines the last access made someone write back.
    writebacks: Vec<(usize, u64)>,
    /// The directory's `inval` of the last access.
    inval: u32,
}

impl Hierarchy {
    /// The caches of `caches` for vCPUs on nodes `vcpu_node`.
    pub fn new(caches: &Caches, vcpu_node: &[u32]) -> Self {
        let domain: Vec<usize> = vcpu_node
            .iter()
            .map(|&n| caches.llc_of[n as usize].expect("config checked llc_of") as usize)
            .collect();
        let mut members = vec![Vec::new(); caches.domains as usize];
        for (v, &d) in domain.iter().enumerate() {
            members[d].push(v);
        }
        let n = vcpu_node.len();
        Self {
            l1: vec![Cache::new(caches.l1d.0, caches.l1d.1); n],
            l2: vec![Cache::new(caches.l2.0, caches.l2.1); n],
            llc: vec![Cache::new(caches.llc.0, caches.llc.1); caches.domains as usize],
            policy: caches.policy,
            domain,
            members,
            writebacks: Vec::new(),
            inval: 0,
        }
    }

    /// The dirty lines the last `access` had written back: (the vCPU that held it Modified,
    /// guest-physical address of the line).
    pub fn writebacks(&self) -> impl Iterator<Item = (usize, u64)> + '_ {
        self.writebacks.iter().map(|&(v, l)| (v, l * LINE_BYTES))
    }

    /// An access by vCPU `c` to the line holding `paddr`; `write` for a store or an atomic.
    pub fn access(&mut self, dir: &mut Directory, c: usize, paddr: u64, write: bool) -> Outcome {
        self.writebacks.clear();
        let line = paddr / LINE_BYTES;
        if self.l1[c].touch(line) {
            let inval = if write { self.store(dir, c, line) } else { 0 };
            return Outcome {
                served: Served::L1,
                inval,
            };
        }
        if self.l2[c].touch(line) {
            self.l1[c].insert(line);
            let inval = if write { self.store(dir, c, line) } else { 0 };
            return Outcome {
                served: Served::L2,
                inval,
            };
        }
        // Not in c's caches, so not c's in the directory either.
        let d = self.coherence(dir, c, line, write);
        let dom = self.domain[c];
        let served = match d {
            Source::Hitm(o) => Served::Hitm(o),
            Source::Hit | Source::Miss => {
                debug_assert_eq!(d, Source::Miss, "the directory and the L2 disagree");
                if self.llc[dom].touch(line) {
                    Served::Llc
                } else {
                    Served::Dram
                }
            }
        };
        self.fill_l2(dir, c, line);
        self.l1[c].insert(line);
        if self.policy != Policy::Victim && served != Served::Llc {
            self.fill_llc(dir, dom, line);
        }
        Outcome {
            served,
            inval: self.inval,
        }
    }
}

impl Hierarchy {
    /// A store by `c` to a line in its L1d or L2: the directory's upgrade. Returns `inval`.
    fn store(&mut self, dir: &mut Directory, c: usize, line: u64) -> u32 {
        let source = self.coherence(dir, c, line, true);
        debug_assert_eq!(source, Source::Hit, "the directory and the L2 disagree");
        self.inval
    }

    /// The directory's side of an access c's caches cannot serve alone: other vCPUs' copies a
    /// store drops go from their L1d and L2, and from every LLC but c's (unless c already held
    /// the line Modified, when no other cache has it). Sets `self.inval`.
    fn coherence(&mut self, dir: &mut Directory, c: usize, line: u64, write: bool) -> Source {
        let d = dir.access_detail(c, line * LINE_BYTES, write);
        self.inval = d.outcome.inval;
        if write && !d.was_owner {
            for v in d.dropped() {
                self.l1[v].remove(line);
                self.l2[v].remove(line);
            }
            let dom = self.domain[c];
            for (i, llc) in self.llc.iter_mut().enumerate() {
                if i != dom {
                    llc.remove(line);
                }
            }
        }
        d.outcome.source
    }

    /// Fills `line` into c's L2; an L2 victim leaves c's L1d and the directory (a writeback
    /// if c held it Modified) and, under `victim`, goes into c's LLC.
    fn fill_l2(&mut self, dir: &mut Directory, c: usize, line: u64) {
        let Some(y) = self.l2[c].insert(line) else {
            return;
        };
        self.l1[c].remove(y);
        if dir.evict(c, y * LINE_BYTES) {
            self.writebacks.push((c, y));
        }
        if self.policy == Policy::Victim {
            self.llc[self.domain[c]].insert(y);
        }
    }

    /// Fills `line` into LLC `dom`; under `inclusive` its victim leaves every L1d and L2 of
    /// the domain (a writeback from a Modified copy).
    fn fill_llc(&mut self, dir: &mut Directory, dom: usize, line: u64) {
        let Some(z) = self.llc[dom].insert(line) else {
            return;
        };
        if self.policy != Policy::Inclusive {
            return;
        }
        for &v in &self.members[dom] {
            self.l1[v].remove(z);
            if self.l2[v].remove(z) && dir.evict(v, z * LINE_BYTES) {
                self.writebacks.push((v, z));
            }
        }
    }

    /// Whether vCPU `v`'s L1d, its L2 and LLC `dom` hold the line of `paddr` (for tests).
    pub fn holds(&self, v: usize, dom: usize, paddr: u64) -> (bool, bool, bool) {
        let l = paddr / LINE_BYTES;
        (
            self.l1[v].contains(l),
            self.l2[v].contains(l),
            self.llc[dom].contains(l),
        )
    }
}

#[cfg(test)]
#[path = "hierarchy_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "chase_tests.rs"]
mod chase_tests;
