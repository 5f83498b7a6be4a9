//! From the parsed command line to what the runner runs: the steps that look at the host.
//! `cli::parse` only parses; this reads a `--machine` source and writes the ACPI tables its
//! replay needs (docs/replay.md), and checks `--mem` against the host's RAM and swap.

pub mod out_paths;
pub mod user_path;

use crate::build::image::Firmware;
use crate::cli::{
    BenchOptions, MachineOptions, MergeOptions, Request, RunOptions, SoakOptions, SweepOptions,
};
use crate::machine::{replay, scale};
use crate::qemu::presets::Preset;
use crate::qemu::{HostSpec, KernelSpec, MachineSpec, OutputSpec, RunConfig};
use crate::resolve::user_path::{at_caller, folder_problem, program_at_caller};
use numalab_algo::options::{Cmdline, Suite};
use std::path::PathBuf;
use std::time::Duration;

/// What the runner runs: a `Request` whose paths, accelerator and machine were read against
/// this host. Every variant can run; a request the host cannot serve never becomes one.
#[derive(Debug)]
pub enum Job {
    /// The main job (the second field: `--verbose`) on this base boot's machine.
    Main(RunConfig, bool),
    /// One boot.
    Run(RunConfig),
    /// One boot of a replayed machine, then the kernel's numactl -H checked against the plan.
    Replay(RunConfig, Box<scale::Plan>),
    /// `bench`, its `--machine` source (if any) turned into QEMU arguments.
    Bench(BenchOptions),
    /// `topology SOURCE`.
    Topology(PathBuf),
    /// `soak`.
    Soak(SoakOptions),
    /// `sweep`.
    Sweep(SweepOptions),
    /// `merge`.
    Merge(MergeOptions),
}

/// A `--machine SOURCE` as the command line gave it.
struct MachineSource {
    source: PathBuf,
    smp: Option<u32>,
    mem: Option<u64>,
    /// The QEMU arguments after `--`.
    qemu_args: Vec<String>,
}

/// The job `request` asks for, with its machine read and planned, or the one-line reason
/// (exit status 2) the host cannot serve it.
pub fn resolve(request: Request) -> Result<Job, String> {
    let mut request = caller_paths(request);
    if let Some(why) =
        out_problem(&request).or_else(|| crate::resolve::out_paths::problem(&request))
    {
        return Err(why);
    }
    let asked_kvm = machine_of(&request).map(|m| m.accel) == Some(crate::qemu::accel::Accel::Kvm);
    let pvm = crate::qemu::accel::pvm_note(std::path::Path::new("/sys"));
    // auto takes PVM for no KVM; --accel kvm runs on it, warned.
    let problem = || {
        crate::qemu::accel::kvm_problem(std::path::Path::new(crate::qemu::accel::KVM_DEVICE))
            .or_else(|| pvm.clone().filter(|_| !asked_kvm))
    };
    if let Some(m) = machine_of_mut(&mut request) {
        if m.accel == crate::qemu::accel::Accel::Auto {
            if let Some(why) = problem() {
                eprintln!("numalab: --accel auto: tcg ({why})");
            }
        }
        if m.accel != crate::qemu::accel::Accel::Tcg {
            m.accel = m.accel.resolve(problem())?;
        }
    }
    let job = resolve_machine(request)?;
    if let Some(why) = placement_problem(&job).or_else(|| memory_problem(&job)) {
        return Err(why);
    }
    if let Some(note) = pvm.filter(|_| asked_kvm) {
        eprintln!("numalab: warning: --accel kvm: {note}");
    }
    Ok(job)
}

/// The machine options of a request that boots (None: topology, sweep, merge).
fn machine_of(request: &Request) -> Option<&MachineOptions> {
    match request {
        Request::Main(o) | Request::Run(o) => Some(&o.machine),
        Request::Bench(b) => Some(&b.machine),
        Request::Soak(s) => Some(&s.machine),
        Request::Topology(_) | Request::Sweep(_) | Request::Merge(_) => None,
    }
}

/// [`machine_of`], to change.
fn machine_of_mut(request: &mut Request) -> Option<&mut MachineOptions> {
    match request {
        Request::Main(o) | Request::Run(o) => Some(&mut o.machine),
        Request::Bench(b) => Some(&mut b.machine),
        Request::Soak(s) => Some(&mut s.machine),
        Request::Topology(_) | Request::Sweep(_) | Request::Merge(_) => None,
    }
}

