//! `--trace mem`: the QEMU plugin (trace/ in this workspace, docs/trace.md) in the det and
//! icount boots, and what the runner makes of it: per region of the kernel's experiments
//! (labels.rs), remote-access fraction, mean SLIT distance, cache-line transfers (HITM, local
//! and remote) and invalidations, a modelled time (model.rs), and perf c2c's table of the
//! hottest lines (c2c.rs), as BENCH records of the boot and as text in the run folder.
//!
//! The plugin is built like the kernel, on first use (`cargo build -p numalab-trace
//! --release`, for the API of the boot's QEMU: plugin.rs); the machine it is told about (map.rs) comes from the same typed QEMU machine
//! the boot renders.

pub mod c2c;
pub mod elf;
pub mod labels;
pub mod map;
pub mod mlc_table;
pub mod model;
pub mod output;
pub mod plugin;
pub mod sysmap;

use crate::bench::{BenchRecord, Boot};
use crate::qemu::machine::QemuMachine;
pub use crate::qemu::plugin::TraceFiles;
use std::path::Path;

/// Hottest lines the plugin keeps per region.
pub const TOP_LINES: usize = 64;
/// Lines of each region's table on the console (the run folder has all `TOP_LINES`).
pub const CONSOLE_LINES: usize = 5;

/// What `--trace` records.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum TraceWhat {
    /// Memory accesses by node and a coherence directory of every 64-byte line.
    Mem,
}

/// Writes the plugin's config for `machine` (with the other QEMU arguments `extra`, and the
/// cache directives of `costs`, docs/costs.md) under
/// `dir` (as `NAME.cfg`, output to `NAME.txt`) and returns the files, with the plugin built for
/// the API of the QEMU at `qemu` (plugin.rs).
pub fn prepare(
    qemu: &Path,
    machine: &QemuMachine,
    extra: &[String],
    costs: Option<&crate::costs::Applied>,
    dir: &Path,
    name: &str,
) -> Result<TraceFiles, String> {
    let plugin = plugin::build(plugin::api_of(qemu)?)?;
    let map = map::NodeMap::of(machine, extra)?;
    std::fs::create_dir_all(dir).map_err(|e| format!("--trace: {}: {e}", dir.display()))?;
    let files = TraceFiles {
        plugin,
        config: dir.join(format!("{name}.cfg")),
        out: dir.join(format!("{name}.txt")),
    };
    let mut text = map.config_text(TOP_LINES);
    if let Some(c) = costs {
        text.push_str(&c.cache_directives());
    }
    std::fs::write(&files.config, text)
        .map_err(|e| format!("--trace: {}: {e}", files.config.display()))?;
    let _ = std::fs::remove_file(&files.out);
    Ok(files)
}

/// What one traced boot showed.
#[derive(Clone, Debug, Default)]
pub struct TraceReport {
    /// BENCH records derived per labelled region (counts: exact in det and icount boots).
    pub records: Vec<BenchRecord>,
    /// Every region's c2c table (the run folder's `c2c-BOOT.txt`).
    pub tables: String,
    /// The console's view: each experiment's tables at its largest CPU count, shortened.
    pub console: String,
    /// The boot's totals in one line, and the cost model's line.
    pub summary: String,
    /// The cost model of the modelled figures, as printed beside them.
    pub cost_model: String,
    /// `latency_matrix`'s tables in MLC's layout and its check (mlc_table.rs), when the boot
    /// ran it.
    pub mlc: Option<mlc_table::MlcReport>,
}

/// The boot a trace was taken of: its kind, its machine's nodes, and the kernel it booted
/// (the records' `kernel` field: `numalab`, or the twin module's `linux-6.1.192`).
#[derive(Clone, Copy, Debug)]
pub struct Traced<'a> {
    pub boot: Boot,
    pub nodes: u32,
    pub kernel: &'a str,
}

/// The `kernel` field of numalab's records.
pub const NUMALAB: &str = "numalab";

/// One derived record of `region`.
fn record(
    region: &labels::Region,
    of: Traced,
    metric: &str,
    value: f64,
    unit: &str,
) -> BenchRecord {
    BenchRecord {
        bench: region.bench.clone(),
        case: region.case.clone(),
        metric: metric.into(),
        value,
        unit: unit.into(),
        cpus: region.cpus,
        nodes: of.nodes,
        clock: numalab_algo::bench::Clock::Icount,
        boot: of.boot,
        rep: 0,
        kernel: of.kernel.into(),
        variant: None,
        kvm: false,
    }
}

