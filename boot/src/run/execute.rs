//! The executor: runs a [`Plan`]'s boots in order under QEMU (qemu.rs: the process, its
//! timeout, the serial log) after building what they boot (numalab's image, the twin's module
//! and initramfs), keeps the progress line (progress.rs) up to date, skips the boots whose condition the
//! earlier ones did not meet, and collects each boot's BENCH lines.

use super::plan::{Guest, Plan, PlannedBoot};
use super::twin;
use super::BootRun;
use crate::bench;
use crate::build::image;
use crate::progress;
use crate::qemu::{self, LinuxBoot};
use crate::trace;
use std::path::{Path, PathBuf};

/// Every boot that ran, by kernel, and the numalab image they booted (`-` without one).
pub struct Runs {
    pub numalab: Vec<BootRun>,
    pub linux: Vec<BootRun>,
    pub image: PathBuf,
}

/// Why the plan could not run to its end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExecError {
    /// numalab's kernel or image did not build.
    Build(String),
    /// A numalab boot could not start (its QEMU arguments).
    Numalab(String),
    /// The twin did not build or a Linux boot could not start.
    Linux(String),
}

/// Runs `plan`: numalab's image, numalab's boots, the notes, then (when it has Linux boots)
/// the twin's build and its boots.
pub fn execute(plan: &Plan) -> Result<Runs, ExecError> {
    let mut image = PathBuf::from("-");
    if let Some(firmware) = plan.numalab_image {
        image = image::build_kernel()
            .and_then(|k| image::build_image(&k, firmware))
            .map_err(ExecError::Build)?;
    }
    progress::start(plan.boots.len());
    let (numalab, linux): (Vec<&PlannedBoot>, Vec<&PlannedBoot>) =
        plan.boots.iter().partition(|b| b.guest == Guest::Numalab);
    let numalab = run_all(&numalab, &image, None).map_err(ExecError::Numalab)?;
    for note in &plan.linux_notes {
        println!("{note}");
    }
    // Each Linux kernel in the plan's order: its build, then its boots (a boot's condition
    // looks at the earlier boots of the same kernel only).
    let mut linux_runs = Vec::new();
    let mut kernels: Vec<twin::LinuxKernel> = Vec::new();
    for b in &linux {
        if let Guest::Linux { kernel, .. } = &b.guest {
            if !kernels.contains(kernel) {
                kernels.push(*kernel);
            }
        }
    }
    for kernel in kernels {
        let boots: Vec<&PlannedBoot> = linux
            .iter()
            .copied()
            .filter(|b| matches!(&b.guest, Guest::Linux { kernel: k, .. } if *k == kernel))
            .collect();
        let built = twin::build(kernel).map_err(ExecError::Linux)?;
        linux_runs.extend(run_all(&boots, Path::new("-"), Some(&built)).map_err(ExecError::Linux)?);
    }
    progress::finish();
    Ok(Runs {
        numalab,
        linux: linux_runs,
        image,
    })
}

/// Runs `boots` of one kernel in order on `img` (`linux`: the twin's build, for Linux boots),
/// each whose condition the earlier boots of its machine meet.
pub fn run_all(
    boots: &[&PlannedBoot],
    img: &Path,
    linux: Option<&LinuxBoot>,
) -> Result<Vec<BootRun>, String> {
    let mut runs: Vec<(u32, BootRun)> = Vec::new();
    for b in boots {
        let earlier = runs
            .iter()
            .filter(|(m, _)| *m == b.machine)
            .flat_map(|(_, r)| &r.records);
        if b.when.holds(earlier) {
            runs.push((b.machine, run_boot(b, img, linux)?));
        } else {
            progress::skipped();
        }
    }
    Ok(runs.into_iter().map(|(_, r)| r).collect())
}

