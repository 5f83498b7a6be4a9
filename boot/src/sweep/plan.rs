//! A sweep's jobs: the cross product of topologies, axis values and repetitions; each job one
//! `qemu-run.sh bench` command line (checked as bench itself parses it, before anything runs),
//! its folder name, and its shell command line (quoted for sh, which GNU parallel runs it with).

use crate::cli::Axis;
use std::path::Path;

/// One job of a sweep: one `qemu-run.sh bench` run with its own `--out` folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SweepJob {
    /// Its folder under `OUT/jobs/`: index, topology, axis values (and repetition).
    pub name: String,
    pub topology: String,
    /// This job's value of every axis, as `KEY=VALUE`.
    pub sets: Vec<String>,
    /// Which independent run of this combination (0-based).
    pub rep: u32,
    /// The user's bench arguments (the same for every job).
    pub bench_args: Vec<String>,
}

/// Bench options that a sweep sets itself, refused among the BENCH ARGS.
const SWEEP_OWN: &[(&str, &str)] = &[
    ("--topology", "give the topologies to sweep --topology A,B"),
    ("--out", "give the sweep's folder to sweep --out DIR"),
    ("--machine", "a sweep runs presets (sweep --topology A,B)"),
    ("--compare", "compare result files with bench --compare"),
    ("--help", "see qemu-run.sh bench --help"),
    ("-h", "see qemu-run.sh bench --help"),
];

/// The most jobs one sweep plans.
pub const MAX_JOBS: usize = 10_000;

impl SweepJob {
    /// The words after `qemu-run.sh` that run this job with its results in `out`.
    pub fn words(&self, out: &Path) -> Vec<String> {
        let mut w = vec![
            "bench".to_string(),
            "--topology".into(),
            self.topology.clone(),
        ];
        for s in &self.sets {
            w.push("--set".into());
            w.push(s.clone());
        }
        w.push("--out".into());
        w.push(out.display().to_string());
        // Last: the user's words may end with `-- QEMU ARGS`.
        w.extend(self.bench_args.iter().cloned());
        w
    }

    /// The job's shell command line, as one line of the job list: in the checkout `repo`, its
    /// folder `out/jobs/NAME` holds the bench results and `bench.out`, its console.
    pub fn command_line(&self, repo: &Path, out: &Path) -> String {
        let dir = out.join("jobs").join(&self.name);
        let dir_q = shell_quote(&dir.display().to_string());
        let words: Vec<String> = self.words(&dir).iter().map(|w| shell_quote(w)).collect();
        format!(
            "cd {} && mkdir -p {dir_q} && ./qemu-run.sh {} > {dir_q}/bench.out 2>&1",
            shell_quote(&repo.display().to_string()),
            words.join(" ")
        )
    }
}

/// `word` as one sh word: as it is when it holds only characters sh treats as plain, else in
/// single quotes (a quote inside becomes `'\''`).
pub fn shell_quote(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "_@%+=:,./-".contains(c);
    if !word.is_empty() && word.chars().all(plain) {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// A folder name from `text`: characters other than letters, digits and `._=+-` become `_`.
fn folder_word(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._=+-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// Why `bench_args` cannot be every job's bench arguments: an option the sweep sets itself,
/// or a `--set` of an axis key (each job sets that one).
fn bench_args_problem(bench_args: &[String], axes: &[Axis]) -> Option<String> {
    let mut words = bench_args.iter().take_while(|w| *w != "--");
    while let Some(w) = words.next() {
        let (flag, inline) = match w.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v)),
            _ => (w.as_str(), None),
        };
        if let Some((own, why)) = SWEEP_OWN.iter().find(|(o, _)| *o == flag) {
            return Some(format!("BENCH ARGS: {own} is the sweep's own: {why}"));
        }
        if flag == "--set" {
            let Some(value) = inline.or_else(|| words.next().map(String::as_str)) else {
                continue;
            };
            let key = value.split_once('=').map_or(value, |(k, _)| k);
            if axes.iter().any(|a| a.key == key) {
                return Some(format!(
                    "BENCH ARGS: --set {value}: {key} is an axis of the sweep (--axis {key}=...)"
                ));
            }
        }
    }
    None
}

/// Every job of the sweep: topologies (outermost) x the values of each axis (in the order
/// given) x `reps` repetitions (innermost), each job's bench command line parsed as
/// `qemu-run.sh bench` would parse it. Err: one line saying what is wrong.
pub fn plan(
    topologies: &[String],
    axes: &[Axis],
    reps: u32,
    bench_args: &[String],
) -> Result<Vec<SweepJob>, String> {
    if let Some(why) = bench_args_problem(bench_args, axes) {
        return Err(why);
    }
    let mut combos: Vec<(String, Vec<String>)> =
        topologies.iter().map(|t| (t.clone(), Vec::new())).collect();
    for axis in axes {
        combos = combos
            .into_iter()
            .flat_map(|(t, sets)| {
                axis.values.iter().map(move |v| {
                    let mut s = sets.clone();
                    s.push(format!("{}={v}", axis.key));
                    (t.clone(), s)
                })
            })
            .collect();
    }
    let total = combos.len() * reps as usize;
    if total > MAX_JOBS {
        return Err(format!(
            "{total} jobs: a sweep plans at most {MAX_JOBS} (fewer values or --reps)"
        ));
    }
    let width = total.to_string().len().max(2);
    let mut jobs = Vec::with_capacity(total);
    for (topology, sets) in combos {
        for rep in 0..reps {
            let mut name = format!("{:0width$}-{topology}", jobs.len() + 1);
            for s in &sets {
                name.push('-');
                name.push_str(&folder_word(s));
            }
            if reps > 1 {
                name.push_str(&format!("-r{rep}"));
            }
            jobs.push(SweepJob {
                name,
                topology: topology.clone(),
                sets: sets.clone(),
                rep,
                bench_args: bench_args.to_vec(),
            });
        }
    }
    // Every job's command line is one bench accepts: a bad bench argument (or a --mem too
    // small for one topology) is refused now, before anything builds or boots.
    for job in &jobs {
        let words = job.words(Path::new("/nonexistent"));
        if let Err(e) = crate::run::parse(&words[1..]) {
            let text = e.to_string();
            let first = text
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("not a bench command line");
            return Err(format!(
                "job {} (bench {}): {}",
                job.name,
                words[1..].join(" ").replace(" --out /nonexistent", ""),
                first.trim_start_matches("error: ")
            ));
        }
    }
    Ok(jobs)
}