/// Reads a traced boot of numalab or of the Linux twin, with the same code for both: its
/// console `log` (labels.rs: regions, operations, names, the kernel's anchor), the plugin's
/// output text, the kernel's symbols at link-time addresses (numalab: its ELF's, elf.rs;
/// Linux: its System.map's, sysmap.rs), the cost model, and which boot of which kernel it was.
pub fn analyse(
    log: &crate::wire::BootLog,
    out_text: &str,
    syms: &[(u64, u64, String)],
    costs: &crate::costs::Applied,
    of: Traced,
) -> Result<TraceReport, String> {
    let boot = of.boot;
    let out = output::parse(out_text)?;
    let regions = log.trace.regions.clone();
    // The symbols are link-time addresses: numalab's ELF is linked at 0 and loaded higher,
    // Linux is moved by KASLR. The anchor line gives one symbol's run-time address: numalab's
    // `trace_mark::KERNEL` (no name on the line), or the symbol the line names.
    let mark = log.trace.kernel.clone();
    let anchor = mark.as_ref().and_then(|(_, s)| s.as_deref());
    let link = syms
        .iter()
        .find(|(_, _, n)| match anchor {
            Some(name) => n == name,
            None => n.ends_with("::trace_mark::KERNEL"),
        })
        .map(|s| s.0);
    let shift = match (&mark, link) {
        (Some((run, _)), Some(link)) => Some(run.wrapping_sub(link)),
        _ => None,
    };
    let shifted: Vec<(u64, u64, String)> = match shift {
        Some(d) => syms
            .iter()
            .map(|(a, b, n)| (a.wrapping_add(d), *b, n.clone()))
            .collect(),
        None => Vec::new(),
    };
    let syms = &shifted;
    let mut rep = TraceReport::default();
    // From the kernel's entry on (key 0 is the firmware and the loader, whose length depends
    // on the host's disk I/O: not repeatable).
    let mut kernel = output::Counters::default();
    for ((key, _), c) in &out.regions {
        if *key != 0 {
            kernel.add(c);
        }
    }
    let t = &kernel;
    let from = if of.kernel == NUMALAB {
        format!("{} boot, from the kernel's entry", boot.name())
    } else {
        format!(
            "{} {} boot, from the module's first mark",
            of.kernel,
            boot.name()
        )
    };
    rep.summary = format!(
        "numalab: trace ({from}): {} instructions, {} RAM accesses ({:.2}% remote), {} HITM ({} remote), {} vCPU turns (mean {:.0} instructions)",
        t.get("insns"),
        t.accesses(),
        100.0 * t.get("remote") as f64 / t.accesses().max(1) as f64,
        t.hitm(),
        t.get("hitm_remote"),
        t.get("turns"),
        t.get("insns") as f64 / t.get("turns").max(1) as f64,
    );
    if let (Some((run, Some(name))), true) = (&mark, of.kernel != NUMALAB) {
        rep.summary.push_str(&match shift {
            Some(d) => format!(
                "\nnumalab: {} symbols: System.map shifted by {d:#x} (KASLR: {name} at {run:#x})",
                of.kernel
            ),
            None => format!(
                "\nnumalab: {} symbols: none ({name} is not in the symbols read): static lines unnamed",
                of.kernel
            ),
        });
    }
    rep.summary.push_str(&format!(
        "\nnumalab: modelled time: cost model {} (caches {})",
        costs.label(),
        if out.caches.is_empty() {
            "none"
        } else {
            &out.caches
        }
    ));
    for note in &costs.model.borrowed {
        rep.summary.push_str(&format!("; {note}"));
    }
    rep.cost_model = costs.label();
    let mut best: Vec<(String, u32)> = Vec::new();
    for r in &regions {
        match best.iter_mut().find(|(b, _)| *b == r.bench) {
            Some(x) => x.1 = x.1.max(r.cpus),
            None => best.push((r.bench.clone(), r.cpus)),
        }
    }
    for r in &regions {
        let c = out.region_total(r.key);
        if c.get("insns") == 0 {
            continue; // a region the plugin never saw (not traced, or no CPU marked into it)
        }
        let acc = c.accesses().max(1) as f64;
        let turns = c.get("turns").max(1) as f64;
        // (metric, value, unit): per operation when the experiment said how many it did,
        // else the region's totals.
        let mut figures: Vec<(&str, f64, &str)> = vec![
            (
                "remote_access_fraction",
                c.get("remote") as f64 / acc,
                "fraction",
            ),
            (
                "mean_slit_distance",
                c.get("dist_sum") as f64 / acc,
                "slit_distance",
            ),
            (
                "mean_turn_instructions",
                c.get("insns") as f64 / turns,
                "instructions_per_turn",
            ),
        ];
        let (per, suffix, per_op_suffix) = match r.ops.filter(|&n| n > 0) {
            Some(ops) => (ops as f64 / 1000.0, "_per_kop", "_per_op"),
            None => (1.0, "", ""),
        };
        let per_op = if suffix.is_empty() { 1.0 } else { per * 1000.0 };
        if !suffix.is_empty() {
            figures.push((
                "instructions_per_op",
                c.get("insns") as f64 / per_op,
                "instructions",
            ));
        }
        let names = [
            ("hitm_local", "hitm_local"),
            ("hitm_remote", "hitm_remote"),
            ("invalidations", "inval"),
        ];
        let counted: Vec<(String, f64)> = names
            .iter()
            .map(|(metric, field)| (format!("{metric}{suffix}"), c.get(field) as f64 / per))
            .collect();
        for (metric, value) in &counted {
            figures.push((metric, *value, "transfers"));
        }
        let b = model::region(&out, r.key, costs);
        let mut owned: Vec<(String, f64, &str)> = vec![
            (
                format!("writebacks{suffix}"),
                b.writebacks as f64 / per,
                "transfers",
            ),
            (
                format!("modelled_cycles{per_op_suffix}"),
                b.total() / per_op,
                "modelled_cycles",
            ),
        ];
        for (class, cycles) in model::CLASSES.iter().zip(b.classes()) {
            owned.push((
                format!("modelled_{class}_cycles{per_op_suffix}"),
                cycles / per_op,
                "modelled_cycles",
            ));
        }
        for (metric, value, unit) in figures {
            rep.records.push(record(r, of, metric, value, unit));
        }
        for (metric, value, unit) in owned {
            rep.records.push(record(r, of, &metric, value, unit));
        }
        if boot == Boot::Det && best.iter().any(|(bb, k)| *bb == r.bench && *k == r.cpus) {
            rep.console.push_str(&format!(
                "{} {} cpus {}: modelled {}\n",
                r.bench,
                r.case,
                r.cpus,
                b.describe(per_op, &costs.label())
            ));
        }
        let lines: Vec<(usize, &output::Line)> =
            out.region_lines(r.key).into_iter().enumerate().collect();
        let table = c2c::table(r, &lines, c.hitm(), syms);
        rep.tables.push_str(&table);
        rep.tables.push('\n');
        if best.iter().any(|(b, k)| *b == r.bench && *k == r.cpus) && boot == Boot::Det {
            // The hottest lines, then the named locks further down (where is my lock?).
            let short: Vec<(usize, &output::Line)> = lines
                .iter()
                .filter(|(i, l)| {
                    *i < CONSOLE_LINES || r.name_of(l.vaddr).is_some_and(|n| n.ends_with("lock"))
                })
                .copied()
                .collect();
            rep.console.push_str(&c2c::table(r, &short, c.hitm(), syms));
        }
    }
    let modelled = model::Modelled { costs, out: &out };
    rep.mlc = mlc_table::report(log, &out, &modelled);
    if let Some(m) = &rep.mlc {
        rep.tables.push_str(&m.text);
    }
    Ok(rep)
}

