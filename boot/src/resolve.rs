//! From the parsed command line to what the runner runs: the steps that look at the host.
//! `cli::parse` only parses; this reads a `--machine` source and writes the ACPI tables its
//! replay needs (docs/replay.md), and checks `--mem` against the host's RAM and swap.

use crate::cli::{Job, MachineOptions, MachineSource};
use crate::machine::{replay, scale};
use crate::presets::Preset;
use crate::user_path::{at_caller, folder_problem, program_at_caller};
use std::path::PathBuf;

/// The job `job` asks for, with its machine read and planned, or `Job::Error` (exit 2) when
/// the host cannot serve it.
pub fn resolve(job: Job) -> Job {
    let mut job = caller_paths(job);
    if let Some(why) = out_problem(&job).or_else(|| crate::out_paths::problem(&job)) {
        return Job::Error(why);
    }
    let asked_kvm = accel_of(&job) == Some(crate::accel::Accel::Kvm);
    let pvm = crate::accel::pvm_note(std::path::Path::new("/sys"));
    // auto takes PVM for no KVM; --accel kvm runs on it, warned.
    let problem = || {
        crate::accel::kvm_problem(std::path::Path::new(crate::accel::KVM_DEVICE))
            .or_else(|| pvm.clone().filter(|_| !asked_kvm))
    };
    if accel_of(&job) == Some(crate::accel::Accel::Auto) {
        if let Some(why) = problem() {
            eprintln!("numalab: --accel auto: tcg ({why})");
        }
    }
    if let Err(why) = resolve_accel(&mut job, problem) {
        return Job::Error(why);
    }
    let job = resolve_machine(job);
    if let Some(why) = placement_problem(&job).or_else(|| memory_problem(&job)) {
        return Job::Error(why);
    }
    if let Some(note) = pvm.filter(|_| asked_kvm) {
        eprintln!("numalab: warning: --accel kvm: {note}");
    }
    job
}

/// Why `job`'s machine is too small for its suite, before anything boots (guest_memory.rs;
/// issue 47 class 2). A bench is held to the default suite's floor.
fn memory_problem(job: &Job) -> Option<String> {
    use numalab_algo::options::Suite;
    let (config, suite) = match job {
        Job::Main(c, _) => (c.clone(), Suite::All),
        Job::Run(c) | Job::Replay(c, _) => (c.clone(), c.suite),
        Job::Bench(b) => (b.machine.config(Suite::Bench), Suite::All),
        Job::Soak(s) => (s.machine.config(Suite::Soak), Suite::Soak),
        _ => return None,
    };
    crate::guest_memory::floor_problem(config.machine_size().1, suite)
}

/// Why the host refuses the KVM placement of `job`'s machine (host_numa.rs: more vCPUs than
/// host CPUs without `--oversubscribe`, a `--host-map` the host or machine lacks).
fn placement_problem(job: &Job) -> Option<String> {
    let config = match job {
        Job::Main(c, _) | Job::Run(c) | Job::Replay(c, _) => c.clone(),
        Job::Bench(b) => b.machine.config(numalab_algo::options::Suite::Bench),
        Job::Soak(s) => s.machine.config(numalab_algo::options::Suite::Soak),
        _ => return None,
    };
    if config.accel == crate::accel::Accel::Tcg {
        return config.placement.asked().map(|flag| {
            format!("{flag} places a KVM guest on the host: it needs --accel kvm (this run is tcg)")
        });
    }
    config
        .placement()
        .err()
        .map(|e| format!("--accel kvm: {e}"))
}