/// Why `job`'s machine is too small for its suite, before anything boots (guest_memory.rs).
/// A bench is held to the default suite's floor.
fn memory_problem(job: &Job) -> Option<String> {
    let (config, suite) = match job {
        Job::Main(c, _) => (c.clone(), Suite::All),
        Job::Run(c) | Job::Replay(c, _) => (c.clone(), c.kernel.suite),
        Job::Bench(b) => (b.machine.config(Suite::Bench), Suite::All),
        Job::Soak(s) => (s.machine.config(Suite::Soak), Suite::Soak),
        _ => return None,
    };
    crate::qemu::guest_memory::floor_problem(config.machine_size().1, suite)
}

/// Why the host refuses the KVM placement of `job`'s machine (host_numa.rs: more vCPUs than
/// host CPUs without `--oversubscribe`, a `--host-map` the host or machine lacks).
fn placement_problem(job: &Job) -> Option<String> {
    let config = match job {
        Job::Main(c, _) | Job::Run(c) | Job::Replay(c, _) => c.clone(),
        Job::Bench(b) => b.machine.config(Suite::Bench),
        Job::Soak(s) => s.machine.config(Suite::Soak),
        _ => return None,
    };
    if config.host.accel == crate::qemu::accel::Accel::Tcg {
        return config.host.placement.asked().map(|flag| {
            format!("{flag} places a KVM guest on the host: it needs --accel kvm (this run is tcg)")
        });
    }
    config
        .placement()
        .err()
        .map(|e| format!("--accel kvm: {e}"))
}

/// `request` with every path the user typed read against the folder the command was run from
/// (qemu-run.sh runs the runner in the checkout: user_path.rs).
fn caller_paths(request: Request) -> Request {
    let at = |p: Option<PathBuf>| p.map(|p| at_caller(&p));
    let machine = |mut m: MachineOptions| {
        m.machine = at(m.machine);
        m.qemu = m.qemu.map(|q| program_at_caller(&q));
        m.hugepages = at(m.hugepages);
        m
    };
    let run = |mut o: RunOptions| {
        o.log = at(o.log);
        o.machine = machine(o.machine);
        o
    };
    match request {
        Request::Main(o) => Request::Main(run(o)),
        Request::Run(o) => Request::Run(run(o)),
        Request::Topology(source) => Request::Topology(at_caller(&source)),
        Request::Bench(mut b) => {
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
            Request::Bench(b)
        }
        Request::Soak(mut s) => {
            s.log = at(s.log);
            s.machine = machine(s.machine);
            Request::Soak(s)
        }
        Request::Sweep(mut s) => {
            s.bench_args = bench_args_at(&s.bench_args, &|p| at_caller(p));
            s.out = at(s.out);
            s.emit_jobs = at(s.emit_jobs);
            s.repo = at(s.repo);
            Request::Sweep(s)
        }
        Request::Merge(mut m) => {
            m.dirs = m.dirs.iter().map(|d| at_caller(d)).collect();
            m.out = at_caller(&m.out);
            Request::Merge(m)
        }
    }
}

/// Bench options whose value is a path (a `--cost-model` preset name or a bare `--qemu`
/// program name stays as it is).
const BENCH_PATH_OPTIONS: &[&str] = &["--cost-model", "--qemu", "--hugepages"];

/// A sweep's BENCH ARGS with each path option's value read by `at` (the caller's folder):
/// the jobs run in the checkout, so a relative path would otherwise mean the checkout's
/// Words after `--` (QEMU's) are left as typed.
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
fn out_problem(request: &Request) -> Option<String> {
    let out = match request {
        Request::Bench(b) if b.compare.is_none() => b.out.as_deref(),
        Request::Sweep(s) => s.out.as_deref(),
        Request::Merge(m) => Some(m.out.as_path()),
        _ => None,
    }?;
    folder_problem("--out", out)
}

/// The job of `request`: its boot's configuration, its `--machine` source read and planned,
/// or the reason it cannot be.
fn resolve_machine(request: Request) -> Result<Job, String> {
    if let Some(m) = machine_of(&request) {
        if let Some(why) = m
            .mem
            .and_then(|mib| scale::mem_problem(mib, scale::host_backing_mib()))
        {
            return Err(format!("--mem: {why}"));
        }
        if let Some(why) = small_nodes_of(m) {
            return Err(format!("--mem: {why}"));
        }
    }
    Ok(match request {
        Request::Main(o) => Job::Main(o.config(), o.verbose),
        Request::Run(o) => match &o.machine.machine {
            None => Job::Run(o.config()),
            Some(source) => {
                let m = MachineSource {
                    source: source.clone(),
                    smp: o.machine.smp,
                    mem: o.machine.mem,
                    qemu_args: o.machine.qemu_args.clone(),
                };
                let (plan, args) = prepare(&m)?;
                let mut config = o.config();
                config
                    .prepend_qemu_args(&args)
                    .map_err(|e| format!("--machine: {e}"))?;
                Job::Replay(config, Box::new(plan))
            }
        },
        Request::Bench(mut b) => {
            if let Some(source) = b.machine.machine.take() {
                let m = MachineSource {
                    source,
                    smp: b.machine.smp,
                    mem: b.machine.mem,
                    qemu_args: Vec::new(),
                };
                let (plan, mut args) = prepare(&m)?;
                // bench has no replay check of its own: its notes are printed here.
                for note in &plan.notes {
                    eprintln!("numalab: {note}");
                }
                args.append(&mut b.machine.qemu_args);
                b.machine.qemu_args = args;
            }
            Job::Bench(b)
        }
        Request::Topology(p) => Job::Topology(p),
        Request::Soak(s) => Job::Soak(s),
        Request::Sweep(s) => Job::Sweep(s),
        Request::Merge(m) => Job::Merge(m),
    })
}

