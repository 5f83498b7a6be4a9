//! Per-(region key, vCPU) accounting: instructions, turns, access classes, local/remote by
//! node, SLIT distance, the directory's hits/misses/HITMs, and per region its top-K lines.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

use numalab_algo::formats::trace_counters::COUNTERS;

use crate::config::Config;
use crate::directory::{Directory, Source, LINE_BYTES};
use crate::fasthash::FastBuild;
use crate::hierarchy::{Hierarchy, Served};
use crate::lines::LineTable;

/// The counters of one (region, vCPU), or of the whole boot.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    pub insns: u64,
    pub turns: u64,
    pub loads: u64,
    pub stores: u64,
    pub atomics: u64,
    pub io: u64,
    pub unmapped: u64,
    pub local: u64,
    pub remote: u64,
    pub dist_sum: u64,
    /// L1d hits (every hit without finite caches).
    pub hits: u64,
    pub l2_hits: u64,
    pub llc_hits: u64,
    pub miss_local: u64,
    pub miss_remote: u64,
    pub hitm_local: u64,
    pub hitm_remote: u64,
    pub inval: u64,
    /// Dirty lines this vCPU's caches wrote back.
    pub writebacks: u64,
}

impl Counters {
    /// Field names (numalab_algo's `COUNTERS`, shared with the runner's parser) and values,
    /// in the output's fixed order.
    pub fn fields(&self) -> [(&'static str, u64); 19] {
        let values = [
            self.insns,
            self.turns,
            self.loads,
            self.stores,
            self.atomics,
            self.io,
            self.unmapped,
            self.local,
            self.remote,
            self.dist_sum,
            self.hits,
            self.l2_hits,
            self.llc_hits,
            self.miss_local,
            self.miss_remote,
            self.hitm_local,
            self.hitm_remote,
            self.inval,
            self.writebacks,
        ];
        core::array::from_fn(|i| (COUNTERS[i], values[i]))
    }

    pub(crate) fn add(&mut self, o: &Counters) {
        let Counters {
            insns,
            turns,
            loads,
            stores,
            atomics,
            io,
            unmapped,
            local,
            remote,
            dist_sum,
            hits,
            l2_hits,
            llc_hits,
            miss_local,
            miss_remote,
            hitm_local,
            hitm_remote,
            inval,
            writebacks,
        } = *o;
        self.insns += insns;
        self.turns += turns;
        self.loads += loads;
        self.stores += stores;
        self.atomics += atomics;
        self.io += io;
        self.unmapped += unmapped;
        self.local += local;
        self.remote += remote;
        self.dist_sum += dist_sum;
        self.hits += hits;
        self.l2_hits += l2_hits;
        self.llc_hits += llc_hits;
        self.writebacks += writebacks;
        self.miss_local += miss_local;
        self.miss_remote += miss_remote;
        self.hitm_local += hitm_local;
        self.hitm_remote += hitm_remote;
        self.inval += inval;
    }
}

/// One line's counters within one region.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LineStats {
    /// Virtual address of the line's first byte, from the first access seen.
    pub vaddr: u64,
    /// The node of the line's memory.
    pub node: u32,
    pub loads: u64,
    pub stores: u64,
    pub atomics: u64,
    pub hitm_local: u64,
    pub hitm_remote: u64,
    pub inval: u64,
}

impl LineStats {
    pub(crate) fn merge(&mut self, o: &LineStats) {
        self.loads += o.loads;
        self.stores += o.stores;
        self.atomics += o.atomics;
        self.hitm_local += o.hitm_local;
        self.hitm_remote += o.hitm_remote;
        self.inval += o.inval;
    }
}

/// Where an access went, as QEMU told it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mem {
    /// An IO access, or one without a physical address.
    Io,
    /// Guest-physical address of a RAM (or unmapped) access.
    Phys(u64),
    /// A RAM address outside every range QEMU's layout maps (see `hwaddr`).
    Unmapped,
}

/// How an access counts: by its instruction's class and its direction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Load,
    Store,
    Atomic,
}

#[derive(Clone, Copy)]
struct Vcpu {
    node: u32,
    /// Index into `Model::regions`.
    region: usize,
    pending_marker: bool,
    pending_watch: bool,
}

