//! Host tests of the bench runner's plan: the command line, the boots planned for what is
//! selected, each boot's configuration, the header line, the main job.

use super::plan::{boot_config, planned_boots};
use super::results::utc_now;
use super::*;
use crate::bench::catalog::{
    ALLOC_PEERS as AP, MEMORYLESS_NODE as ML, NUMA_LOCALITY as NL, PAGE_ALLOC as PA,
    SLUB_LIST_LOCK as SLL,
};
use crate::cli::{self, Request};
use std::path::PathBuf;

fn args(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn parses_bench_options() {
    let a = parse(&args(&format!(
        "--smoke --topology snc --set bench={}",
        SLL.name
    )))
    .unwrap();
    assert!(a.smoke && !a.main_job);
    assert_eq!(a.base.machine.topology.name, "snc");
    assert_eq!(a.base.kernel.suite, numalab_algo::options::Suite::Bench);
    let c = parse(&args("--compare a.jsonl b.jsonl")).unwrap();
    let c = c.compare.unwrap();
    assert_eq!(
        (c.new, c.all, c.html),
        (PathBuf::from("b.jsonl"), false, None)
    );
    let c = parse(&args("--compare a b --all --html p.html")).unwrap();
    let c = c.compare.unwrap();
    assert_eq!((c.all, c.html), (true, Some(PathBuf::from("p.html"))));
    // --all and --html only mean something with --compare.
    for bad in ["--all", "--html p.html"] {
        assert_eq!(
            parse(&args(bad)).unwrap_err().exit_code(),
            exit::USAGE,
            "{bad}"
        );
    }
    assert!(parse(&args("--compare a.jsonl")).is_err());
    assert!(parse(&args("--icount")).unwrap().icount_only);
    assert!(parse(&args("--bogus")).is_err());
    let u = parse(&args("-- -smp 8 -m 2G")).unwrap();
    assert_eq!(u.base.machine_size(), (8, 2048));
    assert!(u.base.host.extra.is_empty() && u.base.user_describes_machine());
    let all = parse(&args(
        "--verbose --out o --smp 4 --mem 1G --set acpi.dump=1 --set frame.pcp=0 --timeout 9 --qemu q --uefi",
    ))
    .unwrap();
    assert!(all.verbose && !all.smoke);
    assert_eq!(all.out_dir, Some(PathBuf::from("o")));
    assert_eq!(
        (all.base.machine.smp, all.base.machine.mem_mib),
        (Some(4), Some(1024))
    );
    assert_eq!(all.base.cmdline(), "suite=bench acpi.dump=1 frame.pcp=0");
    assert_eq!(all.base.host.timeout.as_secs(), 9);
    assert_eq!(all.base.host.qemu, Some(PathBuf::from("q")));
    assert_eq!(all.base.machine.firmware, crate::Firmware::Uefi);
}

#[test]
fn bench_command_line_errors_exit_2() {
    // Wrong use of bench's own options prints bench's usage.
    for bad in ["--compare a.jsonl", "--log x", "--bogus"] {
        let e = parse(&args(bad)).unwrap_err().to_string();
        assert!(e.contains("Usage: qemu-run.sh bench"), "{bad}: {e}");
    }
    for bad in [
        "--compare a.jsonl",
        "--compare",
        "--suite test",
        "--log x",
        "--quiet",
        "--bogus",
        "--out",
        "--smp 0",
        "--topology nope",
        "--set novalue",
        "extra",
    ] {
        let e = parse(&args(bad)).unwrap_err();
        assert_eq!(e.exit_code(), exit::USAGE, "{bad}: {e}");
        assert!(e.to_string().contains("try '--help'"), "{bad}: {e}");
    }
    let help = parse(&args("--help")).unwrap_err();
    assert_eq!(help.exit_code(), exit::PASS);
    let text = help.to_string();
    for flag in [
        "--smoke",
        "--verbose",
        "--out",
        "--compare",
        "--topology",
        "--set",
    ] {
        assert!(
            text.contains(flag),
            "{flag} missing from bench --help:\n{text}"
        );
    }
    for refused in ["--suite", "--log", "--quiet"] {
        assert!(
            !text.contains(refused),
            "{refused} in bench --help:\n{text}"
        );
    }
}

#[test]
fn icount_boot_is_the_same_machine_with_one_cpu() {
    let a = parse(&args("--topology memoryless")).unwrap();
    let c = boot_config(&a, Boot::Icount, 0).unwrap();
    assert!(c.host.icount);
    assert!(c.kernel_cmdline().contains("bench.clock=icount"));
    assert!(
        c.host.extra.is_empty(),
        "the machine is typed, not rewritten: {:?}",
        c.host.extra
    );
    let joined = c.machine_args().unwrap().join(" ");
    assert!(joined.starts_with("-smp 1,maxcpus=8 -m 2048M"), "{joined}");
    assert_eq!(c.vcpus(), 1);
    assert!(joined.contains("-numa node,nodeid=1,cpus=4-7,memdev=m1"));
    let t = boot_config(&a, Boot::Tsc, 0).unwrap();
    assert!(!t.kernel_cmdline().contains("bench.clock"));
    let u = boot_config(&a, Boot::Uma, 0).unwrap();
    assert_eq!(
        (u.machine.topology.name, u.machine.smp, u.machine.mem_mib),
        ("uma", Some(8), Some(2048))
    );
    assert!(u.cmdline().ends_with(&format!("bench={}", ML.name)));
    let only = parse(&args(&format!(
        "--topology memoryless --set bench={}",
        ML.name
    )))
    .unwrap();
    let u = boot_config(&only, Boot::Uma, 0).unwrap();
    assert_eq!(u.cmdline().matches("bench=").count(), 1, "{}", u.cmdline());
    // A machine given after `--`: typed once, rendered with one CPU online; its topology keys
    // are kept (before, `-smp 4,sockets=2` could not be rewritten and refused the icount boot).
    let user = parse(&args("-- -m 2G -smp 8")).unwrap();
    let c = boot_config(&user, Boot::Icount, 0).unwrap();
    assert_eq!(c.machine_args().unwrap(), args("-smp 1,maxcpus=8 -m 2048M"));
    assert_eq!((c.vcpus(), c.machine_size()), (1, (8, 2048)));
    let sockets = parse(&args("-- -smp 4,sockets=2")).unwrap();
    let c = boot_config(&sockets, Boot::Icount, 0).unwrap();
    assert_eq!(
        c.machine_args().unwrap(),
        args("-smp 1,maxcpus=4,sockets=2")
    );
}

#[test]
fn boots_planned_for_what_is_selected() {
    use Boot::*;
    let plan = |s: &str| planned_boots(&parse(&args(s)).unwrap());
    let only = |names: &[&str]| format!("--smoke --set bench={}", names.join(","));
    assert_eq!(plan("--smoke"), vec![(Tsc, 0), (Det, 0), (Icount, 0)]);
    assert_eq!(
        plan("--reps 2"),
        vec![(Tsc, 0), (Tsc, 1), (Det, 0), (Icount, 0)]
    );
    assert_eq!(
        plan(""),
        vec![(Tsc, 0), (Tsc, 1), (Tsc, 2), (Det, 0), (Icount, 0)],
        "three repetitions by default, one with --smoke"
    );
    assert_eq!(plan(&only(&[ML.name, NL.name])), vec![(Tsc, 0), (Det, 0)]);
    assert_eq!(
        plan(&only(&[ML.name, PA.name])),
        vec![(Tsc, 0), (Det, 0), (Icount, 0)]
    );
    // No count experiment selected: no det boot.
    assert_eq!(plan(&only(&[AP.name])), vec![(Tsc, 0), (Icount, 0)]);
    for bad in ["--reps 0", "--reps 21", "--reps x"] {
        assert!(parse(&args(bad)).is_err(), "{bad}");
    }
}

#[test]
fn icount_plans_only_the_counting_boots() {
    let a = parse(&[
        "--icount".into(),
        "--set".into(),
        format!("bench={}", AP.name),
    ])
    .unwrap();
    assert!(a.icount_only);
    assert!(planned_boots(&a).iter().all(|(b, _)| *b != Boot::Tsc));
    assert!(planned_boots(&a).contains(&(Boot::Icount, 0)));
    let plain = parse(&["--set".into(), format!("bench={}", AP.name)]).unwrap();
    assert!(planned_boots(&plain).contains(&(Boot::Tsc, 0)));
}

#[test]
fn det_boot_is_the_whole_machine_under_icount_with_the_count_experiments() {
    let a = parse(&args(&format!(
        "--smoke --set bench={},{}",
        SLL.name, AP.name
    )))
    .unwrap();
    let d = boot_config(&a, Boot::Det, 0).unwrap();
    assert!(d.host.icount && d.machine.smp.is_none() && d.host.extra.is_empty());
    assert_eq!(
        d.kernel_cmdline(),
        format!(
            "suite=bench bench.smoke=1 lock_stat=1 bench={} bench.clock=icount",
            SLL.name
        )
    );
    let q = d.qemu_args(Path::new("x.img")).unwrap().join(" ");
    assert!(
        q.contains("-icount shift=0,sleep=off") && q.contains("-smp 8 "),
        "{q}"
    );
    let all = parse(&args("")).unwrap();
    let d = boot_config(&all, Boot::Det, 0).unwrap();
    assert!(d
        .cmdline()
        .ends_with(&format!("bench={}", count_experiments().join(","))));
    // Repetitions after the first tell the kernel, which reverses the case order.
    let t = boot_config(&all, Boot::Tsc, 1).unwrap();
    assert_eq!(t.cmdline(), "suite=bench bench.rep=1 lock_stat=1");
    assert_eq!(
        boot_config(&all, Boot::Tsc, 0).unwrap().cmdline(),
        "suite=bench lock_stat=1"
    );
}

#[test]
fn the_header_line_flags_oversubscription() {
    let l = machine_line(2, 8, 3);
    assert!(
        l.contains("host 2 cores, machine 8 vCPUs: OVERSUBSCRIBED"),
        "{l}"
    );
    assert!(l.contains("repeated 3x"));
    assert!(!machine_line(16, 8, 1).contains("OVERSUBSCRIBED"));
}

#[test]
fn main_job_runs_every_suite_with_smoke_benchmarks() {
    let Ok(Request::Main(o)) = cli::parse(Vec::<String>::new()) else {
        panic!("no arguments is not the main job");
    };
    let base = o.config();
    let a = BenchArgs::main_job(base);
    let t = boot_config(&a, Boot::Tsc, 0).unwrap();
    assert_eq!(t.cmdline(), "suite=all bench.smoke=1 lock_stat=1");
    let i = boot_config(&a, Boot::Icount, 0).unwrap();
    assert_eq!(i.cmdline(), "suite=bench bench.smoke=1");
    assert_eq!(t.machine.topology.name, "4node");
    assert_eq!(a.reps, 1);
    // Seed 003's experiment joins the main job on its seed's machine, without a det boot.
    let m = a
        .memoryless_job()
        .expect("the main job has a memoryless boot");
    assert_eq!(m.base.machine.topology.name, "memoryless");
    assert_eq!(planned_boots(&m), vec![(Boot::Tsc, 0)]);
    assert_eq!(
        boot_config(&m, Boot::Tsc, 0).unwrap().cmdline(),
        format!("suite=bench bench={} bench.smoke=1 lock_stat=1", ML.name)
    );
    assert!(m.memoryless_job().is_none());
    // Seed 006's experiment joins it on 8node-2mem, its icount boot only.
    let s = a
        .memoryless_sheaves_job()
        .expect("the main job has an 8node-2mem boot");
    assert_eq!(s.base.machine.topology.name, "8node-2mem");
    assert_eq!(planned_boots(&s), vec![(Boot::Icount, 0)]);
    assert_eq!(
        boot_config(&s, Boot::Icount, 0).unwrap().cmdline(),
        "suite=bench bench=memoryless_sheaves bench.smoke=1"
    );
    assert!(s.memoryless_sheaves_job().is_none() && s.memoryless_job().is_none());
    let p = plan::plan(&a).unwrap();
    let last = p.boots.last().unwrap();
    assert_eq!((last.machine, last.boot), (2, Boot::Icount));
}

#[test]
fn utc_stamp_shape() {
    let (stamp, iso) = utc_now();
    assert_eq!(stamp.len(), 15);
    assert!(iso.ends_with('Z') && iso.len() == 20);
}

#[test]
fn one_plan_for_both_kernels() {
    let a = parse(&args(&format!(
        "--smoke --kernel both --topology memoryless --set bench={}",
        ML.name
    )))
    .unwrap();
    let p = plan::plan(&a).unwrap();
    assert_eq!(p.numalab_image, Some(crate::Firmware::Bios));
    let boots: Vec<(bool, Boot, When)> = p
        .boots
        .iter()
        .map(|b| (b.guest == Guest::Numalab, b.boot, b.when))
        .collect();
    assert_eq!(
        boots,
        vec![
            (true, Boot::Tsc, When::Always),
            (true, Boot::Det, When::Always),
            (true, Boot::Uma, When::UmaComparisonPrinted),
            (false, Boot::Tsc, When::Always),
            (false, Boot::Uma, When::LinuxMemorylessPrinted),
        ]
    );
    // Linux only: no numalab image, no numalab boot.
    let l = parse(&args("--kernel linux --set bench=slabinfo_reader")).unwrap();
    let p = plan::plan(&l).unwrap();
    assert!(p.numalab_image.is_none() && p.boots.is_empty(), "{p:?}");
    assert_eq!(p.linux_notes.len(), 1, "{:?}", p.linux_notes);
    // A machine after `--` is one machine for both kernels: each boot renders it.
    let a = parse(&args(&format!(
        "--kernel both --set bench={} -- -smp 4,sockets=2 -m 1G",
        PA.name
    )))
    .unwrap();
    let p = plan::plan(&a).unwrap();
    assert!(!p.boots.is_empty());
}

#[test]
fn trace_loads_the_plugin_into_the_deterministic_boots_only() {
    let a = parse(&args(&format!(
        "--smoke --trace mem --set bench={}",
        SLL.name
    )))
    .unwrap();
    assert!(a.trace);
    let p = plan::plan(&a).unwrap();
    assert!(!p.boots.is_empty());
    for b in &p.boots {
        assert_eq!(b.trace, b.boot.deterministic(), "{:?}", b.boot);
    }
    let plain = parse(&args(&format!("--smoke --set bench={}", SLL.name))).unwrap();
    assert!(plan::plan(&plain).unwrap().boots.iter().all(|b| !b.trace));
    // The main job traces its det boot and seed 006's icount boot on 8node-2mem (its
    // modelled row), not its 4node one-CPU icount boot.
    let main = BenchArgs::main_job(crate::qemu::RunConfig::new(
        "4node",
        numalab_algo::options::Suite::All,
    ));
    let p = plan::plan(&main).unwrap();
    assert!(p.boots.iter().any(|b| b.trace && b.boot == Boot::Det));
    let on = |b: &plan::PlannedBoot| b.config.machine.topology.name;
    assert!(p
        .boots
        .iter()
        .any(|b| b.trace && b.boot == Boot::Icount && on(b) == "8node-2mem"));
    assert!(p
        .boots
        .iter()
        .all(|b| !b.trace || b.boot == Boot::Det || on(b) == "8node-2mem"));
    // A machine whose layout the plugin's map cannot derive is refused before any build.
    let q35 = parse(&args("--trace mem -- -M q35")).unwrap();
    match plan::plan(&q35) {
        Err(plan::PlanError::Numalab(e)) => assert!(e.contains("q35"), "{e}"),
        other => panic!("expected a usage error, got {other:?}"),
    }
    // --trace takes one word; --cost-model needs --trace; --trace-latency is gone.
    assert_eq!(parse(&args("--trace cache")).unwrap_err().exit_code(), 2);
    assert_eq!(
        parse(&args("--cost-model cascadelake-2s"))
            .unwrap_err()
            .exit_code(),
        2
    );
    let e = parse(&args("--trace mem --trace-latency x.txt")).unwrap_err();
    assert_eq!(e.exit_code(), 2);
    assert!(e.to_string().contains("--cost-model"), "{e}");
}

#[test]
fn the_cost_model_is_checked_before_anything_boots() {
    let dir = std::env::temp_dir().join(format!("numalab-costs-plan-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("mine.mlc");
    // A 4-node MLC text with a missing entry on its line 5.
    let row = |n: u32| format!("{n}\t80.0\t90.0\t140.0\t140.0\n");
    let good = format!(
        "Measuring idle latencies for random access (in ns)...\n\t\tNuma node\nNuma node\t0\t1\t2\t3\n{}{}{}{}",
        row(0),
        row(1),
        row(2),
        row(3)
    );
    std::fs::write(
        &file,
        good.replacen("1\t80.0\t90.0\t140.0\t140.0", "1\t80.0\t90.0", 1),
    )
    .unwrap();
    let a = parse(&args(&format!(
        "--trace mem --cost-model {}",
        file.display()
    )))
    .unwrap();
    match plan::plan(&a) {
        Err(plan::PlanError::Numalab(e)) => {
            assert!(e.contains("line 5") && e.contains("missing"), "{e}")
        }
        other => panic!("expected a usage error, got {other:?}"),
    }
    // The whole matrix: it fits the default 4node machine, and the rest is the default's.
    std::fs::write(&file, &good).unwrap();
    let p = plan::plan(&a).unwrap();
    let det = p.boots.iter().find(|b| b.boot == Boot::Det).unwrap();
    let costs = det.costs.as_ref().unwrap();
    assert_eq!(costs.model.name, "mine");
    assert!(!costs.model.borrowed.is_empty());
    // A preset of another size is refused, naming both shapes.
    let a = parse(&args("--trace mem --cost-model cascadelake-2s")).unwrap();
    match plan::plan(&a) {
        Err(plan::PlanError::Numalab(e)) => assert!(e.contains("2x2"), "{e}"),
        other => panic!("expected a usage error, got {other:?}"),
    }
    // Without --cost-model, the preset that fits (4node: genoa-9224-nps2).
    let a = parse(&args("--trace mem")).unwrap();
    let p = plan::plan(&a).unwrap();
    let det = p.boots.iter().find(|b| b.boot == Boot::Det).unwrap();
    assert_eq!(det.costs.as_ref().unwrap().model.name, "genoa-9224-nps2");
    let missing = parse(&args("--trace mem --cost-model /nonexistent/lat.txt")).unwrap();
    assert!(matches!(
        plan::plan(&missing),
        Err(plan::PlanError::Numalab(_))
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}
