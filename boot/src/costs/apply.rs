//! A cost model on a booted machine: whether its matrix fits the machine's nodes, the
//! latency of each access class in cycles (docs/costs.md "The modelled time"), the SLIT-scaled
//! fallback where the model does not fit, and the trace plugin's cache directives (sizes,
//! ways, policy, `llc_of`) with the LLC scaled to the vCPUs of each LLC domain.

use super::{CostModel, Level};

/// The booted machine as the cost model needs it (from the trace plugin's node map).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shape {
    /// SLIT rows, one per node.
    pub distances: Vec<Vec<u8>>,
    /// Node of each vCPU.
    pub vcpu_nodes: Vec<u32>,
    /// Nodes with memory, increasing.
    pub mem_nodes: Vec<u32>,
}

impl Shape {
    /// Nodes with a vCPU, increasing.
    pub fn cpu_nodes(&self) -> Vec<u32> {
        let mut v = self.vcpu_nodes.clone();
        v.sort_unstable();
        v.dedup();
        v
    }

    fn slit(&self, i: u32, j: u32) -> f64 {
        self.distances
            .get(i as usize)
            .and_then(|r| r.get(j as usize))
            .map(|&d| d as f64)
            .unwrap_or(if i == j { 10.0 } else { 20.0 })
    }
}

/// Label of every table that uses the SLIT scaling (docs/costs.md).
pub const FALLBACK: &str = "SLIT-scaled fallback";

/// A cost model applied to one machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Applied {
    pub model: CostModel,
    pub shape: Shape,
    /// DRAM latencies are the model's local latency x SLIT / 10 (the matrix does not fit).
    pub dram_fallback: bool,
    /// Remote HITM is the local HITM x SLIT / 10 (no c2c table that fits).
    pub hitm_fallback: bool,
}

/// Whether `m`'s matrix has exactly the machine's CPU nodes as rows and memory nodes as
/// columns; Err says how they differ.
pub fn fits(m: &CostModel, shape: &Shape) -> Result<(), String> {
    let l = m.latency();
    let (mut rows, mut cols) = (l.rows.clone(), l.cols.clone());
    rows.sort_unstable();
    cols.sort_unstable();
    let (cpu, mem) = (shape.cpu_nodes(), shape.mem_nodes.clone());
    if rows == cpu && cols == mem {
        return Ok(());
    }
    Err(format!(
        "cost model {}: its latency matrix is {}x{} (CPU nodes {:?}, memory nodes {:?}) and the machine has CPUs on nodes {:?} and memory on nodes {:?}",
        m.name,
        rows.len(),
        cols.len(),
        rows,
        cols,
        cpu,
        mem
    ))
}

/// Whether a c2c table covers every pair of the machine's CPU nodes.
fn c2c_fits(t: &super::mlc::Matrix, cpu: &[u32]) -> bool {
    cpu.iter()
        .all(|&f| cpu.iter().all(|&r| f == r || t.get(f, r).is_some()))
}

impl Applied {
    /// `m` on `shape`. `explicit` (the user named the model): a matrix that does not fit is an
    /// error; else (the default) the SLIT-scaled fallback, labelled.
    pub fn new(m: CostModel, shape: Shape, explicit: bool) -> Result<Applied, String> {
        let dram_fallback = match fits(&m, &shape) {
            Ok(()) => false,
            Err(e) if explicit => return Err(e),
            Err(_) => true,
        };
        let cpu = shape.cpu_nodes();
        let hitm_fallback =
            dram_fallback || !m.mlc.c2c_writer.as_ref().is_some_and(|t| c2c_fits(t, &cpu));
        Ok(Applied {
            model: m,
            shape,
            dram_fallback,
            hitm_fallback,
        })
    }

    /// The model's name with what is SLIT-scaled, printed beside every modelled figure.
    pub fn label(&self) -> String {
        match (self.dram_fallback, self.hitm_fallback) {
            (true, _) => format!("{}, {FALLBACK}", self.model.name),
            (false, true) if self.shape.cpu_nodes().len() > 1 => {
                format!("{}, remote HITM: {FALLBACK}", self.model.name)
            }
            _ => self.model.name.clone(),
        }
    }

    pub fn cycles(&self, ns: f64) -> f64 {
        ns * self.model.ghz
    }

