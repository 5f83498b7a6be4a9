//! The rcu_node tree and its grace-period state machine (Linux 6.1 kernel/rcu/tree.c:
//! `rcu_gp_init`, `rcu_report_qs_rnp`, `rcu_gp_cleanup`, `rcu_start_this_gp`).
//!
//! Shape: leaves group CPUs (one leaf per NUMA node, split at 64 CPUs, or `fanout_leaf`
//! consecutive CPUs, Linux's `rcu_fanout_leaf`); inner nodes have up to `FANOUT` (64,
//! RCU_FANOUT on 64-bit) children; nodes are numbered breadth-first from the root (index 0),
//! as `rcu_state.node[]`. A tree with one leaf is that leaf alone.
//!
//! State: each node has `gp_seq` (the grace period it has seen), `qsmask` (children or CPUs
//! that still owe a quiescent state for it) and `qsmaskinit` (the online ones). The root also
//! holds `gp_seq_needed` (the furthest grace period asked for) and the counters. The caller
//! supplies the locking through [`Nodes`]: one lock per node; the start and the end of a grace
//! period hold the root's lock and take the others in index order inside it (root first, as
//! `rcu_gp_init` goes breadth-first); a report holds one node's lock at a time, child then
//! parent (`rcu_report_qs_rnp` drops the child's lock before it takes the parent's).

use super::seq;
use super::{mutated, Mutation};
use alloc::vec::Vec;

/// The root's index.
pub const ROOT: usize = 0;
/// Children of an inner node at most (RCU_FANOUT on 64-bit).
pub const FANOUT: usize = 64;

/// Where a node sits in the tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    pub parent: Option<usize>,
    /// The node's bit in its parent's `qsmask` (`grpmask`).
    pub grpmask: u64,
    /// 0 at the root.
    pub level: u8,
    /// The NUMA node whose memory should hold it: its CPUs' node (a leaf), its first child's.
    pub home_node: u16,
    /// A leaf's CPUs, bit i of `qsmask` for `cpus[i]`; empty for an inner node.
    pub cpus: Vec<u16>,
    pub qsmaskinit: u64,
}

/// The tree's shape for a set of online CPUs.
#[derive(Clone, Debug)]
pub struct Geometry {
    pub shapes: Vec<Shape>,
    /// For each CPU id: its leaf and its bit there (None: not in the tree).
    pub leaf_of_cpu: Vec<Option<(usize, u64)>>,
    pub levels: u8,
}

struct Proto {
    home: u16,
    cpus: Vec<u16>,
    children: Vec<usize>,
}

impl Geometry {
    /// The tree over `cpus` (online CPU id and its NUMA node): one leaf per node (split every
    /// 64 CPUs) when `fanout_leaf` is 0, else one per `fanout_leaf` CPUs in id order (1..=64).
    pub fn new(cpus: &[(u16, u16)], fanout_leaf: usize) -> Result<Geometry, &'static str> {
        if cpus.is_empty() {
            return Err("rcu: no CPU to build the tree over");
        }
        if fanout_leaf > 64 {
            return Err("rcu: fanout_leaf above 64 (a leaf's qsmask is one word)");
        }
        let mut sorted: Vec<(u16, u16)> = cpus.to_vec();
        sorted.sort_unstable();
        sorted.dedup_by_key(|c| c.0);
        let mut leaves: Vec<Proto> = Vec::new();
        if fanout_leaf == 0 {
            let mut by_node: Vec<(u16, u16)> = sorted.iter().map(|&(c, n)| (n, c)).collect();
            by_node.sort_unstable();
            for &(node, cpu) in &by_node {
                match leaves.last_mut() {
                    Some(l) if l.home == node && l.cpus.len() < 64 => l.cpus.push(cpu),
                    _ => leaves.push(Proto {
                        home: node,
                        cpus: alloc::vec![cpu],
                        children: Vec::new(),
                    }),
                }
            }
        } else {
            for chunk in sorted.chunks(fanout_leaf) {
                leaves.push(Proto {
                    home: chunk[0].1,
                    cpus: chunk.iter().map(|c| c.0).collect(),
                    children: Vec::new(),
                });
            }
        }
        let mut levels: Vec<Vec<Proto>> = alloc::vec![leaves];
        while levels.last().map_or(0, |l| l.len()) > 1 {
            let below = levels.last().expect("non-empty");
            let n = below.len();
            let parents = (0..n)
                .step_by(FANOUT)
                .map(|s| Proto {
                    home: below[s].home,
                    cpus: Vec::new(),
                    children: (s..(s + FANOUT).min(n)).collect(),
                })
                .collect();
            levels.push(parents);
        }
        levels.reverse();
        let mut offsets = Vec::with_capacity(levels.len());
        let mut total = 0;
        for l in &levels {
            offsets.push(total);
            total += l.len();
        }
        let max_cpu = sorted.iter().map(|c| c.0 as usize).max().unwrap_or(0);
        let mut geo = Geometry {
            shapes: Vec::with_capacity(total),
            leaf_of_cpu: alloc::vec![None; max_cpu + 1],
            levels: levels.len() as u8,
        };
        for (l, level) in levels.iter().enumerate() {
            for p in level {
                let width = if p.cpus.is_empty() {
                    p.children.len()
                } else {
                    p.cpus.len()
                };
                geo.shapes.push(Shape {
                    parent: None,
                    grpmask: 0,
                    level: l as u8,
                    home_node: p.home,
                    cpus: p.cpus.clone(),
                    qsmaskinit: mask_of(width),
                });
            }
        }
        for (l, level) in levels.iter().enumerate() {
            for (i, p) in level.iter().enumerate() {
                let idx = offsets[l] + i;
                for (bit, &c) in p.children.iter().enumerate() {
                    let child = offsets[l + 1] + c;
                    geo.shapes[child].parent = Some(idx);
                    geo.shapes[child].grpmask = 1 << bit;
                }
                for (bit, &cpu) in p.cpus.iter().enumerate() {
                    geo.leaf_of_cpu[cpu as usize] = Some((idx, 1 << bit));
                }
            }
        }
        Ok(geo)
    }

    /// The leaves' indices.
    pub fn leaves(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.shapes.len()).filter(|&i| !self.shapes[i].cpus.is_empty())
    }

    /// `cpu`'s leaf and bit.
    pub fn leaf_of(&self, cpu: u16) -> Option<(usize, u64)> {
        self.leaf_of_cpu.get(cpu as usize).copied().flatten()
    }

    /// Every node's state before the first grace period.
    pub fn initial_nodes(&self) -> Vec<RcuNode> {
        self.shapes
            .iter()
            .map(|s| RcuNode {
                qsmaskinit: s.qsmaskinit,
                ..RcuNode::default()
            })
            .collect()
    }
}

