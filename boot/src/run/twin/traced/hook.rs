//! Where the traced side by side meets the runner: the c2c texts of a finished run's det boots
//! (console and JSONL, run/report.rs) or of a run folder's `c2c-*.txt` files (the HTML report,
//! html/report.rs), each labelled with the boot [`super::render`] expects.

use super::{render, Traced};
use crate::bench::{BenchRecord, Boot};
use crate::linux_kernel::LinuxKernel;
use crate::run::twin::table::numalab_design;
use crate::run::Runs;
use numalab_algo::options::Cmdline;

/// The record name of `kernel` among `records` (`linux-6.1.192`), else its `--kernel` name.
fn kernel_name(records: &[BenchRecord], kernel: LinuxKernel) -> String {
    records
        .iter()
        .find(|r| kernel.owns(&r.kernel))
        .map_or(kernel.name().to_string(), |r| r.kernel.clone())
}

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

/// The boot a run folder's c2c file `name` is of, as [`render`] takes it: `c2c-det-repN.txt`
/// numalab's det boot; `c2c-linux-det*.txt` Linux 6.1's, `c2c-linux7-det*.txt` 7.x's (their
/// record names from `records`); None for any other boot's (icount, tsc) or file.
pub fn c2c_boot(name: &str, records: &[BenchRecord]) -> Option<String> {
    let stem = name.strip_prefix("c2c-")?.strip_suffix(".txt")?;
    if stem.starts_with("det-") {
        return Some("numalab".into());
    }
    for kernel in [LinuxKernel::V7, LinuxKernel::V6_1] {
        let prefix = format!("{}det", kernel.log_prefix());
        if stem == prefix || stem.starts_with(&format!("{prefix}-")) {
            return Some(kernel_name(records, kernel));
        }
    }
    None
}

/// The c2c texts of a run folder's files (`(name, text)`), labelled by [`c2c_boot`].
pub fn c2c_of_folder(files: &[(String, String)], records: &[BenchRecord]) -> Vec<(String, String)> {
    files
        .iter()
        .filter_map(|(name, text)| Some((c2c_boot(name, records)?, text.clone())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c2c_file_names_name_their_boots() {
        let r = BenchRecord {
            kernel: "linux-7.3.4".into(),
            ..BenchRecord::for_test(["b", "c", "m", "u"], 8, Boot::Det, 0, 1.0)
        };
        let records = [r];
        let of = |n: &str| c2c_boot(n, &records);
        assert_eq!(of("c2c-det-rep0.txt").as_deref(), Some("numalab"));
        assert_eq!(of("c2c-linux7-det.txt").as_deref(), Some("linux-7.3.4"));
        assert_eq!(of("c2c-linux7-det-2.txt").as_deref(), Some("linux-7.3.4"));
        assert_eq!(of("c2c-linux-det-2.txt").as_deref(), Some("linux-6.1"));
        assert_eq!(of("c2c-icount-rep0.txt"), None);
        assert_eq!(of("c2c-linux-icount.txt"), None);
        assert_eq!(of("c2c-linux-detour.txt"), None);
        assert_eq!(of("det.log"), None);
        let files = vec![
            ("c2c-det-rep0.txt".to_string(), "A".to_string()),
            ("c2c-tsc-rep0.txt".to_string(), "B".to_string()),
        ];
        assert_eq!(
            c2c_of_folder(&files, &records),
            [("numalab".to_string(), "A".to_string())]
        );
    }
}
