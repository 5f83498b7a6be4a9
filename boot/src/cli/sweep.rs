//! The command lines of `qemu-run.sh sweep` (topologies x kernel options x repetitions, each
//! job one `qemu-run.sh bench`, run through GNU parallel) and `qemu-run.sh merge` (job folders
//! into one run), declared with clap; the checks of an axis before anything is planned.

use clap::Args;
use std::path::PathBuf;

pub const SWEEP_ABOUT: &str = "Runs `qemu-run.sh bench BENCH ARGS` once per topology, value \
of each --axis and repetition (the cross product), each job an independent run with its own \
--out folder, up to --jobs at once through GNU parallel on this host; then merges the jobs into \
one JSONL and run folder whose records carry their job's variant, and prints the tables grouped \
by variant (and the test_vmalloc experiment's grid of Summary lines, when it ran). --emit-jobs FILE only writes the job list, one shell command a line, for \
`parallel --sshlogin host1,host2 --jobs 1 < FILE` on several machines (docs/sweeps.md).";

pub const SWEEP_USAGE: &str = "qemu-run.sh sweep [--topology A,B] [--axis KEY=V1,V2]... [--reps N] [--jobs N] [--out DIR] [--emit-jobs FILE [--repo DIR]] -- BENCH ARGS...";

pub const MERGE_ABOUT: &str = "Gathers the job folders of a sweep (each a `bench --out` \
folder with one JSONL) into one run: OUT/<date>-<rev>.jsonl (a header naming it a merged \
sweep with every job's header, then every record with its job's variant) and OUT/<date>-<rev>/ \
with each job's logs and charts under a subfolder named after the job; prints the tables \
grouped by variant, and the test_vmalloc grid of Summary lines when the jobs ran it. Jobs of different git revisions are refused unless --force.";

/// The options of `qemu-run.sh sweep`.
#[derive(Args, Clone, Debug)]
pub struct SweepOptions {
    /// Topology presets, comma-separated: one axis of the sweep
    #[arg(long, value_name = "A,B", default_value = "4node", value_parser = parse_topologies)]
    pub topology: String,
    /// A kernel option and its values, comma-separated (repeatable, one key each): one axis;
    /// every KEY=VALUE is checked against the kernel's option table before anything runs
    #[arg(long = "axis", value_name = "KEY=V1,V2", value_parser = super::one_line::OneLine(parse_axis))]
    pub axes: Vec<Axis>,
    /// Independent runs of every combination (their records are repetitions of one variant)
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub reps: u32,
    /// Jobs at once on this host (default: its cores). Host-time figures of jobs that run
    /// side by side share the cores: for timings use --jobs 1
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub jobs: Option<u32>,
    /// The sweep's folder: jobs/JOB/ per job, jobs.txt, the joblog and the merged run
    /// (default: target/sweep/<date>-<rev> in the checkout)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run nothing: write the job list to FILE (one shell command a line) for GNU parallel on
    /// several hosts
    #[arg(long, value_name = "FILE")]
    pub emit_jobs: Option<PathBuf>,
    /// With --emit-jobs: the checkout's path on every host (default: this checkout's)
    #[arg(long, value_name = "DIR", requires = "emit_jobs")]
    pub repo: Option<PathBuf>,
    /// The arguments of every job's `qemu-run.sh bench` (--smoke, --set bench=NAME, --icount,
    /// --reps R, ...); --topology, --out, --compare and --machine are the sweep's
    #[arg(last = true, value_name = "BENCH ARGS", allow_hyphen_values = true)]
    pub bench_args: Vec<String>,
}

/// The options of `qemu-run.sh merge`.
#[derive(Args, Clone, Debug)]
pub struct MergeOptions {
    /// Job folders (each holding one bench JSONL and its run folder)
    #[arg(value_name = "DIR", required = true, num_args = 1..)]
    pub dirs: Vec<PathBuf>,
    /// Where the merged run goes
    #[arg(long, value_name = "OUT", required = true)]
    pub out: PathBuf,
    /// Merge jobs of different git revisions anyway (the header keeps every job's revision)
    #[arg(long)]
    pub force: bool,
}

/// One axis of a sweep: a kernel option and the values it takes, each checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Axis {
    pub key: String,
    pub values: Vec<String>,
}

/// `--axis KEY=V1,V2`: every `KEY=Vi` must be a valid kernel option (the check `--set` makes),
/// values distinct and non-empty.
pub fn parse_axis(text: &str) -> Result<Axis, String> {
    let Some((key, list)) = text.split_once('=') else {
        return Err(format!("'{text}': expected KEY=V1,V2"));
    };
    let values: Vec<String> = list.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(format!(
            "'{text}': an empty value (values are comma-separated)"
        ));
    }
    for (i, v) in values.iter().enumerate() {
        numalab_algo::options::check_word(&format!("{key}={v}"))?;
        if values[..i].contains(v) {
            return Err(format!("'{text}': value '{v}' given twice"));
        }
    }
    Ok(Axis {
        key: key.to_string(),
        values,
    })
}

/// `--topology A,B`: preset names, each known, none twice.
fn parse_topologies(text: &str) -> Result<String, String> {
    let names: Vec<&str> = text.split(',').map(str::trim).collect();
    for (i, name) in names.iter().enumerate() {
        if crate::qemu::presets::find(name).is_none() {
            let known: Vec<&str> = crate::qemu::presets::all().iter().map(|p| p.name).collect();
            return Err(format!(
                "unknown topology '{name}' (known: {})",
                known.join(", ")
            ));
        }
        if names[..i].contains(name) {
            return Err(format!("topology '{name}' given twice"));
        }
    }
    Ok(names.join(","))
}

impl SweepOptions {
    /// The topology presets, in the order given.
    pub fn topologies(&self) -> Vec<String> {
        // One --topology (a second one replaces the first), comma-separated.
        self.topology.split(',').map(String::from).collect()
    }

    /// The refusal of a command line that the parser accepts but a sweep cannot run: an axis
    /// key given twice.
    pub fn problem(&self) -> Option<String> {
        self.axes.iter().enumerate().find_map(|(i, a)| {
            self.axes[..i].iter().any(|b| b.key == a.key).then(|| {
                format!(
                    "sweep: --axis {} given twice: give its values once, comma-separated",
                    a.key
                )
            })
        })
    }
}
