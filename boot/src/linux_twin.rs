//! The Linux twin (`bench --kernel linux|both`, docs/linux-twin.md): numalab's experiments on
//! Debian's Linux 6.1, booted on the same QEMU machine (same -smp/-m/-numa arguments, same
//! `-icount shift=0,sleep=off`) with an initramfs whose init loads the `numalab_twin` module
//! (linux/twin, built here against the installed headers). The module prints KTAP and BENCH
//! lines in numalab's contract with a `kernel` field; this file builds the module and the
//! initramfs, runs the boots through qemu.rs, checks that every mirrored experiment printed its
//! records, and prints the side-by-side table (numalab, Linux, numalab/linux).

use crate::bench::catalog::{self, CATALOG, MEMORYLESS_NODE, SLUB_LIST_LOCK};
use crate::bench::{self, fmt_value, BenchRecord, Boot};
use crate::bench_run::{self, BenchArgs, BootRun};
use crate::exit;
use crate::qemu::{self, RunConfig, Verdict};
use crate::{bench_svg, image};
use serde_json::json;
use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;
use std::time::Instant;

pub use crate::cli::Kernel;

/// The experiments numalab_twin mirrors, with the boot each measures in: the catalog's
/// (`Experiment::twin`, kernel/algo/src/bench/catalog), in its order.
pub static MIRRORED: LazyLock<Vec<(&'static str, Boot)>> = LazyLock::new(|| {
    CATALOG
        .iter()
        .filter_map(|e| e.twin.map(|t| (e.name, t.boot)))
        .collect()
});

/// The records every mirrored experiment must print when it ran: (bench, Linux case,
/// metric); those of an experiment measured in more than one boot are the two lists below.
pub static REQUIRED: LazyLock<Vec<(&'static str, &'static str, &'static str)>> =
    LazyLock::new(|| {
        twins()
            .filter(|(_, t)| !t.split_over_boots && t.required.iter().all(|r| r.boot == t.boot))
            .flat_map(|(name, t)| t.required.iter().map(move |r| (name, r.case, r.metric)))
            .collect()
    });

/// Records required from memoryless_node when it ran: `linux` on a machine with a memoryless
/// node (the tsc boot), `linux_single_node` on the one-node comparison machine (the uma boot).
static REQUIRED_MEMORYLESS: LazyLock<Vec<(Boot, &'static str)>> = LazyLock::new(|| {
    let twin = MEMORYLESS_NODE
        .twin
        .expect("memoryless_node has a Linux twin");
    twin.required.iter().map(|r| (r.boot, r.case)).collect()
});

/// slub_list_lock's Linux cases (the tunings set through /sys/kernel/slab), each required with
/// `ops_per_cpu` when it ran, and numalab's case each faces.
pub static SLUB_LIST_LOCK_CASES: LazyLock<Vec<(&'static str, &'static str)>> =
    LazyLock::new(|| {
        let twin = SLUB_LIST_LOCK
            .twin
            .expect("slub_list_lock has a Linux twin");
        twin.counterparts
            .iter()
            .map(|c| (c.case, c.linux_case))
            .collect()
    });

/// The rows of the side-by-side table: (bench, numalab case, Linux case, metric, boot).
pub static COUNTERPARTS: LazyLock<Vec<Counterpart>> = LazyLock::new(|| {
    twins()
        .flat_map(|(name, t)| {
            t.counterparts
                .iter()
                .map(move |c| (name, c.case, c.linux_case, c.metric, c.boot))
        })
        .collect()
});

/// A row of [`COUNTERPARTS`].
pub type Counterpart = (&'static str, &'static str, &'static str, &'static str, Boot);

/// The mirrored experiments with their twin facts.
fn twins() -> impl Iterator<Item = (&'static str, &'static catalog::Twin)> {
    CATALOG
        .iter()
        .filter_map(|e| e.twin.as_ref().map(|t| (e.name, t)))
}

/// The command line of the second slub_list_lock boot: order-4 slabs for a 256-byte cache
/// (256 objects per slab) and the module's order_4/cpu_partial_x2 half.
pub const ORDER4_WORDS: &str = "slub_max_order=4 slub_min_objects=256 numalab_twin.sll_order4=1";

pub use crate::qemu::LinuxBoot;

