//! The modelled time (docs/costs.md "The modelled time"): an in-order core that waits out
//! every access, which is what MLC's dependent chase measures:
//!
//! ```text
//! cycles = instructions + sum over accesses (latency_cycles(where it was served) - 1)
//! ```
//!
//! with the latency of an L1, L2 or LLC hit from the cost model's header, a DRAM read by a
//! vCPU of node i from node j's memory = matrix[i][j] ns x GHz, and a HITM from node F to the
//! reader's node R = c2c[F][R] ns x GHz (costs/apply.rs). Writebacks are posted: counted and
//! shown, no cycles. Every figure goes out with its breakdown by class and the model's name.

use super::mlc_table::MlcModel;
use super::output::TraceOutput;
use crate::costs::Applied;
use numalab_algo::bench::mlc::Level;
use std::collections::BTreeMap;

/// One region's modelled cycles, by class.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Breakdown {
    pub insns: f64,
    pub l1: f64,
    pub l2: f64,
    pub llc: f64,
    /// (CPU node, memory node) -> (DRAM reads, cycles).
    pub dram: BTreeMap<(u32, u32), (u64, f64)>,
    pub hitm_local: f64,
    pub hitm_remote: f64,
    /// Dirty lines written back (no cycles: posted).
    pub writebacks: u64,
}

/// The record suffixes of the classes, in table order (`modelled_CLASS_cycles...`).
pub const CLASSES: [&str; 8] = [
    "insns",
    "l1",
    "l2",
    "llc",
    "dram_local",
    "dram_remote",
    "hitm_local",
    "hitm_remote",
];

impl Breakdown {
    pub fn dram_local(&self) -> f64 {
        self.dram
            .iter()
            .filter(|((i, j), _)| i == j)
            .map(|(_, (_, c))| c)
            // From +0.0: an empty f64 sum is -0.0, printed as "-0.0" cycles.
            .fold(0.0, |a, c| a + c)
    }

    pub fn dram_remote(&self) -> f64 {
        self.dram
            .iter()
            .filter(|((i, j), _)| i != j)
            .map(|(_, (_, c))| c)
            // From +0.0: an empty f64 sum is -0.0, printed as "-0.0" cycles.
            .fold(0.0, |a, c| a + c)
    }

    /// The classes' cycles in [`CLASSES`] order.
    pub fn classes(&self) -> [f64; 8] {
        [
            self.insns,
            self.l1,
            self.l2,
            self.llc,
            self.dram_local(),
            self.dram_remote(),
            self.hitm_local,
            self.hitm_remote,
        ]
    }

    pub fn total(&self) -> f64 {
        self.classes().iter().sum()
    }

    /// One line: every class, DRAM by (CPU node -> memory node), per `per` operations.
    pub fn describe(&self, per: f64, model: &str) -> String {
        let mut s = format!(
            "{:.1} cycles [{model}]: insns {:.1}, L1 {:.1}, L2 {:.1}, LLC {:.1}",
            self.total() / per,
            self.insns / per,
            self.l1 / per,
            self.l2 / per,
            self.llc / per
        );
        for ((i, j), (_, c)) in &self.dram {
            s.push_str(&format!(", DRAM {i}->{j} {:.1}", c / per));
        }
        s.push_str(&format!(
            ", HITM local {:.1}, HITM remote {:.1}; writebacks {:.2}",
            self.hitm_local / per,
            self.hitm_remote / per,
            self.writebacks as f64 / per
        ));
        s
    }
}

