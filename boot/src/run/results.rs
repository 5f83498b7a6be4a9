//! The result files of a run: `DIR/<date>-<rev>.jsonl` (the header line, then every record),
//! beside it `DIR/<date>-<rev>/` with each boot's serial log, the SVG charts, `proc/lock_stat*`
//! (lock_stat.rs), the SLUB sysfs tree (sysfs.rs) and the HTML report `index.html`; the
//! header's facts (command, date, git revision, host, QEMU version).

use super::args::BenchArgs;
use super::execute::Runs;
use super::BootRun;
use crate::bench::BenchRecord;
use crate::build::image;
use crate::cli::Kernel;
use crate::report::svg;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

/// UTC `YYYYMMDD-HHMMSS` and ISO 8601 forms of now.
pub fn utc_now() -> (String, String) {
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
pub fn git_rev(root: &Path) -> String {
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

/// The host's core count.
pub fn host_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The most vCPUs of any boot in `runs`.
pub fn max_vcpus(runs: &[BootRun]) -> u32 {
    runs.iter().map(|r| r.config.vcpus()).max().unwrap_or(1)
}

/// The JSONL's first line: the run (date, revision, host, QEMU, options) and every numalab
/// boot with its command lines, verdict and time.
pub fn header(args: &BenchArgs, runs: &[BootRun], img: &Path, iso: &str, rev: &str) -> Value {
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
                "variant": r.variant,
                "topology": if r.config.user_describes_machine() { "custom (QEMU arguments)" } else { r.config.machine.topology.name },
                "vcpus": r.config.vcpus(),
                "accel": r.config.runs_on(),
                "kernel_cmdline": r.config.kernel_cmdline(),
                "qemu_args": r.config.qemu_args(img).unwrap_or_default(),
                "verdict": format!("{:?}", r.outcome.verdict),
                "seconds": r.outcome.elapsed.as_secs_f64(),
                // The cost model of this boot's modelled records (docs/costs.md), if traced.
                "cost_model": r.trace.as_ref().map(|t| t.cost_model.clone()),
            })
        })
        .collect();
    json!({
        "record": "header",
        "command": std::env::args().collect::<Vec<_>>(),
        "date": iso,
        "git_rev": rev,
        "host": host,
        "host_cpus": host_cpus(),
        "vcpus": max_vcpus(runs),
        "oversubscribed": max_vcpus(runs) as usize > host_cpus(),
        "accel": args.base.host.accel.name(),
        "host_nodes": crate::qemu::host_numa::read_host(Path::new("/sys")).ok().map(|h| h.nodes.len()),
        "placement": args.base.placement().ok().flatten().map(|(_, p)| p.describe()),
        "reps": args.reps,
        "qemu": qemu_version,
        "topology": if args.base.user_describes_machine() { "custom (QEMU arguments)" } else { args.base.machine.topology.name },
        "options": {
            "smoke": args.smoke,
            "main_job": args.main_job,
            "reps": args.reps,
            "sets": args.base.kernel.options.words(),
            "smp": args.base.machine.smp,
            "mem_mib": args.base.machine.mem_mib,
            "firmware": args.base.machine.firmware.name(),
            "extra_qemu_args": args.base.user_qemu_args(),
        },
        "boots": boots,
    })
}

/// The file name of every boot's serial log: `BOOT.log` (`linux-BOOT.log` for the 6.1 twin,
/// `linux7-BOOT.log` for the 7.x twin), with
/// `-TOPOLOGY` for a boot on another machine than the run's and `-repN` for repetition N > 0;
/// a second boot of the same name numbered (`linux-tsc-2.log`: the list_lock experiment's order-4 boot).
/// Every boot keeps its log.
pub fn log_names<'a>(args: &BenchArgs, runs: &'a Runs) -> Vec<(String, &'a BootRun)> {
    let mut seen = BTreeSet::new();
    let labelled = runs
        .numalab
        .iter()
        .map(|r| (String::new(), r))
        .chain(runs.linux.iter().map(|r| {
            let prefix = r
                .config
                .kernel
                .linux
                .as_ref()
                .map_or("linux-", |l| l.kernel.log_prefix());
            (prefix.to_string(), r)
        }));
    let mut out = Vec::new();
    for (prefix, r) in labelled {
        let mut stem = format!("{prefix}{}", r.boot.name());
        let topology = r.config.machine.topology.name;
        if !r.config.user_describes_machine()
            && topology != args.base.machine.topology.name
            && topology != r.boot.name()
        {
            stem.push('-');
            stem.push_str(topology);
        }
        if let Some(v) = &r.variant {
            stem.push('-');
            stem.push_str(variant_word(v));
        }
        if r.rep > 0 {
            stem.push_str(&format!("-rep{}", r.rep));
        }
        let mut name = format!("{stem}.log");
        let mut n = 1;
        while !seen.insert(name.clone()) {
            n += 1;
            name = format!("{stem}-{n}.log");
        }
        out.push((name, r));
    }
    out
}

/// A variant's word in file names: `partial` for `slub.design=partial`.
fn variant_word(variant: &str) -> &str {
    variant.rsplit('=').next().unwrap_or(variant)
}