struct Region {
    key: u64,
    per_vcpu: Vec<Counters>,
}

/// The whole model: feed it TB executions, markers and accesses; read it with `report`.
pub struct Model {
    cfg: Config,
    dir: Directory,
    /// The finite caches; None: the directory alone (a line stays until invalidated).
    caches: Option<Hierarchy>,
    /// DRAM [reads, writebacks] by (key, vCPU, memory node).
    dram: HashMap<(u64, u64, u64), [u64; 2], FastBuild>,
    /// HITMs by (key, vCPU, the previous owner's node, the line's home node).
    hitm: HashMap<(u64, u64, u64, u64), u64, FastBuild>,
    vcpus: Vec<Vcpu>,
    regions: Vec<Region>,
    region_of_key: HashMap<u64, usize, FastBuild>,
    /// vCPUs now in each key != 0.
    occupants: HashMap<u64, u32, FastBuild>,
    /// Lines of regions some vCPU is in: by key, then line paddr.
    live: HashMap<u64, LineTable, FastBuild>,
    /// Each left region's top-K lines, ranked: (line paddr, stats).
    kept: BTreeMap<u64, Vec<(u64, LineStats)>>,
    /// Lines the kernel named (watch markers): kept past the top K.
    watched: HashSet<u64, FastBuild>,
    last_vcpu: Option<usize>,
}