/// `job` with every path the user typed read against the folder the command was run from
/// (qemu-run.sh runs the runner in the checkout: user_path.rs).
fn caller_paths(job: Job) -> Job {
    let at = |p: Option<PathBuf>| p.map(|p| at_caller(&p));
    let machine = |mut m: MachineOptions| {
        m.machine = at(m.machine);
        m.qemu = m.qemu.map(|q| program_at_caller(&q));
        m.hugepages = at(m.hugepages);
        m
    };
    let config = |mut c: crate::RunConfig| {
        c.log = at(c.log);
        c.placement.hugepages = at(c.placement.hugepages);
        c.qemu = c.qemu.map(|q| program_at_caller(&q));
        c
    };
    match job {
        Job::Main(c, v) => Job::Main(config(c), v),
        Job::Run(c) => Job::Run(config(c)),
        Job::Machine(c, mut m) => {
            m.source = at_caller(&m.source);
            Job::Machine(config(c), m)
        }
        Job::Topology(source) => Job::Topology(at_caller(&source)),
        Job::Bench(mut b) => {
            b.out = at(b.out);
            b.html = at(b.html);
            // A preset's name stays a name; anything else is a path from the caller's folder.
            b.cost_model = b.cost_model.map(|m| {
                if crate::costs::presets::NAMES.contains(&m.as_str()) {
                    m
                } else {
                    at_caller(std::path::Path::new(&m)).display().to_string()
                }
            });
            b.compare = b.compare.map(|v| v.iter().map(|p| at_caller(p)).collect());
            b.machine = machine(b.machine);
            Job::Bench(b)
        }
        Job::Soak(mut s) => {
            s.log = at(s.log);
            s.machine = machine(s.machine);
            Job::Soak(s)
        }
        Job::Sweep(mut s) => {
            s.bench_args = bench_args_at(&s.bench_args, &|p| at_caller(p));
            s.out = at(s.out);
            s.emit_jobs = at(s.emit_jobs);
            s.repo = at(s.repo);
            Job::Sweep(s)
        }
        Job::Merge(mut m) => {
            m.dirs = m.dirs.iter().map(|d| at_caller(d)).collect();
            m.out = at_caller(&m.out);
            Job::Merge(m)
        }
        other @ (Job::Replay(..) | Job::Error(_)) => other,
    }
}

/// Bench options whose value is a path (a `--cost-model` preset name or a bare `--qemu`
/// program name stays as it is).
const BENCH_PATH_OPTIONS: &[&str] = &["--cost-model", "--qemu", "--hugepages"];

