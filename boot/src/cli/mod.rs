//! The command line of `qemu-run.sh` (and of `cargo run -p numalab-boot`), declared once with
//! clap: the run options, and the `bench` subcommand with its own. `--help` is generated from
//! these declarations; a bad command line is a clap error (message, usage line, exit status 2).

use crate::qemu::presets::Preset;
use clap::error::ErrorKind;
use clap::{Args, CommandFactory, Parser, Subcommand};
use numalab_algo::options::{Setting, Suite};
use std::ffi::OsString;
use std::path::PathBuf;

use parsers::*;

pub use sweep::{Axis, MergeOptions, SweepOptions};

pub mod exit;
mod one_line;
mod parsers;
mod sweep;

pub use one_line::quote;

const USAGE: &str = "qemu-run.sh [OPTIONS] [-- QEMU ARGS...]
       qemu-run.sh bench [OPTIONS] [-- QEMU ARGS...]
       qemu-run.sh topology SOURCE
       qemu-run.sh sweep [OPTIONS] -- BENCH ARGS...
       qemu-run.sh merge DIR... --out OUT
       qemu-run.sh test [--slow] [CARGO TEST ARGS]";

const ABOUT: &str = "Builds the kernel, boots it under QEMU on a NUMA topology and runs an \
in-kernel suite. Without arguments: the main job (tests, stress and smoke benchmarks on 4node, \
the memoryless-node experiment on the memoryless preset, memoryless_sheaves' icount boot on \
8node-2mem, then the benchmark and seeds tables).";

const AFTER_HELP: &str = "\
Exit status: 0 all tests passed; 1 a test failed, the kernel panicked or no test ran;
2 bad command line or unusable --machine/topology source; 3 build failed; 4 QEMU missing
or failed; 5 the guest ran out of memory; 124 timeout; 128+N signal N (130 Ctrl-C).
Relative paths are read from the folder the command was run in; an output (--out, --html)
may not be, or lie inside, an input.
`qemu-run.sh test` runs every test (cargo test) and `qemu-run.sh setup` only installs;
docs/running.md describes all of it.";

const BENCH_USAGE: &str = "qemu-run.sh bench [OPTIONS] [-- QEMU ARGS...]
       qemu-run.sh bench --compare BASE NEW [--all] [--html FILE]";

const BENCH_ABOUT: &str = "Runs the experiments (all, or --set bench=NAME[,NAME]) in a \
multi-CPU boot (tsc: contention, throughput, memory; host time, repeated --reps times), a \
multi-CPU --icount boot (det: vCPUs round-robin, exact counts), a one-CPU --icount boot \
(instruction counts), plus a uma boot for the memoryless-node experiment's single_node case; \
checks the BENCH contract; writes target/bench/<date>-<rev>.jsonl, the serial logs and SVG \
charts; prints one table per experiment (median, min..max, ratio against its baseline case) \
and the seeds table (docs/benchmarks.md). The list_lock experiment is best read on \
--topology 2x8 (two nodes of 8 CPUs).";

/// `--kernel`: which kernel runs the experiments.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Kernel {
    /// numalab only (the default)
    #[default]
    Numalab,
    /// Debian 12's Linux 6.1 (the partial design) with the numalab_twin module only
    #[value(alias = "linux-6.1")]
    Linux,
    /// Debian 13's newest backports Linux 7.x (the sheaves design) with the module only
    /// (`./qemu-run.sh setup` installs it)
    #[value(name = "linux-7")]
    Linux7,
    /// numalab and Linux 6.1, on the same machine description, records merged
    Both,
    /// numalab, Linux 6.1 and Linux 7.x, records merged
    All,
}

impl Kernel {
    /// Whether numalab boots.
    pub fn runs_numalab(self) -> bool {
        !matches!(self, Kernel::Linux | Kernel::Linux7)
    }