fn mask_of(width: usize) -> u64 {
    if width >= 64 {
        u64::MAX
    } else {
        (1u64 << width) - 1
    }
}

/// One rcu_node's state (the root's also the grace-period requests and the counters).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RcuNode {
    pub gp_seq: u64,
    pub qsmask: u64,
    pub qsmaskinit: u64,
    /// Root: the furthest grace period asked for (`gp_seq_needed`).
    pub gp_seq_needed: u64,
    /// Root: when the current grace period started (the caller's clock).
    pub gp_start: u64,
    /// Root: grace periods completed.
    pub grace_periods: u64,
    /// Root: the longest grace period, start to end, in the caller's clock.
    pub longest_gp: u64,
}

/// The nodes under the caller's locks: `with(i, f)` runs `f` on node `i` with its lock held.
pub trait Nodes {
    fn with<R>(&self, idx: usize, f: impl FnOnce(&mut RcuNode) -> R) -> R;
}

/// What a quiescent-state report did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Report {
    /// Nothing owed: no grace period, another one, or already reported.
    Stale,
    /// Bits cleared; the grace period goes on.
    Reported,
    /// The report ended the grace period (`gp_seq` after it); `next` when another started.
    Ended { gp_seq: u64, next: bool },
}

/// The current grace-period number (the root's).
pub fn gp_seq<N: Nodes>(nodes: &N) -> u64 {
    nodes.with(ROOT, |r| r.gp_seq)
}

/// `rcu_start_this_gp` for callbacks queued before this call: returns the sequence number
/// after which they may run (`rcu_seq_snap` of the root), records it as needed, and starts a
/// grace period now if none is under way. The second value: whether one started.
pub fn request<N: Nodes>(geo: &Geometry, nodes: &N, now: u64) -> (u64, bool) {
    nodes.with(ROOT, |root| {
        let snap = seq::snap(root.gp_seq);
        if seq::before(root.gp_seq_needed, snap) {
            root.gp_seq_needed = snap;
        }
        let start = !seq::in_progress(root.gp_seq) && !seq::done(root.gp_seq, snap);
        if start {
            start_locked(geo, nodes, root, now);
        }
        (snap, start)
    })
}

/// `rcu_gp_init` with the root's lock held: the new number and every `qsmask` set, root first.
fn start_locked<N: Nodes>(geo: &Geometry, nodes: &N, root: &mut RcuNode, now: u64) {
    root.gp_seq = seq::start(root.gp_seq);
    root.qsmask = root.qsmaskinit;
    root.gp_start = now;
    let gp = root.gp_seq;
    for i in 1..geo.shapes.len() {
        nodes.with(i, |n| {
            n.gp_seq = gp;
            n.qsmask = n.qsmaskinit;
        });
    }
}