/// A sweep's BENCH ARGS with each path option's value read by `at` (the caller's folder):
/// the jobs run in the checkout, so a relative path would otherwise mean the checkout's
/// (issue 47 class 4). Words after `--` (QEMU's) are left as typed.
fn bench_args_at(args: &[String], at: &dyn Fn(&std::path::Path) -> PathBuf) -> Vec<String> {
    let map = |flag: &str, value: &str| -> String {
        let keep = value.is_empty()
            || (flag == "--cost-model" && crate::costs::presets::NAMES.contains(&value))
            || (flag == "--qemu" && !value.contains('/'));
        if keep {
            value.to_string()
        } else {
            at(std::path::Path::new(value)).display().to_string()
        }
    };
    let mut out = Vec::with_capacity(args.len());
    let mut pending: Option<&str> = None;
    for (i, w) in args.iter().enumerate() {
        if w == "--" {
            out.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(flag) = pending.take() {
            out.push(map(flag, w));
            continue;
        }
        match BENCH_PATH_OPTIONS
            .iter()
            .find(|f| w == **f || w.strip_prefix(**f).is_some_and(|r| r.starts_with('=')))
        {
            Some(f) if w == f => {
                pending = Some(f);
                out.push(w.clone());
            }
            Some(f) => out.push(format!("{f}={}", map(f, &w[f.len() + 1..]))),
            None => out.push(w.clone()),
        }
    }
    out
}

/// Why an output folder (`--out`) cannot be one: it names a file, or lies under one. Checked
/// before anything is built or booted.
fn out_problem(job: &Job) -> Option<String> {
    let out = match job {
        Job::Bench(b) if b.compare.is_none() => b.out.as_deref(),
        Job::Sweep(s) => s.out.as_deref(),
        Job::Merge(m) => Some(m.out.as_path()),
        _ => None,
    }?;
    folder_problem("--out", out)
}

/// `job` with its `--machine` source read, or the reason it cannot be (`Job::Error`).
fn resolve_machine(job: Job) -> Job {
    if let Some(why) =
        mem_of(&job).and_then(|mib| scale::mem_problem(mib, scale::host_backing_mib()))
    {
        return Job::Error(format!("--mem: {why}"));
    }
    if let Some(why) = small_nodes_of(&job) {
        return Job::Error(format!("--mem: {why}"));
    }
    match job {
        Job::Machine(mut config, m) => match prepare(&m) {
            Ok((plan, args)) => match config.prepend_qemu_args(&args) {
                Ok(()) => Job::Replay(config, Box::new(plan)),
                Err(e) => Job::Error(format!("--machine: {e}")),
            },
            Err(e) => Job::Error(e),
        },
        Job::Bench(mut b) => {
            let Some(source) = b.machine.machine.take() else {
                return Job::Bench(b);
            };
            let m = MachineSource {
                source,
                smp: b.machine.smp,
                mem: b.machine.mem,
                qemu_args: Vec::new(),
            };
            match prepare(&m) {
                Ok((plan, mut args)) => {
                    // bench has no replay check of its own: its notes are printed here.
                    for note in &plan.notes {
                        eprintln!("numalab: {note}");
                    }
                    args.append(&mut b.machine.qemu_args);
                    b.machine.qemu_args = args;
                    Job::Bench(b)
                }
                Err(e) => Job::Error(e),
            }
        }
        other => other,
    }
}

/// The `--accel` a job asked for (None: a job without one).
fn accel_of(job: &Job) -> Option<crate::accel::Accel> {
    match job {
        Job::Main(c, _) | Job::Run(c) | Job::Machine(c, _) => Some(c.accel),
        Job::Bench(b) => Some(b.machine.accel),
        Job::Soak(s) => Some(s.machine.accel),
        _ => None,
    }
}

/// `--accel` of `job` resolved on this host (`kvm_problem`: why /dev/kvm cannot be used):
/// `auto` becomes kvm or tcg; kvm without a usable KVM is the reason it is refused.
fn resolve_accel(job: &mut Job, kvm_problem: impl Fn() -> Option<String>) -> Result<(), String> {
    let accel = match job {
        Job::Main(c, _) | Job::Run(c) | Job::Machine(c, _) => &mut c.accel,
        Job::Bench(b) => &mut b.machine.accel,
        Job::Soak(s) => &mut s.machine.accel,
        _ => return Ok(()),
    };
    if *accel != crate::accel::Accel::Tcg {
        *accel = accel.resolve(kvm_problem())?;
    }
    Ok(())
}

/// The replay of `m`: its plan and QEMU arguments, or the one-line reason it cannot be used.
fn prepare(m: &MachineSource) -> Result<(scale::Plan, Vec<String>), String> {
    replay::prepare(&m.source, m.smp, m.mem, &m.qemu_args, &replay::tables_dir())
        .map_err(|e| format!("--machine: {e}"))
}

/// The memory a job asks QEMU for, if `--mem` gave it.
fn mem_of(job: &Job) -> Option<u64> {
    match job {
        Job::Main(c, _) | Job::Run(c) => c.mem_mib,
        Job::Machine(_, m) => m.mem,
        Job::Bench(b) => b.machine.mem,
        Job::Soak(s) => s.machine.mem,
        // A sweep's jobs are bench command lines, each resolved when the sweep plans it.
        Job::Topology(_) | Job::Replay(..) | Job::Error(_) | Job::Sweep(_) | Job::Merge(_) => None,
    }
}

/// Why a preset with `cpus` CPUs and `mem_mib` MiB would leave a node without managed memory:
/// each node with memory needs [`scale::MIN_NODE_MIB`], because the kernel's 32 MiB bootstrap
/// heap, the low megabyte and the kernel image take the first usable memory and would swallow
/// smaller nodes whole (they would boot as memoryless nodes while `numactl -H` shows their
/// size; the replay of a real machine uses the same floor).
pub fn small_nodes(preset: &Preset, cpus: u32, mem_mib: u64) -> Option<String> {
    let layout = preset.layout(cpus, mem_mib);
    let with_mem: Vec<u64> = layout.iter().map(|(_, m)| *m).filter(|&m| m > 0).collect();
    let smallest = *with_mem.iter().min()?;
    (smallest < scale::MIN_NODE_MIB).then(|| {
        let need = scale::MIN_NODE_MIB * with_mem.len() as u64;
        format!(
            "{mem_mib} MiB gives the {} memory nodes of {} as little as {smallest} MiB; each \
             needs {} MiB (the bootstrap heap and the low memory would leave it no managed \
             memory): use --mem {need}M or more",
            with_mem.len(),
            preset.name,
            scale::MIN_NODE_MIB
        )
    })
}

/// [`small_nodes`] for a job on a preset (none when the user's QEMU arguments or a replayed
/// machine describe it).
fn small_nodes_of(job: &Job) -> Option<String> {
    let on = |m: &MachineOptions| {
        let described = m.machine.is_some() || crate::qemu_machine::describes_machine(&m.qemu_args);
        (!described).then(|| {
            small_nodes(
                &m.topology,
                m.smp.unwrap_or(m.topology.cpus),
                m.mem.unwrap_or(m.topology.mem_mib),
            )
        })?
    };
    match job {
        Job::Main(c, _) | Job::Run(c) if !c.user_describes_machine() => small_nodes(
            &c.topology,
            c.smp.unwrap_or(c.topology.cpus),
            c.mem_mib.unwrap_or(c.topology.mem_mib),
        ),
        Job::Bench(b) => on(&b.machine),
        Job::Soak(s) => on(&s.machine),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::parse;

    #[test]
    fn path_options_in_a_sweeps_bench_args_are_read_from_the_callers_folder() {
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let at = |p: &std::path::Path| std::path::Path::new("/caller").join(p);
        let preset = crate::costs::presets::NAMES[0];
        let got = bench_args_at(
            &words(&format!(
                "--smoke --cost-model m.mlc --qemu=bin/q --qemu q --hugepages hp \
                 --cost-model={preset} --qemu /abs/q -- -acpitable file=t.dat"
            )),
            &at,
        );
        assert_eq!(
            got,
            words(&format!(
                "--smoke --cost-model /caller/m.mlc --qemu=/caller/bin/q --qemu q --hugepages \
                 /caller/hp --cost-model={preset} --qemu /abs/q -- -acpitable file=t.dat"
            ))
        );
    }

    #[test]
    fn a_preset_whose_nodes_the_bootstrap_heap_would_swallow_is_refused() {
        // Issue 24 item 8: 8node with 64M gave 8 MiB nodes, and three frame tests failed on
        // nodes without managed memory.
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let Job::Error(e) = resolve(parse(words("--topology 8node --mem 64M --smp 8")).unwrap())
        else {
            panic!("8 MiB nodes were accepted");
        };
        assert!(
            e.contains("as little as 8 MiB") && e.contains("use --mem 512M"),
            "{e}"
        );
        let Job::Error(_) = resolve(parse(words("bench --topology 8node --mem 256M")).unwrap())
        else {
            panic!("bench with 32 MiB nodes was accepted");
        };
        // Enough memory, or a machine the user describes: not this check's business.
        assert!(matches!(
            resolve(parse(words("--topology 8node --mem 512M")).unwrap()),
            Job::Run(_)
        ));
        // (-m at the default suite's memory floor, guest_memory.rs: below it is refused.)
        assert!(matches!(
            resolve(parse(words("--mem 64M -- -m 66M")).unwrap()),
            Job::Run(_)
        ));
    }
}