    /// The Linux kernels that boot, in order.
    pub fn linuxes(self) -> &'static [crate::build::linux_kernel::LinuxKernel] {
        use crate::build::linux_kernel::LinuxKernel::{V6_1, V7};
        match self {
            Kernel::Numalab => &[],
            Kernel::Linux | Kernel::Both => &[V6_1],
            Kernel::Linux7 => &[V7],
            Kernel::All => &[V6_1, V7],
        }
    }

    /// The option's value as the command line spells it.
    pub fn name(self) -> &'static str {
        match self {
            Kernel::Numalab => "numalab",
            Kernel::Linux => "linux",
            Kernel::Linux7 => "linux-7",
            Kernel::Both => "both",
            Kernel::All => "all",
        }
    }
}

/// The whole command line: the run options, or a subcommand.
#[derive(Parser, Debug)]
#[command(
    name = "qemu-run.sh",
    about = ABOUT,
    override_usage = USAGE,
    after_help = AFTER_HELP,
    args_conflicts_with_subcommands = true,
    args_override_self = true,
    disable_help_subcommand = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub run: RunOptions,
    #[command(subcommand)]
    pub command: Option<Command>,
}

#[derive(Subcommand, Debug)]
// Parsed once per process: the size of the bench variant costs nothing.
#[allow(clippy::large_enum_variant)]
pub enum Command {
    /// Benchmarks: tables, JSONL and SVG charts
    #[command(
        long_about = BENCH_ABOUT,
        override_usage = BENCH_USAGE,
        args_override_self = true
    )]
    Bench(BenchOptions),
    /// No boot: print Linux's view of a machine description (docs/replay.md)
    #[command(long_about = TOPOLOGY_ABOUT)]
    Topology(TopologyOptions),
    /// The soak: every CPU runs a seeded random allocator mix; tags and conservation checked
    #[command(args_override_self = true)]
    Soak(SoakOptions),
    /// Benchmarks over topologies x kernel options x repetitions, one bench run per job
    /// (GNU parallel), merged (docs/sweeps.md)
    #[command(long_about = sweep::SWEEP_ABOUT, override_usage = sweep::SWEEP_USAGE,
              args_override_self = true)]
    Sweep(SweepOptions),
    /// Merge the job folders of a sweep into one run (docs/sweeps.md)
    #[command(long_about = sweep::MERGE_ABOUT, args_override_self = true)]
    Merge(MergeOptions),
}

/// The default of `--timeout` (seconds).
pub const DEFAULT_TIMEOUT_S: u64 = 600;

/// The options of `qemu-run.sh soak` (docs/testing.md: the soak).
#[derive(Args, Clone, Debug)]
pub struct SoakOptions {
    /// Run this long (minutes) instead of a number of operations
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=10_000),
          conflicts_with = "ops")]
    pub minutes: Option<u64>,
    /// Operations over all CPUs (default 10000000, at most 2^40: the kernel's soak.ops)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=1 << 40))]
    pub ops: Option<u64>,
    /// The short soak of the main job and CI (1000000 operations)
    #[arg(long)]
    pub short: bool,
    /// Seed of every CPU's operation mix (printed; the same seed repeats a run's choices)
    #[arg(long, value_name = "S", default_value_t = 1)]
    pub seed: u64,
    /// Keep the serial log in FILE
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Do not echo the serial console (the log is still shown on failure)
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub machine: MachineOptions,
}

const TOPOLOGY_ABOUT: &str = "Reads a machine description and prints what Linux would show \
on it: the numactl -H block, one '#' line per node (proximity domain, APIC ids, memory \
ranges) and every warning the table parsers raise. No boot. A source that cannot be used is \
one error line and exit status 2. docs/replay.md";

/// The options of `qemu-run.sh topology`.
#[derive(Args, Clone, Debug)]
pub struct TopologyOptions {
    /// A directory of binary tables (acpidump -b: apic.dat srat.dat slit.dat; or APIC SRAT
    /// SLIT from /sys/firmware/acpi/tables), an acpidump text, or a numactl -H text
    #[arg(value_name = "SOURCE")]
    pub source: PathBuf,
}

