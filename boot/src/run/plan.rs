//! The plan: from what `bench` was asked ([`BenchArgs`]) to the boots to run, in order, each a
//! [`PlannedBoot`]: its kernel (numalab or the Linux twin: one dimension of the plan, not a
//! second pipeline), its boot (tsc, det, icount, uma), repetition and complete configuration.
//! Pure: reads nothing, starts nothing; the executor (execute.rs) runs the plan.
//!
//! Boots: `tsc` (the machine as given, all CPUs: contention, throughput, memory; repeated
//! `--reps` times with the case order reversed on odd repetitions), `det` (the same machine
//! under `--icount`: QEMU runs the vCPUs round-robin on one host thread, so the counts of the
//! count experiments are exact and repeat; only counts are kept), `icount` (the same machine
//! with one CPU online, `-smp 1,maxcpus=N`, under `--icount`: instruction counts), and `uma`
//! (only when an experiment with a one-node comparison printed results: the `uma` preset with
//! the same CPUs and memory, for its uma cases; repeated like tsc). The main job adds a boot of
//! the `memoryless` preset for seed 003's experiment and an icount boot of `8node-2mem` for
//! seed 006's. Which experiment needs which boot is the
//! catalog's (kernel/algo/src/bench/catalog). The twin's boots (`--kernel linux|both`): icount
//! for its instruction experiments, tsc for the host-timed ones, uma for the memoryless-node
//! experiment when its tsc boot printed, and the list_lock experiment's second (order-4) tsc
//! boot (`catalog::MEMORYLESS_NODE`, `catalog::SLUB_LIST_LOCK`); under `--trace mem`, a traced
//! det boot of its contention experiments and an order-4 one of slub_list_lock, and numalab's
//! det boot again under its other SLUB designs (twin/det.rs).

use super::args::BenchArgs;
use super::twin;
use crate::bench::catalog::{self, CATALOG};
use crate::bench::{BenchRecord, Boot};
use crate::build::image::Firmware;
use crate::cli::Kernel;
use crate::qemu::accel::Accel;
use crate::qemu::RunConfig;
use numalab_algo::bench::plan::Selection;
use numalab_algo::options::bench::{BENCH, BENCH_REP, BENCH_SMOKE};
use numalab_algo::options::slub::SLUB_DESIGN;
use numalab_algo::options::sync::LOCK_STAT;
use numalab_algo::options::Suite;
use numalab_algo::slub::Design;

/// Which kernel a planned boot boots.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Guest {
    /// numalab's disk image.
    Numalab,
    /// Debian's Linux (`kernel`: 6.1 or 7.x) with the numalab_twin module; `append`: words
    /// added to its command line.
    Linux {
        kernel: twin::LinuxKernel,
        append: Option<String>,
    },
}

/// Whether a planned boot runs: always, or only when the earlier boots of its machine and
/// kernel printed what it compares against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum When {
    Always,
    /// An experiment with a one-node comparison printed a case of the machine (numalab's uma
    /// boots).
    UmaComparisonPrinted,
    /// The memoryless-node experiment printed its `linux` case (the twin's uma boot).
    LinuxMemorylessPrinted,
}

impl When {
    /// Whether the condition holds after boots that printed `earlier`.
    pub fn holds<'a>(self, mut earlier: impl Iterator<Item = &'a BenchRecord>) -> bool {
        match self {
            When::Always => true,
            When::UmaComparisonPrinted => earlier.any(|x| {
                catalog::find(&x.bench).is_some_and(|e| {
                    e.boots.contains(Boot::Uma)
                        && e.find_case(&x.case)
                            .is_some_and(|c| !c.boots.contains(Boot::Uma))
                })
            }),
            When::LinuxMemorylessPrinted => {
                earlier.any(|r| r.bench == catalog::MEMORYLESS_NODE.name && r.case == "linux")
            }
        }
    }
}

/// One boot of the plan.
#[derive(Clone, Debug)]
pub struct PlannedBoot {
    pub guest: Guest,
    pub boot: Boot,
    /// Its repetition (0-based; only tsc and uma boots are repeated).
    pub rep: u32,
    /// How many repetitions of this boot the plan has (for the progress line).
    pub reps: u32,
    /// `--smoke` (for the progress line).
    pub smoke: bool,
    /// Everything QEMU gets (for a Linux boot, the executor adds the built image).
    pub config: RunConfig,
    pub when: When,
    /// The machine it boots: 0 the run's, 1 the main job's memoryless machine, 2 its
    /// 8node-2mem machine. `when` looks
    /// at the earlier boots of the same machine and kernel.
    pub machine: u32,
    /// Load the trace plugin (`--trace mem`: numalab's det and icount boots).
    pub trace: bool,
    /// The cost model on this boot's machine (`--cost-model`, else the machine's default),
    /// with `trace` only.
    pub costs: Option<crate::costs::Applied>,
    /// The `variant` of its records: `slub.design=NAME` for numalab's det boots under the
    /// SLUB designs other than the run's, which face Linux (twin/det.rs); None otherwise.
    pub variant: Option<String>,
}

