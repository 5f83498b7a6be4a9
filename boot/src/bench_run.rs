//! `qemu-run.sh bench`: runs the experiments in the boots they need, collects the BENCH lines,
//! checks the contract, writes `target/bench/<date>-<rev>.jsonl` (header first) with the serial
//! logs and SVG charts beside it, and prints the tables. Also the no-argument main job
//! (`qemu-run.sh`: tests, stress and smoke benchmarks, then the tables) and `--compare`.
//!
//! Boots: `tsc` (the machine as given, all CPUs: contention, throughput, memory; repeated
//! `--reps` times with the case order reversed on odd repetitions), `det` (the same machine
//! under `--icount`: QEMU runs the vCPUs round-robin on one host thread, so the counts of the
//! count experiments are exact and repeat; only counts are kept), `icount` (the same machine
//! with one CPU online, `-smp 1,maxcpus=N`, under `--icount`: instruction counts), and `uma`
//! (only when an experiment with a one-node comparison printed results: the `uma` preset with
//! the same CPUs and memory, for its uma cases; repeated like tsc). The main job adds a boot of
//! the `memoryless` preset for seed 003's experiment. Which experiment needs which boot is the
//! catalog's (kernel/algo/src/bench/catalog).

use crate::bench::catalog::{self, CATALOG};
use crate::bench::{self, BenchRecord, Boot, BootResult, Violation};
use crate::cli::{self, exit, BenchOptions, Job};
use crate::qemu::{self, Outcome, RunConfig, Verdict};
use crate::{bench_svg, image};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

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
    /// `--compare A B`: no boot, print the change from A to B.
    pub compare: Option<(PathBuf, PathBuf)>,
    /// Repetitions of every host-time (tsc, uma) boot.
    pub reps: u32,
    /// Plan no det boot (the main job's memoryless boot: its counts are in the full run).
    pub no_det: bool,
    /// `--icount`: only the instruction-counting boots (det, icount), no tsc or uma boot.
    pub icount_only: bool,
    /// `--kernel`: numalab, the Linux twin (linux_twin.rs) or both.
    pub kernel: crate::cli::Kernel,
    /// `--linux-append`: words added to Linux's command line in the twin's boots.
    pub linux_append: Option<String>,
}

/// Repetitions of the host-time boots unless `--reps` says: 3, or 1 for `--smoke`.
pub const DEFAULT_REPS: u32 = 3;

impl BenchArgs {
    /// What the `bench` command line asks for.
    pub fn from_options(o: BenchOptions) -> BenchArgs {
        BenchArgs {
            base: o.machine.config("bench"),
            smoke: o.smoke,
            verbose: o.verbose,
            main_job: false,
            reps: o.reps.unwrap_or(if o.smoke { 1 } else { DEFAULT_REPS }),
            no_det: false,
            icount_only: o.icount,
            out_dir: o.out,
            kernel: o.kernel,
            linux_append: o.linux_append,
            compare: o.compare.and_then(|files| match files.as_slice() {
                [a, b] => Some((a.clone(), b.clone())),
                _ => None,
            }),
        }
    }

    /// The no-argument main job on `base` (the default topology): every suite in the multi-CPU
    /// boot, smoke benchmarks, then the tables.
    pub fn main_job(mut base: RunConfig) -> BenchArgs {
        base.suite = "all".into();
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
            kernel: crate::cli::Kernel::Numalab,
            linux_append: None,
        }
    }

    /// The main job's second machine: seed 003's experiment on the `memoryless` preset (seed 003's
    /// shape), with its uma comparison.
    fn memoryless_job(&self) -> Option<BenchArgs> {
        if !self.main_job || self.base.user_describes_machine() {
            return None;
        }
        let mut base = self.base.clone();
        base.topology = crate::presets::find("memoryless")?;
        base.smp = None;
        base.mem_mib = None;
        base.suite = "bench".into();
        base.sets.retain(|s| !s.starts_with("bench="));
        base.sets
            .push(format!("bench={}", catalog::MEMORYLESS_NODE.name));
        Some(BenchArgs {
            base,
            main_job: false,
            no_det: true,
            ..self.clone()
        })
    }
}