/// Boots `b` on `img` (a Linux boot: on `linux`, the twin's build) and collects its BENCH lines
/// (in the det boot only the counts, `bench::det_keeps`).
pub fn run_boot(b: &PlannedBoot, img: &Path, linux: Option<&LinuxBoot>) -> Result<BootRun, String> {
    let mut config = b.config.clone();
    if let Some(c) = b.costs.as_ref().filter(|_| b.guest == Guest::Numalab) {
        // latency_matrix's buffers match the caches the plugin models (docs/costs.md), in
        // traced and untraced boots alike (the records are the same with and without it).
        // A size the user set with --set stays (under the trace, a buffer that does not fit
        // the modelled caches then fails latency_matrix's check, naming the cell).
        use numalab_algo::options::bench as o;
        for (opt, bytes) in [
            (&o::BENCH_MLC_L1D_BYTES, c.model.l1d.bytes),
            (&o::BENCH_MLC_L2_BYTES, c.model.l2.bytes),
            (&o::BENCH_MLC_LLC_BYTES, c.scaled_llc_bytes()),
        ] {
            if !config.kernel.options.is_set(opt) {
                config.kernel.options.set(opt, bytes)?;
            }
        }
    }
    let what = match &b.guest {
        Guest::Numalab => {
            let what = format!(
                "{}{} (suite={}{}) on {}, {} vCPUs, {}",
                b.boot.name(),
                if b.reps > 1 {
                    format!(" rep {}/{}", b.rep + 1, b.reps)
                } else {
                    String::new()
                },
                config.kernel.suite,
                if b.smoke { ", smoke" } else { "" },
                if config.user_describes_machine() {
                    "a machine of QEMU arguments"
                } else {
                    config.machine.topology.name
                },
                config.vcpus(),
                config.runs_on()
            );
            (what, config.qemu_args(img)?.join(" "))
        }
        Guest::Linux { append, .. } => {
            let mut l = linux
                .ok_or("Linux twin: a Linux boot without the twin's build")?
                .clone();
            l.append = append.clone();
            let release = l.release.clone();
            config.kernel.linux = Some(l);
            (
                format!("linux {} ({release})", b.boot.name()),
                config
                    .qemu_args(Path::new("-"))
                    .map(|a| a.join(" "))
                    .unwrap_or_default(),
            )
        }
    };
    // The QEMU command line of every boot is in the JSONL header (and in a failure report);
    // --verbose prints it here too.
    progress::boot(&what.0);
    if config.output.echo {
        progress::println(&format!("numalab: bench: QEMU arguments: {}", what.1));
    }
    if b.trace {
        let name = format!(
            "{}-{}-m{}-{}",
            b.boot.name(),
            b.rep,
            b.machine,
            std::process::id()
        );
        let dir = crate::build::image::repo_root()
            .join("target")
            .join("trace");
        config.output.trace = Some(trace::prepare(
            &config.qemu_binary(),
            &config.typed_machine(),
            &config.host.extra,
            b.costs.as_ref(),
            &dir,
            &name,
        )?);
    }
    let outcome = qemu::boot(&config, img);
    progress::boot_done(outcome.elapsed);
    let (mut records, violations) = bench::records(&outcome.boot_log, b.boot);
    records.retain(bench::det_keeps);
    let trace = match &config.output.trace {
        Some(files) => Some(traced(
            b,
            config.kernel.linux.as_ref(),
            files,
            &outcome.boot_log,
            &mut records,
        )?),
        None => None,
    };
    let kvm = config.runs_on() == "kvm";
    for r in &mut records {
        r.rep = b.rep;
        r.kvm = kvm;
        r.variant = b.variant.clone();
    }
    Ok(BootRun {
        boot: b.boot,
        rep: b.rep,
        variant: b.variant.clone(),
        config,
        outcome,
        records,
        violations,
        trace,
    })
}

/// What the trace plugin wrote for boot `b` (its console `log`; `linux`: the twin's build for
/// a Linux boot), as records added to `records` and the c2c tables, read by the same code for
/// both kernels (trace::analyse) with each kernel's symbols: numalab's ELF, Linux's System.map
/// (twin/det.rs). Err: the plugin wrote nothing readable.
fn traced(
    b: &PlannedBoot,
    linux: Option<&LinuxBoot>,
    files: &trace::TraceFiles,
    log: &crate::wire::BootLog,
    records: &mut Vec<bench::BenchRecord>,
) -> Result<trace::TraceReport, String> {
    let text = std::fs::read_to_string(&files.out).map_err(|e| {
        format!(
            "--trace: the plugin wrote no {} ({e}); the boot's QEMU said why above",
            files.out.display()
        )
    })?;
    let costs = b
        .costs
        .as_ref()
        .ok_or("--trace: the boot has no cost model (planned without --trace)")?;
    let (syms, kernel) = match (&b.guest, linux) {
        (Guest::Linux { kernel, .. }, Some(l)) => {
            let qemu = b.config.qemu_binary();
            let syms = twin::det::symbols(l, &qemu).unwrap_or_else(|e| {
                progress::println(&format!(
                    "numalab: --trace: {} has no symbols ({e}): its static lines stay unnamed",
                    l.release
                ));
                Vec::new()
            });
            (syms, trace::labels::kernel_name(log, records, *kernel))
        }
        _ => (
            trace::kernel_symbols(&crate::build::image::kernel_elf()),
            trace::NUMALAB.to_string(),
        ),
    };
    // From the kernel's line: a det boot keeps counts only, and may have no record.
    let nodes = log
        .nodes()
        .or_else(|| records.first().map(|r| r.nodes))
        .unwrap_or(1);
    let of = trace::Traced {
        boot: b.boot,
        nodes,
        kernel: &kernel,
    };
    let report = trace::analyse(log, &text, &syms, costs, of)
        .map_err(|e| format!("--trace: {}: {e}", files.out.display()))?;
    trace::merge(records, &report.records);
    progress::println(&report.summary);
    Ok(report)
}
