//! `qemu-run.sh sweep` and `qemu-run.sh merge`: benchmarks over topologies x kernel options x
//! repetitions as independent `qemu-run.sh bench` runs, handed to GNU parallel (on this host,
//! or as a job list for several hosts), then merged into one run whose records carry their
//! job's variant. The jobs are plan.rs, the merge merge.rs, GNU parallel parallel.rs, the
//! test_vmalloc grid grid.rs; docs/sweeps.md.

pub mod grid;
pub mod merge;
pub mod parallel;
pub mod plan;

pub use merge::{facets, load, merged, revision, variants, JobResult};
pub use plan::{plan, shell_quote, SweepJob};

use crate::bench;
use crate::build::image;
use crate::cli::exit;
use crate::cli::{MergeOptions, SweepOptions};
use crate::run::results::{git_rev, utc_now};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn refuse(message: &str) -> i32 {
    eprintln!("qemu-run.sh: sweep: {message}");
    exit::USAGE
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Runs `qemu-run.sh sweep`: plans every job (a bad axis or bench argument exits 2 before
/// anything is built), then writes the job list (`--emit-jobs`) or builds the kernel once, runs
/// the jobs through GNU parallel on this host, and merges those that passed. Exit status: 0
/// when every job passed and the merge worked, 1 when a job failed, 2 for a bad command line,
/// 3 when the kernel could not be built, 4 when GNU parallel is missing.
pub fn run_sweep(o: &SweepOptions) -> i32 {
    let topologies = o.topologies();
    let jobs = match plan::plan(&topologies, &o.axes, o.reps, &o.bench_args) {
        Ok(j) => j,
        Err(e) => return refuse(&e),
    };
    let root = image::repo_root();
    let (stamp, _) = utc_now();
    let out = absolute(&o.out.clone().unwrap_or_else(|| {
        root.join("target/sweep")
            .join(format!("{stamp}-{}", git_rev(&root)))
    }));
    let repo = absolute(o.repo.as_deref().unwrap_or(root.as_path()));
    let lines: Vec<String> = jobs.iter().map(|j| j.command_line(&repo, &out)).collect();
    let shape = format!(
        "{} jobs: {} topologies{} x {} reps",
        jobs.len(),
        topologies.len(),
        o.axes
            .iter()
            .map(|a| format!(" x {} {}", a.values.len(), a.key))
            .collect::<String>(),
        o.reps
    );
    if let Some(file) = &o.emit_jobs {
        if let Some(why) = emit_jobs_problem(file, &o.bench_args, &root, &repo) {
            return refuse(&why);
        }
        let mut text = lines.join("\n");
        text.push('\n');
        if let Err(e) = std::fs::write(file, text) {
            eprintln!("qemu-run.sh: sweep: cannot write {}: {e}", file.display());
            return exit::FAIL;
        }
        println!("numalab: sweep: wrote {} ({shape})", file.display());
        println!(
            "numalab: sweep: run them with: parallel --will-cite --sshlogin HOST1,HOST2 --jobs 1 < {}",
            file.display()
        );
        println!(
            "numalab: sweep: then copy back {}/jobs/ from every host (rsync -a HOST:{0}/jobs/ {0}/jobs/) and run ./qemu-run.sh merge {0}/jobs/* --out {0}",
            out.display()
        );
        return exit::PASS;
    }
    let jobs_dir = out.join("jobs");
    if std::fs::read_dir(&jobs_dir).is_ok_and(|mut d| d.next().is_some()) {
        return refuse(&format!(
            "{} already holds jobs of another sweep: choose another --out",
            jobs_dir.display()
        ));
    }
    if let Err(why) = parallel::available() {
        eprintln!("qemu-run.sh: sweep: {why}");
        return exit::QEMU;
    }
    // The kernel and the images once, here: the jobs then find them up to date and never
    // build into the same target folder side by side.
    let firmwares: BTreeSet<&str> = jobs
        .iter()
        .filter_map(|j| crate::run::parse(&j.words(&out)[1..]).ok())
        .map(|a| a.base.machine.firmware.name())
        .collect();
    let built = image::build_kernel().and_then(|k| {
        firmwares.iter().try_for_each(|f| {
            let fw = if *f == "uefi" {
                image::Firmware::Uefi
            } else {
                image::Firmware::Bios
            };
            image::build_image(&k, fw).map(|_| ())
        })
    });
    if let Err(e) = built {
        eprintln!("numalab: {e}");
        return exit::BUILD;
    }
    let at_once = o
        .jobs
        .map_or_else(crate::run::results::host_cpus, |n| n as usize);
    println!(
        "numalab: sweep: {shape}, up to {at_once} at once through GNU parallel; each job's console in {}/JOB/bench.out",
        jobs_dir.display()
    );
    let ended = match parallel::run_local(&lines, &out, at_once) {
        Ok(e) => e,
        Err(e) => {
            eprintln!("qemu-run.sh: sweep: {e}");
            return exit::FAIL;
        }
    };
    let mut status = exit::PASS;
    let mut passed = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        let dir = jobs_dir.join(&job.name);
        match ended.iter().find(|e| e.seq == i + 1) {
            Some(e) if e.exit == 0 => {
                println!("numalab: sweep: {} passed ({:.1} s)", job.name, e.seconds);
                passed.push(dir);
            }
            other => {
                let why = other.map_or("did not run".to_string(), |e| {
                    format!("failed: exit {} ({:.1} s)", e.exit, e.seconds)
                });
                let out = dir.join("bench.out");
                eprintln!(
                    "numalab: sweep: {} {why}; from its console {}:",
                    job.name,
                    out.display()
                );
                let console = std::fs::read_to_string(&out).unwrap_or_default();
                for l in failure_lines(&console) {
                    eprintln!("    {l}");
                }
                status = exit::FAIL;
            }
        }
    }
    if passed.is_empty() {
        eprintln!("numalab: sweep: no job passed: nothing to merge");
        return exit::FAIL;
    }
    status.max(merge_dirs(&passed, &out, false))
}

/// The lines of a failed job's console that say why: the runner's own lines, less the QEMU
/// command lines, the serial log's frame, the tables' header and the files written (the last
/// 15 lines when there is none).
pub fn failure_lines(console: &str) -> Vec<&str> {
    let noise = [
        "numalab: bench: wrote",
        "numalab: QEMU command",
        "numalab: ----",
        "numalab: bench: host ",
    ];
    let said: Vec<&str> = console
        .lines()
        .filter(|l| {
            ["numalab: ", "qemu-run.sh: ", "error"]
                .iter()
                .any(|p| l.starts_with(p))
        })
        .filter(|l| !noise.iter().any(|n| l.starts_with(n)))
        // The progress line of each boot is its whole QEMU command line.
        .filter(|l| !(l.starts_with("numalab: bench: ") && l.contains(" boot (")))
        .collect();
    if said.is_empty() {
        let tail: Vec<&str> = console.lines().rev().take(15).collect();
        tail.into_iter().rev().collect()
    } else {
        said
    }
}

/// Why `--emit-jobs FILE` would overwrite one of the sweep's inputs: a
/// file the BENCH ARGS name (whole words or `KEY=PATH`), or a file of the checkout the jobs
/// run from (`root` or `--repo`; its build outputs under target/ aside), or a folder.
fn emit_jobs_problem(
    file: &Path,
    bench_args: &[String],
    root: &Path,
    repo: &Path,
) -> Option<String> {
    use crate::resolve::user_path::{at_caller, normalized, same_or_inside};
    let shown = file.display();
    if file.is_dir() {
        return Some(format!("--emit-jobs {shown}: is a folder, not a file"));
    }
    for w in bench_args {
        for p in std::iter::once(w.as_str()).chain(w.split_once('=').map(|(_, v)| v)) {
            let input = at_caller(Path::new(p));
            if !p.is_empty() && input.is_file() && normalized(&input) == normalized(file) {
                return Some(format!(
                    "--emit-jobs {shown}: is {p}, an input the BENCH ARGS name: the job list \
                     would overwrite it"
                ));
            }
        }
    }
    for checkout in [root, repo] {
        let outputs = checkout.join("target");
        if file.exists() && same_or_inside(file, checkout) && !same_or_inside(file, &outputs) {
            return Some(format!(
                "--emit-jobs {shown}: is a file of the checkout {} the jobs run from: the job \
                 list would overwrite it; write it outside the checkout or under target/",
                checkout.display()
            ));
        }
    }
    None
}

/// Runs `qemu-run.sh merge DIR... --out OUT`.
pub fn merge_command(o: &MergeOptions) -> i32 {
    merge_dirs(&o.dirs, &o.out, o.force)
}

/// Merges the job folders `dirs` into `out`, prints the jobs, their variants and the tables
/// grouped by variant; 0 when it wrote the run, 2 when the folders cannot be one run.
pub fn merge_dirs(dirs: &[PathBuf], out: &Path, force: bool) -> i32 {
    let say = |m: &str| {
        // A job's JSONL line may be megabytes long: the message quotes a bounded part of it.
        eprintln!("qemu-run.sh: merge: {}", crate::machine::text::bounded(m));
        exit::USAGE
    };
    // The output must not be, or lie inside, a folder being merged: the merge would copy a
    // job into itself. Nothing is written then.
    if let Some(d) = dirs
        .iter()
        .find(|d| crate::resolve::user_path::same_or_inside(out, d))
    {
        return say(&format!(
            "--out {} is inside one of the folders being merged ({}): the merge would copy \
             that job into itself; choose an --out outside every job folder",
            out.display(),
            d.display()
        ));
    }
    if let Some(why) = crate::resolve::user_path::folder_problem("--out", out) {
        return say(&why);
    }
    let mut jobs: Vec<JobResult> = Vec::new();
    for d in dirs {
        match load(d) {
            Ok(j) if jobs.iter().any(|k| k.name == j.name) => {
                return say(&format!(
                    "two job folders named {}: job names must be unique",
                    j.name
                ))
            }
            Ok(j) => jobs.push(j),
            Err(e) => return say(&e),
        }
    }
    let host = std::fs::read_to_string("/etc/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    let (stamp, iso) = utc_now();
    let (header, records, lines) = match merged(&jobs, force, &iso, &host) {
        Ok(m) => m,
        Err(e) => return say(&e),
    };
    if let Err(why) = revision(&jobs) {
        eprintln!("numalab: merge: warning (--force): {why}");
    }
    let rev = header["git_rev"].as_str().unwrap_or("norev").to_string();
    if rev.ends_with("-dirty") {
        eprintln!("numalab: merge: warning: revision {rev} has uncommitted changes: jobs from different checkouts may not have run the same code");
    }
    let stem = format!("{stamp}-{rev}");
    if out.join(&stem).exists() || out.join(format!("{stem}.jsonl")).exists() {
        return say(&format!(
            "{} already holds a merged run {stem} (another merge into it in the same second?): \
             nothing was overwritten; merge again",
            out.display()
        ));
    }
    let (jsonl, run_dir) = match merge::write(&jobs, &header, &lines, out, &stem) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("numalab: merge: {e}");
            return exit::FAIL;
        }
    };
    // The merged run's report, as a single run's (html/): every variant's tables and charts.
    let report = match crate::report::html::write_report(&jsonl, &run_dir) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("numalab: merge: report: {e}");
            return exit::FAIL;
        }
    };
    for (j, v) in jobs
        .iter()
        .zip(header["jobs"].as_array().into_iter().flatten())
    {
        println!(
            "numalab: merge: {:<40} variant {:<36} rev {} host {} ({} records)",
            j.name,
            v["variant"].as_str().unwrap_or(""),
            v["git_rev"].as_str().unwrap_or("?"),
            v["host"].as_str().unwrap_or("?"),
            j.records.len()
        );
    }
    let host_cpus = header["host_cpus"].as_u64().unwrap_or(1) as usize;
    print!("{}", bench::tables(&records, host_cpus));
    print!("{}", grid::grid(&records));
    println!();
    println!(
        "numalab: merge: {} records of {} variants from {} jobs",
        records.len(),
        header["variants"].as_array().map_or(0, Vec::len),
        jobs.len()
    );
    println!("numalab: merge: wrote {}", jsonl.display());
    println!("numalab: merge: wrote {}", run_dir.display());
    println!("numalab: merge: wrote {}", report.display());
    exit::PASS
}

#[cfg(test)]
mod tests;