/// Parses the arguments after `bench` (as `qemu-run.sh bench ARGS` would).
pub fn parse(args: &[String]) -> Result<BenchArgs, clap::Error> {
    let words = std::iter::once("bench".to_string()).chain(args.iter().cloned());
    match crate::resolve::resolve(cli::parse(words)?) {
        Job::Bench(o) => Ok(BenchArgs::from_options(o)),
        Job::Error(e) => Err(clap::Error::raw(
            clap::error::ErrorKind::ValueValidation,
            format!("{e}\n"),
        )),
        _ => Err(clap::Error::raw(
            clap::error::ErrorKind::MissingSubcommand,
            "not a bench command line\n",
        )),
    }
}

/// UTC `YYYYMMDD-HHMMSS` and ISO 8601 forms of now.
pub(crate) fn utc_now() -> (String, String) {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    let (days, rem) = (secs.div_euclid(86400), secs.rem_euclid(86400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    let (hh, mm, ss) = (rem / 3600, rem % 3600 / 60, rem % 60);
    (
        format!("{y:04}{m:02}{d:02}-{hh:02}{mm:02}{ss:02}"),
        format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}Z"),
    )
}

fn command_line(program: &str, args: &[&str], dir: &Path) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `git rev-parse --short HEAD`, with `-dirty` when tracked files changed.
pub(crate) fn git_rev(root: &Path) -> String {
    let rev = command_line("git", &["rev-parse", "--short", "HEAD"], root)
        .unwrap_or_else(|| "norev".into());
    let dirty = command_line(
        "git",
        &["status", "--porcelain", "--untracked-files=no"],
        root,
    )
    .is_some_and(|s| !s.is_empty());
    if dirty {
        format!("{rev}-dirty")
    } else {
        rev
    }
}

/// `-smp N` -> `-smp 1,maxcpus=N`: the same machine (every node, every CPU's place in the
/// SRAT) with only the boot CPU present.
fn one_cpu(args: &[String]) -> Result<Vec<String>, String> {
    let mut out = args.to_vec();
    if let Some(i) = out.iter().position(|a| a == "-smp") {
        let v = out
            .get(i + 1)
            .ok_or("-smp without a value in the QEMU arguments")?;
        let n: u32 = v.parse().map_err(|_| {
            format!("bench: the icount boot needs '-smp N' (a plain number), got '-smp {v}'")
        })?;
        out[i + 1] = format!("1,maxcpus={n}");
    }
    Ok(out)
}

/// The machine's CPUs and MiB (for the uma comparison boot).
fn machine_size(base: &RunConfig) -> (u32, u64) {
    if base.user_describes_machine() {
        let value = |flag: &str| {
            base.extra
                .iter()
                .position(|a| a == flag)
                .and_then(|i| base.extra.get(i + 1))
        };
        let cpus = value("-smp")
            .and_then(|v| v.split(',').next()?.parse().ok())
            .unwrap_or(1);
        let mem = value("-m")
            .and_then(|v| crate::qemu::parse_mem_mib(v))
            .unwrap_or(128);
        (cpus, mem)
    } else {
        (
            base.smp.unwrap_or(base.topology.cpus),
            base.mem_mib.unwrap_or(base.topology.mem_mib),
        )
    }
}

/// The experiments `bench=` selects (empty: all).
fn selected(args: &BenchArgs) -> Vec<&str> {
    args.base
        .sets
        .iter()
        .filter_map(|s| s.strip_prefix("bench="))
        .flat_map(|v| v.split(',').map(str::trim).filter(|w| !w.is_empty()))
        .collect()
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
fn det_selection(args: &BenchArgs) -> Option<String> {
    let sel = selected(args);
    let names: Vec<&str> = count_experiments()
        .into_iter()
        .filter(|n| sel.is_empty() || sel.contains(n))
        .collect();
    (!names.is_empty()).then(|| names.join(","))
}

/// The machine of `c` as explicit QEMU arguments (preset, --smp and --mem resolved).
fn explicit_machine(c: &mut RunConfig) {
    if !c.user_describes_machine() {
        let cpus = c.smp.unwrap_or(c.topology.cpus);
        let mem = c.mem_mib.unwrap_or(c.topology.mem_mib);
        let mut machine = c.topology.qemu_args(cpus, mem);
        machine.append(&mut c.extra);
        c.extra = machine;
    }
}

/// The configuration of one boot (`rep`: its repetition, 0-based).
pub(crate) fn boot_config(args: &BenchArgs, boot: Boot, rep: u32) -> Result<RunConfig, String> {
    let mut c = args.base.clone();
    if boot != Boot::Tsc || !args.main_job || rep > 0 {
        c.suite = "bench".into();
    }
    if args.smoke {
        c.sets.push("bench.smoke=1".into());
    }
    if rep > 0 {
        c.sets.push(format!("bench.rep={rep}"));
    }
    c.echo = args.verbose;
    c.echo_prefixes = [
        "# bench progress",
        "not ok",
        "PANIC",
        "EXCEPTION",
        "numalab: warning",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    match boot {
        Boot::Tsc => {}
        Boot::Icount => {
            c.icount = true;
            explicit_machine(&mut c);
            c.extra = one_cpu(&c.extra)?;
        }
        Boot::Det => {
            c.icount = true;
            let only = det_selection(args).ok_or("bench: no count experiment selected for det")?;
            c.sets.retain(|s| !s.starts_with("bench="));
            c.sets.push(format!("bench={only}"));
        }
        Boot::Uma => {
            let (cpus, mem) = machine_size(&args.base);
            c.topology = crate::presets::find("uma").ok_or("no uma preset")?;
            c.smp = Some(cpus);
            c.mem_mib = Some(mem);
            c.extra.clear();
            c.sets.retain(|s| !s.starts_with("bench="));
            c.sets
                .push(format!("bench={}", uma_experiments().join(",")));
        }
    }
    Ok(c)
}

/// One finished boot.
pub struct BootRun {
    pub boot: Boot,
    /// Its repetition (0-based; only tsc and uma boots are repeated).
    pub rep: u32,
    pub config: RunConfig,
    pub outcome: Outcome,
    /// The BENCH lines that keep the contract.
    pub records: Vec<BenchRecord>,
    /// The BENCH lines that break it.
    pub violations: Vec<Violation>,
}

impl BootRun {
    /// Experiments whose KTest passed without skipping here.
    pub fn ran(&self) -> BTreeSet<String> {
        let registered = bench::registered(&self.outcome.log);
        self.outcome
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
            .log
            .lines()
            .filter_map(|l| l.strip_prefix("# bench: clock="))
            .filter_map(|l| l.split_whitespace().find_map(|w| w.strip_prefix("nodes=")))
            .find_map(|n| n.parse().ok())
            .or_else(|| self.records.first().map(|r| r.nodes))
            .unwrap_or(1)
    }
}

/// Boots `boot` (repetition `rep`) of `args` on `img` and collects its BENCH lines (in the det
/// boot only the counts, `bench::det_keeps`).
pub fn run_boot(args: &BenchArgs, boot: Boot, rep: u32, img: &Path) -> Result<BootRun, String> {
    let config = boot_config(args, boot, rep)?;
    let reps = if boot.deterministic() { 1 } else { args.reps };
    println!(
        "numalab: bench: {} boot{} (suite={}{}): {}",
        boot.name(),
        if reps > 1 {
            format!(" rep {}/{reps}", rep + 1)
        } else {
            String::new()
        },
        config.suite,
        if args.smoke { ", smoke" } else { "" },
        config.qemu_args(img)?.join(" ")
    );
    let outcome = qemu::run(&config, img);
    let (mut records, violations) = bench::parse_log(&outcome.log, boot);
    records.retain(bench::det_keeps);
    for r in &mut records {
        r.rep = rep;
    }
    Ok(BootRun {
        boot,
        rep,
        config,
        outcome,
        records,
        violations,
    })
}

/// The host's core count.
pub fn host_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The most vCPUs of any boot in `runs`.
fn max_vcpus(runs: &[BootRun]) -> u32 {
    runs.iter()
        .map(|r| machine_size(&r.config).0)
        .max()
        .unwrap_or(1)
}

/// The line printed above the tables: host cores, vCPUs, and whether the host is
/// oversubscribed (more vCPUs than cores: vCPUs take turns, contention figures are compressed).
pub fn machine_line(host_cpus: usize, vcpus: u32, reps: u32) -> String {
    let over = vcpus as usize > host_cpus;
    format!(
        "numalab: bench: host {host_cpus} cores, machine {vcpus} vCPUs{}; tsc boots repeated {reps}x (median, min..max; n.s. = ranges overlap)",
        if over {
            ": OVERSUBSCRIBED (vCPUs take turns on the host cores; contention figures flagged below are compressed)"
        } else {
            ""
        }
    )
}

pub(crate) fn header(
    args: &BenchArgs,
    runs: &[BootRun],
    img: &Path,
    iso: &str,
    rev: &str,
) -> Value {
    let qemu = args.base.qemu_binary();
    let qemu_version = command_line(&qemu.display().to_string(), &["--version"], Path::new("."))
        .and_then(|v| v.lines().next().map(String::from))
        .unwrap_or_else(|| "unknown".into());
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let boots: Vec<Value> = runs
        .iter()
        .map(|r| {
            json!({
                "boot": r.boot.name(),
                "rep": r.rep,
                "topology": if r.config.user_describes_machine() { "custom (QEMU arguments)" } else { r.config.topology.name },
                "vcpus": machine_size(&r.config).0,
                "kernel_cmdline": r.config.kernel_cmdline(),
                "qemu_args": r.config.qemu_args(img).unwrap_or_default(),
                "verdict": format!("{:?}", r.outcome.verdict),
                "seconds": r.outcome.elapsed.as_secs_f64(),
            })
        })
        .collect();
    json!({
        "record": "header",
        "date": iso,
        "git_rev": rev,
        "host": host,
        "host_cpus": host_cpus(),
        "vcpus": max_vcpus(runs),
        "oversubscribed": max_vcpus(runs) as usize > host_cpus(),
        "reps": args.reps,
        "qemu": qemu_version,
        "topology": if args.base.user_describes_machine() { "custom (QEMU arguments)" } else { args.base.topology.name },
        "options": {
            "smoke": args.smoke,
            "main_job": args.main_job,
            "reps": args.reps,
            "sets": args.base.sets,
            "firmware": args.base.firmware.name(),
            "extra_qemu_args": args.base.extra,
        },
        "boots": boots,
    })
}

/// Whether the experiment `name` measures only in the multi-CPU boots (it skips the icount
/// one): the catalog's `Experiment::multi_cpu_only`. A name the catalog does not have is not.
fn multi_cpu_only(name: &str) -> bool {
    catalog::find(name).is_some_and(|e| e.multi_cpu_only())
}

/// The boots `args` needs, each with its repetition: tsc (x reps; none with `--icount`), det
/// unless no selected experiment prints counts, and icount unless `bench=` names only
/// multi-CPU experiments.
fn planned_boots(args: &BenchArgs) -> Vec<(Boot, u32)> {
    let selected = selected(args);
    let icount_useless =
        !args.main_job && !selected.is_empty() && selected.iter().all(|n| multi_cpu_only(n));
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

/// Runs the boots of `args` on `img` (`planned_boots`), then the uma boot (x reps) when an
/// experiment with a one-node comparison printed results; the main job then does the same for its memoryless boot.
pub fn run_boots(args: &BenchArgs, img: &Path) -> Result<Vec<BootRun>, String> {
    let mut runs = Vec::new();
    let plan = planned_boots(args);
    if plan.is_empty() {
        return Err(
            "--icount: the selected experiments print host-time figures only (no instruction \
             counts); run them without --icount"
                .into(),
        );
    }
    for (boot, rep) in plan {
        runs.push(run_boot(args, boot, rep, img)?);
    }
    // An experiment with a one-node comparison printed a case of this machine.
    let compare_ran = runs.iter().any(|r| {
        r.records.iter().any(|x| {
            catalog::find(&x.bench).is_some_and(|e| {
                e.boots.contains(Boot::Uma)
                    && e.find_case(&x.case)
                        .is_some_and(|c| !c.boots.contains(Boot::Uma))
            })
        })
    });
    if compare_ran && !args.icount_only {
        for rep in 0..args.reps.max(1) {
            runs.push(run_boot(args, Boot::Uma, rep, img)?);
        }
    }
    if let Some(m) = args.memoryless_job() {
        runs.extend(run_boots(&m, img)?);
    }
    Ok(runs)
}

/// Every breach of the contract in `runs`: malformed BENCH lines (with boot and line number),
/// and required measurements missing from a boot whose experiment ran and passed.
pub fn contract_problems(runs: &[BootRun]) -> Vec<String> {
    let mut out: Vec<String> = runs
        .iter()
        .flat_map(|r| {
            r.violations
                .iter()
                .map(move |v| format!("{} boot, {v}", r.boot.name()))
        })
        .collect();
    out.extend(bench::missing_required(&passed_results(runs)));
    out
}

/// The results of the boots of `runs` that passed, as the contract checks read them.
fn passed_results(runs: &[BootRun]) -> Vec<BootResult<'_>> {
    runs.iter()
        .filter(|r| r.outcome.verdict == Verdict::Pass)
        .map(|r| BootResult {
            boot: r.boot,
            ran: r.ran(),
            nodes: r.nodes(),
            records: &r.records,
        })
        .collect()
}

/// The catalog against what the kernel printed in `runs` (passed boots only): every case the
/// catalog says an experiment that ran always prints in that boot, and no case or experiment
/// the catalog lacks (`bench::missing_cases`). The smoke benchmark test asks for this; a run
/// on another machine may legitimately lack a case, so the contract does not.
pub fn catalog_problems(runs: &[BootRun]) -> Vec<String> {
    bench::missing_cases(&passed_results(runs))
}

fn compare_files(a: &Path, b: &Path) -> i32 {
    let load = |p: &Path| -> Result<Vec<BenchRecord>, String> {
        let text =
            std::fs::read_to_string(p).map_err(|e| format!("cannot read {}: {e}", p.display()))?;
        bench::read_jsonl(&text).map(|(_, r)| r).map_err(|v| {
            let lines: Vec<String> = v.iter().map(|v| v.to_string()).collect();
            format!(
                "{} is not a numalab result file:\n{}",
                p.display(),
                lines.join("\n")
            )
        })
    };
    match (load(a), load(b)) {
        (Ok(ra), Ok(rb)) => {
            println!("numalab: bench: A = {}, B = {}", a.display(), b.display());
            print!("{}", bench::compare(&ra, &rb));
            exit::PASS
        }
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("numalab: bench: {e}");
            exit::USAGE
        }
    }
}

/// Runs `args` and returns the exit status (0: every boot passed and the contract holds).
pub fn run(args: &BenchArgs) -> i32 {
    if let Some((a, b)) = &args.compare {
        return compare_files(a, b);
    }
    let start = Instant::now();
    let img = match image::build_kernel().and_then(|k| image::build_image(&k, args.base.firmware)) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("numalab: {e}");
            return exit::BUILD;
        }
    };
    let runs = match run_boots(args, &img) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("numalab: {e}");
            return exit::USAGE;
        }
    };
    let mut status = exit::PASS;
    for r in runs.iter().filter(|r| r.outcome.verdict != Verdict::Pass) {
        eprint!("{}", r.outcome.failure_report());
        eprintln!("numalab: bench: the {} boot failed", r.boot.name());
        status = exit::of(&r.outcome.verdict);
    }
    let problems = contract_problems(&runs);
    if !problems.is_empty() {
        eprintln!("numalab: bench: BENCH output contract violated:");
        for p in &problems {
            eprintln!("  {p}");
        }
        status = status.max(exit::FAIL);
    }
    let all: Vec<BenchRecord> = runs.iter().flat_map(|r| r.records.clone()).collect();
    let (stamp, iso) = utc_now();
    let root = image::repo_root();
    let rev = git_rev(&root);
    let dir = args
        .out_dir
        .clone()
        .unwrap_or_else(|| root.join("target").join("bench"));
    let stem = format!("{stamp}-{rev}");
    match write_results(args, &runs, &all, &img, &dir, &stem, &iso, &rev) {
        Ok(files) => {
            println!("{}", machine_line(host_cpus(), max_vcpus(&runs), args.reps));
            print!("{}", bench::tables(&all, host_cpus()));
            print!("{}", bench::seeds_table(&all));
            println!();
            for f in files {
                println!("numalab: bench: wrote {}", f.display());
            }
        }
        Err(e) => {
            eprintln!("numalab: bench: {e}");
            status = status.max(exit::FAIL);
        }
    }
    let t = runs
        .iter()
        .find(|r| r.boot == Boot::Tsc)
        .map(|r| &r.outcome.ktap);
    println!(
        "numalab: {}: {} measurements from {} boots{} ({:.1} s)",
        if status == exit::PASS { "PASS" } else { "FAIL" },
        all.len(),
        runs.len(),
        t.map(|k| format!(", {} tests passed in the multi-CPU boot", k.passed()))
            .unwrap_or_default(),
        start.elapsed().as_secs_f64()
    );
    status
}