/// Adds a traced boot's `derived` records to the boot's own `records`, except those the kernel
/// already printed itself (same bench, case, metric and CPUs: sheaves_opt_in's
/// `instructions_per_op` in the icount boot): its own figure of the same quantity stays the
/// one of record, never a second value under one key.
pub fn merge(records: &mut Vec<BenchRecord>, derived: &[BenchRecord]) {
    let own: Vec<(String, String, String, u32)> = records
        .iter()
        .map(|r| (r.bench.clone(), r.case.clone(), r.metric.clone(), r.cpus))
        .collect();
    records.extend(
        derived
            .iter()
            .filter(|d| {
                !own.iter()
                    .any(|o| (&o.0, &o.1, &o.2, o.3) == (&d.bench, &d.case, &d.metric, d.cpus))
            })
            .cloned(),
    );
}

/// The kernel ELF's symbols, or none (with a note) when it cannot be read.
pub fn kernel_symbols(elf_path: &Path) -> Vec<(u64, u64, String)> {
    match std::fs::read(elf_path)
        .map_err(|e| e.to_string())
        .and_then(|b| elf::symbols(&b))
    {
        Ok(s) => s,
        Err(e) => {
            eprintln!(
                "numalab: --trace: no symbols from {}: {e}",
                elf_path.display()
            );
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "numalab-trace 2\nvcpus 2\ncaches none\n\
        region 0x20 vcpu 0 insns 1000 turns 4 loads 60 stores 30 atomics 10 io 0 unmapped 0 local 75 remote 25 dist_sum 1250 hits 80 l2_hits 0 llc_hits 0 miss_local 5 miss_remote 5 hitm_local 4 hitm_remote 6 inval 8 writebacks 2\n\
        region 0x21 vcpu 1 insns 500 turns 1 loads 10 stores 0 atomics 0 io 0 unmapped 0 local 10 remote 0 dist_sum 100 hits 10 l2_hits 0 llc_hits 0 miss_local 0 miss_remote 0 hitm_local 0 hitm_remote 0 inval 0 writebacks 0\n\
        dram 0x20 vcpu 0 node 0 reads 5 writebacks 2\n\
        dram 0x20 vcpu 0 node 1 reads 5 writebacks 0\n\
        hitm 0x20 vcpu 0 from 0 home 0 count 4\n\
        hitm 0x20 vcpu 0 from 1 home 1 count 6\n\
        total insns 1500 turns 5 loads 70 stores 30 atomics 10 io 0 unmapped 0 local 85 remote 25 dist_sum 1350 hits 90 l2_hits 0 llc_hits 0 miss_local 5 miss_remote 5 hitm_local 4 hitm_remote 6 inval 8 writebacks 2\n";

    #[test]
    fn records_per_region_per_operation_or_in_total() {
        let log = "# trace region 0x20: slub_list_lock linux_default cpus 2\n\
                   # trace ops 0x20 2000\n\
                   # trace region 0x21: slub_list_lock partial_64 cpus 2\n";
        let shape = crate::costs::Shape {
            distances: vec![vec![10, 21], vec![21, 10]],
            vcpu_nodes: vec![0, 1],
            mem_nodes: vec![0, 1],
        };
        let costs = crate::costs::presets::for_machine(None, &shape).unwrap();
        let of = Traced {
            boot: Boot::Det,
            nodes: 4,
            kernel: NUMALAB,
        };
        let rep = analyse(&crate::wire::BootLog::parse(log), OUT, &[], &costs, of).unwrap();
        let get = |case: &str, metric: &str| {
            rep.records
                .iter()
                .find(|r| r.case == case && r.metric == metric)
                .map(|r| r.value)
                .unwrap_or_else(|| panic!("no {case} {metric}"))
        };
        assert_eq!(get("linux_default", "remote_access_fraction"), 0.25);
        assert_eq!(get("linux_default", "mean_slit_distance"), 12.5);
        assert_eq!(get("linux_default", "mean_turn_instructions"), 250.0);
        assert_eq!(get("linux_default", "hitm_remote_per_kop"), 3.0);
        assert_eq!(get("linux_default", "hitm_local_per_kop"), 2.0);
        assert_eq!(get("linux_default", "invalidations_per_kop"), 4.0);
        assert_eq!(get("linux_default", "writebacks_per_kop"), 1.0);
        assert_eq!(get("linux_default", "instructions_per_op"), 0.5);
        // cascadelake-2s at 2.5 GHz: L1 4 cycles, DRAM 0->0 78.6 ns, 0->1 144.1 ns, HITM local
        // 50.1 ns, remote from node 1 homed at the writer 111.0 ns.
        let g = 2.5;
        let classes = [
            ("insns", 1000.0),
            ("l1", 80.0 * 3.0),
            ("l2", 0.0),
            ("llc", 0.0),
            ("dram_local", 5.0 * (78.6 * g - 1.0)),
            ("dram_remote", 5.0 * (144.1 * g - 1.0)),
            ("hitm_local", 4.0 * (50.1 * g - 1.0)),
            ("hitm_remote", 6.0 * (111.0 * g - 1.0)),
        ];
        let mut total = 0.0;
        for (class, cycles) in classes {
            let m = format!("modelled_{class}_cycles_per_op");
            assert!(
                (get("linux_default", &m) - cycles / 2000.0).abs() < 1e-9,
                "{m}"
            );
            total += cycles;
        }
        assert!((get("linux_default", "modelled_cycles_per_op") - total / 2000.0).abs() < 1e-9);
        // Without its operations, a region's totals.
        assert_eq!(get("partial_64", "hitm_remote"), 0.0);
        assert_eq!(get("partial_64", "modelled_cycles"), 500.0 + 10.0 * 3.0);
        assert_eq!(get("partial_64", "modelled_l1_cycles"), 30.0);
        assert!(rep
            .records
            .iter()
            .all(|r| r.nodes == 4 && r.boot == Boot::Det));
        assert!(rep.summary.contains("1500 instructions"), "{}", rep.summary);
        assert!(
            rep.summary.contains("cost model cascadelake-2s"),
            "{}",
            rep.summary
        );
        assert!(rep.console.contains("[cascadelake-2s]"), "{}", rep.console);
    }
}

#[cfg(test)]
mod twin_tests;