/// The machine and kernel options that a run and `bench` share.
#[derive(Args, Clone, Debug)]
pub struct MachineOptions {
    /// NUMA machine preset
    #[arg(long, value_name = "NAME", default_value = "4node", value_parser = topology_parser())]
    pub topology: Preset,
    /// Replay a real machine's NUMA shape: SOURCE as for `topology` (docs/replay.md); the
    /// kernel's numactl -H is compared with the source's
    #[arg(long, value_name = "SOURCE", conflicts_with = "topology")]
    pub machine: Option<PathBuf>,
    /// Number of CPUs, 1..=255 (spread over the preset's nodes that have CPUs)
    #[arg(long, value_name = "N", value_parser = parse_smp)]
    pub smp: Option<u32>,
    /// Memory, e.g. 2G or 512M, at least 64M, at most 512G and the host's RAM plus swap
    /// (spread over the nodes that have memory)
    #[arg(long, value_name = "SIZE", value_parser = parse_mem)]
    pub mem: Option<u64>,
    /// Boot the UEFI image with OVMF (default: BIOS)
    #[arg(long)]
    pub uefi: bool,
    /// Kernel option, repeatable (docs/running.md: kernel options)
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = one_line::OneLine(parse_set))]
    pub sets: Vec<Setting>,
    /// Kill QEMU after this long and report a timeout
    #[arg(long, value_name = "SECONDS", default_value_t = DEFAULT_TIMEOUT_S)]
    pub timeout: u64,
    /// QEMU binary to use (e.g. DIR/qemu of a QEMU bundle, docs/running.md)
    #[arg(long, value_name = "PATH")]
    pub qemu: Option<PathBuf>,
    /// Accelerator of the host-time boots: tcg, kvm (-accel kvm -cpu host; det and icount
    /// boots stay on TCG) or auto (kvm when /dev/kvm opens); docs/running.md "On your own
    /// server"
    #[arg(long, value_enum, value_name = "ACCEL", default_value = "tcg")]
    pub accel: crate::qemu::accel::Accel,
    /// Under KVM: pin each vCPU to the host CPUs of the host node backing its guest node and
    /// bind each node's memory there (the default under KVM on a host of several nodes)
    #[arg(long)]
    pub pin: bool,
    /// Under KVM: guest node to host node, e.g. 0=1,1=0 (default: guest node i on host
    /// node i mod the host's nodes)
    #[arg(long, value_name = "G=H,...", value_parser = parse_host_map)]
    pub host_map: Option<crate::qemu::host_numa::HostMap>,
    /// Under KVM: run a machine with more vCPUs than host CPUs (refused by default)
    #[arg(long)]
    pub oversubscribe: bool,
    /// Under KVM: preallocate the guest's memory on its host nodes (prealloc=on)
    #[arg(long)]
    pub prealloc: bool,
    /// Under KVM: back the guest's memory with huge pages from this hugetlbfs mount
    #[arg(long, value_name = "DIR")]
    pub hugepages: Option<PathBuf>,
    /// Appended to QEMU's arguments; if they contain -smp, -m, -numa or -object
    /// memory-backend-*, the preset's machine description is dropped
    #[arg(last = true, value_name = "QEMU ARGS", allow_hyphen_values = true)]
    pub qemu_args: Vec<String>,
}

/// The options of one boot (`qemu-run.sh [OPTIONS]`).
#[derive(Args, Clone, Debug)]
pub struct RunOptions {
    #[command(flatten)]
    pub machine: MachineOptions,
    /// In-kernel suite to run
    #[arg(long, value_name = "NAME", default_value = "all", value_parser = suite_parser())]
    pub suite: Suite,
    /// Add -icount shift=0,sleep=off: guest rdtsc counts instructions exactly
    #[arg(long)]
    pub icount: bool,
    /// Keep the serial log in FILE
    #[arg(long, value_name = "FILE")]
    pub log: Option<PathBuf>,
    /// Do not echo the serial console (the log is still shown on failure)
    #[arg(long)]
    pub quiet: bool,
    /// The main job (`./qemu-run.sh --verbose`, no other option): every experiment's table,
    /// the QEMU command lines and the whole serial console of every boot
    #[arg(long)]
    pub verbose: bool,
}