fn run_cmd(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .output()
        .map_err(|e| format!("Linux twin: cannot run {what}: {e}"))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "Linux twin: {what} failed ({}):\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// The newest installed kernel that has its image in /boot and its headers in
/// /lib/modules/RELEASE/build (what `./qemu-run.sh setup` installs).
pub fn installed_release() -> Result<(String, PathBuf), String> {
    let mut releases: Vec<String> = std::fs::read_dir("/boot")
        .map_err(|e| format!("Linux twin: cannot read /boot: {e}"))?
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            e.file_name()
                .to_str()?
                .strip_prefix("vmlinuz-")
                .map(String::from)
        })
        .filter(|r| Path::new("/lib/modules").join(r).join("build").is_dir())
        .collect();
    releases.sort();
    let release = releases.pop().ok_or(
        "Linux twin: no /boot/vmlinuz-RELEASE with headers in /lib/modules/RELEASE/build \
         (./qemu-run.sh setup installs linux-image-amd64 and linux-headers-amd64)",
    )?;
    let vmlinuz = PathBuf::from(format!("/boot/vmlinuz-{release}"));
    Ok((release, vmlinuz))
}

/// Copies `from` to `to` unless `to` already has the same bytes (so make sees unchanged
/// sources as unchanged and does not rebuild).
fn sync_file(from: &Path, to: &Path) -> Result<(), String> {
    let new = std::fs::read(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    if std::fs::read(to).ok().as_deref() != Some(new.as_slice()) {
        std::fs::write(to, &new).map_err(|e| format!("cannot write {}: {e}", to.display()))?;
    }
    Ok(())
}

/// Packs the initramfs in the current folder byte for byte the same in every build (sh -c,
/// stdout is the archive). Linux unpacks it while it boots, and what it unpacks changes the
/// instructions it executes: with each build's own modification times and inode numbers,
/// every run of the same command started the module at a different point and its icount
/// figures varied (docs/linux-twin.md, "Repeatable counts"). Hence fixed modes, times (the
/// epoch), owner (root), inode numbers (`--reproducible` renumbers them) and name order.
const REPRODUCIBLE_CPIO: &str = "chmod 755 . bin bin/busybox init && chmod 644 numalab_twin.ko \
     && find . -exec touch -h -d @0 {} + \
     && find . | LC_ALL=C sort | cpio -o -H newc --quiet --reproducible --owner=0:0";

/// Builds numalab_twin.ko against the installed headers and the initramfs around it, under
/// target/linux-twin (the checkout itself stays clean). Returns what a boot needs.
pub fn build() -> Result<LinuxBoot, String> {
    // One build at a time in this process (tests boot the twin from several threads).
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILD.lock().unwrap_or_else(|e| e.into_inner());
    let (release, vmlinuz) = installed_release()?;
    let root = image::repo_root();
    let out = root.join("target").join("linux-twin");
    let module_dir = out.join("module");
    std::fs::create_dir_all(&module_dir)
        .map_err(|e| format!("cannot create {}: {e}", module_dir.display()))?;
    for f in ["Makefile", "numalab_twin.c"] {
        sync_file(&root.join("linux/twin").join(f), &module_dir.join(f))?;
    }
    let kdir = Path::new("/lib/modules").join(&release).join("build");
    run_cmd(
        Command::new("make")
            .arg("-s")
            .arg("-C")
            .arg(&kdir)
            .arg(format!("M={}", module_dir.display()))
            .arg("modules"),
        &format!(
            "make -C {} M={} modules",
            kdir.display(),
            module_dir.display()
        ),
    )?;
    let ko = module_dir.join("numalab_twin.ko");
    let busybox = ["/bin/busybox", "/usr/bin/busybox"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.is_file())
        .ok_or("Linux twin: busybox not found (./qemu-run.sh setup installs busybox-static)")?;
    // A tree of this process's own, so that two runners building at once do not share one.
    let tree = out.join(format!("initramfs.{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tree);
    std::fs::create_dir_all(tree.join("bin"))
        .map_err(|e| format!("cannot create {}: {e}", tree.display()))?;
    for (from, to) in [
        (busybox.as_path(), tree.join("bin/busybox")),
        (
            root.join("linux/initramfs/init").as_path(),
            tree.join("init"),
        ),
    ] {
        std::fs::copy(from, &to)
            .map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), to.display()))?;
    }
    // The module without its debug information and build ID: both name the build folder,
    // which differs between checkouts.
    run_cmd(
        Command::new("objcopy")
            .arg("--strip-debug")
            .arg("--remove-section=.note.gnu.build-id")
            .arg(&ko)
            .arg(tree.join("numalab_twin.ko")),
        "objcopy (strip numalab_twin.ko)",
    )?;
    let initramfs = out.join("initramfs.cpio");
    let fresh = out.join(format!("initramfs.cpio.{}", std::process::id()));
    run_cmd(
        Command::new("sh")
            .arg("-c")
            .arg(format!("{REPRODUCIBLE_CPIO} > '{}'", fresh.display()))
            .current_dir(&tree),
        "cpio (the initramfs)",
    )?;
    let _ = std::fs::remove_dir_all(&tree);
    // Replaced by a rename, never rewritten in place: a QEMU started from another thread or
    // process may be reading the current one.
    if std::fs::read(&fresh).ok() == std::fs::read(&initramfs).ok() {
        let _ = std::fs::remove_file(&fresh);
    } else {
        std::fs::rename(&fresh, &initramfs).map_err(|e| {
            format!(
                "cannot rename {} to {}: {e}",
                fresh.display(),
                initramfs.display()
            )
        })?;
    }
    Ok(LinuxBoot {
        vmlinuz,
        initramfs,
        release,
        append: None,
    })
}