#[allow(clippy::too_many_arguments)]
fn write_results(
    args: &BenchArgs,
    runs: &[BootRun],
    all: &[BenchRecord],
    img: &Path,
    dir: &Path,
    stem: &str,
    iso: &str,
    rev: &str,
) -> Result<Vec<PathBuf>, String> {
    let sub = dir.join(stem);
    std::fs::create_dir_all(&sub).map_err(|e| format!("cannot create {}: {e}", sub.display()))?;
    let mut text = header(args, runs, img, iso, rev).to_string();
    text.push('\n');
    for r in all {
        text.push_str(&r.to_json().to_string());
        text.push('\n');
    }
    let jsonl = dir.join(format!("{stem}.jsonl"));
    std::fs::write(&jsonl, text).map_err(|e| format!("cannot write {}: {e}", jsonl.display()))?;
    let mut files = vec![jsonl];
    for r in runs {
        let log = sub.join(format!("{}.log", r.boot.name()));
        std::fs::write(&log, &r.outcome.log)
            .map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    }
    files.push(sub.clone());
    files.extend(bench_svg::scaling_charts(all, &sub)?);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::catalog::{
        ALLOC_PEERS as AP, MEMORYLESS_NODE as ML, NUMA_LOCALITY as NL, PAGE_ALLOC as PA,
        SLUB_LIST_LOCK as SLL,
    };

    fn args(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn parses_bench_options() {
        let a = parse(&args(&format!(
            "--smoke --topology snc --set bench={}",
            SLL.name
        )))
        .unwrap();
        assert!(a.smoke && !a.main_job);
        assert_eq!(a.base.topology.name, "snc");
        assert_eq!(a.base.suite, "bench");
        let c = parse(&args("--compare a.jsonl b.jsonl")).unwrap();
        assert_eq!(c.compare.unwrap().1, PathBuf::from("b.jsonl"));
        assert!(parse(&args("--compare a.jsonl")).is_err());
        assert!(parse(&args("--icount")).unwrap().icount_only);
        assert!(parse(&args("--bogus")).is_err());
        let u = parse(&args("-- -smp 8 -m 2G")).unwrap();
        assert_eq!(machine_size(&u.base), (8, 2048));
        assert_eq!(u.base.extra, args("-smp 8 -m 2G"));
        let all = parse(&args(
            "--verbose --out o --smp 4 --mem 1G --set acpi.dump=1 --set frame.pcp=0 --timeout 9 --qemu q --uefi",
        ))
        .unwrap();
        assert!(all.verbose && !all.smoke);
        assert_eq!(all.out_dir, Some(PathBuf::from("o")));
        assert_eq!((all.base.smp, all.base.mem_mib), (Some(4), Some(1024)));
        assert_eq!(all.base.cmdline(), "suite=bench acpi.dump=1 frame.pcp=0");
        assert_eq!(all.base.timeout.as_secs(), 9);
        assert_eq!(all.base.qemu, Some(PathBuf::from("q")));
        assert_eq!(all.base.firmware, crate::Firmware::Uefi);
    }

    #[test]
    fn bench_command_line_errors_exit_2() {
        // Wrong use of bench's own options prints bench's usage.
        for bad in ["--compare a.jsonl", "--log x", "--bogus"] {
            let e = parse(&args(bad)).unwrap_err().to_string();
            assert!(e.contains("Usage: qemu-run.sh bench"), "{bad}: {e}");
        }
        for bad in [
            "--compare a.jsonl",
            "--compare",
            "--suite test",
            "--log x",
            "--quiet",
            "--bogus",
            "--out",
            "--smp 0",
            "--topology nope",
            "--set novalue",
            "extra",
        ] {
            let e = parse(&args(bad)).unwrap_err();
            assert_eq!(e.exit_code(), exit::USAGE, "{bad}: {e}");
            assert!(e.to_string().contains("try '--help'"), "{bad}: {e}");
        }
        let help = parse(&args("--help")).unwrap_err();
        assert_eq!(help.exit_code(), exit::PASS);
        let text = help.to_string();
        for flag in [
            "--smoke",
            "--verbose",
            "--out",
            "--compare",
            "--topology",
            "--set",
        ] {
            assert!(
                text.contains(flag),
                "{flag} missing from bench --help:\n{text}"
            );
        }
        for refused in ["--suite", "--log", "--quiet"] {
            assert!(
                !text.contains(refused),
                "{refused} in bench --help:\n{text}"
            );
        }
    }

    #[test]
    fn icount_boot_is_the_same_machine_with_one_cpu() {
        let a = parse(&args("--topology memoryless")).unwrap();
        let c = boot_config(&a, Boot::Icount, 0).unwrap();
        assert!(c.icount);
        assert!(c.kernel_cmdline().contains("bench.clock=icount"));
        let joined = c.extra.join(" ");
        assert!(joined.starts_with("-smp 1,maxcpus=8 -m 2048M"), "{joined}");
        assert!(joined.contains("-numa node,nodeid=1,cpus=4-7,memdev=m1"));
        let t = boot_config(&a, Boot::Tsc, 0).unwrap();
        assert!(!t.kernel_cmdline().contains("bench.clock"));
        let u = boot_config(&a, Boot::Uma, 0).unwrap();
        assert_eq!(
            (u.topology.name, u.smp, u.mem_mib),
            ("uma", Some(8), Some(2048))
        );
        assert!(u.cmdline().ends_with(&format!("bench={}", ML.name)));
        let only = parse(&args(&format!(
            "--topology memoryless --set bench={}",
            ML.name
        )))
        .unwrap();
        let u = boot_config(&only, Boot::Uma, 0).unwrap();
        assert_eq!(u.cmdline().matches("bench=").count(), 1, "{}", u.cmdline());
        let bad = parse(&args("-- -smp 4,sockets=2")).unwrap();
        assert!(boot_config(&bad, Boot::Icount, 0).is_err());
    }

    #[test]
    fn boots_planned_for_what_is_selected() {
        use Boot::*;
        let plan = |s: &str| planned_boots(&parse(&args(s)).unwrap());
        let only = |names: &[&str]| format!("--smoke --set bench={}", names.join(","));
        assert_eq!(plan("--smoke"), vec![(Tsc, 0), (Det, 0), (Icount, 0)]);
        assert_eq!(
            plan("--reps 2"),
            vec![(Tsc, 0), (Tsc, 1), (Det, 0), (Icount, 0)]
        );
        assert_eq!(
            plan(""),
            vec![(Tsc, 0), (Tsc, 1), (Tsc, 2), (Det, 0), (Icount, 0)],
            "three repetitions by default, one with --smoke"
        );
        assert_eq!(plan(&only(&[ML.name, NL.name])), vec![(Tsc, 0), (Det, 0)]);
        assert_eq!(
            plan(&only(&[ML.name, PA.name])),
            vec![(Tsc, 0), (Det, 0), (Icount, 0)]
        );
        // No count experiment selected: no det boot.
        assert_eq!(plan(&only(&[AP.name])), vec![(Tsc, 0), (Icount, 0)]);
        for bad in ["--reps 0", "--reps 21", "--reps x"] {
            assert!(parse(&args(bad)).is_err(), "{bad}");
        }
    }

    #[test]
    fn icount_plans_only_the_counting_boots() {
        let a = parse(&[
            "--icount".into(),
            "--set".into(),
            format!("bench={}", AP.name),
        ])
        .unwrap();
        assert!(a.icount_only);
        assert!(planned_boots(&a).iter().all(|(b, _)| *b != Boot::Tsc));
        assert!(planned_boots(&a).contains(&(Boot::Icount, 0)));
        let plain = parse(&["--set".into(), format!("bench={}", AP.name)]).unwrap();
        assert!(planned_boots(&plain).contains(&(Boot::Tsc, 0)));
    }

    #[test]
    fn det_boot_is_the_whole_machine_under_icount_with_the_count_experiments() {
        let a = parse(&args(&format!(
            "--smoke --set bench={},{}",
            SLL.name, AP.name
        )))
        .unwrap();
        let d = boot_config(&a, Boot::Det, 0).unwrap();
        assert!(d.icount && d.smp.is_none() && d.extra.is_empty());
        assert_eq!(
            d.kernel_cmdline(),
            format!(
                "suite=bench bench.smoke=1 bench={} bench.clock=icount",
                SLL.name
            )
        );
        let q = d.qemu_args(Path::new("x.img")).unwrap().join(" ");
        assert!(
            q.contains("-icount shift=0,sleep=off") && q.contains("-smp 8 "),
            "{q}"
        );
        let all = parse(&args("")).unwrap();
        let d = boot_config(&all, Boot::Det, 0).unwrap();
        assert!(d
            .cmdline()
            .ends_with(&format!("bench={}", count_experiments().join(","))));
        // Repetitions after the first tell the kernel, which reverses the case order.
        let t = boot_config(&all, Boot::Tsc, 1).unwrap();
        assert_eq!(t.cmdline(), "suite=bench bench.rep=1");
        assert_eq!(
            boot_config(&all, Boot::Tsc, 0).unwrap().cmdline(),
            "suite=bench"
        );
    }

    #[test]
    fn the_header_line_flags_oversubscription() {
        let l = machine_line(2, 8, 3);
        assert!(
            l.contains("host 2 cores, machine 8 vCPUs: OVERSUBSCRIBED"),
            "{l}"
        );
        assert!(l.contains("repeated 3x"));
        assert!(!machine_line(16, 8, 1).contains("OVERSUBSCRIBED"));
    }

    #[test]
    fn main_job_runs_every_suite_with_smoke_benchmarks() {
        let Ok(Job::Main(base)) = cli::parse(Vec::<String>::new()) else {
            panic!("no arguments is not the main job");
        };
        let a = BenchArgs::main_job(base);
        let t = boot_config(&a, Boot::Tsc, 0).unwrap();
        assert_eq!(t.cmdline(), "suite=all bench.smoke=1");
        let i = boot_config(&a, Boot::Icount, 0).unwrap();
        assert_eq!(i.cmdline(), "suite=bench bench.smoke=1");
        assert_eq!(t.topology.name, "4node");
        assert_eq!(a.reps, 1);
        // Seed 003's experiment joins the main job on its seed's machine, without a det boot.
        let m = a
            .memoryless_job()
            .expect("the main job has a memoryless boot");
        assert_eq!(m.base.topology.name, "memoryless");
        assert_eq!(planned_boots(&m), vec![(Boot::Tsc, 0)]);
        assert_eq!(
            boot_config(&m, Boot::Tsc, 0).unwrap().cmdline(),
            format!("suite=bench bench={} bench.smoke=1", ML.name)
        );
        assert!(m.memoryless_job().is_none());
    }

    #[test]
    fn utc_stamp_shape() {
        let (stamp, iso) = utc_now();
        assert_eq!(stamp.len(), 15);
        assert!(iso.ends_with('Z') && iso.len() == 20);
    }
}
