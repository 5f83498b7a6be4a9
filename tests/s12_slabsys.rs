//! Layer 10: Linux's own slab tools read numalab's caches. One short tsc bench boot per SLUB
//! design (`bench=clock_overhead`, smoke) prints the `# sysfs:` block; the runner's
//! boot/src/run/sysfs.rs writes it as RUN/sys/kernel/slab and RUN/proc/slabinfo; then Linux
//! 6.1's tools/vm/slabinfo.c (built from Debian's linux-source-6.1, cached under target/)
//! runs over the tree bind-mounted on /sys/kernel/slab in a private mount namespace, and
//! procps' `slabtop -o` over the /proc/slabinfo file bind-mounted on /proc/slabinfo. Every
//! row must show the snapshot's exact counts: objects, object size, slabs/partial/cpu, bytes.

use numalab_algo::page::PAGE_SIZE;
use numalab_boot::bench::catalog::CLOCK_OVERHEAD;
use numalab_boot::bench::Boot;
use numalab_boot::run::sysfs::{parse_block, write_tree, SlabTree};
use numalab_boot::run::{self, BootRun};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::Duration;

const SOURCE: &str = "/usr/src/linux-source-6.1.tar.xz";
const MEMBER: &str = "linux-source-6.1/tools/vm/slabinfo.c";

/// Linux 6.1's slabinfo, extracted from Debian's source package and built once (the binary is
/// kept in target/tmp/linux-slabinfo-6.1 across test runs).
fn slabinfo_binary() -> &'static Path {
    static BIN: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    let built = BIN.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("linux-slabinfo-6.1");
        let bin = dir.join("slabinfo");
        if bin.exists() {
            return Ok(bin);
        }
        if !Path::new(SOURCE).exists() {
            return Err(format!(
                "{SOURCE} is missing: Linux's slabinfo is built from Debian's linux-source-6.1 \
                 (./qemu-run.sh setup installs it)"
            ));
        }
        std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let status = Command::new("tar")
            .args(["-xJf", SOURCE, "-C"])
            .arg(&dir)
            .args(["--strip-components=3", MEMBER])
            .status()
            .map_err(|e| format!("tar: {e}"))?;
        if !status.success() {
            return Err(format!("tar could not extract {MEMBER} from {SOURCE}"));
        }
        let tmp = dir.join("slabinfo.tmp");
        let out = Command::new("gcc")
            .args(["-O2", "-w", "-o"])
            .arg(&tmp)
            .arg(dir.join("slabinfo.c"))
            .output()
            .map_err(|e| format!("gcc: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "gcc could not build slabinfo.c: {}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        std::fs::rename(&tmp, &bin).map_err(|e| format!("{}: {e}", bin.display()))?;
        Ok(bin)
    });
    built.as_deref().unwrap_or_else(|e| panic!("{e}"))
}

/// `script` in a private mount namespace (root: unshare -m; otherwise also a user namespace).
fn in_mount_namespace(script: &str) -> String {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false);
    let mut cmd = Command::new("unshare");
    if !root {
        cmd.arg("-r");
    }
    let out = cmd
        .args(["-m", "sh", "-c", script])
        .output()
        .expect("unshare runs (util-linux)");
    assert!(
        out.status.success(),
        "{script}: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn q(p: &Path) -> String {
    format!("'{}'", p.display())
}

/// One tsc bench boot of `design`, its block written as a tree under target/tmp.
fn boot_tree(design: &str) -> (BootRun, SlabTree, PathBuf) {
    let words: Vec<String> = format!(
        "--smoke --topology 4node --set bench={} --set slub.design={design}",
        CLOCK_OVERHEAD.name
    )
    .split_whitespace()
    .map(String::from)
    .collect();
    let mut args = run::parse(&words).expect("bench arguments parse");
    args.base.host.timeout = Duration::from_secs(300);
    let img = numalab::image(args.base.machine.firmware);
    let cost = numalab::cost(&args.base);
    let r = numalab::with_qemu_slot(cost, || run::run_boot(&args, Boot::Tsc, 0, &img))
        .expect("tsc boot starts");
    assert!(r.outcome.passed(), "{}", r.outcome.failure_report());
    let tree = parse_block(&r.outcome.log)
        .expect("the block parses")
        .expect("the tsc boot prints the # sysfs: block");
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("s10-slabsys-{design}"));
    let _ = std::fs::remove_dir_all(&dir);
    // The very call results.rs makes for a bench run's folder.
    run::sysfs::write_run_tree(std::slice::from_ref(&r), &dir).expect("tree written");
    let again = dir.join("again");
    write_tree(&tree, &again).expect("tree written");
    (r, tree, dir)
}