/// The boots of a run, in order: numalab's first, then the twin's.
#[derive(Clone, Debug, Default)]
pub struct Plan {
    pub boots: Vec<PlannedBoot>,
    /// The firmware of numalab's image, when one is needed (not for `--kernel linux`).
    pub numalab_image: Option<Firmware>,
    /// Printed before the twin's boots: the selected experiments Linux does not mirror.
    pub linux_notes: Vec<String>,
}

/// Why there is no plan: a numalab boot that cannot be configured (a usage error), or a Linux
/// one (reported as the twin's build failing, as every twin error is).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    Numalab(String),
    Linux(String),
}

/// The plan of `args`: numalab's boots (unless `--kernel linux`), then the twin's (with
/// `--kernel linux|both`).
pub fn plan(args: &BenchArgs) -> Result<Plan, PlanError> {
    let mut plan = Plan {
        numalab_image: args
            .kernel
            .runs_numalab()
            .then_some(args.base.machine.firmware),
        ..Plan::default()
    };
    if args.kernel.runs_numalab() {
        plan.boots = numalab_boots(args, 0).map_err(PlanError::Numalab)?;
        plan.boots
            .extend(design_boots(args).map_err(PlanError::Numalab)?);
    }
    if args.kernel != Kernel::Numalab {
        let (boots, mut notes) = linux_boots(args).map_err(PlanError::Linux)?;
        if args.trace {
            let det = boots.iter().any(|b| b.boot == Boot::Det);
            // A kernel that cannot have one said why already (twin::det::qemu_of).
            if det
                || !notes
                    .iter()
                    .any(|n| n.starts_with("numalab: --trace: no linux-"))
            {
                notes.push(twin::det::note(det));
            }
        }
        plan.boots.extend(boots);
        plan.linux_notes = notes;
    }
    Ok(plan)
}

/// numalab's boots of `args` on machine `machine`: [`planned_boots`], then the uma boot (x
/// reps) when an experiment with a one-node comparison printed results; the main job then
/// does the same for its memoryless machine.
pub fn numalab_boots(args: &BenchArgs, machine: u32) -> Result<Vec<PlannedBoot>, String> {
    let kinds = planned_boots(args);
    if kinds.is_empty() {
        return Err(
            "--icount: the selected experiments print host-time figures only (no instruction \
             counts); run them without --icount"
                .into(),
        );
    }
    let mut out = Vec::new();
    for (boot, rep) in kinds {
        out.push(numalab_boot(args, boot, rep, machine, When::Always)?);
    }
    if !args.icount_only {
        for rep in 0..args.reps.max(1) {
            out.push(numalab_boot(
                args,
                Boot::Uma,
                rep,
                machine,
                When::UmaComparisonPrinted,
            )?);
        }
    }
    if let Some(m) = args.memoryless_job() {
        out.extend(numalab_boots(&m, machine + 1)?);
    }
    if let Some(m) = args.memoryless_sheaves_job() {
        out.extend(numalab_boots(&m, machine + 2)?);
    }
    Ok(out)
}

/// One numalab boot: `boot`, repetition `rep`, of `args`.
pub fn numalab_boot(
    args: &BenchArgs,
    boot: Boot,
    rep: u32,
    machine: u32,
    when: When,
) -> Result<PlannedBoot, String> {
    let config = boot_config(args, boot, rep)?;
    // The main job traces its det boot only (the modelled seed rows).
    let trace = args.trace && boot.deterministic() && !(args.main_job && boot == Boot::Icount);
    let costs = if trace {
        Some(traced_costs(args, &config)?)
    } else {
        // Untraced boots get the same model where one applies, so that latency_matrix's
        // buffer sizes (bench.mlc_*, set from it in execute.rs) and so every record of record
        // are the same with and without --trace (docs/trace.md).
        crate::trace::map::NodeMap::of(&config.typed_machine(), &config.host.extra)
            .ok()
            .and_then(|map| {
                let chosen = cost_model(args).ok()?;
                crate::costs::presets::for_machine(chosen.as_ref(), &map.shape()).ok()
            })
    };
    Ok(PlannedBoot {
        guest: Guest::Numalab,
        boot,
        rep,
        reps: if boot.deterministic() { 1 } else { args.reps },
        smoke: args.smoke,
        config,
        when,
        machine,
        trace,
        costs,
        variant: None,
    })
}

