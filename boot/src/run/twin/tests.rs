//! Host tests of the twin: its selection, its boots' configuration and command line, the
//! side-by-side table and the `kernel` field.

use super::*;
use crate::bench::{self, Boot};
use crate::cli::Kernel;
use crate::run::plan::{boot_config, linux_config};
use crate::run::{self, BenchArgs};
use numalab_algo::options::{slub::SLUB_DESIGN, Cmdline};
use numalab_algo::slub::Design;
use std::path::Path;

fn args(s: &str) -> BenchArgs {
    let words: Vec<String> = s.split_whitespace().map(String::from).collect();
    run::parse(&words).unwrap()
}

/// The mirrored experiments of `a`'s selection, and the others.
fn plan(a: &BenchArgs) -> (Vec<&'static str>, Vec<String>) {
    let selected = a.selected();
    let names: Vec<&str> = selected.names().iter().map(String::as_str).collect();
    mirrored_selection(&names)
}

/// A Linux boot of `experiments` as the executor makes it: the plan's configuration with
/// the twin's build.
fn linux_boot_config(
    a: &BenchArgs,
    linux: &LinuxBoot,
    boot: Boot,
    experiments: &[&str],
) -> crate::RunConfig {
    let mut c = linux_config(a, boot, experiments).unwrap();
    c.kernel.linux = Some(linux.clone());
    c
}

fn linux() -> LinuxBoot {
    LinuxBoot {
        vmlinuz: "/boot/vmlinuz-6.1.0-57-amd64".into(),
        initramfs: "/t/initramfs.cpio".into(),
        release: "6.1.0-57-amd64".into(),
        append: None,
        kernel: LinuxKernel::V6_1,
        packages: vec!["linux-image-6.1.0-57-amd64=6.1.192-1".into()],
    }
}

#[test]
fn kernel_option() {
    assert_eq!(args("").kernel, Kernel::Numalab);
    assert_eq!(args("--kernel both").kernel, Kernel::Both);
    assert_eq!(args("--kernel linux").kernel, Kernel::Linux);
    let words: Vec<String> = ["--kernel", "bsd"].map(String::from).to_vec();
    assert!(run::parse(&words).is_err());
}

#[test]
fn plan_keeps_the_mirrored_experiments() {
    let (m, u) = plan(&args("--set bench=alloc_peers,slabinfo_reader"));
    assert_eq!(m, vec!["alloc_peers"]);
    assert_eq!(u, vec!["slabinfo_reader".to_string()]);
    let (m, u) = plan(&args(""));
    let mut names: Vec<&str> = MIRRORED.iter().map(|(n, _)| *n).collect();
    names.dedup();
    assert_eq!(m, names);
    assert!(u.is_empty());
}