/// `rcu_gp_cleanup` with the root's lock held: every node's number moves past the grace
/// period (root last), the counters, and the next start if one was asked for.
fn end_locked<N: Nodes>(geo: &Geometry, nodes: &N, root: &mut RcuNode, now: u64) -> Report {
    let new = seq::end(root.gp_seq);
    for i in 1..geo.shapes.len() {
        nodes.with(i, |n| n.gp_seq = new);
    }
    root.gp_seq = new;
    root.grace_periods += 1;
    root.longest_gp = root.longest_gp.max(now.saturating_sub(root.gp_start));
    let next = !seq::done(new, root.gp_seq_needed);
    if next {
        start_locked(geo, nodes, root, now);
    }
    Report::Ended { gp_seq: new, next }
}

/// `rcu_report_qs_rnp`: clears `mask` in node `idx` for grace period `gp`, and walks up while
/// a node's last bit goes; the root's last ends the grace period.
pub fn report<N: Nodes>(
    geo: &Geometry,
    nodes: &N,
    leaf: usize,
    mask: u64,
    gp: u64,
    now: u64,
) -> Report {
    let mut idx = leaf;
    let mut mask = mask;
    loop {
        let is_leaf = !geo.shapes[idx].cpus.is_empty();
        let step = nodes.with(idx, |n| {
            if n.gp_seq != gp || !seq::in_progress(gp) || n.qsmask & mask == 0 {
                return Some(if idx == leaf {
                    Report::Stale
                } else {
                    Report::Reported
                });
            }
            n.qsmask &= !mask;
            let early = is_leaf && mutated(Mutation::EndOneQsEarly) && n.qsmask.count_ones() == 1;
            if n.qsmask != 0 && !early {
                return Some(Report::Reported);
            }
            if idx == ROOT {
                return Some(end_locked(geo, nodes, n, now));
            }
            None
        });
        if let Some(r) = step {
            return r;
        }
        mask = geo.shapes[idx].grpmask;
        idx = geo.shapes[idx]
            .parent
            .expect("a non-root node has a parent");
    }
}

/// A quiescent state of `cpu` now (the caller is outside every read-side section for the whole
/// call): reported for the grace period its leaf shows, if it still owes one.
pub fn report_cpu<N: Nodes>(geo: &Geometry, nodes: &N, cpu: u16, now: u64) -> Report {
    let Some((leaf, bit)) = geo.leaf_of(cpu) else {
        return Report::Stale;
    };
    let (gp, owes) = nodes.with(leaf, |n| (n.gp_seq, n.qsmask & bit != 0));
    if !seq::in_progress(gp) || !owes {
        return Report::Stale;
    }
    report(geo, nodes, leaf, bit, gp, now)
}

/// `force_quiescent_state` for idle CPUs (Linux's dyntick-idle check, `rcu_implicit_dynticks_qs`):
/// every CPU that owes a quiescent state and `in_eqs` says is idle now has its state reported
/// for it (an idle CPU is in no read-side section, and leaves idle only after this check).
/// When a report ends the grace period and starts the next, the pass starts over for the new
/// one (the CPUs already passed owe it too). Returns the last report that did something.
pub fn force_qs<N: Nodes>(
    geo: &Geometry,
    nodes: &N,
    now: u64,
    in_eqs: impl Fn(u16) -> bool,
) -> Report {
    let mut last = Report::Stale;
    'pass: loop {
        for leaf in geo.leaves() {
            let cpus = &geo.shapes[leaf].cpus;
            let (gp, mask) = nodes.with(leaf, |n| {
                let mut m = 0;
                if seq::in_progress(n.gp_seq) {
                    for (bit, &cpu) in cpus.iter().enumerate() {
                        if n.qsmask & (1 << bit) != 0 && in_eqs(cpu) {
                            m |= 1 << bit;
                        }
                    }
                }
                (n.gp_seq, m)
            });
            if mask == 0 {
                continue;
            }
            let r = report(geo, nodes, leaf, mask, gp, now);
            if r != Report::Stale {
                last = r;
            }
            if let Report::Ended { next: true, .. } = r {
                continue 'pass;
            }
        }
        return last;
    }
}

/// Whether `cpu` still owes a quiescent state to the grace period under way.
pub fn owes_qs<N: Nodes>(geo: &Geometry, nodes: &N, cpu: u16) -> bool {
    geo.leaf_of(cpu).is_some_and(|(leaf, bit)| {
        nodes.with(leaf, |n| seq::in_progress(n.gp_seq) && n.qsmask & bit != 0)
    })
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