/// The file name of every traced boot's c2c tables: numalab's `c2c-BOOT-repN.txt`
/// (`c2c-det-partial-rep0.txt` for its det boot under another SLUB design), a Linux boot's
/// `c2c-` and its log's name (`c2c-linux-det.txt`, `c2c-linux7-det-2.txt`: the order-4 det
/// boot).
pub fn c2c_names<'a>(args: &BenchArgs, runs: &'a Runs) -> Vec<(String, &'a BootRun)> {
    let numalab = runs.numalab.iter().map(|r| {
        let design = r
            .variant
            .as_deref()
            .map(|v| format!("-{}", variant_word(v)))
            .unwrap_or_default();
        (format!("c2c-{}{design}-rep{}.txt", r.boot.name(), r.rep), r)
    });
    let linux = log_names(args, runs)
        .into_iter()
        .skip(runs.numalab.len())
        .map(|(log, r)| (format!("c2c-{}.txt", log.trim_end_matches(".log")), r));
    numalab
        .chain(linux)
        .filter(|(_, r)| r.trace.is_some())
        .collect()
}

/// Writes the JSONL (`all`: every record; with the twin, numalab's header gets the Linux boots
/// under `linux_boots`), every boot's serial log (`log_names`) and the charts; returns what it wrote.
pub fn write_results(
    args: &BenchArgs,
    runs: &Runs,
    all: &[BenchRecord],
) -> Result<Vec<PathBuf>, String> {
    let (stamp, iso) = utc_now();
    let root = image::repo_root();
    let rev = git_rev(&root);
    let dir = args
        .out_dir
        .clone()
        .unwrap_or_else(|| root.join("target").join("bench"));
    let stem = format!("{stamp}-{rev}");
    let sub = dir.join(&stem);
    std::fs::create_dir_all(&sub).map_err(|e| format!("cannot create {}: {e}", sub.display()))?;
    let twin = args.kernel != Kernel::Numalab;
    let img = &runs.image;
    let mut head = header(args, &runs.numalab, img, &iso, &rev);
    if twin {
        head["kernel"] = json!(args.kernel.name());
        head["linux_boots"] = runs
            .linux
            .iter()
            .map(|r| {
                json!({
                    "boot": r.boot.name(),
                    "kernel_cmdline": r.config.kernel.linux.as_ref().map(|l| l.cmdline(&r.config)),
                    "release": r.config.kernel.linux.as_ref().map(|l| l.release.clone()),
                    "kernel": r.config.kernel.linux.as_ref().map(|l| l.kernel.name()),
                    "packages": r.config.kernel.linux.as_ref().map(|l| l.packages.clone()),
                    "sheaf_capacity": super::twin::sheaf_capacity(&r.outcome.boot_log),
                    // The cost model of a traced (det) boot's modelled records.
                    "cost_model": r.trace.as_ref().map(|t| t.cost_model.clone()),
                    "accel": r.config.runs_on(),
                    // The boot's own QEMU: Linux 6.1's det boots run linux/qemu10.sh.
                    "qemu": r.config.qemu_binary().display().to_string(),
                    "qemu_args": r.config.qemu_args(img).unwrap_or_default(),
                    "verdict": format!("{:?}", r.outcome.verdict),
                    "seconds": r.outcome.elapsed.as_secs_f64(),
                })
            })
            .collect();
    }
    if twin {
        let t = super::twin::table::table(all, &args.base.kernel.options);
        head["side_by_side"] = super::twin::table::to_json(&t);
    }
    let mut text = head.to_string();
    text.push('\n');
    for r in all {
        text.push_str(&r.to_json().to_string());
        text.push('\n');
    }
    let jsonl = dir.join(format!("{stem}.jsonl"));
    // Written as STEM.jsonl.partial and renamed once every file of the run is: an
    // interrupted run leaves no JSONL that looks whole.
    let partial = crate::qemu::interrupt::partial_path(&jsonl);
    std::fs::write(&partial, text)
        .map_err(|e| format!("cannot write {}: {e}", partial.display()))?;
    for (name, r) in log_names(args, runs) {
        let log = sub.join(name);
        std::fs::write(&log, &r.outcome.log)
            .map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    }
    let mut files = vec![jsonl.clone(), sub.clone()];
    files.extend(super::sysfs::write_run_tree(&runs.numalab, &sub)?);
    files.extend(super::lock_stat::write_proc(&sub, &runs.numalab)?);
    for (name, r) in c2c_names(args, runs) {
        if let Some(t) = &r.trace {
            let path = sub.join(name);
            let mut text = format!("{}\n\n", t.summary);
            text.push_str(&t.tables);
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            files.push(path);
        }
    }
    files.extend(svg::scaling_charts(all, &sub, host_cpus())?);
    // The HTML report of the run (html/): after the JSONL, logs, proc files, sysfs tree and
    // charts it links to.
    files.push(crate::report::html::write_report_from(
        &partial, &jsonl, &sub,
    )?);
    std::fs::rename(&partial, &jsonl)
        .map_err(|e| format!("cannot rename {} to its name: {e}", partial.display()))?;
    Ok(files)
}