/// The options of `qemu-run.sh bench`.
#[derive(Args, Clone, Debug)]
pub struct BenchOptions {
    /// Short variants of the experiments (bench.smoke=1)
    #[arg(long)]
    pub smoke: bool,
    /// Echo the whole serial console of every boot (default: progress lines and failures)
    #[arg(long)]
    pub verbose: bool,
    /// Where results go (default: target/bench in the checkout)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Which kernel runs the experiments: numalab, Debian's Linux 6.1 (linux, alias linux-6.1)
    /// or 7.x (linux-7) with the numalab_twin module (docs/linux-twin.md), numalab and 6.1
    /// (both), or all three, side by side
    #[arg(long, value_enum, value_name = "KERNEL", default_value = "numalab")]
    pub kernel: Kernel,
    /// Words added to Linux's command line in the twin's boots, e.g. "init_on_alloc=0"
    /// (Debian's kernel zeroes every allocation by default; docs/linux-twin.md)
    #[arg(long, value_name = "WORDS", allow_hyphen_values = true)]
    pub linux_append: Option<String>,
    /// No boot: compare two runs (result files, or run folders) as Linux's 0-day robot does:
    /// per bench/case/metric/cpus/boot median ± stddev%, %change, min..max; exact (det,
    /// icount) changes first, then changes beyond the spread, the rest folded
    #[arg(long, num_args = 2, value_names = ["BASE", "NEW"])]
    pub compare: Option<Vec<PathBuf>>,
    /// With --compare: also list what is within the spread or unchanged
    #[arg(long, requires = "compare")]
    pub all: bool,
    /// With --compare: also write the comparison as a self-contained HTML page
    #[arg(long, value_name = "FILE", requires = "compare")]
    pub html: Option<PathBuf>,
    /// Repeat every host-time (tsc) boot R times, case order reversed on odd repetitions;
    /// tables show median and min..max (default 3, 1 with --smoke)
    #[arg(long, value_name = "R", value_parser = parse_reps)]
    pub reps: Option<u32>,
    /// Only the instruction-counting boots (det and one-CPU -icount): exact, repeatable
    /// counts, no host-time boot (and, with --kernel linux|both, Linux's icount boot only)
    #[arg(long)]
    pub icount: bool,
    /// Load the trace plugin into the det and icount boots (docs/trace.md): per timed region
    /// the remote-access fraction, cache-line transfers (perf c2c's HITM, local and remote),
    /// a modelled time, and perf c2c's table of the hottest lines (RUN/c2c-BOOT.txt)
    #[arg(long, value_enum, value_name = "WHAT")]
    pub trace: Option<crate::trace::TraceWhat>,
    /// With --trace: the cost model of the modelled time and of the plugin's caches, a preset
    /// of costs/ (cascadelake-2s, genoa-9224-nps2, genoa-9224-cxl, gnr-6980p-snc3) or a file
    /// with Intel MLC's --latency_matrix and --c2c_latency text (docs/costs.md); default: the
    /// preset that fits the machine
    #[arg(long, value_name = "NAME|FILE", requires = "trace")]
    pub cost_model: Option<String>,
    /// Removed: use --cost-model (docs/costs.md)
    #[arg(long, value_name = "FILE", hide = true)]
    pub trace_latency: Option<PathBuf>,
    #[command(flatten)]
    pub machine: MachineOptions,
    /// The run options that the bench runner chooses itself: accepted by the parser only to
    /// refuse them with that reason.
    #[command(flatten)]
    runner_chosen: RunnerChosen,
}

/// Run options that `bench` refuses (hidden from its help).
#[derive(Args, Clone, Debug)]
struct RunnerChosen {
    #[arg(long, hide = true, value_name = "NAME")]
    suite: Option<String>,
    #[arg(long, hide = true, value_name = "FILE")]
    log: Option<PathBuf>,
    #[arg(long, hide = true)]
    quiet: bool,
}

impl RunnerChosen {
    /// The first refused option given, if any.
    fn given(&self) -> Option<&'static str> {
        [
            (self.suite.is_some(), "--suite"),
            (self.log.is_some(), "--log"),
            (self.quiet, "--quiet"),
        ]
        .into_iter()
        .find_map(|(given, name)| given.then_some(name))
    }
}