/// The experiments `bench=` selects (empty: all).
fn selected_names(args: &BenchArgs) -> Vec<String> {
    args.base
        .sets
        .iter()
        .filter_map(|s| s.strip_prefix("bench="))
        .flat_map(|v| v.split(',').map(str::trim).filter(|w| !w.is_empty()))
        .map(String::from)
        .collect()
}

/// The mirrored experiments to run on Linux and the selected ones without a Linux counterpart.
pub fn plan(args: &BenchArgs) -> (Vec<&'static str>, Vec<String>) {
    let selected = selected_names(args);
    let mirrored: Vec<&'static str> = MIRRORED
        .iter()
        .map(|(n, _)| *n)
        .filter(|n| selected.is_empty() || selected.iter().any(|s| s == n))
        .collect();
    let unmirrored = selected
        .into_iter()
        .filter(|s| !MIRRORED.iter().any(|(n, _)| n == s))
        .collect();
    (mirrored, unmirrored)
}

/// The configuration of a Linux boot: numalab's `boot` of the same machine, with `bench=`
/// narrowed to the mirrored experiments and the Linux image instead of the disk.
pub fn boot_config(
    args: &BenchArgs,
    linux: &LinuxBoot,
    boot: Boot,
    experiments: &[&str],
) -> Result<RunConfig, String> {
    let mut c = bench_run::boot_config(args, boot, 0)?;
    c.sets.retain(|s| !s.starts_with("bench="));
    c.sets.push(format!("bench={}", experiments.join(",")));
    c.linux = Some(linux.clone());
    Ok(c)
}

/// Whether memoryless_node measures on this machine: it has a node with CPUs and no memory
/// (or is a one-node machine). For a machine given as QEMU arguments: when it is selected.
fn memoryless_shape(args: &BenchArgs) -> bool {
    let t = &args.base.topology;
    if args.base.user_describes_machine() {
        return selected_names(args).iter().any(|n| n == "memoryless_node");
    }
    t.nodes.len() <= 1
        || t.nodes
            .iter()
            .any(|n| n.mem_shares == 0 && n.cpu_shares > 0)
}

/// One Linux boot of `experiments` in numalab's `boot` configuration.
fn linux_boot(
    args: &BenchArgs,
    linux: &LinuxBoot,
    boot: Boot,
    experiments: &[&str],
) -> Result<BootRun, String> {
    let config = boot_config(args, linux, boot, experiments)?;
    println!(
        "numalab: bench: linux {} boot ({}): {}",
        boot.name(),
        linux.release,
        config
            .qemu_args(Path::new("-"))
            .map(|a| a.join(" "))
            .unwrap_or_default()
    );
    let outcome = qemu::run(&config, Path::new("-"));
    let (records, violations) = bench::parse_log(&outcome.log, boot);
    Ok(BootRun {
        boot,
        rep: 0,
        config,
        outcome,
        records,
        violations,
    })
}

