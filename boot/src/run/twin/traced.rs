//! Where the traced side by side (crate::twin_traced, a leaf the HTML report shares) meets the
//! runner: the c2c texts of a finished twin run's det boots, labelled with the boot
//! [`render`] expects, for the console and the JSONL (run/report.rs).

pub use crate::twin_traced::*;

use crate::bench::{BenchRecord, Boot};
use crate::run::twin::table::numalab_design;
use crate::run::Runs;
use numalab_algo::options::Cmdline;

/// The c2c tables of `runs`' traced det boots: numalab's as `numalab`, a Linux boot's under
/// its records' kernel name.
pub fn c2c_of_runs(runs: &Runs) -> Vec<(String, String)> {
    let numalab = runs
        .numalab
        .iter()
        .filter(|r| r.boot == Boot::Det)
        .filter_map(|r| r.trace.as_ref())
        .map(|t| ("numalab".to_string(), t.tables.clone()));
    let linux = runs
        .linux
        .iter()
        .filter(|r| r.boot == Boot::Det)
        .filter_map(|r| {
            let t = r.trace.as_ref()?;
            let kernel = r.config.linux.as_ref().map(|l| l.kernel)?;
            Some((kernel_name(&r.records, kernel), t.tables.clone()))
        });
    numalab.chain(linux).collect()
}

/// The traced side by side of a finished twin run: `all` its records, `options` numalab's
/// kernel options (whose `slub.design` the det boot ran).
pub fn of_runs(runs: &Runs, all: &[BenchRecord], options: &Cmdline) -> Traced {
    render(all, &c2c_of_runs(runs), numalab_design(options))
}