fn num(tree: &SlabTree, cache: &str, attr: &str) -> u64 {
    let text = tree
        .get(cache, attr)
        .unwrap_or_else(|| panic!("{cache}/{attr} missing"));
    text.split(' ')
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("{cache}/{attr}: '{text}'"))
}

/// /proc/slabinfo's rows: name -> columns (active_objs, num_objs, objsize, objperslab,
/// pagesperslab, active_slabs, num_slabs).
fn proc_rows(text: &str) -> std::collections::BTreeMap<String, [u64; 7]> {
    let mut rows = std::collections::BTreeMap::new();
    for line in text.lines().skip(2) {
        let w: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(w.len(), 16, "{line}");
        let n = |i: usize| w[i].parse::<u64>().unwrap_or_else(|_| panic!("{line}"));
        rows.insert(
            w[0].to_string(),
            [n(1), n(2), n(3), n(4), n(5), n(13), n(14)],
        );
    }
    rows
}

fn slab_tools_agree(design: &str) {
    let (_run, tree, dir) = boot_tree(design);
    let slab_dir = dir.join("sys/kernel/slab");
    let proc_file = dir.join("proc/slabinfo");
    let names = tree.cache_names();
    assert!(names.iter().any(|n| n.starts_with("kmalloc-")), "{names:?}");
    let rows = proc_rows(&std::fs::read_to_string(&proc_file).unwrap());
    assert_eq!(rows.len(), tree.caches, "{}", tree.slabinfo);
    // The tree and /proc/slabinfo are one snapshot: the same objects, slabs and sizes.
    for name in &names {
        let p = rows[*name];
        assert_eq!(p[0], num(&tree, name, "objects"), "{name} objects");
        assert_eq!(p[1], num(&tree, name, "total_objects"), "{name} total");
        assert_eq!(p[2], num(&tree, name, "slab_size"), "{name} size");
        assert_eq!(p[3], num(&tree, name, "objs_per_slab"), "{name} objs/slab");
        assert_eq!(p[4], 1 << num(&tree, name, "order"), "{name} pages/slab");
        assert_eq!(p[6], num(&tree, name, "slabs"), "{name} slabs");
    }
    assert!(
        names.iter().any(|n| num(&tree, n, "objects") > 0),
        "every cache empty"
    );

    // Linux's slabinfo over the tree: one row per cache (-z: empty ones too), exact bytes (-B).
    let bin = slabinfo_binary();
    let out = in_mount_namespace(&format!(
        "mount --bind {} /sys/kernel/slab && {} -z -B",
        q(&slab_dir),
        q(bin)
    ));
    let mut seen = 0;
    for line in out.lines().skip(1) {
        let w: Vec<&str> = line.split_whitespace().collect();
        assert!(w.len() >= 9, "slabinfo row: {line}\n{out}");
        let name = w[0];
        assert!(
            names.contains(&name),
            "slabinfo lists {name}, not in the tree"
        );
        seen += 1;
        let slabs = num(&tree, name, "slabs");
        let cpu = num(&tree, name, "cpu_slabs");
        let order = num(&tree, name, "order");
        assert_eq!(w[1], rows[name][0].to_string(), "{name} Objects: {line}");
        assert_eq!(w[2], num(&tree, name, "object_size").to_string(), "{line}");
        assert_eq!(w[3], (slabs * (PAGE_SIZE << order)).to_string(), "{line}");
        let dist = format!("{}/{}/{}", slabs - cpu, num(&tree, name, "partial"), cpu);
        assert_eq!(w[4], dist, "{name} Slabs/Part/Cpu: {line}");
        assert_eq!(
            w[5],
            num(&tree, name, "objs_per_slab").to_string(),
            "{line}"
        );
        assert_eq!(w[6], order.to_string(), "{line}");
        assert_eq!(slabs, rows[name][6], "{name}: slabinfo's slabs are /proc's");
    }
    assert_eq!(seen, names.len(), "slabinfo rows:\n{out}");

    // The statistics report of the busiest cache: its counters as slabinfo -r prints them.
    let busy = names
        .iter()
        .copied()
        .max_by_key(|n| num(&tree, n, "alloc_slab"))
        .unwrap();
    let report = in_mount_namespace(&format!(
        "mount --bind {} /sys/kernel/slab && {} -r '^{busy}$'",
        q(&slab_dir),
        q(bin)
    ));
    let objects = num(&tree, busy, "objects");
    assert!(
        report.contains(&format!("Slabcache: {busy:<15}"))
            && report.contains(&format!("Objects: {objects}\n")),
        "{report}"
    );
    let alloc = num(&tree, busy, "alloc_fastpath") + num(&tree, busy, "alloc_slowpath");
    let free = num(&tree, busy, "free_fastpath") + num(&tree, busy, "free_slowpath");
    if alloc > 0 {
        let page = format!(
            "Page Alloc           {:>8} {:>8}",
            num(&tree, busy, "alloc_slab"),
            num(&tree, busy, "free_slab")
        );
        let total = format!("Total                {alloc:>8} {free:>8}");
        assert!(report.contains(&page), "{page}\n{report}");
        assert!(report.contains(&total), "{total}\n{report}");
    }
    // The NUMA table: the slabs of each node, as the per-node parts of `slabs` give them;
    // slabinfo has none when every cache's slabs and partial slabs are on node 0.
    let highest = names
        .iter()
        .flat_map(|n| {
            let text = format!(
                "{} {}",
                tree.get(n, "slabs").unwrap(),
                tree.get(n, "partial").unwrap()
            );
            text.split(' ')
                .filter_map(|w| {
                    w.strip_prefix('N')?
                        .split_once('=')?
                        .0
                        .parse::<usize>()
                        .ok()
                })
                .collect::<Vec<_>>()
        })
        .max()
        .unwrap_or(0);
    if highest == 0 {
        assert!(
            report.contains(&format!("{busy}: No NUMA information available.")),
            "{report}"
        );
    } else {
        let numa = report
            .lines()
            .find(|l| l.starts_with("All slabs"))
            .unwrap_or_else(|| panic!("no NUMA table:\n{report}"));
        let per_node: Vec<&str> = numa.split_whitespace().skip(2).collect();
        assert_eq!(per_node.len(), highest + 1, "{numa}");
        let slabs_file = tree.get(busy, "slabs").unwrap();
        for (node, v) in per_node.iter().enumerate() {
            let want = slabs_file
                .split(' ')
                .find_map(|w| w.strip_prefix(&format!("N{node}=")))
                .unwrap_or("0");
            assert_eq!(*v, want, "node {node}: {numa} vs {slabs_file}");
        }
    }

    // slabtop over /proc/slabinfo: one row per cache with /proc's figures.
    let top = in_mount_namespace(&format!(
        "mount --bind {} /proc/slabinfo && slabtop -o -s n",
        q(&proc_file)
    ));
    let mut top_rows = 0;
    for line in top.lines() {
        let w: Vec<&str> = line.split_whitespace().collect();
        let Some(name) = w.last().filter(|_| w.len() == 8) else {
            continue;
        };
        let Some(p) = rows.get(*name) else { continue };
        top_rows += 1;
        assert_eq!(w[0], p[1].to_string(), "{name} OBJS: {line}");
        assert_eq!(w[1], p[0].to_string(), "{name} ACTIVE: {line}");
        // OBJ SIZE in KiB with two decimals (C's rounding of the last digit).
        let kib: f64 = w[3].trim_end_matches('K').parse().unwrap_or(-1.0);
        assert!(
            (kib - p[2] as f64 / 1024.0).abs() < 0.0051,
            "{name} OBJ SIZE: {line}"
        );
        assert_eq!(w[4], p[6].to_string(), "{name} SLABS: {line}");
        assert_eq!(w[5], p[3].to_string(), "{name} OBJ/SLAB: {line}");
        let kib = p[6] * p[4] * PAGE_SIZE / 1024;
        assert_eq!(w[6], format!("{kib}K"), "{name} CACHE SIZE: {line}");
    }
    assert_eq!(top_rows, rows.len(), "slabtop rows:\n{top}");
    let total: u64 = rows.values().map(|p| p[0]).sum();
    let all: u64 = rows.values().map(|p| p[1]).sum();
    assert!(
        top.contains(&format!(
            "Active / Total Objects (% used)    : {total} / {all}"
        )),
        "{top}"
    );
}

/// Slow, so `./qemu-run.sh test --slow` (and CI) run it, not the default test command: a tsc smoke
/// bench boot and Linux's slabinfo built from linux-source (docs/testing.md, "Where the time
/// goes"). By hand: `cargo test --test qemu s12_linux_slabinfo_and_slabtop_read_the_sheaves_design
/// -- --ignored`.
#[test]
#[ignore]
fn s12_linux_slabinfo_and_slabtop_read_the_sheaves_design() {
    slab_tools_agree("sheaves");
}

/// Slow, so `./qemu-run.sh test --slow` (and CI) run it, not the default test command: a tsc smoke
/// bench boot and Linux's slabinfo built from linux-source (docs/testing.md, "Where the time
/// goes"). By hand: `cargo test --test qemu s12_linux_slabinfo_and_slabtop_read_the_partial_design
/// -- --ignored`.
#[test]
#[ignore]
fn s12_linux_slabinfo_and_slabtop_read_the_partial_design() {
    slab_tools_agree("partial");
}
