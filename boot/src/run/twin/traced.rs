//! Where the traced side by side (crate::report::twin_traced, a leaf the HTML report shares) meets the
//! runner: the c2c texts of a finished twin run's det boots, labelled with the boot
//! [`render`] expects, for the console and the JSONL (run/report.rs).

pub use crate::report::twin_traced::*;

use crate::bench::{BenchRecord, Boot};
use crate::build::linux_kernel::LinuxKernel;
use crate::run::twin::table::numalab_design;
use crate::run::Runs;
use numalab_algo::options::Cmdline;

/// The boot label [`render`] takes for a traced boot's c2c text: a det boot's, numalab's
/// (`linux` None) as `numalab` (`numalab [VARIANT]` for its run under another `slub.design`),
/// a Linux kernel's under its record name; None for other boots.
pub fn c2c_label(
    boot: Boot,
    linux: Option<LinuxKernel>,
    records: &[BenchRecord],
) -> Option<String> {
    match (boot, linux) {
        (Boot::Det, None) => Some(match records.iter().find_map(|r| r.variant.as_ref()) {
            Some(v) => format!("numalab [{v}]"),
            None => "numalab".into(),
        }),
        (Boot::Det, Some(k)) => Some(kernel_name(records, k)),
        _ => None,
    }
}

/// The c2c tables of `runs`' traced det boots, labelled by [`c2c_label`].
pub fn c2c_of_runs(runs: &Runs) -> Vec<(String, String)> {
    runs.numalab
        .iter()
        .map(|r| (r, None))
        .chain(
            runs.linux
                .iter()
                .map(|r| (r, r.config.kernel.linux.as_ref().map(|l| l.kernel))),
        )
        .filter_map(|(r, linux)| {
            let t = r.trace.as_ref()?;
            Some((c2c_label(r.boot, linux, &r.records)?, t.tables.clone()))
        })
        .collect()
}

/// The traced side by side of a finished twin run: `all` its records, `options` numalab's
/// kernel options (whose `slub.design` the det boot ran).
pub fn of_runs(runs: &Runs, all: &[BenchRecord], options: &Cmdline) -> Traced {
    render(all, &c2c_of_runs(runs), numalab_design(options))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn det_boots_are_labelled_by_kernel() {
        let r = BenchRecord {
            kernel: "linux-6.1.192".into(),
            ..BenchRecord::for_test(["b", "c", "m", "u"], 8, Boot::Det, 0, 1.0)
        };
        let v61 = Some(LinuxKernel::V6_1);
        assert_eq!(c2c_label(Boot::Det, None, &[]).as_deref(), Some("numalab"));
        let named = c2c_label(Boot::Det, v61, std::slice::from_ref(&r));
        assert_eq!(named.as_deref(), Some("linux-6.1.192"));
        let bare = c2c_label(Boot::Det, Some(LinuxKernel::V7), &[r]);
        assert_eq!(bare.as_deref(), Some("linux-7"));
        assert_eq!(c2c_label(Boot::Icount, None, &[]), None);
        let partial = BenchRecord {
            kernel: "numalab".into(),
            variant: Some("slub.design=partial".into()),
            ..BenchRecord::for_test(["b", "c", "m", "u"], 8, Boot::Det, 0, 1.0)
        };
        let label = c2c_label(Boot::Det, None, &[partial]);
        assert_eq!(label.as_deref(), Some("numalab [slub.design=partial]"));
        assert_eq!(c2c_label(Boot::Tsc, v61, &[]), None);
    }
}
