//! What the kernel said about its timed regions on the console (kernel/src/bench/region.rs):
//! `# trace region 0xKEY: BENCH CASE cpus K` before a region, `# trace ops 0xKEY N` after it
//! (the operations it did), and `# trace name 0xADDR BYTES: LABEL` for the objects the c2c
//! table should name. A name holds from its line on, so each region keeps the names printed
//! before it (a cache freed and made again at the same address is named anew).

use crate::wire::BootLog;

pub use crate::wire::trace::{Region, TraceLog};

/// The `kernel` field of a Linux twin boot's trace records: the name the module printed on its
/// `# bench: clock=... kernel=NAME` line (`linux-6.1.192`), else the first BENCH record's,
/// else the `--kernel` name.
pub fn kernel_name(
    log: &BootLog,
    records: &[crate::bench::BenchRecord],
    kernel: crate::build::linux_kernel::LinuxKernel,
) -> String {
    let linux = crate::build::linux_kernel::LinuxKernel::is_linux;
    log.kernel()
        .filter(|k| linux(k))
        .map(String::from)
        .or_else(|| records.iter().map(|r| r.kernel.clone()).find(|k| linux(k)))
        .unwrap_or_else(|| kernel.name().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regions_keep_the_names_printed_before_them() {
        let log = "# trace name 0x1000 64: c node 0 list_lock\n\
                   # trace region 0x20: slub_list_lock linux_default cpus 8\n\
                   # trace ops 0x20 12345\n\
                   # trace name 0x1000 64: c node 1 list_lock\n\
                   # trace region 0x21: slub_list_lock partial_64 cpus 8\n";
        let r = BootLog::parse(log).trace.regions;
        assert_eq!(r.len(), 2);
        assert_eq!(r[0].ops, Some(12345));
        assert_eq!(r[1].ops, None);
        assert_eq!(r[0].name_of(0x1010), Some("c node 0 list_lock"));
        assert_eq!(r[1].name_of(0x1010), Some("c node 1 list_lock"));
        assert_eq!(r[1].name_of(0x1040), None);
        assert_eq!(
            (r[1].bench.as_str(), r[1].case.as_str(), r[1].cpus),
            ("slub_list_lock", "partial_64", 8)
        );
    }

    #[test]
    fn the_kernel_mark_with_and_without_a_symbol() {
        let kernel_mark = |log: &str| BootLog::parse(log).trace.kernel;
        assert_eq!(
            kernel_mark("x\n# trace kernel 0x2000\n"),
            Some((0x2000, None))
        );
        assert_eq!(
            kernel_mark("# trace kernel 0xffffffff9aa0b000 jiffies_64\n"),
            Some((0xffffffff9aa0b000, Some("jiffies_64".into())))
        );
        assert_eq!(kernel_mark("# trace kernel nothex\n"), None);
    }
}
