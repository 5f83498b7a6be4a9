//! The experiment catalog: every benchmark's facts in one table, read by the kernel (names,
//! the cases `record` accepts) and by the host (boot plan, output contract, baselines, seeds
//! table, the Linux twin's list).
//!
//! One `const` per experiment (in `slab.rs`, `sheaves.rs`, `system.rs` and `vmalloc.rs`),
//! listed in [`CATALOG`] in the order the host names them in `bench=`. Adding an experiment is its kernel file
//! (kernel/src/bench/NAME.rs), its entry here, its section in docs/benchmarks.md and, when
//! Linux mirrors it, linux/twin/NAME.c and its line in linux/twin/experiments.h (checked
//! against this table by boot/src/run/twin/tests.rs; docs/architecture.md, "Adding an
//! experiment"). The tests below check the table against itself; the kernel's `bench.plan`
//! and `record` check it against the registered experiments and every BENCH line; the host's
//! smoke benchmark test (tests/s09_bench.rs) checks that every case and required metric of
//! an experiment that ran was printed.

mod kfree_rcu;
mod mlc;
mod sheaves;
mod slab;
mod system;
mod vmalloc;

pub use kfree_rcu::KFREE_RCU_SCALE;
pub use mlc::{cell_case, CELL_NODES, LATENCY_MATRIX};
pub use sheaves::{MEMORYLESS_SHEAVES, SHEAVES_OPT_IN, SHEAVES_VS_PARTIAL};
pub use slab::{ALLOC_PEERS, MEMORYLESS_NODE, NUMA_LOCALITY, SLABINFO_READER, SLUB_LIST_LOCK};
pub use system::{CLOCK_OVERHEAD, PAGE_ALLOC, SMP_CALLS, VMALLOC_SCALING};
pub use vmalloc::{ALL_TESTS, TEST_VMALLOC, VMALLOC_PAGE_ORDER};

/// Every experiment, in the order the host lists them in a det boot's `bench=`.
pub const CATALOG: &[&Experiment] = &[
    &CLOCK_OVERHEAD,
    &PAGE_ALLOC,
    &ALLOC_PEERS,
    &SMP_CALLS,
    &SLUB_LIST_LOCK,
    &SLABINFO_READER,
    &NUMA_LOCALITY,
    &VMALLOC_SCALING,
    &TEST_VMALLOC,
    &VMALLOC_PAGE_ORDER,
    &MEMORYLESS_NODE,
    &SHEAVES_VS_PARTIAL,
    &MEMORYLESS_SHEAVES,
    &SHEAVES_OPT_IN,
    &KFREE_RCU_SCALE,
    &LATENCY_MATRIX,
];

/// The experiment called `name`, if the catalog has it.
pub fn find(name: &str) -> Option<&'static Experiment> {
    CATALOG.iter().copied().find(|e| e.name == name)
}

/// Every experiment's name, in catalog order.
pub fn names() -> impl Iterator<Item = &'static str> + Clone {
    CATALOG.iter().map(|e| e.name)
}

/// The experiment of a BENCH record of `bench`/`case`, or why the catalog refuses it (the
/// kernel's `record` prints nothing then and fails the experiment with this message).
pub fn check(bench: &str, case: &str) -> Result<&'static Experiment, alloc::string::String> {
    let Some(e) = find(bench) else {
        return Err(alloc::format!(
            "bench: experiment '{bench}' is not in the catalog (kernel/algo/src/bench/catalog; \
             known: {})",
            names().collect::<alloc::vec::Vec<_>>().join(", ")
        ));
    };
    if !e.has_case(case) {
        return Err(alloc::format!(
            "bench: {bench} printed case '{case}', which its catalog entry does not list \
             (kernel/algo/src/bench/catalog; its cases: {})",
            e.cases
                .iter()
                .map(|c| c.name)
                .collect::<alloc::vec::Vec<_>>()
                .join(", ")
        ));
    }
    Ok(e)
}

/// Which SLUB design an experiment measures (the `slub.design` option, docs/slub.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Designs {
    /// Not a slab experiment (or SLUB only as the kernel's own heap).
    NoSlab,
    /// Whatever the boot chose (`slub.design`, default sheaves): the kmalloc caches.
    Boot,
    /// The partial design whatever the boot chose: it replays a thread of the per-CPU
    /// partial era (Linux up to 6.17) and tunes its knobs.
    Partial,
    /// Both, side by side in one boot, on caches of its own.
    Both,
}

/// Which kind of boot a measurement comes from (docs/benchmarks.md, the boot table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Boot {
    /// One CPU under `-icount shift=0,sleep=off`: instruction metrics.
    Icount,
    /// All CPUs under `-icount shift=0,sleep=off`: QEMU runs the vCPUs round-robin on one host
    /// thread, so every count is a function of the code alone (the same in every run).
    Det,
    /// All CPUs, plain multi-threaded TCG: contention, throughput, memory.
    Tsc,
    /// The `uma` preset with the machine's CPUs and memory (memoryless_node's `single_node`).
    Uma,
}