/// Region `key`'s modelled cycles under `costs`.
pub fn region(out: &TraceOutput, key: u64, costs: &Applied) -> Breakdown {
    let m = &costs.model;
    let node_of = |v: u32| costs.shape.vcpu_nodes.get(v as usize).copied().unwrap_or(0);
    let c = out.region_total(key);
    let mut b = Breakdown {
        insns: c.get("insns") as f64,
        l1: c.get("hits") as f64 * (m.l1d.cycles - 1.0),
        l2: c.get("l2_hits") as f64 * (m.l2.cycles - 1.0),
        llc: c.get("llc_hits") as f64 * (m.llc.cycles - 1.0),
        writebacks: c.get("writebacks"),
        ..Breakdown::default()
    };
    for d in out.dram.iter().filter(|d| d.key == key && d.reads > 0) {
        let cpu = node_of(d.vcpu);
        let e = b.dram.entry((cpu, d.node)).or_default();
        e.0 += d.reads;
        e.1 += d.reads as f64 * (costs.dram_cycles(cpu, d.node) - 1.0);
    }
    for h in out.hitm.iter().filter(|h| h.key == key) {
        let reader = node_of(h.vcpu);
        let cycles = h.count as f64 * (costs.hitm_cycles(h.from, reader, h.home) - 1.0);
        if h.from == reader {
            b.hitm_local += cycles;
        } else {
            b.hitm_remote += cycles;
        }
    }
    b
}

/// The applied cost model with one boot's plugin output: what `latency_matrix`'s tables
/// (mlc_table.rs) need, in ns (cycles / GHz).
pub struct Modelled<'a> {
    pub costs: &'a Applied,
    pub out: &'a TraceOutput,
}