#[test]
fn linux_boot_is_numalab_icount_machine_with_the_linux_image() {
    let a = args("--kernel both --smoke --set bench=page_alloc,slabinfo_reader");
    let c = linux_boot_config(&a, &linux(), Boot::Icount, &["page_alloc"]);
    let numalab = boot_config(&a, Boot::Icount, 0).unwrap();
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
    assert_eq!(c.host.extra, numalab.host.extra);
    let line = linux().cmdline(&c);
    assert_eq!(
        line,
        "console=ttyS0 printk.time=0 panic=-1 numalab_twin.clock=icount \
         numalab_twin.smoke=1 numalab_twin.bench=page_alloc"
    );
    let a = args("--kernel linux --linux-append init_on_alloc=0");
    let mut l = linux();
    l.append = a.linux_append.clone();
    let c = linux_boot_config(&a, &l, Boot::Icount, &["page_alloc"]);
    assert!(
        l.cmdline(&c).ends_with(" init_on_alloc=0"),
        "{}",
        l.cmdline(&c)
    );
    // slub_list_lock's order_4 tuning needs Linux to accept order 4.
    let a = args("--kernel linux --set bench=slub_list_lock");
    let c = linux_boot_config(&a, &linux(), Boot::Tsc, &["slub_list_lock"]);
    let line = linux().cmdline(&c);
    assert!(
        line.contains("numalab_twin.clock=tsc numalab_twin.bench=slub_list_lock"),
        "{line}"
    );
    assert!(!c.host.icount, "{c:?}");
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
    let t = side_by_side(&records, &Cmdline::new());
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
    let t = side_by_side(&records, &Cmdline::new());
    let rows: Vec<Vec<&str>> = t
        .lines()
        .filter(|l| l.starts_with("slub_list_lock"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 2, "{t}");
    // slub_list_lock tunes the partial design: numalab's value is in the partial column.
    assert_eq!(
        rows[0][rows[0].len() - 6..],
        ["tsc", "2", "10", "-", "20", "0.500"],
        "{t}"
    );
    assert_eq!(
        rows[1][rows[1].len() - 6..],
        ["tsc", "8", "-", "-", "40", "-"],
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
    let t = side_by_side(&records, &Cmdline::new());
    let row = t
        .lines()
        .find(|l| l.contains("default | linux") && l.contains("slab_kib"))
        .unwrap_or_else(|| panic!("{t}"));
    let words: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(words[words.len() - 4..], ["20", "-", "40", "0.500"], "{t}");
    // The alloc_peers harnesses: the same case name on both kernels, a metric of their own.
    let harness = [
        "BENCH {\"bench\":\"alloc_peers\",\"case\":\"harness/fast64\",\"metric\":\"harness_instructions_per_pair\",\"value\":18,\"unit\":\"instructions\",\"cpus\":1,\"nodes\":4,\"clock\":\"icount\"}",
        "BENCH {\"bench\":\"alloc_peers\",\"case\":\"harness/fast64\",\"metric\":\"harness_instructions_per_pair\",\"value\":15,\"unit\":\"instructions\",\"cpus\":1,\"nodes\":4,\"clock\":\"icount\",\"kernel\":\"linux-6.1.192\"}",
    ]
    .join("\n");
    let (records, bad) = bench::parse_log(&harness, Boot::Icount);
    assert!(bad.is_empty(), "{bad:?}");
    let t = side_by_side(&records, &Cmdline::new());
    let row = t
        .lines()
        .find(|l| l.contains("harness/fast64 | harness/fast64"))
        .unwrap_or_else(|| panic!("{t}"));
    let words: Vec<&str> = row.split_whitespace().collect();
    // alloc_peers runs the boot's design (sheaves by default): no partial/6.1 ratio.
    assert_eq!(words[words.len() - 4..], ["-", "18", "15", "-"], "{t}");
    assert!(REQUIRED.contains(&(
        catalog::ALLOC_PEERS.name,
        "harness/burst256",
        "harness_instructions_per_pair"
    )));
    let (_, bad) = bench::parse_log(&rec("freebsd", "page_alloc", "x", "1"), Boot::Icount);
    assert!(bad[0].message.contains("field 'kernel'"), "{bad:?}");
}

/// A BENCH line of `kernel` (None: numalab's, without the field) in the icount boot.
fn icount_line(kernel: Option<&str>, bench: &str, case: &str, metric: &str, v: f64) -> String {
    let k = kernel.map_or(String::new(), |k| format!(",\"kernel\":\"{k}\""));
    format!(
        "BENCH {{\"bench\":\"{bench}\",\"case\":\"{case}\",\"metric\":\"{metric}\",\"value\":{v},\"unit\":\"instructions\",\"cpus\":1,\"nodes\":4,\"clock\":\"icount\"{k}}}"
    )
}

#[test]
fn four_columns_and_ratios_of_the_same_design() {
    const PAIR: &str = "instructions_per_pair";
    let log = [
        icount_line(None, "sheaves_vs_partial", "partial/fast64", PAIR, 60.0),
        icount_line(None, "sheaves_vs_partial", "sheaves/fast64", PAIR, 40.0),
        icount_line(
            Some("linux-6.1.192"),
            "sheaves_vs_partial",
            "linux/fast64",
            PAIR,
            300.0,
        ),
        icount_line(
            Some("linux-7.3.4"),
            "sheaves_vs_partial",
            "linux/fast64",
            PAIR,
            200.0,
        ),
        icount_line(None, "page_alloc", "numalab", PAIR, 100.0),
        icount_line(Some("linux-6.1.192"), "page_alloc", "linux", PAIR, 400.0),
        icount_line(Some("linux-7.3.4"), "page_alloc", "linux", PAIR, 500.0),
        icount_line(
            None,
            "sheaves_vs_partial",
            "partial/random",
            "slab_path_per_kpair",
            3.0,
        ),
    ]
    .join("\n");
    let (records, bad) = bench::parse_log(&log, Boot::Icount);
    assert!(bad.is_empty(), "{bad:?}");
    let t = table::table(&records, &Cmdline::new());
    let titles: Vec<String> = t.columns().into_iter().map(|(h, _)| h).collect();
    assert_eq!(
        titles,
        [
            "numalab partial",
            "numalab sheaves",
            "linux-6.1.192",
            "linux-7.3.4",
            "partial/6.1",
            "sheaves/7"
        ]
    );
    let text = table::render(&t);
    let words = |prefix: &str| -> Vec<String> {
        let line = text
            .lines()
            .find(|l| l.contains(prefix))
            .unwrap_or_else(|| panic!("{prefix}: {text}"));
        let w: Vec<&str> = line.split_whitespace().collect();
        w[w.len() - 6..].iter().map(|s| s.to_string()).collect()
    };
    // Each numalab case in its design's column; the ratio against the Linux of that design.
    assert_eq!(
        words("partial/fast64 | linux/fast64"),
        ["60", "-", "300", "200", "0.200", "-"],
        "{text}"
    );
    assert_eq!(
        words("sheaves/fast64 | linux/fast64"),
        ["-", "40", "300", "200", "-", "0.200"],
        "{text}"
    );
    // No slab: one numalab value in both columns, a ratio against each Linux.
    assert_eq!(
        words("page_alloc  numalab | linux"),
        ["100", "100", "400", "500", "0.250", "0.200"],
        "{text}"
    );
    // A metric Linux cannot print is named with the reason, not left out silently.
    assert!(
        text.contains("no Linux figure for slab_path_per_kpair: no CONFIG_SLUB_STATS"),
        "{text}"
    );
    // One section per experiment.
    assert!(text.contains("-- sheaves_vs_partial\n") && text.contains("-- page_alloc\n"));
    // --set slub.design=partial moves alloc_peers' numalab figure to the partial column.
    let ap = [
        icount_line(None, "alloc_peers", "numalab/fast64", PAIR, 100.0),
        icount_line(
            Some("linux-6.1.192"),
            "alloc_peers",
            "kmalloc/fast64",
            PAIR,
            200.0,
        ),
    ]
    .join("\n");
    let (records, _) = bench::parse_log(&ap, Boot::Icount);
    let mut options = Cmdline::new();
    options.set_choice(&SLUB_DESIGN, Design::Partial);
    let partial = table::table(&records, &options);
    let row = &partial.rows[0];
    assert_eq!(row.values, [Some(100.0), None, Some(200.0), None]);
    assert_eq!(row.ratios(), [Some(0.5), None]);
    let sheaves = table::table(&records, &Cmdline::new());
    assert_eq!(
        sheaves.rows[0].values,
        [None, Some(100.0), Some(200.0), None]
    );
    // Only the kernels that ran get a column: no Linux 7 here.
    assert!(!sheaves.columns().iter().any(|(h, _)| h.contains("7")));
    // The JSONL header's form: the same columns, null where not printed.
    let j = table::to_json(&partial);
    assert_eq!(j["rows"][0]["numalab partial"], 100.0);
    assert!(j["rows"][0]["numalab sheaves"].is_null());
    assert_eq!(j["rows"][0]["partial/6.1"], 0.5);
}

#[test]
fn kernel_option_linux7_and_all() {
    assert_eq!(args("--kernel linux-7").kernel, Kernel::Linux7);
    assert_eq!(args("--kernel all").kernel, Kernel::All);
    // linux stays 6.1 for existing scripts; linux-6.1 says so.
    assert_eq!(args("--kernel linux-6.1").kernel, Kernel::Linux);
    assert_eq!(Kernel::All.linuxes(), [LinuxKernel::V6_1, LinuxKernel::V7]);
    assert!(Kernel::All.runs_numalab() && !Kernel::Linux7.runs_numalab());
    let a = args("--kernel all --icount --set bench=alloc_peers,page_alloc,vmalloc_scaling");
    let p = crate::run::plan::plan(&a).unwrap();
    let linux: Vec<(LinuxKernel, Boot)> = p
        .boots
        .iter()
        .filter_map(|b| match &b.guest {
            crate::run::plan::Guest::Linux { kernel, .. } => Some((*kernel, b.boot)),
            _ => None,
        })
        .collect();
    assert_eq!(
        linux,
        [
            (LinuxKernel::V6_1, Boot::Icount),
            (LinuxKernel::V7, Boot::Icount)
        ]
    );
    assert!(p.numalab_image.is_some());
    let only7 = crate::run::plan::plan(&args("--kernel linux-7 --icount")).unwrap();
    assert!(only7.numalab_image.is_none());
    assert!(only7.boots.iter().all(|b| matches!(
        &b.guest,
        crate::run::plan::Guest::Linux {
            kernel: LinuxKernel::V7,
            ..
        }
    )));
    // The sheaves experiments are mirrored in the icount boot.
    let (m, u) = plan(&args("--set bench=sheaves_vs_partial,memoryless_sheaves"));
    assert_eq!(m, ["sheaves_vs_partial", "memoryless_sheaves"]);
    assert!(u.is_empty());
}

#[test]
fn linux7_pin_and_cache() {
    assert_eq!(
        linux7::pinned_abi("# c\nABI=7.3.4+deb13\nVERSION=7.3.4-1~bpo13+1\n").unwrap(),
        "7.3.4+deb13"
    );
    assert!(linux7::pinned_abi("VERSION=1\n")
        .unwrap_err()
        .contains("no ABI="));
    assert!(linux7::pinned_abi("ABI=6.1.0-57\n")
        .unwrap_err()
        .contains("not a 7.x"));
    assert!(linux7::pinned_abi("ABI=7.1;rm -rf /\n").is_err());
    assert_eq!(
        linux7::cache_dir(Some("/x"), Some("/h")).unwrap(),
        Path::new("/x/numalab/linux7")
    );
    assert_eq!(
        linux7::cache_dir(Some(""), Some("/h")).unwrap(),
        Path::new("/h/.cache/numalab/linux7")
    );
    assert!(linux7::cache_dir(None, None).is_none());
    // The committed pin names a 7.x kernel.
    let pin =
        std::fs::read_to_string(crate::build::image::repo_root().join("linux/linux7.pin")).unwrap();
    assert!(linux7::pinned_abi(&pin).unwrap().starts_with("7."));
    assert!(LinuxKernel::V7.owns("linux-7.3.4") && !LinuxKernel::V7.owns("linux-6.1.192"));
    assert_eq!(LinuxKernel::V7.log_prefix(), "linux7-");
}

#[test]
fn sheaf_capacity_from_the_module_line() {
    let l7 = "x\n# bench: memoryless_sheaves: cpu 0 on node 0 (memoryless), sheaf_capacity 60 (-1: no such file)\n";
    assert_eq!(sheaf_capacity(&crate::wire::BootLog::parse(l7)), Some(60));
    let l61 = "# bench: memoryless_sheaves: cpu 0 on node 0 (with memory), sheaf_capacity -1 (-1: no such file)";
    assert_eq!(sheaf_capacity(&crate::wire::BootLog::parse(l61)), None);
    assert_eq!(
        sheaf_capacity(&crate::wire::BootLog::parse("no such line")),
        None
    );
}

/// linux/twin/experiments.h, the module's one list of experiments, names exactly the
/// catalog's mirrored experiments (`twin: Some`), and each has its NAME.c, which Kbuild builds
/// from that list; no other C file but the harness.
#[test]
fn the_module_lists_the_catalogs_mirrored_experiments() {
    let root = image::repo_root();
    let header = std::fs::read_to_string(root.join("linux/twin/experiments.h"))
        .expect("linux/twin/experiments.h");
    let listed = module::module_experiments(&header);
    let mut sorted: Vec<&str> = listed.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    let mut mirrored: Vec<&str> = MIRRORED.iter().map(|(n, _)| *n).collect();
    mirrored.sort_unstable();
    mirrored.dedup();
    assert_eq!(
        sorted, mirrored,
        "linux/twin/experiments.h and the catalog's twins (kernel/algo/src/bench/catalog) differ"
    );
    let files = module::twin_files(&root).expect("linux/twin");
    for name in &listed {
        assert!(
            files.contains(&format!("{name}.c")),
            "linux/twin/{name}.c is missing"
        );
    }
    for f in files.iter().filter_map(|f| f.strip_suffix(".c")) {
        assert!(
            f == "harness" || f == "trace" || listed.iter().any(|n| n == f),
            "linux/twin/{f}.c is neither the harness, the trace regions nor an experiment of experiments.h"
        );
    }
}

#[test]
fn module_experiments_reads_every_entry() {
    let h = "/* TWIN_EXPERIMENT(NAME, WHY) */\nTWIN_EXPERIMENT(a_b, \"\")\nTWIN_EXPERIMENT(c,\n\t\t\"why\")\n";
    assert_eq!(module::module_experiments(h), vec!["a_b", "c"]);
}

#[test]
fn objects_left_at_cache_destroy_are_lost_memory() {
    use super::contract::lost_objects;
    assert_eq!(
        lost_objects(&crate::wire::BootLog::parse("ok 1 bench\n")),
        None
    );
    let log = "BUG numalab_sll (Tainted: G        W  OE      ): Objects remaining on __kmem_cache_shutdown()\n\
               Object 0x000000004fd5fc5e @offset=0\n\
               BUG numalab_sll (Tainted: G    B   W  OE      ): Objects remaining on __kmem_cache_shutdown()\n\
               BUG other (Tainted: G): Objects remaining on __kmem_cache_shutdown()\n";
    let line = lost_objects(&crate::wire::BootLog::parse(log)).expect("lost objects found");
    assert!(
        line.contains("numalab_sll (2 slabs), other (1 slabs)"),
        "{line}"
    );
    assert!(line.contains("memory lost"), "{line}");
}

/// kfree_rcu_scale: numalab's three ways face Linux's own kfree_rcu (6.1 batched, 7.x the
/// rcu_free sheaf) and rcuscale's kfree_by_call_rcu; the contract asks for Linux's
/// instructions and grace periods of both cases, and call_rcu's peak, in the icount boot.
#[test]
fn kfree_rcu_ways_face_linux_kfree_rcu_and_call_rcu() {
    const OP: &str = "instructions_per_op";
    let krs = catalog::KFREE_RCU_SCALE.name;
    assert!(MIRRORED.contains(&(krs, Boot::Icount)) && MIRRORED.contains(&(krs, Boot::Tsc)));
    // Its tsc boot comes with the plan's host-timed boots, not under --icount.
    let tsc_boots = |a: &str| {
        crate::run::plan::linux_kernel_boots(&args(a), LinuxKernel::V6_1)
            .unwrap()
            .0
            .iter()
            .map(|b| b.boot)
            .collect::<Vec<_>>()
    };
    let planned = tsc_boots("--kernel linux --set bench=kfree_rcu_scale");
    assert_eq!(planned[..2], [Boot::Icount, Boot::Tsc]);
    let icount_only = tsc_boots("--kernel linux --icount --set bench=kfree_rcu_scale");
    assert_eq!(icount_only, [Boot::Icount]);
    for (case, metric) in [
        ("linux/call_rcu", OP),
        ("linux/kfree_rcu", OP),
        ("linux/call_rcu", "grace_periods_per_kop"),
        ("linux/kfree_rcu", "grace_periods_per_kop"),
        ("linux/call_rcu", "peak_waiting_objects"),
    ] {
        assert!(REQUIRED.contains(&(krs, case, metric)), "{case} {metric}");
    }
    let log = [
        icount_line(None, krs, "call_rcu", OP, 374.0),
        icount_line(None, krs, "batched", OP, 290.0),
        icount_line(None, krs, "sheaf", OP, 163.0),
        icount_line(Some("linux-6.1.192"), krs, "linux/kfree_rcu", OP, 580.0),
        icount_line(Some("linux-6.1.192"), krs, "linux/call_rcu", OP, 400.0),
        icount_line(Some("linux-7.3.4"), krs, "linux/kfree_rcu", OP, 326.0),
        icount_line(Some("linux-7.3.4"), krs, "linux/call_rcu", OP, 748.0),
    ]
    .join("\n");
    let (records, bad) = bench::parse_log(&log, Boot::Icount);
    assert!(bad.is_empty(), "{bad:?}");
    let t = table::table(&records, &Cmdline::new());
    let row = |case: &str| {
        t.rows
            .iter()
            .find(|r| r.bench == krs && r.case == case)
            .unwrap_or_else(|| panic!("no row {case}: {t:?}"))
            .clone()
    };
    // The ways run on the boot's design (sheaves by default): its column, against 7.x.
    let sheaf = row("sheaf | linux/kfree_rcu");
    assert_eq!(sheaf.values, [None, Some(163.0), Some(580.0), Some(326.0)]);
    assert_eq!(sheaf.ratios(), [None, Some(0.5)]);
    assert_eq!(
        row("batched | linux/kfree_rcu").values[2..],
        [Some(580.0), Some(326.0)]
    );
    assert_eq!(
        row("call_rcu | linux/call_rcu").values[1..],
        [Some(374.0), Some(400.0), Some(748.0)]
    );
    assert!(table::render(&t).contains("-- kfree_rcu_scale\n"));
}