/// The replay of `m`: its plan and QEMU arguments, or the one-line reason it cannot be used.
fn prepare(m: &MachineSource) -> Result<(scale::Plan, Vec<String>), String> {
    replay::prepare(&m.source, m.smp, m.mem, &m.qemu_args, &replay::tables_dir())
        .map_err(|e| format!("--machine: {e}"))
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

/// [`small_nodes`] for a machine on a preset (none when the user's QEMU arguments or a
/// replayed machine describe it).
fn small_nodes_of(m: &MachineOptions) -> Option<String> {
    let described = m.machine.is_some() || crate::qemu::machine::describes_machine(&m.qemu_args);
    (!described).then(|| {
        small_nodes(
            &m.topology,
            m.smp.unwrap_or(m.topology.cpus),
            m.mem.unwrap_or(m.topology.mem_mib),
        )
    })?
}

impl MachineOptions {
    /// A run of `suite` on the machine these options describe (echoing the console).
    pub fn config(&self, suite: Suite) -> RunConfig {
        // parse() refused arguments that do not split (check_qemu_args); were one to get
        // here, QEMU would get it as written and say what is wrong with it.
        let (described, extra) = crate::qemu::machine::split(&self.qemu_args)
            .unwrap_or_else(|_| (None, self.qemu_args.clone()));
        RunConfig {
            machine: MachineSpec {
                firmware: if self.uefi {
                    Firmware::Uefi
                } else {
                    Firmware::Bios
                },
                topology: self.topology.clone(),
                smp: self.smp,
                mem_mib: self.mem,
                cpus_online: None,
                described,
            },
            kernel: KernelSpec {
                options: {
                    let mut options = Cmdline::new();
                    for s in &self.sets {
                        options.push(s.clone());
                    }
                    options
                },
                suite,
                linux: None,
            },
            host: HostSpec {
                timeout: Duration::from_secs(self.timeout.max(1)),
                icount: false,
                accel: self.accel,
                placement: crate::qemu::host_numa::Options {
                    pin: self.pin,
                    host_map: self.host_map.clone().unwrap_or_default(),
                    oversubscribe: self.oversubscribe,
                    prealloc: self.prealloc,
                    hugepages: self.hugepages.clone(),
                    ..crate::qemu::host_numa::Options::default()
                },
                qemu: self.qemu.clone(),
                extra,
            },
            output: OutputSpec {
                log: None,
                echo: true,
                echo_failures: false,
                trace: None,
            },
        }
    }
}

impl RunOptions {
    /// The boot these options describe.
    pub fn config(&self) -> RunConfig {
        let mut c = self.machine.config(self.suite);
        c.host.icount = self.icount;
        c.output.log = self.log.clone();
        c.output.echo = !self.quiet;
        c
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
        // 8node with 64M gave 8 MiB nodes, and three frame tests failed on
        // nodes without managed memory.
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let Err(e) = resolve(parse(words("--topology 8node --mem 64M --smp 8")).unwrap()) else {
            panic!("8 MiB nodes were accepted");
        };
        assert!(
            e.contains("as little as 8 MiB") && e.contains("use --mem 512M"),
            "{e}"
        );
        let Err(_) = resolve(parse(words("bench --topology 8node --mem 256M")).unwrap()) else {
            panic!("bench with 32 MiB nodes was accepted");
        };
        // Enough memory, or a machine the user describes: not this check's business.
        assert!(matches!(
            resolve(parse(words("--topology 8node --mem 512M")).unwrap()),
            Ok(Job::Run(_))
        ));
        // (-m at the default suite's memory floor, guest_memory.rs: below it is refused.)
        assert!(matches!(
            resolve(parse(words("--mem 64M -- -m 66M")).unwrap()),
            Ok(Job::Run(_))
        ));
    }
}
