//! What `qemu-run.sh bench` (or the no-argument main job) was asked to do: [`BenchArgs`], made
//! from the parsed command line; the input of the plan.

use super::compare::CompareArgs;
use crate::bench::catalog;
use crate::cli::{self, BenchOptions, Kernel};
use crate::qemu::RunConfig;
use crate::resolve::Job;
use numalab_algo::bench::plan::Selection;
use numalab_algo::options::bench::BENCH;
use numalab_algo::options::Suite;
use std::path::PathBuf;

/// What `qemu-run.sh bench` was asked to do.
#[derive(Clone, Debug)]
pub struct BenchArgs {
    /// The machine and options of the multi-CPU boot; the others derive from it.
    pub base: RunConfig,
    pub smoke: bool,
    /// Echo whole serial consoles (default: progress lines and failures only).
    pub verbose: bool,
    /// The main job: the multi-CPU boot runs every suite (tests, stress, smoke benchmarks).
    pub main_job: bool,
    /// Where results go (default `target/bench` in the checkout).
    pub out_dir: Option<PathBuf>,
    /// `--compare BASE NEW [--all] [--html FILE]`: no boot, compare two runs.
    pub compare: Option<CompareArgs>,
    /// Repetitions of every host-time (tsc, uma) boot.
    pub reps: u32,
    /// Plan no det boot (the main job's memoryless boot: its counts are in the full run).
    pub no_det: bool,
    /// `--icount`: only the instruction-counting boots (det, icount), no tsc or uma boot.
    pub icount_only: bool,
    /// `--kernel`: numalab, the Linux twin (run/twin/) or both.
    pub kernel: Kernel,
    /// `--linux-append`: words added to Linux's command line in the twin's boots.
    pub linux_append: Option<String>,
    /// `--trace mem`: the trace plugin in numalab's det and icount boots.
    pub trace: bool,
    /// `--cost-model NAME|FILE`: the modelled time's cost model (docs/costs.md); None: the
    /// default preset for the machine.
    pub cost_model: Option<String>,
}

/// Repetitions of the host-time boots unless `--reps` says: 3, or 1 for `--smoke`.
pub const DEFAULT_REPS: u32 = 3;

impl BenchArgs {
    /// What the `bench` command line asks for.
    pub fn from_options(o: BenchOptions) -> BenchArgs {
        BenchArgs {
            base: o.machine.config(Suite::Bench),
            smoke: o.smoke,
            verbose: o.verbose,
            main_job: false,
            reps: o.reps.unwrap_or(if o.smoke { 1 } else { DEFAULT_REPS }),
            no_det: false,
            icount_only: o.icount,
            out_dir: o.out,
            kernel: o.kernel,
            linux_append: o.linux_append,
            trace: o.trace.is_some(),
            cost_model: o.cost_model,
            compare: o.compare.and_then(|files| match files.as_slice() {
                [a, b] => Some(CompareArgs {
                    base: a.clone(),
                    new: b.clone(),
                    all: o.all,
                    html: o.html,
                }),
                _ => None,
            }),
        }
    }

    /// The no-argument main job on `base` (the default topology): every suite in the multi-CPU
    /// boot, smoke benchmarks, then the tables.
    pub fn main_job(mut base: RunConfig) -> BenchArgs {
        base.kernel.suite = Suite::All;
        BenchArgs {
            base,
            smoke: true,
            verbose: false,
            main_job: true,
            out_dir: None,
            compare: None,
            reps: 1,
            no_det: false,
            icount_only: false,
            kernel: Kernel::Numalab,
            linux_append: None,
            // The det boot carries the trace plugin, for the seeds table's modelled rows.
            trace: true,
            cost_model: None,
        }
    }

    /// The main job's second machine: seed 003's experiment on the `memoryless` preset (seed 003's
    /// shape), with its uma comparison.
    pub fn memoryless_job(&self) -> Option<BenchArgs> {
        if !self.main_job || self.base.user_describes_machine() {
            return None;
        }
        let mut base = self.base.clone();
        base.machine.topology = crate::qemu::presets::find("memoryless")?;
        base.machine.smp = None;
        base.machine.mem_mib = None;
        base.kernel.suite = Suite::Bench;
        base.kernel
            .options
            .set(&BENCH, &Selection::of([catalog::MEMORYLESS_NODE.name]))
            .ok()?;
        Some(BenchArgs {
            base,
            main_job: false,
            no_det: true,
            trace: false,
            ..self.clone()
        })
    }

    /// The main job's third machine: seed 006's experiment on the `8node-2mem` preset (the
    /// 7.0 regression's shape), its icount boot only: the seed's row compares instruction
    /// counts, and its one-CPU boot on a memoryless node is the cheapest boot that prints it.
    pub fn memoryless_sheaves_job(&self) -> Option<BenchArgs> {
        if !self.main_job || self.base.user_describes_machine() {
            return None;
        }
        let mut base = self.base.clone();
        base.machine.topology = crate::qemu::presets::find("8node-2mem")?;
        base.machine.smp = None;
        base.machine.mem_mib = None;
        base.kernel.suite = Suite::Bench;
        base.kernel
            .options
            .set(&BENCH, &Selection::of([catalog::MEMORYLESS_SHEAVES.name]))
            .ok()?;
        Some(BenchArgs {
            base,
            main_job: false,
            no_det: true,
            icount_only: true,
            // Traced with the main job: seed 006's modelled row is this boot's.
            trace: self.trace,
            ..self.clone()
        })
    }

    /// The experiments `bench=` selects (none named: all).
    pub fn selected(&self) -> Selection {
        self.base.kernel.options.get(&BENCH).unwrap_or_default()
    }
}

/// Parses the arguments after `bench` (as `qemu-run.sh bench ARGS` would).
pub fn parse(args: &[String]) -> Result<BenchArgs, clap::Error> {
    let words = std::iter::once("bench".to_string()).chain(args.iter().cloned());
    match crate::resolve::resolve(cli::parse(words)?) {
        Ok(Job::Bench(o)) => Ok(BenchArgs::from_options(o)),
        Err(e) => Err(clap::Error::raw(
            clap::error::ErrorKind::ValueValidation,
            format!("{e}\n"),
        )),
        _ => Err(clap::Error::raw(
            clap::error::ErrorKind::MissingSubcommand,
            "not a bench command line\n",
        )),
    }
}