/// The cost model of a traced boot of `config`'s machine (`--cost-model`, else the machine's
/// default). A machine whose node map cannot be derived, or that the named cost model does
/// not fit, is refused here, before any build.
fn traced_costs(args: &BenchArgs, config: &RunConfig) -> Result<crate::costs::Applied, String> {
    let map = crate::trace::map::NodeMap::of(&config.typed_machine(), &config.host.extra)?;
    let chosen = cost_model(args)?;
    crate::costs::presets::for_machine(chosen.as_ref(), &map.shape())
}

/// The cost model `--cost-model` names, read and checked before anything boots.
fn cost_model(args: &BenchArgs) -> Result<Option<crate::costs::CostModel>, String> {
    match &args.cost_model {
        None => Ok(None),
        Some(arg) => crate::costs::presets::resolve(arg).map(Some),
    }
}

/// The experiments that print counts (`MetricKind::Count`): they run again in the det boot.
/// The catalog's (`Experiment::in_det`), in its order.
pub fn count_experiments() -> Vec<&'static str> {
    CATALOG
        .iter()
        .filter(|e| e.in_det())
        .map(|e| e.name)
        .collect()
}

/// The det boot's `bench=`: the selected count experiments (all of them when `bench=` selects
/// everything), or None when no selected experiment prints counts.
fn det_selection(args: &BenchArgs) -> Option<Selection> {
    let sel = args.selected();
    let names: Vec<&str> = count_experiments()
        .into_iter()
        .filter(|n| sel.includes(n))
        .collect();
    (!names.is_empty()).then(|| Selection::of(names))
}

/// The configuration of one boot (`rep`: its repetition, 0-based).
pub fn boot_config(args: &BenchArgs, boot: Boot, rep: u32) -> Result<RunConfig, String> {
    let mut c = args.base.clone();
    if boot != Boot::Tsc || !args.main_job || rep > 0 {
        c.kernel.suite = Suite::Bench;
    }
    if args.smoke {
        c.kernel.options.set_bool(&BENCH_SMOKE, true);
    }
    if rep > 0 {
        c.kernel.options.set(&BENCH_REP, u64::from(rep))?;
    }
    c.output.echo = args.verbose;
    c.output.echo_failures = true;
    // Hold times cost two clock reads per lock acquisition: on where the boot counts events or
    // host time, never in the instruction boot (docs/benchmarks.md, "Lock statistics").
    if boot != Boot::Icount && !c.kernel.options.is_set(&LOCK_STAT) {
        c.kernel.options.set_bool(&LOCK_STAT, true);
    }
    match boot {
        Boot::Tsc => {}
        Boot::Icount => {
            // The same machine (every node, every CPU's place in the SRAT) with only the boot
            // CPU present; under TCG, as every icount boot (accel.rs).
            c.host.icount = true;
            c.host.accel = Accel::Tcg;
            c.machine.cpus_online = Some(1);
            c.machine_args()?;
        }
        Boot::Det => {
            det_machine(&mut c);
            let only = det_selection(args).ok_or("bench: no count experiment selected for det")?;
            c.kernel.options.set(&BENCH, &only)?;
        }
        Boot::Uma => {
            let (cpus, mem) = args.base.machine_size();
            c.machine.topology = crate::qemu::presets::find("uma").ok_or("no uma preset")?;
            c.machine.smp = Some(cpus);
            c.machine.mem_mib = Some(mem);
            c.machine.described = None;
            c.host.extra.clear();
            c.kernel
                .options
                .set(&BENCH, &Selection::of(uma_experiments()))?;
        }
    }
    Ok(c)
}

/// The det boot's machine: every CPU online under `-icount shift=0,sleep=off`, on TCG (as
/// every icount boot, accel.rs): numalab's and the twin's det boots alike.
fn det_machine(c: &mut RunConfig) {
    c.host.icount = true;
    c.host.accel = Accel::Tcg;
}

/// Whether the experiment `name` measures only in the multi-CPU boots (it skips the icount
/// one): the catalog's `Experiment::multi_cpu_only`. A name the catalog does not have is not.
fn multi_cpu_only(name: &str) -> bool {
    catalog::find(name).is_some_and(|e| e.multi_cpu_only())
}