/// What the command line asks for, as typed: the first stage of the runner (cli -> `Request`
/// -> `resolve` -> `Job` -> plan -> boot -> report; docs/architecture.md). It holds options
/// only, nothing of QEMU: `resolve` reads the host and turns it into a `Job` that can run.
#[derive(Debug)]
pub enum Request {
    /// No arguments (or only `--verbose`): every suite with the smoke benchmarks, then the
    /// summary (with --verbose every table), on this machine.
    Main(RunOptions),
    /// One boot (of a preset, of the machine after `--`, or of a `--machine` source).
    Run(RunOptions),
    /// `bench`.
    Bench(BenchOptions),
    /// `topology SOURCE`: print Linux's view of a machine description, no boot.
    Topology(PathBuf),
    /// `soak`.
    Soak(SoakOptions),
    /// `sweep`.
    Sweep(SweepOptions),
    /// `merge`.
    Merge(MergeOptions),
}

/// Parses the arguments after the program name. Errors are clap's: `exit()` prints them (with
/// the usage line) and exits with status 2, or prints the help and exits 0 for `-h`/`--help`.
pub fn parse<I, T>(args: I) -> Result<Request, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<OsString>,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    // The main job: no argument, or only --verbose (its full tables).
    let empty = args.iter().all(|a| a == "--verbose");
    let cli = Cli::try_parse_from(std::iter::once(OsString::from("qemu-run.sh")).chain(args))?;
    check_qemu_args(&cli)?;
    check_design_knobs(&cli)?;
    match cli.command {
        Some(Command::Bench(b)) => match b.runner_chosen.given() {
            Some(flag) => Err(bench_error(&format!(
                "bench: {flag} is chosen by the bench runner itself"
            ))),
            None if b.trace_latency.is_some() => Err(bench_error(
                "bench: --trace-latency was replaced by --cost-model NAME|FILE (a preset of costs/ or Intel MLC's text; docs/costs.md)",
            )),
            None => Ok(Request::Bench(b)),
        },
        Some(Command::Topology(t)) => Ok(Request::Topology(t.source)),
        Some(Command::Soak(s)) => Ok(Request::Soak(s)),
        Some(Command::Sweep(s)) => match s.problem() {
            Some(why) => Err(Cli::command().error(ErrorKind::ArgumentConflict, why)),
            None => Ok(Request::Sweep(s)),
        },
        Some(Command::Merge(m)) => Ok(Request::Merge(m)),
        None if empty => Ok(Request::Main(cli.run)),
        None => Ok(Request::Run(cli.run)),
    }
}

/// Refuses QEMU arguments after `--` whose machine part cannot be read (`-smp eight`, `-m`
/// without a value), before anything is built or booted: one line, exit status 2.
fn check_qemu_args(cli: &Cli) -> Result<(), clap::Error> {
    let machine = match &cli.command {
        Some(Command::Bench(b)) => &b.machine,
        Some(Command::Soak(s)) => &s.machine,
        _ => &cli.run.machine,
    };
    match crate::qemu::machine::split(&machine.qemu_args) {
        Ok(_) => Ok(()),
        Err(e) => Err(Cli::command().error(
            ErrorKind::ValueValidation,
            format!("the QEMU arguments after --: {e}"),
        )),
    }
}

/// Refuses a `--set` knob that the chosen design does not read (`slub.cpu_partial` under
/// `slub.design=sheaves`): exit status 2 naming both, before anything is built.
fn check_design_knobs(cli: &Cli) -> Result<(), clap::Error> {
    let machine = match &cli.command {
        Some(Command::Bench(b)) => &b.machine,
        Some(Command::Soak(s)) => &s.machine,
        _ => &cli.run.machine,
    };
    let words: Vec<String> = machine.sets.iter().map(Setting::word).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    match numalab_algo::options::ignored_knobs(&words)
        .into_iter()
        .next()
    {
        None => Ok(()),
        Some(why) => Err(clap::Error::raw(
            ErrorKind::ArgumentConflict,
            format!("--set: {why}\n\n{}\n", one_line::HINT),
        )
        .with_cmd(&Cli::command())),
    }
}

/// A command-line error of `bench`, with its usage line.
fn bench_error(message: &str) -> clap::Error {
    let mut cmd = Cli::command();
    cmd.build();
    match cmd.find_subcommand_mut("bench") {
        Some(bench) => bench.error(ErrorKind::ArgumentConflict, message),
        None => cmd.error(ErrorKind::ArgumentConflict, message),
    }
}

#[cfg(test)]
mod tests;