impl Model {
    pub fn new(cfg: Config) -> Self {
        let vcpus = cfg
            .vcpu_node
            .iter()
            .map(|&node| Vcpu {
                node,
                region: 0,
                pending_marker: false,
                pending_watch: false,
            })
            .collect::<Vec<_>>();
        let regions = vec![Region {
            key: 0,
            per_vcpu: vec![Counters::default(); vcpus.len()],
        }];
        let mut region_of_key = HashMap::default();
        region_of_key.insert(0, 0);
        let caches = cfg
            .caches
            .as_ref()
            .map(|c| Hierarchy::new(c, &cfg.vcpu_node));
        Self {
            caches,
            dram: HashMap::default(),
            hitm: HashMap::default(),
            cfg,
            dir: Directory::new(),
            vcpus,
            regions,
            region_of_key,
            occupants: HashMap::default(),
            live: HashMap::default(),
            kept: BTreeMap::new(),
            watched: Default::default(),
            last_vcpu: None,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    /// vCPU `vcpu` starts a TB of `insns` instructions.
    pub fn tb_exec(&mut self, vcpu: usize, insns: u64) {
        let v = self.vcpus[vcpu];
        let c = &mut self.regions[v.region].per_vcpu[vcpu];
        if self.last_vcpu != Some(vcpu) {
            c.turns += 1;
            self.last_vcpu = Some(vcpu);
        }
        c.insns += insns;
    }

    /// vCPU `vcpu` executed the marker NOP: its next access names its region.
    pub fn marker(&mut self, vcpu: usize) {
        self.vcpus[vcpu].pending_marker = true;
    }

    /// vCPU `vcpu` executed the watch NOP: its next access names a line to keep.
    pub fn watch(&mut self, vcpu: usize) {
        self.vcpus[vcpu].pending_watch = true;
    }

    /// The current region key of `vcpu`.
    pub fn key_of(&self, vcpu: usize) -> u64 {
        self.regions[self.vcpus[vcpu].region].key
    }

    fn enter(&mut self, vcpu: usize, key: u64) {
        let old = self.key_of(vcpu);
        if old == key {
            return;
        }
        if old != 0 {
            let n = self.occupants.get_mut(&old).expect("occupied region");
            *n -= 1;
            if *n == 0 {
                self.occupants.remove(&old);
                self.prune(old);
            }
        }
        if key != 0 {
            *self.occupants.entry(key).or_insert(0) += 1;
        }
        let next = self.regions.len();
        let at = *self.region_of_key.entry(key).or_insert(next);
        if at == next {
            self.regions.push(Region {
                key,
                per_vcpu: vec![Counters::default(); self.vcpus.len()],
            });
        }
        self.vcpus[vcpu].region = at;
    }

    /// Keeps only region `key`'s top lines (with those kept when it was last left) and frees
    /// its live table. Only the top K and the watched lines are copied: a region can touch
    /// millions of lines (latency_matrix's buffers), so no second table or full sort of them.
    fn prune(&mut self, key: u64) {
        let mut lines = self.live.remove(&key).unwrap_or_default();
        for (line, s) in self.kept.remove(&key).unwrap_or_default() {
            lines.merge_kept(line, s);
        }
        let rank = |line: u64, s: &LineStats| {
            (
                Reverse(s.hitm_local + s.hitm_remote),
                Reverse(s.stores + s.atomics),
                line,
            )
        };
        // The `top` best ranks (a max-heap of the best seen, its worst on top), then the
        // watched lines outside them.
        let top = self.cfg.top;
        let mut best = BinaryHeap::with_capacity(top.min(lines.len()) + 1);
        for (line, s) in lines.iter() {
            if top == 0 {
                break;
            }
            best.push(rank(line, s));
            if best.len() > top {
                best.pop();
            }
        }
        let mut chosen: Vec<u64> = best.into_iter().map(|(_, _, line)| line).collect();
        let in_top: HashSet<u64, FastBuild> = chosen.iter().copied().collect();
        chosen.extend(
            self.watched
                .iter()
                .copied()
                .filter(|&l| lines.get(l).is_some() && !in_top.contains(&l)),
        );
        let mut ranked: Vec<(u64, LineStats)> = chosen
            .into_iter()
            .map(|l| (l, *lines.get(l).expect("chosen from the table")))
            .collect();
        ranked.sort_by_key(|(line, s)| rank(*line, s));
        if !ranked.is_empty() {
            self.kept.insert(key, ranked);
        }
    }

    /// One memory access by `vcpu` at virtual `vaddr`.
    pub fn access(&mut self, vcpu: usize, vaddr: u64, mem: Mem, kind: Kind) {
        let v = self.vcpus[vcpu];
        if v.pending_marker {
            self.vcpus[vcpu].pending_marker = false;
            self.enter(vcpu, vaddr);
            return;
        }
        if v.pending_watch {
            self.vcpus[vcpu].pending_watch = false;
            if let Mem::Phys(p) = mem {
                self.watched.insert(p - p % LINE_BYTES);
            }
            return;
        }
        let region = &mut self.regions[v.region];
        let key = region.key;
        let c = &mut region.per_vcpu[vcpu];
        let paddr = match mem {
            Mem::Phys(p) => p,
            Mem::Io => {
                c.io += 1;
                return;
            }
            Mem::Unmapped => {
                c.unmapped += 1;
                return;
            }
        };
        let Some(mem_node) = self.cfg.mem_node(paddr) else {
            c.unmapped += 1;
            return;
        };
        match kind {
            Kind::Load => c.loads += 1,
            Kind::Store => c.stores += 1,
            Kind::Atomic => c.atomics += 1,
        }
        if mem_node == v.node {
            c.local += 1;
        } else {
            c.remote += 1;
        }
        c.dist_sum += u64::from(self.cfg.distance[v.node as usize][mem_node as usize]);
        let write = kind != Kind::Load;
        let (served, inval) = match &mut self.caches {
            Some(h) => {
                let o = h.access(&mut self.dir, vcpu, paddr, write);
                (o.served, o.inval)
            }
            None => {
                let o = self.dir.access(vcpu, paddr, write);
                let served = match o.source {
                    Source::Hit => Served::L1,
                    Source::Miss => Served::Dram,
                    Source::Hitm(x) => Served::Hitm(x),
                };
                (served, o.inval)
            }
        };
        let c = &mut self.regions[v.region].per_vcpu[vcpu];
        let (mut hitm_local, mut hitm_remote) = (0, 0);
        match served {
            Served::L1 => c.hits += 1,
            Served::L2 => c.l2_hits += 1,
            Served::Llc => c.llc_hits += 1,
            Served::Dram => {
                if mem_node == v.node {
                    c.miss_local += 1;
                } else {
                    c.miss_remote += 1;
                }
                let at = (key, vcpu as u64, u64::from(mem_node));
                self.dram.entry(at).or_default()[0] += 1;
            }
            Served::Hitm(o) => {
                let from = self.vcpus[o].node;
                if from == v.node {
                    hitm_local = 1;
                } else {
                    hitm_remote = 1;
                }
                let at = (key, vcpu as u64, u64::from(from), u64::from(mem_node));
                *self.hitm.entry(at).or_default() += 1;
            }
        }
        c.hitm_local += hitm_local;
        c.hitm_remote += hitm_remote;
        c.inval += u64::from(inval);
        if let Some(h) = &self.caches {
            for (w, line) in h.writebacks() {
                let Some(home) = self.cfg.mem_node(line) else {
                    continue;
                };
                let region = &mut self.regions[self.vcpus[w].region];
                region.per_vcpu[w].writebacks += 1;
                let at = (region.key, w as u64, u64::from(home));
                self.dram.entry(at).or_default()[1] += 1;
            }
        }
        if key == 0 {
            return;
        }
        let offset = paddr % LINE_BYTES;
        let s = self
            .live
            .entry(key)
            .or_default()
            .entry(paddr - offset, || LineStats {
                vaddr: vaddr.wrapping_sub(offset),
                node: mem_node,
                ..LineStats::default()
            });
        match kind {
            Kind::Load => s.loads += 1,
            Kind::Store => s.stores += 1,
            Kind::Atomic => s.atomics += 1,
        }
        s.hitm_local += hitm_local;
        s.hitm_remote += hitm_remote;
        s.inval += u64::from(inval);
    }

    /// At exit: every region still occupied keeps only its top lines.
    pub fn finish(&mut self) {
        let mut keys: Vec<u64> = self.occupants.drain().map(|(k, _)| k).collect();
        keys.sort_unstable();
        for key in keys {
            self.prune(key);
        }
    }

    /// Regions' rows sorted by (key, vCPU).
    pub fn region_rows(&self) -> Vec<(u64, usize, Counters)> {
        let mut rows: Vec<(u64, usize, Counters)> = self
            .regions
            .iter()
            .flat_map(|r| r.per_vcpu.iter().enumerate().map(|(v, c)| (r.key, v, *c)))
            .collect();
        rows.sort_by_key(|&(k, v, _)| (k, v));
        rows
    }

    /// DRAM rows: (key, vCPU, memory node, reads, writebacks), sorted, none all zero.
    pub fn dram_rows(&self) -> Vec<(u64, u64, u64, u64, u64)> {
        let mut rows: Vec<_> = self
            .dram
            .iter()
            .filter(|(_, &[r, w])| r + w > 0)
            .map(|(&(k, v, n), &[r, w])| (k, v, n, r, w))
            .collect();
        rows.sort_unstable();
        rows
    }

    /// HITM rows: (key, vCPU, the owner's node, home node, count), sorted.
    pub fn hitm_rows(&self) -> Vec<(u64, u64, u64, u64, u64)> {
        let mut rows: Vec<_> = self
            .hitm
            .iter()
            .filter(|(_, &n)| n > 0)
            .map(|(&(k, v, f, h), &n)| (k, v, f, h, n))
            .collect();
        rows.sort_unstable();
        rows
    }

    /// The kept lines: by key, then rank. Only complete after `finish`.
    pub fn line_rows(&self) -> impl Iterator<Item = (u64, u64, &LineStats)> {
        self.kept
            .iter()
            .flat_map(|(&k, lines)| lines.iter().map(move |(p, s)| (k, *p, s)))
    }

    /// The per-vCPU counters summed over every region.
    pub fn vcpu_totals(&self, vcpu: usize) -> Counters {
        let mut t = Counters::default();
        for r in &self.regions {
            t.add(&r.per_vcpu[vcpu]);
        }
        t
    }

    /// Whole-boot totals, every key and vCPU together.
    pub fn total(&self) -> Counters {
        let mut t = Counters::default();
        for v in 0..self.vcpus.len() {
            t.add(&self.vcpu_totals(v));
        }
        t
    }

    pub fn vcpu_count(&self) -> usize {
        self.vcpus.len()
    }

    /// Lines held in the live per-region table (bounded: regions now occupied).
    pub fn live_lines(&self) -> usize {
        self.live.values().map(|t| t.len()).sum()
    }
}

#[cfg(test)]
#[path = "account_tests.rs"]
mod tests;