impl Boot {
    /// Every boot.
    pub const ALL: [Boot; 4] = [Boot::Icount, Boot::Det, Boot::Tsc, Boot::Uma];

    pub fn name(self) -> &'static str {
        match self {
            Boot::Icount => "icount",
            Boot::Det => "det",
            Boot::Tsc => "tsc",
            Boot::Uma => "uma",
        }
    }

    pub fn from_name(name: &str) -> Option<Boot> {
        Boot::ALL.into_iter().find(|b| b.name() == name)
    }

    /// The clock the kernel reads in this boot: `icount` (rdtsc counts guest instructions)
    /// in the icount and det boots, `tsc` (host time) in the others.
    pub fn clock(self) -> super::Clock {
        match self {
            Boot::Icount | Boot::Det => super::Clock::Icount,
            Boot::Tsc | Boot::Uma => super::Clock::Tsc,
        }
    }

    /// True when every value this boot prints repeats exactly from run to run (icount: one
    /// CPU; det: round-robin vCPUs under icount). The other boots run on host time and are
    /// repeated (`--reps`).
    pub fn deterministic(self) -> bool {
        matches!(self, Boot::Icount | Boot::Det)
    }

    const fn bit(self) -> u8 {
        1 << self as u8
    }
}

/// A set of boots.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Boots(u8);

impl Boots {
    pub const TSC: Boots = Boots(Boot::Tsc.bit());
    pub const DET: Boots = Boots(Boot::Det.bit());
    pub const ICOUNT: Boots = Boots(Boot::Icount.bit());
    pub const UMA: Boots = Boots(Boot::Uma.bit());

    /// Both sets (`Boots::TSC.and(Boots::DET)`).
    pub const fn and(self, other: Boots) -> Boots {
        Boots(self.0 | other.0)
    }

    pub const fn contains(self, boot: Boot) -> bool {
        self.0 & boot.bit() != 0
    }

    /// True when every boot of `self` is in `other`.
    pub const fn within(self, other: Boots) -> bool {
        self.0 & !other.0 == 0
    }

    /// The boots of the set, in [`Boot::ALL`] order.
    pub fn iter(self) -> impl Iterator<Item = Boot> {
        Boot::ALL.into_iter().filter(move |b| self.contains(*b))
    }
}

/// tsc and det: a multi-CPU experiment that prints counts.
pub const TSC_DET: Boots = Boots::TSC.and(Boots::DET);
/// tsc and icount: an experiment that does not print counts (no det boot).
pub const TSC_ICOUNT: Boots = Boots::TSC.and(Boots::ICOUNT);

/// One case an experiment prints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Case {
    pub name: &'static str,
    /// The boots it prints in, on the machine the experiment is meant for.
    pub boots: Boots,
    /// False when it may be missing from a boot the experiment ran in (an allocator that
    /// could not claim its arena, a call that needs a second CPU): the smoke test then does
    /// not ask for it.
    pub always: bool,
}

/// A case printed in every boot of `boots`.
pub const fn case(name: &'static str, boots: Boots) -> Case {
    Case {
        name,
        boots,
        always: true,
    }
}

/// A case that may be missing from a boot of `boots` (see [`Case::always`]).
pub const fn sometimes(name: &'static str, boots: Boots) -> Case {
    Case {
        always: false,
        ..case(name, boots)
    }
}

/// Which case the tables divide by (`ratio`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Baseline {
    /// One case, for every case.
    Case(&'static str),
    /// `PREFIX/WORKLOAD` for a case `ANY/WORKLOAD` (alloc_peers: `numalab/fast64` is the
    /// baseline of `talc/fast64`).
    PerWorkload(&'static str),
}

impl Baseline {
    /// The rule as the tables print it (`numalab/*` for a per-workload baseline).
    pub fn rule(&self) -> alloc::string::String {
        match self {
            Baseline::Case(c) => (*c).into(),
            Baseline::PerWorkload(p) => alloc::format!("{p}/*"),
        }
    }

    /// The baseline case of `case`, or None when `case` has no workload for a per-workload
    /// rule.
    pub fn of(&self, case: &str) -> Option<alloc::string::String> {
        match self {
            Baseline::Case(c) => Some((*c).into()),
            Baseline::PerWorkload(p) => {
                let (_, workload) = case.split_once('/')?;
                Some(alloc::format!("{p}/{workload}"))
            }
        }
    }
}

/// Which cases a required measurement names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cases {
    /// Each case the experiment prints in that boot ([`Case::boots`]).
    Every,
    /// At least one case.
    Any,
    /// Each of these.
    Only(&'static [&'static str]),
}