/// The boots `args` needs, each with its repetition: tsc (x reps; none with `--icount`), det
/// unless no selected experiment prints counts, and icount unless `bench=` names only
/// multi-CPU experiments.
pub fn planned_boots(args: &BenchArgs) -> Vec<(Boot, u32)> {
    let selected = args.selected();
    let icount_useless =
        !args.main_job && !selected.is_all() && selected.names().iter().all(|n| multi_cpu_only(n));
    let tsc_reps = if args.icount_only {
        0
    } else {
        args.reps.max(1)
    };
    let mut plan: Vec<(Boot, u32)> = (0..tsc_reps).map(|r| (Boot::Tsc, r)).collect();
    if !args.no_det && det_selection(args).is_some() {
        plan.push((Boot::Det, 0));
    }
    if !icount_useless {
        plan.push((Boot::Icount, 0));
    }
    plan
}

/// The experiments with a one-node comparison (the catalog's `Boots::UMA`): the uma boot's
/// `bench=`.
fn uma_experiments() -> Vec<&'static str> {
    CATALOG
        .iter()
        .filter(|e| e.boots.contains(Boot::Uma))
        .map(|e| e.name)
        .collect()
}

/// The twin's boots of `args`, for each Linux `--kernel` names (6.1 first), as
/// [`linux_kernel_boots`] plans them; also the notes on selected experiments Linux lacks.
pub fn linux_boots(args: &BenchArgs) -> Result<(Vec<PlannedBoot>, Vec<String>), String> {
    let mut boots = Vec::new();
    let mut notes = Vec::new();
    for &kernel in args.kernel.linuxes() {
        let (b, n) = linux_kernel_boots(args, kernel)?;
        boots.extend(b);
        for line in n {
            if !notes.contains(&line) {
                notes.push(line);
            }
        }
    }
    Ok((boots, notes))
}

/// The boots of one Linux `kernel` for `args`: icount for the instruction experiments, tsc
/// for the memoryless-node experiment on a machine with a memoryless node (and the other
/// host-timed ones), then uma (the one-node machine of the same size, as numalab's) when that
/// printed its record, and the list_lock experiment's order-4 boot. Also the notes on
/// selected experiments Linux lacks.
pub fn linux_kernel_boots(
    args: &BenchArgs,
    kernel: twin::LinuxKernel,
) -> Result<(Vec<PlannedBoot>, Vec<String>), String> {
    let selected = args.selected();
    let names: Vec<&str> = selected.names().iter().map(String::as_str).collect();
    let (mirrored, unmirrored) = twin::mirrored_selection(&names);
    let mut notes: Vec<String> = unmirrored
        .iter()
        .map(|name| {
            format!(
                "numalab: bench: {name} has no Linux counterpart yet (docs/linux-twin.md): numalab only"
            )
        })
        .collect();
    let icount = twin::measured_in(&mirrored, Boot::Icount);
    let shape = memoryless_shape(args);
    let tsc: Vec<&str> = twin::measured_in(&mirrored, Boot::Tsc)
        .into_iter()
        .filter(|n| (*n != catalog::MEMORYLESS_NODE.name || shape) && !args.icount_only)
        .collect();
    let append = args.linux_append.clone();
    let boot = |boot, experiments: &[&str], append: Option<String>, when| {
        let config = linux_config(args, boot, experiments)?;
        // Only the det boots are traced (twin/det.rs), with numalab's det boot's cost model.
        let trace = boot == Boot::Det;
        let costs = if trace {
            Some(traced_costs(args, &config)?)
        } else {
            None
        };
        Ok::<_, String>(PlannedBoot {
            guest: Guest::Linux { kernel, append },
            boot,
            rep: 0,
            reps: 1,
            smoke: args.smoke,
            config,
            when,
            machine: 0,
            trace,
            costs,
            variant: None,
        })
    };
    let mut out = Vec::new();
    if !icount.is_empty() {
        out.push(boot(Boot::Icount, &icount, append.clone(), When::Always)?);
    }
    if !tsc.is_empty() {
        out.push(boot(Boot::Tsc, &tsc, append.clone(), When::Always)?);
        out.push(boot(
            Boot::Uma,
            &[catalog::MEMORYLESS_NODE.name],
            append.clone(),
            When::LinuxMemorylessPrinted,
        )?);
        if tsc.contains(&catalog::SLUB_LIST_LOCK.name) {
            // Linux 6.1's slab order is read-only at run time: order_4 and cpu_partial_x2
            // run in a boot whose command line sets it for every cache, as the thread did.
            let order4 = twin::cmdline::order4_append(append.as_deref());
            out.push(boot(
                Boot::Tsc,
                &[catalog::SLUB_LIST_LOCK.name],
                Some(order4),
                When::Always,
            )?);
        }
    }
    // Under --trace: the det boot of the contention experiments, and slub_list_lock's
    // order-4 half in a second one (its command line, as the tsc boots).
    let det = twin::det::selection(&mirrored);
    let wanted = args.trace && !args.no_det && !det.is_empty();
    let qemu = if wanted {
        match twin::det::qemu_here(kernel) {
            Ok(q) => Some(q),
            Err(why) => {
                notes.push(format!(
                    "numalab: --trace: no {} det boot: {why}",
                    kernel.name()
                ));
                None
            }
        }
    } else {
        None
    };
    if let Some(qemu) = qemu {
        if let Some((_, version)) = &qemu {
            notes.push(format!(
                "numalab: --trace: {}'s det boots run on QEMU 10.0 ({version}): {}",
                kernel.name(),
                twin::det::WHY_QEMU10
            ));
        }
        let det_boot = |append: Option<String>| -> Result<PlannedBoot, String> {
            let mut b = boot(Boot::Det, &det, append, When::Always)?;
            if let Some((path, _)) = &qemu {
                b.config.host.qemu = Some(path.clone());
            }
            Ok(b)
        };
        out.push(det_boot(append.clone())?);
        if det.contains(&catalog::SLUB_LIST_LOCK.name) {
            out.push(det_boot(Some(twin::cmdline::order4_append(
                append.as_deref(),
            )))?);
        }
    }
    Ok((out, notes))
}