/// Builds the twin and runs its boots: icount for the instruction experiments, tsc for
/// memoryless_node on a machine with a memoryless node, then uma (the one-node machine of the
/// same size, as numalab's) when that printed its record.
pub fn run_boots(args: &BenchArgs) -> Result<Vec<BootRun>, String> {
    let (mirrored, unmirrored) = plan(args);
    for name in &unmirrored {
        println!("numalab: bench: {name} has no Linux counterpart yet (docs/linux-twin.md): numalab only");
    }
    let in_boot = |boot: Boot| -> Vec<&str> {
        mirrored
            .iter()
            .copied()
            .filter(|n| MIRRORED.iter().any(|(m, b)| m == n && *b == boot))
            .collect()
    };
    let icount = in_boot(Boot::Icount);
    let shape = memoryless_shape(args);
    let tsc: Vec<&str> = in_boot(Boot::Tsc)
        .into_iter()
        .filter(|n| (*n != "memoryless_node" || shape) && !args.icount_only)
        .collect();
    if icount.is_empty() && tsc.is_empty() {
        return Ok(Vec::new());
    }
    let mut linux = build()?;
    linux.append = args.linux_append.clone();
    let mut runs = Vec::new();
    if !icount.is_empty() {
        runs.push(linux_boot(args, &linux, Boot::Icount, &icount)?);
    }
    if !tsc.is_empty() {
        let run = linux_boot(args, &linux, Boot::Tsc, &tsc)?;
        let memoryless = run
            .records
            .iter()
            .any(|r| r.bench == "memoryless_node" && r.case == "linux");
        runs.push(run);
        if memoryless {
            runs.push(linux_boot(args, &linux, Boot::Uma, &["memoryless_node"])?);
        }
        if tsc.contains(&"slub_list_lock") {
            // Linux 6.1's slab order is read-only at run time: order_4 and cpu_partial_x2
            // run in a boot whose command line sets it for every cache, as the thread did.
            let mut order4 = linux.clone();
            order4.append = Some(
                [Some(ORDER4_WORDS), linux.append.as_deref()]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>()
                    .join(" "),
            );
            runs.push(linux_boot(args, &order4, Boot::Tsc, &["slub_list_lock"])?);
        }
    }
    Ok(runs)
}

/// Every breach of the twin's contract: malformed BENCH lines, records without a Linux
/// `kernel` field, and required records missing from an experiment that ran and passed.
pub fn contract_problems(runs: &[BootRun]) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs {
        for v in &r.violations {
            out.push(format!("linux {} boot, {v}", r.boot.name()));
        }
        for rec in r.records.iter().filter(|x| !x.kernel.starts_with("linux-")) {
            out.push(format!(
                "linux {} boot: {}/{}/{} has kernel '{}', not linux-VERSION",
                r.boot.name(),
                rec.bench,
                rec.case,
                rec.metric,
                rec.kernel
            ));
        }
        if r.outcome.verdict != Verdict::Pass {
            continue;
        }
        let ran = r.ran();
        let memoryless = REQUIRED_MEMORYLESS
            .iter()
            .filter(|(b, _)| *b == r.boot)
            .map(|(_, case)| ("memoryless_node", *case, "slab_kib"));
        let wanted = REQUIRED.iter().copied().chain(memoryless);
        for (bench, case, metric) in wanted.filter(|(b, _, _)| ran.contains(*b)) {
            let present = r
                .records
                .iter()
                .any(|x| x.bench == *bench && x.case == *case && x.metric == *metric);
            if !present {
                out.push(format!(
                    "linux {} boot: {bench} ran but printed no {case} {metric}",
                    r.boot.name()
                ));
            }
        }
    }
    // slub_list_lock's four cases come from two boots: every case from one of them.
    let list_lock_ran = runs
        .iter()
        .any(|r| r.outcome.verdict == Verdict::Pass && r.ran().contains("slub_list_lock"));
    for (_, case) in SLUB_LIST_LOCK_CASES.iter().filter(|_| list_lock_ran) {
        let present = runs
            .iter()
            .flat_map(|r| &r.records)
            .any(|x| x.bench == "slub_list_lock" && x.case == *case && x.metric == "ops_per_cpu");
        if !present {
            out.push(format!(
                "linux tsc boots: slub_list_lock ran but printed no {case} ops_per_cpu"
            ));
        }
    }
    out
}

/// The side-by-side table: per mirrored measurement, numalab's value (the median over its
/// boot's repetitions), Linux's and numalab/linux (below 1: numalab executes fewer instructions or holds less memory). Rows
/// with neither value are left out; a missing side prints `-`.
pub fn side_by_side(records: &[BenchRecord]) -> String {
    let matching = |linux: bool, bench: &str, case: &str, metric: &str, boot: Boot| {
        records
            .iter()
            .filter(|r| {
                r.kernel.starts_with("linux-") == linux
                    && r.bench == bench
                    && r.case == case
                    && r.metric == metric
                    && r.boot == boot
            })
            .collect::<Vec<_>>()
    };
    let mut rows = Vec::new();
    let mut linux_name = BTreeSet::new();
    for &(bench, ncase, lcase, metric, boot) in COUNTERPARTS.iter() {
        let ns = matching(false, bench, ncase, metric, boot);
        let ls = matching(true, bench, lcase, metric, boot);
        let cpus: BTreeSet<u32> = ns.iter().chain(&ls).map(|r| r.cpus).collect();
        for cpus in cpus {
            // The median over the repetitions of the boot (numalab's tsc boot runs --reps
            // times), as numalab's own tables show it.
            let at = |v: &[&BenchRecord]| {
                let at_cpus: Vec<&&BenchRecord> = v.iter().filter(|r| r.cpus == cpus).collect();
                let values: Vec<f64> = at_cpus.iter().map(|r| r.value).collect();
                let kernel = at_cpus.first().map(|r| r.kernel.clone())?;
                Some((bench::Spread::of(&values)?.median, kernel))
            };
            push_row(
                &mut rows,
                &mut linux_name,
                [bench, ncase, lcase, metric],
                boot,
                cpus,
                at(&ns),
                at(&ls),
            );
        }
    }
    render(rows, linux_name)
}