/// Metrics the contract requires whenever the experiment ran (and passed) in `boot`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Required {
    pub cases: Cases,
    pub metrics: &'static [&'static str],
    pub boot: Boot,
}

/// A Linux thread (docs/linux-reference.md) the experiment replays: `metric` of `case` (in
/// `boot`) over `metric` of `base` (in `base_boot`), against the thread's own figure.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Seed {
    pub seed: &'static str,
    pub metric: &'static str,
    pub case: &'static str,
    pub boot: Boot,
    pub base: &'static str,
    pub base_boot: Boot,
    /// What the thread reports, in its words and numbers.
    pub thread_figure: &'static str,
    /// The same change as a ratio (new / old) in the thread; only its side of 1 is compared.
    pub thread_ratio: f64,
}

/// One record the Linux mirror prints: its case and metric, in `boot`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TwinRecord {
    pub boot: Boot,
    pub case: &'static str,
    pub metric: &'static str,
}

/// A row of the side-by-side table: numalab's case against Linux's, one metric, one boot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counterpart {
    pub case: &'static str,
    pub linux_case: &'static str,
    pub metric: &'static str,
    pub boot: Boot,
}

/// The experiment's mirror in linux/twin/NAME.c (docs/linux-twin.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Twin {
    /// The boot it measures in on Linux.
    pub boot: Boot,
    /// The records it must print when it ran and passed, each in its boot.
    pub required: &'static [TwinRecord],
    /// True when its required records are spread over several Linux boots of the same kind
    /// (slub_list_lock's order_4 boot): each must come from one of them, not from each.
    pub split_over_boots: bool,
    pub counterparts: &'static [Counterpart],
}

/// The one line the main job prints for an experiment: its metric of record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Headline {
    /// `metric` of `case` over `metric` of `base`, both in `boot` (the ratio, with spread).
    Ratio {
        metric: &'static str,
        case: &'static str,
        base: &'static str,
        boot: Boot,
    },
    /// `metric` of `case` in `boot`, alone (no baseline makes sense).
    Value {
        metric: &'static str,
        case: &'static str,
        boot: Boot,
    },
}

impl Headline {
    /// The metric, case and boot it reads (and the baseline case of a ratio).
    pub fn parts(&self) -> (&'static str, &'static str, Option<&'static str>, Boot) {
        match *self {
            Headline::Ratio {
                metric,
                case,
                base,
                boot,
            } => (metric, case, Some(base), boot),
            Headline::Value { metric, case, boot } => (metric, case, None, boot),
        }
    }
}

/// One experiment: a kernel test of kind bench, registered in the `bench` suite under `name`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Experiment {
    pub name: &'static str,
    /// Every case it prints.
    pub cases: &'static [Case],
    pub baseline: Baseline,
    /// The boots it prints in. `det` runs it again when it prints counts; without `icount`
    /// it is a multi-CPU experiment (it skips the one-CPU boot); `uma` is memoryless_node's
    /// one-node comparison.
    pub boots: Boots,
    /// Measures only on a machine with more than one NUMA node (its metrics are required
    /// only there).
    pub numa_only: bool,
    /// Which SLUB design(s) its caches use.
    pub designs: Designs,
    pub required: &'static [Required],
    pub seeds: &'static [Seed],
    /// Its metric of record: the one line the main job prints for it.
    pub headline: Headline,
    pub twin: Option<Twin>,
}

impl Experiment {
    /// The case `name`, if the experiment prints it.
    pub fn find_case(&self, name: &str) -> Option<&'static Case> {
        self.cases.iter().find(|c| c.name == name)
    }

    /// Whether the experiment prints the case `name`.
    pub fn has_case(&self, name: &str) -> bool {
        self.find_case(name).is_some()
    }

    /// True when it measures only with several CPUs: it skips the one-CPU icount boot.
    pub fn multi_cpu_only(&self) -> bool {
        !self.boots.contains(Boot::Icount)
    }

    /// True when it prints counts exactly in the det boot (the host then runs it there).
    pub fn in_det(&self) -> bool {
        self.boots.contains(Boot::Det)
    }

    /// The cases it prints in `boot`.
    pub fn cases_in(&self, boot: Boot) -> impl Iterator<Item = &'static Case> + '_ {
        self.cases.iter().filter(move |c| c.boots.contains(boot))
    }

    /// Every required (case, metric, boot), `*` for [`Cases::Any`], in catalog order.
    pub fn required_triples(&self) -> alloc::vec::Vec<(&'static str, &'static str, Boot)> {
        let mut out = alloc::vec::Vec::new();
        for r in self.required {
            let cases: alloc::vec::Vec<&'static str> = match r.cases {
                Cases::Every => self.cases_in(r.boot).map(|c| c.name).collect(),
                Cases::Any => alloc::vec!["*"],
                Cases::Only(names) => names.to_vec(),
            };
            for case in cases {
                for &metric in r.metrics {
                    out.push((case, metric, r.boot));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests;
