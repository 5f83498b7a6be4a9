//! What the kernel said about its timed regions on the console (kernel/src/bench/region.rs):
//! `# trace region 0xKEY: BENCH CASE cpus K` before a region, `# trace ops 0xKEY N` after it
//! (the operations it did), and `# trace name 0xADDR BYTES: LABEL` for the objects the c2c
//! table should name. A name holds from its line on, so each region keeps the names printed
//! before it (a cache freed and made again at the same address is named anew).

/// One labelled region.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub key: u64,
    pub bench: String,
    pub case: String,
    pub cpus: u32,
    /// Operations the region did, when the experiment said.
    pub ops: Option<u64>,
    /// (address, bytes, label) of the objects named before the region.
    pub names: Vec<(u64, u64, String)>,
}

impl Region {
    /// The label of the named object holding `vaddr`, if any (the latest name wins).
    pub fn name_of(&self, vaddr: u64) -> Option<&str> {
        self.names
            .iter()
            .rev()
            .find(|(a, b, _)| vaddr >= *a && vaddr < a + b.max(&1))
            .map(|(_, _, l)| l.as_str())
    }
}

fn hex(word: &str) -> Option<u64> {
    u64::from_str_radix(word.strip_prefix("0x")?, 16).ok()
}

/// The kernel's anchor (`# trace kernel 0xADDR [SYMBOL]`): the run-time address of a symbol
/// of the booted kernel and, when the line names it, that symbol (the Linux twin's module
/// prints `jiffies_64`, a System.map symbol); without a name it is numalab's
/// `trace_mark::KERNEL`. From it the runner finds where the loader (or KASLR) put the kernel.
pub fn kernel_mark(log: &str) -> Option<(u64, Option<String>)> {
    log.lines()
        .find_map(|l| l.trim_end().strip_prefix("# trace kernel "))
        .and_then(|rest| {
            let mut w = rest.split_whitespace();
            let addr = hex(w.next()?)?;
            Some((addr, w.next().map(String::from)))
        })
}

/// The regions of a console log, in order.
pub fn regions(log: &str) -> Vec<Region> {
    let mut names: Vec<(u64, u64, String)> = Vec::new();
    let mut out: Vec<Region> = Vec::new();
    for line in log.lines() {
        let Some(rest) = line.trim_end().strip_prefix("# trace ") else {
            continue;
        };
        if let Some(r) = rest.strip_prefix("region ") {
            let Some((key, label)) = r.split_once(": ") else {
                continue;
            };
            let w: Vec<&str> = label.split_whitespace().collect();
            if let (Some(key), [bench, case, "cpus", k]) = (hex(key), w.as_slice()) {
                if let Ok(cpus) = k.parse() {
                    out.push(Region {
                        key,
                        bench: bench.to_string(),
                        case: case.to_string(),
                        cpus,
                        ops: None,
                        names: names.clone(),
                    });
                }
            }
        } else if let Some(r) = rest.strip_prefix("name ") {
            let Some((head, label)) = r.split_once(": ") else {
                continue;
            };
            let mut w = head.split_whitespace();
            if let (Some(addr), Some(Ok(bytes))) =
                (w.next().and_then(hex), w.next().map(str::parse))
            {
                names.retain(|(a, _, _)| *a != addr);
                names.push((addr, bytes, label.to_string()));
            }
        } else if let Some(r) = rest.strip_prefix("ops ") {
            let mut w = r.split_whitespace();
            if let (Some(key), Some(Ok(n))) = (w.next().and_then(hex), w.next().map(str::parse)) {
                if let Some(region) = out.iter_mut().rev().find(|x| x.key == key) {
                    region.ops = Some(n);
                }
            }
        }
    }
    out
}

/// The `kernel` field of a Linux twin boot's trace records: the name the module printed on its
/// `# bench: clock=... kernel=NAME` line (`linux-6.1.192`), else the first BENCH record's,
/// else the `--kernel` name.
pub fn kernel_name(
    log: &str,
    records: &[crate::bench::BenchRecord],
    kernel: crate::build::linux_kernel::LinuxKernel,
) -> String {
    log.lines()
        .filter(|l| l.starts_with("# bench: clock="))
        .flat_map(str::split_whitespace)
        .find_map(|w| w.strip_prefix("kernel="))
        .filter(|k| k.starts_with("linux-"))
        .map(String::from)
        .or_else(|| {
            records
                .iter()
                .map(|r| r.kernel.clone())
                .find(|k| k.starts_with("linux-"))
        })
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
        let r = regions(log);
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