type Cell = Option<(f64, String)>;

/// One row of the side-by-side table.
fn push_row(
    rows: &mut Vec<[String; 8]>,
    linux_name: &mut BTreeSet<String>,
    [bench, ncase, lcase, metric]: [&str; 4],
    boot: Boot,
    cpus: u32,
    n: Cell,
    l: Cell,
) {
    {
        if let Some((_, k)) = &l {
            linux_name.insert(k.clone());
        }
        let ratio = match (&n, &l) {
            (Some((a, _)), Some((b, _))) if *b != 0.0 => format!("{:.3}", a / b),
            _ => "-".into(),
        };
        let show =
            |v: &Option<(f64, String)>| v.as_ref().map_or("-".into(), |(x, _)| fmt_value(*x));
        rows.push([
            bench.to_string(),
            format!("{ncase} | {lcase}"),
            metric.to_string(),
            boot.name().to_string(),
            cpus.to_string(),
            show(&n),
            show(&l),
            ratio,
        ]);
    }
}

/// The table text of `rows` (empty without rows).
fn render(rows: Vec<[String; 8]>, linux_name: BTreeSet<String>) -> String {
    if rows.is_empty() {
        return String::new();
    }
    let linux = linux_name.into_iter().collect::<Vec<_>>().join(",");
    let head = [
        "bench".to_string(),
        "case (numalab | linux)".into(),
        "metric".into(),
        "boot".into(),
        "cpus".into(),
        "numalab".into(),
        if linux.is_empty() {
            "linux".into()
        } else {
            linux.clone()
        },
        "numalab/linux".into(),
    ];
    let mut widths = head.clone().map(|h| h.len());
    for row in &rows {
        for (w, c) in widths.iter_mut().zip(row) {
            *w = (*w).max(c.len());
        }
    }
    let mut out = String::from(
        "== linux_twin: the same workload on numalab and on Linux, same QEMU machine (numalab/linux below 1: numalab uses less) ==\n",
    );
    for row in std::iter::once(&head).chain(&rows) {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(i, (c, w))| {
                if i < 5 {
                    format!("{c:<w$}")
                } else {
                    format!("{c:>w$}")
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// `bench --kernel linux|both`: the numalab boots (for `both`), the Linux boot, the contract,
/// the JSONL with both kernels' records, the logs of every boot, the tables and the
/// side-by-side table. Returns the exit status.
pub fn run(args: &BenchArgs) -> i32 {
    let start = Instant::now();
    let mut numalab_runs = Vec::new();
    let mut img = PathBuf::from("-");
    if args.kernel == Kernel::Both {
        img = match image::build_kernel().and_then(|k| image::build_image(&k, args.base.firmware)) {
            Ok(i) => i,
            Err(e) => {
                eprintln!("numalab: {e}");
                return exit::BUILD;
            }
        };
        numalab_runs = match bench_run::run_boots(args, &img) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("numalab: {e}");
                return exit::USAGE;
            }
        };
    }
    let linux_runs = match run_boots(args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("numalab: {e}");
            return exit::BUILD;
        }
    };
    let mut status = exit::PASS;
    let labelled = numalab_runs
        .iter()
        .map(|r| ("numalab", r))
        .chain(linux_runs.iter().map(|r| ("linux", r)));
    for (kernel, r) in labelled {
        if r.outcome.verdict != Verdict::Pass {
            eprint!("{}", r.outcome.failure_report());
            eprintln!("numalab: bench: the {kernel} {} boot failed", r.boot.name());
            status = exit::of(&r.outcome.verdict);
        }
    }
    let mut problems = bench_run::contract_problems(&numalab_runs);
    problems.extend(contract_problems(&linux_runs));
    if linux_runs.is_empty() {
        problems.push(
            "--kernel linux: none of the selected experiments has a Linux counterpart".into(),
        );
    }
    if !problems.is_empty() {
        eprintln!("numalab: bench: BENCH output contract violated:");
        for p in &problems {
            eprintln!("  {p}");
        }
        status = status.max(exit::FAIL);
    }
    let all: Vec<BenchRecord> = numalab_runs
        .iter()
        .chain(&linux_runs)
        .flat_map(|r| r.records.clone())
        .collect();
    match write_results(args, &numalab_runs, &linux_runs, &all, &img) {
        Ok(files) => {
            // The numalab tables (medians over repetitions) from numalab's records only; both
            // kernels meet in the side-by-side table below.
            let numalab: Vec<BenchRecord> = numalab_runs
                .iter()
                .flat_map(|r| r.records.clone())
                .collect();
            print!("{}", bench::tables(&numalab, bench_run::host_cpus()));
            println!();
            print!("{}", side_by_side(&all));
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
    println!(
        "numalab: {}: {} measurements from {} boots ({} numalab, {} linux) ({:.1} s)",
        if status == exit::PASS { "PASS" } else { "FAIL" },
        all.len(),
        numalab_runs.len() + linux_runs.len(),
        numalab_runs.len(),
        linux_runs.len(),
        start.elapsed().as_secs_f64()
    );
    status
}

/// The JSONL (numalab's header with the Linux boots added under `linux_boots`, then every
/// record), the serial logs (`BOOT.log` for numalab, `linux-BOOT.log` for Linux) and charts.
fn write_results(
    args: &BenchArgs,
    numalab_runs: &[BootRun],
    linux_runs: &[BootRun],
    all: &[BenchRecord],
    img: &Path,
) -> Result<Vec<PathBuf>, String> {
    let (stamp, iso) = bench_run::utc_now();
    let root = image::repo_root();
    let rev = bench_run::git_rev(&root);
    let dir = args
        .out_dir
        .clone()
        .unwrap_or_else(|| root.join("target").join("bench"));
    let stem = format!("{stamp}-{rev}");
    let sub = dir.join(&stem);
    std::fs::create_dir_all(&sub).map_err(|e| format!("cannot create {}: {e}", sub.display()))?;
    let mut head = bench_run::header(args, numalab_runs, img, &iso, &rev);
    head["kernel"] = json!(format!("{:?}", args.kernel).to_lowercase());
    head["linux_boots"] = linux_runs
        .iter()
        .map(|r| {
            json!({
                "boot": r.boot.name(),
                "kernel_cmdline": r.config.linux.as_ref().map(|l| l.cmdline(&r.config)),
                "release": r.config.linux.as_ref().map(|l| l.release.clone()),
                "qemu_args": r.config.qemu_args(img).unwrap_or_default(),
                "verdict": format!("{:?}", r.outcome.verdict),
                "seconds": r.outcome.elapsed.as_secs_f64(),
            })
        })
        .collect();
    let mut text = head.to_string();
    text.push('\n');
    for r in all {
        text.push_str(&r.to_json().to_string());
        text.push('\n');
    }
    let jsonl = dir.join(format!("{stem}.jsonl"));
    std::fs::write(&jsonl, text).map_err(|e| format!("cannot write {}: {e}", jsonl.display()))?;
    let mut seen = BTreeSet::new();
    let logs = numalab_runs
        .iter()
        .map(|r| (r.boot.name().to_string(), r))
        .chain(
            linux_runs
                .iter()
                .map(|r| (format!("linux-{}", r.boot.name()), r)),
        );
    for (stem, r) in logs {
        // A second boot of the same kind (slub_list_lock's order-4 boot): `linux-tsc-2.log`.
        let mut name = format!("{stem}.log");
        let mut n = 1;
        while !seen.insert(name.clone()) {
            n += 1;
            name = format!("{stem}-{n}.log");
        }
        let log = sub.join(name);
        std::fs::write(&log, &r.outcome.log)
            .map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    }
    let mut files = vec![jsonl, sub.clone()];
    files.extend(bench_svg::scaling_charts(all, &sub)?);
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(s: &str) -> BenchArgs {
        let words: Vec<String> = s.split_whitespace().map(String::from).collect();
        bench_run::parse(&words).unwrap()
    }

    fn linux() -> LinuxBoot {
        LinuxBoot {
            vmlinuz: "/boot/vmlinuz-6.1.0-57-amd64".into(),
            initramfs: "/t/initramfs.cpio".into(),
            release: "6.1.0-57-amd64".into(),
            append: None,
        }
    }

    #[test]
    fn kernel_option() {
        assert_eq!(args("").kernel, Kernel::Numalab);
        assert_eq!(args("--kernel both").kernel, Kernel::Both);
        assert_eq!(args("--kernel linux").kernel, Kernel::Linux);
        let words: Vec<String> = ["--kernel", "bsd"].map(String::from).to_vec();
        assert!(bench_run::parse(&words).is_err());
    }

    #[test]
    fn plan_keeps_the_mirrored_experiments() {
        let (m, u) = plan(&args("--set bench=alloc_peers,slabinfo_reader"));
        assert_eq!(m, vec!["alloc_peers"]);
        assert_eq!(u, vec!["slabinfo_reader".to_string()]);
        let (m, u) = plan(&args(""));
        assert_eq!(m.len(), MIRRORED.len());
        assert!(u.is_empty());
    }

    #[test]
    fn linux_boot_is_numalab_icount_machine_with_the_linux_image() {
        let a = args("--kernel both --smoke --set bench=page_alloc,slabinfo_reader");
        let c = boot_config(&a, &linux(), Boot::Icount, &["page_alloc"]).unwrap();
        let numalab = bench_run::boot_config(&a, Boot::Icount, 0).unwrap();
        let q = c.qemu_args(Path::new("-")).unwrap().join(" ");
        assert!(q.contains("-icount shift=0,sleep=off"), "{q}");
        assert!(q.contains("-smp 1,maxcpus=8 -m 2048M"), "{q}");
        assert!(q.contains("-kernel /boot/vmlinuz-6.1.0-57-amd64 -initrd /t/initramfs.cpio"));
        assert!(
            q.contains("-seed 1 -rtc base=2024-01-01T00:00:00,clock=vm"),
            "{q}"
        );
        assert!(!q.contains("-drive") && !q.contains("-fw_cfg"), "{q}");
        // The same machine as numalab's icount boot: every -smp/-m/-numa/-object argument.
        assert_eq!(c.extra, numalab.extra);
        let line = linux().cmdline(&c);
        assert_eq!(
            line,
            "console=ttyS0 printk.time=0 panic=-1 numalab_twin.clock=icount \
             numalab_twin.smoke=1 numalab_twin.bench=page_alloc"
        );
        let a = args("--kernel linux --linux-append init_on_alloc=0");
        let mut l = linux();
        l.append = a.linux_append.clone();
        let c = boot_config(&a, &l, Boot::Icount, &["page_alloc"]).unwrap();
        assert!(
            l.cmdline(&c).ends_with(" init_on_alloc=0"),
            "{}",
            l.cmdline(&c)
        );
        // slub_list_lock's order_4 tuning needs Linux to accept order 4.
        let a = args("--kernel linux --set bench=slub_list_lock");
        let c = boot_config(&a, &linux(), Boot::Tsc, &["slub_list_lock"]).unwrap();
        let line = linux().cmdline(&c);
        assert!(
            line.contains("numalab_twin.clock=tsc numalab_twin.bench=slub_list_lock"),
            "{line}"
        );
        assert!(!c.icount, "{c:?}");
        let (m, _) = plan(&a);
        assert_eq!(m, vec!["slub_list_lock"]);
    }

    fn rec(kernel: &str, bench: &str, case: &str, value: &str) -> String {
        format!(
            "BENCH {{\"bench\":\"{bench}\",\"case\":\"{case}\",\"metric\":\"instructions_per_pair\",\"value\":{value},\"unit\":\"instructions\",\"cpus\":1,\"nodes\":4,\"clock\":\"icount\"{}}}",
            if kernel.is_empty() { String::new() } else { format!(",\"kernel\":\"{kernel}\"") }
        )
    }

    #[test]
    fn side_by_side_pairs_counterparts() {
        let log = [
            rec("", "page_alloc", "numalab", "100"),
            rec("linux-6.1.192", "page_alloc", "linux", "400"),
            rec("", "alloc_peers", "numalab/fast64", "50"),
        ]
        .join("\n");
        let (records, bad) = bench::parse_log(&log, Boot::Icount);
        assert!(bad.is_empty(), "{bad:?}");
        assert_eq!(records[0].kernel, "numalab");
        assert_eq!(records[1].kernel, "linux-6.1.192");
        // The JSONL keeps the kernel of every record.
        let text: String = records
            .iter()
            .map(|r| format!("{}\n", r.to_json()))
            .collect();
        let (_, back) = bench::read_jsonl(&text).unwrap();
        assert_eq!(back, records);
        assert!(text.contains("\"kernel\":\"numalab\""), "{text}");
        let t = side_by_side(&records);
        assert!(t.contains("linux-6.1.192"), "{t}");
        let last3 = |prefix: &str| -> Vec<String> {
            let line = t.lines().find(|l| l.starts_with(prefix)).unwrap();
            let words: Vec<&str> = line.split_whitespace().collect();
            words[words.len() - 3..]
                .iter()
                .map(|w| w.to_string())
                .collect()
        };
        assert_eq!(last3("page_alloc"), ["100", "400", "0.250"], "{t}");
        assert_eq!(last3("alloc_peers"), ["50", "-", "-"], "{t}");
        // One row per CPU count for the multi-CPU experiments.
        let tsc = [
            "BENCH {\"bench\":\"slub_list_lock\",\"case\":\"linux_default\",\"metric\":\"ops_per_cpu\",\"value\":10,\"unit\":\"ops/s\",\"cpus\":2,\"nodes\":4,\"clock\":\"tsc\"}",
            "BENCH {\"bench\":\"slub_list_lock\",\"case\":\"linux/default\",\"metric\":\"ops_per_cpu\",\"value\":20,\"unit\":\"ops/s\",\"cpus\":2,\"nodes\":4,\"clock\":\"tsc\",\"kernel\":\"linux-6.1.192\"}",
            "BENCH {\"bench\":\"slub_list_lock\",\"case\":\"linux/default\",\"metric\":\"ops_per_cpu\",\"value\":40,\"unit\":\"ops/s\",\"cpus\":8,\"nodes\":4,\"clock\":\"tsc\",\"kernel\":\"linux-6.1.192\"}",
        ]
        .join("\n");
        let (records, bad) = bench::parse_log(&tsc, Boot::Tsc);
        assert!(bad.is_empty(), "{bad:?}");
        let t = side_by_side(&records);
        let rows: Vec<Vec<&str>> = t
            .lines()
            .filter(|l| l.starts_with("slub_list_lock"))
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert_eq!(rows.len(), 2, "{t}");
        assert_eq!(
            rows[0][rows[0].len() - 5..],
            ["tsc", "2", "10", "20", "0.500"],
            "{t}"
        );
        assert_eq!(
            rows[1][rows[1].len() - 5..],
            ["tsc", "8", "-", "40", "-"],
            "{t}"
        );
        assert!(!t.contains("vmalloc_scaling"), "{t}");
        // numalab's repetitions of a tsc boot: the median faces Linux's value.
        let reps = [30, 10, 20]
            .map(|v| format!("BENCH {{\"bench\":\"numa_locality\",\"case\":\"default\",\"metric\":\"slab_kib\",\"value\":{v},\"unit\":\"kib\",\"cpus\":8,\"nodes\":4,\"clock\":\"tsc\"}}"))
            .join("\n");
        let linux = "BENCH {\"bench\":\"numa_locality\",\"case\":\"linux\",\"metric\":\"slab_kib\",\"value\":40,\"unit\":\"kib\",\"cpus\":8,\"nodes\":4,\"clock\":\"tsc\",\"kernel\":\"linux-6.1.192\"}";
        let (records, bad) = bench::parse_log(&format!("{reps}\n{linux}"), Boot::Tsc);
        assert!(bad.is_empty(), "{bad:?}");
        let t = side_by_side(&records);
        let row = t
            .lines()
            .find(|l| l.contains("default | linux") && l.contains("slab_kib"))
            .unwrap_or_else(|| panic!("{t}"));
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(words[words.len() - 3..], ["20", "40", "0.500"], "{t}");
        // The alloc_peers harnesses: the same case name on both kernels, a metric of their own.
        let harness = [
            "BENCH {\"bench\":\"alloc_peers\",\"case\":\"harness/fast64\",\"metric\":\"harness_instructions_per_pair\",\"value\":18,\"unit\":\"instructions\",\"cpus\":1,\"nodes\":4,\"clock\":\"icount\"}",
            "BENCH {\"bench\":\"alloc_peers\",\"case\":\"harness/fast64\",\"metric\":\"harness_instructions_per_pair\",\"value\":15,\"unit\":\"instructions\",\"cpus\":1,\"nodes\":4,\"clock\":\"icount\",\"kernel\":\"linux-6.1.192\"}",
        ]
        .join("\n");
        let (records, bad) = bench::parse_log(&harness, Boot::Icount);
        assert!(bad.is_empty(), "{bad:?}");
        let t = side_by_side(&records);
        let row = t
            .lines()
            .find(|l| l.contains("harness/fast64 | harness/fast64"))
            .unwrap_or_else(|| panic!("{t}"));
        let words: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(words[words.len() - 3..], ["18", "15", "1.200"], "{t}");
        assert!(REQUIRED.contains(&(
            catalog::ALLOC_PEERS.name,
            "harness/burst256",
            "harness_instructions_per_pair"
        )));
        let (_, bad) = bench::parse_log(&rec("freebsd", "page_alloc", "x", "1"), Boot::Icount);
        assert!(bad[0].message.contains("field 'kernel'"), "{bad:?}");
    }
}