impl MlcModel for Modelled<'_> {
    fn name(&self) -> String {
        self.costs.label()
    }

    fn note(&self) -> Option<String> {
        let c = self.costs;
        if c.dram_fallback {
            Some(format!("DRAM and HITM: {}", crate::costs::apply::FALLBACK))
        } else if c.hitm_fallback && c.shape.cpu_nodes().len() > 1 {
            Some(format!(
                "remote HITM: {}: the cost model has no c2c table for this machine, so its remote c2c cells are the model's local HITM x SLIT / 10",
                crate::costs::apply::FALLBACK
            ))
        } else {
            None
        }
    }

    fn region_ns(&self, key: u64) -> Option<f64> {
        if self.out.region_total(key).get("insns") == 0 {
            return None;
        }
        Some(region(self.out, key, self.costs).total() / self.costs.model.ghz)
    }

    fn dram_ns(&self, cpu_node: usize, mem_node: usize) -> Option<f64> {
        let c = self.costs;
        Some(c.dram_cycles(cpu_node as u32, mem_node as u32) / c.model.ghz)
    }

    fn c2c_ns(&self, writer_node: usize, reader_node: usize, home_node: usize) -> Option<f64> {
        let c = self.costs;
        let (w, r, h) = (writer_node as u32, reader_node as u32, home_node as u32);
        Some(c.hitm_cycles(w, r, h) / c.model.ghz)
    }

    fn level_ns(&self, level: Level) -> Option<f64> {
        let m = &self.costs.model;
        let l = match level {
            Level::L1 => m.l1d,
            Level::L2 => m.l2,
            Level::Llc => m.llc,
        };
        Some(l.cycles / m.ghz)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::costs::{presets, Shape};
    use crate::trace::output::{parse, tests::SAMPLE};

    fn two_nodes() -> Applied {
        let shape = Shape {
            distances: vec![vec![10, 21], vec![21, 10]],
            vcpu_nodes: vec![0, 1],
            mem_nodes: vec![0, 1],
        };
        presets::for_machine(None, &shape).unwrap()
    }

    #[test]
    fn a_class_without_events_is_plus_zero() {
        let b = Breakdown::default();
        assert!(b.dram_local().is_sign_positive() && b.dram_remote().is_sign_positive());
    }

    #[test]
    fn each_class_costs_its_latency_minus_one() {
        let a = two_nodes();
        assert_eq!(a.model.name, "cascadelake-2s");
        assert!(!a.dram_fallback && !a.hitm_fallback);
        let out = parse(SAMPLE).unwrap();
        let b = region(&out, 0x10, &a);
        let g = 2.5;
        assert_eq!(b.insns, 150.0);
        assert_eq!(b.l1, 3.0 * (4.0 - 1.0));
        assert_eq!(b.l2, 1.0 * (14.0 - 1.0));
        assert_eq!(b.llc, 1.0 * (50.0 - 1.0));
        // vCPU 0 (node 0): 2 local reads, 1 from node 1; vCPU 1 (node 1): 1 local read.
        let near = |x: f64, y: f64| (x - y).abs() < 1e-9;
        assert!(near(b.dram[&(0, 0)].1, 2.0 * (78.6 * g - 1.0)));
        assert!(near(b.dram[&(0, 1)].1, 144.1 * g - 1.0));
        assert!(near(b.dram[&(1, 1)].1, 78.5 * g - 1.0));
        // HITM on node 0 from node 1, line homed on node 1 (the writer's): 111.0 ns.
        assert!(near(b.hitm_remote, 2.0 * (111.0 * g - 1.0)));
        assert_eq!(b.hitm_local, 0.0);
        assert_eq!(b.writebacks, 1);
        let sum = b.insns + b.l1 + b.l2 + b.llc + b.dram_local() + b.dram_remote() + b.hitm_remote;
        assert!(near(b.total(), sum));
    }

    #[test]
    fn a_line_homed_at_the_reader_uses_that_table() {
        let a = two_nodes();
        let g = 2.5;
        // Writer node 1, reader node 0: homed at the writer 111.0 ns, at the reader 176.8 ns.
        assert!((a.hitm_cycles(1, 0, 1) - 111.0 * g).abs() < 1e-9);
        assert!((a.hitm_cycles(1, 0, 0) - 176.8 * g).abs() < 1e-9);
        assert!((a.hitm_cycles(0, 0, 1) - 50.1 * g).abs() < 1e-9);
    }

    #[test]
    fn an_unrolled_chase_costs_the_level_per_load() {
        // One `mov rax, [rax]` per load: instructions == loads, so cycles per load is the
        // level's latency exactly.
        let a = two_nodes();
        let n = 1000u64;
        let text = format!(
            "numalab-trace 2\nvcpus 2\ncaches none\n\
             region 0x1 vcpu 0 insns {n} turns 1 loads {n} stores 0 atomics 0 io 0 unmapped 0 local {n} remote 0 dist_sum {} hits 0 l2_hits 0 llc_hits 0 miss_local {n} miss_remote 0 hitm_local 0 hitm_remote 0 inval 0 writebacks 0\n\
             dram 0x1 vcpu 0 node 1 reads {n} writebacks 0\n",
            10 * n
        );
        let out = parse(&text).unwrap();
        let per_load = region(&out, 1, &a).total() / n as f64;
        assert!((per_load - 144.1 * 2.5).abs() < 1e-9, "{per_load}");
    }

    #[test]
    fn the_mlc_tables_get_the_models_own_figures_in_ns() {
        let a = two_nodes();
        let out = parse(SAMPLE).unwrap();
        let m = Modelled {
            costs: &a,
            out: &out,
        };
        let near = |x: Option<f64>, y: f64| (x.unwrap() - y).abs() < 1e-9;
        assert_eq!(m.name(), "cascadelake-2s");
        assert_eq!(m.note(), None);
        assert!(near(m.dram_ns(0, 1), 144.1));
        assert!(near(m.dram_ns(1, 1), 78.5));
        // Homed at the writer, at the reader, and the diagonal (the local HITM).
        assert!(near(m.c2c_ns(1, 0, 1), 111.0));
        assert!(near(m.c2c_ns(1, 0, 0), 176.8));
        assert!(near(m.c2c_ns(0, 0, 0), 50.1));
        assert!(near(m.level_ns(Level::L1), 4.0 / 2.5));
        assert!(near(m.level_ns(Level::Llc), 50.0 / 2.5));
        assert!(near(
            m.region_ns(0x10),
            region(&out, 0x10, &a).total() / 2.5
        ));
        assert_eq!(m.region_ns(0x999), None);
    }
}