/// The configuration of a Linux boot: numalab's `boot` of the same machine, with `bench=`
/// narrowed to the mirrored experiments (the executor adds the Linux image for the disk). A
/// det boot is numalab's det machine whatever numalab's det boot selects (or whether it has
/// one).
pub fn linux_config(
    args: &BenchArgs,
    boot: Boot,
    experiments: &[&str],
) -> Result<RunConfig, String> {
    let mut c = if boot == Boot::Det {
        let mut c = boot_config(args, Boot::Tsc, 0)?;
        det_machine(&mut c);
        c
    } else {
        boot_config(args, boot, 0)?
    };
    c.kernel.options.set(&BENCH, &Selection::of(experiments))?;
    Ok(c)
}

/// Whether the memoryless-node experiment measures on this machine: it has a node with CPUs and no memory
/// (or is a one-node machine). For a machine given as QEMU arguments: read from its typed
/// nodes, or when they do not say, when it is selected.
fn memoryless_shape(args: &BenchArgs) -> bool {
    let t = &args.base.machine.topology;
    if let Some(m) = &args.base.machine.described {
        return m.has_memoryless_cpu_node().unwrap_or_else(|| {
            args.selected()
                .names()
                .iter()
                .any(|n| n == catalog::MEMORYLESS_NODE.name)
        });
    }
    t.nodes.len() <= 1
        || t.nodes
            .iter()
            .any(|n| n.mem_shares == 0 && n.cpu_shares > 0)
}

/// numalab's experiments whose det boot runs again under every other SLUB design in a traced
/// run with Linux, so that each numalab design faces Linux (sheaves_vs_partial already runs
/// both designs as its cases).
pub const DESIGN_EXPERIMENTS: [&str; 3] = ["slub_list_lock", "numa_locality", "vmalloc_scaling"];

/// numalab's det boots under the SLUB designs other than the run's (`slub.design`), of the
/// selected [`DESIGN_EXPERIMENTS`], each tagged `variant: slub.design=NAME`: only under
/// `--trace mem` with a Linux kernel and numalab in `--kernel` (both, all).
pub fn design_boots(args: &BenchArgs) -> Result<Vec<PlannedBoot>, String> {
    let with_linux = args.kernel.runs_numalab() && !args.kernel.linuxes().is_empty();
    if !args.trace || args.no_det || args.main_job || !with_linux {
        return Ok(Vec::new());
    }
    let selected = args.selected();
    let names: Vec<&str> = DESIGN_EXPERIMENTS
        .into_iter()
        .filter(|n| selected.includes(n) && catalog::find(n).is_some_and(|e| e.in_det()))
        .collect();
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let run_design = args.base.kernel.options.options().get(&SLUB_DESIGN);
    let mut out = Vec::new();
    for design in Design::ALL.into_iter().filter(|d| *d != run_design) {
        let mut b = numalab_boot(args, Boot::Det, 0, 0, When::Always)?;
        b.config
            .kernel
            .options
            .set(&BENCH, &Selection::of(names.clone()))?;
        b.config.kernel.options.set_choice(&SLUB_DESIGN, design);
        b.variant = Some(format!("{}={}", SLUB_DESIGN.spec.key, design.name()));
        out.push(b);
    }
    Ok(out)
}
