//! `qemu-run.sh bench` and the no-argument main job, in three steps: a pure plan from the
//! parsed command line to the boots to run (plan.rs; numalab and the Linux twin are one
//! dimension of it), the executor that runs them (execute.rs: builds, QEMU, logs), and one
//! report (report.rs: contract, JSONL and logs (results.rs), tables, SVG, summary, exit
//! status). `--compare` reads two result files instead (compare.rs). What bench was asked is
//! args.rs; what only the Linux twin has (module, initramfs, its contract and table) is twin/.

pub mod args;
pub mod compare;
pub mod console;
pub mod execute;
pub mod lock_stat;
pub mod plan;
pub mod report;
pub mod results;
pub mod soak;
pub mod sysfs;
pub mod twin;

use crate::bench::{BenchRecord, Boot, Violation};
use crate::cli::exit;
use crate::qemu::{Outcome, RunConfig};
use plan::PlanError;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

pub use args::{parse, BenchArgs, DEFAULT_REPS};
pub use execute::{ExecError, Runs};
pub use plan::{count_experiments, Guest, Plan, PlannedBoot, When};
pub use report::{catalog_problems, contract_problems, machine_line};

/// Runs `args`: plan, execute, report; returns the exit status (0: every boot passed and the
/// contract holds; 2 a boot that cannot be planned or started; 3 a build failed).
pub fn run_bench(args: &BenchArgs) -> i32 {
    if let Some(c) = &args.compare {
        return compare::compare_files(c);
    }
    match run_reported(args) {
        Ok(r) => report::finish(&r),
        Err(status) => status,
    }
}

/// Plans, executes and reports `args` (all but [`report::finish`]); Err: the exit status of a
/// plan that could not run.
fn run_reported(args: &BenchArgs) -> Result<report::Reported, i32> {
    let start = Instant::now();
    let plan = match plan::plan(args) {
        Ok(p) => p,
        Err(PlanError::Numalab(e)) => return Err(failed(&e, exit::USAGE)),
        Err(PlanError::Linux(e)) => return Err(failed(&e, exit::BUILD)),
    };
    match execute::execute(&plan) {
        Ok(runs) => Ok(report::report(args, &runs, start)),
        Err(ExecError::Build(e) | ExecError::Linux(e)) => Err(failed(&e, exit::BUILD)),
        Err(ExecError::Numalab(e)) => Err(failed(&e, exit::USAGE)),
    }
}

/// The no-argument main job on `base` (`verbose`: every table): the bench plan, then the short
/// soak, then where everything went and the verdict; the first failing status wins.
pub fn main_job(base: RunConfig, verbose: bool) -> i32 {
    let mut args = BenchArgs::main_job(base.clone());
    args.verbose = verbose;
    match run_reported(&args) {
        Ok(mut r) => {
            println!();
            let soak = crate::run::soak::main_job(&base);
            if r.status == exit::PASS && soak != exit::PASS {
                r.status = soak;
                r.passed = false;
            }
            r.what.push_str(", short soak");
            report::finish(&r)
        }
        Err(status) => status,
    }
}

fn failed(message: &str, status: i32) -> i32 {
    eprintln!("numalab: {message}");
    status
}

/// numalab's boots of `args` (no twin) on `img`, as `run` plans and runs them.
pub fn run_boots(args: &BenchArgs, img: &Path) -> Result<Vec<BootRun>, String> {
    let boots = plan::numalab_boots(args, 0)?;
    execute::run_all(&boots.iter().collect::<Vec<_>>(), img, None)
}

/// One numalab boot: `boot`, repetition `rep`, of `args` on `img`.
pub fn run_boot(args: &BenchArgs, boot: Boot, rep: u32, img: &Path) -> Result<BootRun, String> {
    let b = plan::numalab_boot(args, boot, rep, 0, When::Always)?;
    execute::run_boot(&b, img, None)
}

/// The twin's boots of `args`: builds the module and initramfs (when a selected experiment is
/// mirrored) and runs them.
pub fn linux_boots(args: &BenchArgs) -> Result<Vec<BootRun>, String> {
    let (boots, notes) = plan::linux_boots(args)?;
    for note in notes {
        println!("{note}");
    }
    if boots.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for &kernel in args.kernel.linuxes() {
        let mine: Vec<&PlannedBoot> = boots
            .iter()
            .filter(|b| matches!(&b.guest, Guest::Linux { kernel: k, .. } if *k == kernel))
            .collect();
        let built = twin::build(kernel)?;
        out.extend(execute::run_all(&mine, Path::new("-"), Some(&built))?);
    }
    Ok(out)
}

/// One finished boot.
#[derive(Clone)]
pub struct BootRun {
    pub boot: Boot,
    /// Its repetition (0-based; only tsc and uma boots are repeated).
    pub rep: u32,
    /// Its records' variant (`PlannedBoot::variant`).
    pub variant: Option<String>,
    pub config: RunConfig,
    pub outcome: Outcome,
    /// The BENCH lines that keep the contract.
    pub records: Vec<BenchRecord>,
    /// The BENCH lines that break it.
    pub violations: Vec<Violation>,
    /// What the trace plugin showed (`--trace mem`).
    pub trace: Option<crate::trace::TraceReport>,
}

impl BootRun {
    /// Experiments whose KTest passed without skipping here.
    pub fn ran(&self) -> BTreeSet<String> {
        let registered = &self.outcome.boot_log.registered;
        self.outcome
            .boot_log
            .ktap
            .results
            .iter()
            .filter(|r| r.ok && !r.skipped)
            .filter_map(|r| r.name.split_once('.').map(|(_, n)| n.to_string()))
            .filter(|n| registered.contains(n))
            .collect()
    }

    fn nodes(&self) -> u32 {
        self.outcome
            .boot_log
            .nodes()
            .or_else(|| self.records.first().map(|r| r.nodes))
            .unwrap_or(1)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod twin_det_tests;