    /// A DRAM read by a CPU of node `cpu` from node `mem`'s memory, in cycles.
    pub fn dram_cycles(&self, cpu: u32, mem: u32) -> f64 {
        let m = &self.model;
        let ns = if self.dram_fallback {
            m.local_dram_ns() * self.shape.slit(cpu, mem) / 10.0
        } else {
            m.latency()
                .get(cpu, mem)
                .unwrap_or_else(|| m.local_dram_ns() * self.shape.slit(cpu, mem) / 10.0)
        };
        self.cycles(ns)
    }

    /// A HITM by a reader of node `reader` on a line Modified on node `from`, homed on
    /// `home`, in cycles: the local HITM on the reader's own node; else the c2c table homed
    /// at the reader when the line is and the model has one, else the one homed at the
    /// writer; without a table that fits, the local HITM x SLIT / 10.
    pub fn hitm_cycles(&self, from: u32, reader: u32, home: u32) -> f64 {
        let m = &self.model;
        let local = m.mlc.hitm_local.unwrap_or(0.0);
        if from == reader {
            return self.cycles(local);
        }
        if !self.hitm_fallback {
            let reader_table = m.mlc.c2c_reader.as_ref().filter(|_| home == reader);
            let t = reader_table.or(m.mlc.c2c_writer.as_ref());
            if let Some(ns) = t.and_then(|t| t.get(from, reader)) {
                return self.cycles(ns);
            }
        }
        self.cycles(local * self.shape.slit(from, reader) / 10.0)
    }

    /// The LLC domain of each CPU node of the machine: the model's where it fits and says,
    /// else each node its own.
    pub fn llc_domains(&self) -> Vec<(u32, u32)> {
        let cpu = self.shape.cpu_nodes();
        let given = (!self.dram_fallback)
            .then_some(self.model.llc_domains.as_ref())
            .flatten();
        let rows = &self.model.latency().rows;
        let mut out = Vec::new();
        for (i, &n) in cpu.iter().enumerate() {
            let d = given
                .and_then(|d| rows.iter().position(|&r| r == n).map(|p| d[p]))
                .unwrap_or(i as u32);
            out.push((n, d));
        }
        // Renumber domains 0..D-1 in order of first use.
        let mut seen: Vec<u32> = Vec::new();
        for (_, d) in &mut out {
            let k = match seen.iter().position(|s| s == d) {
                Some(k) => k,
                None => {
                    seen.push(*d);
                    seen.len() - 1
                }
            };
            *d = k as u32;
        }
        out
    }

    /// The LLC per domain the plugin gets: the real LLC's share per core times the most vCPUs
    /// any domain has, at least 4 x the L2, at most the real LLC, rounded up to whole sets.
    pub fn scaled_llc_bytes(&self) -> u64 {
        let m = &self.model;
        let domains = self.llc_domains();
        let most = domains
            .iter()
            .map(|(_, d)| {
                let nodes: Vec<u32> = domains
                    .iter()
                    .filter(|(_, e)| e == d)
                    .map(|(n, _)| *n)
                    .collect();
                self.shape
                    .vcpu_nodes
                    .iter()
                    .filter(|v| nodes.contains(v))
                    .count() as u64
            })
            .max()
            .unwrap_or(1);
        scaled_llc(m.llc, m.llc_cores, most, m.l2.bytes)
    }

    /// The plugin config's cache directives (docs/trace.md, the config).
    pub fn cache_directives(&self) -> String {
        let m = &self.model;
        let mut s = format!(
            "# caches of cost model {} (LLC scaled to {} bytes per domain, docs/costs.md)\n",
            m.name,
            self.scaled_llc_bytes()
        );
        s.push_str(&format!("l1d {} {}\n", m.l1d.bytes, m.l1d.ways));
        s.push_str(&format!("l2 {} {}\n", m.l2.bytes, m.l2.ways));
        s.push_str(&format!(
            "llc {} {} {}\n",
            self.scaled_llc_bytes(),
            m.llc.ways,
            m.llc_policy.name()
        ));
        for (node, d) in self.llc_domains() {
            s.push_str(&format!("llc_of {node} {d}\n"));
        }
        s
    }
}

/// The scaling rule: `llc.bytes / cores` per core, times `vcpus`, at least 4 x `l2_bytes`, at
/// most `llc.bytes`, rounded up to a multiple of 64 x ways (whole sets).
pub fn scaled_llc(llc: Level, cores: u32, vcpus: u64, l2_bytes: u64) -> u64 {
    let share = llc.bytes / cores.max(1) as u64 * vcpus;
    let want = share.max(4 * l2_bytes).min(llc.bytes);
    let set = 64 * llc.ways as u64;
    want.div_ceil(set) * set
}
