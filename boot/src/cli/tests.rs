//! Host tests of the command line: options, defaults, errors and their messages, help.

use super::*;
use crate::build::image::Firmware;
use crate::qemu::parse_mem_mib;
use crate::qemu::presets;
use crate::qemu::RunConfig;
use crate::resolve::{resolve, Job};
use std::time::Duration;

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

fn parse_run(s: &str) -> Result<RunConfig, clap::Error> {
    match parse(words(s))? {
        Request::Run(o) | Request::Main(o) => Ok(o.config()),
        other => panic!("'{s}' parsed as {other:?}"),
    }
}

fn error(s: &str) -> clap::Error {
    match parse(words(s)) {
        Ok(job) => panic!("'{s}' parsed: {job:?}"),
        Err(e) => e,
    }
}

#[test]
fn parses_options() {
    let c = parse_run("--uefi --smp 16 --mem 4G --topology snc --set acpi.dump=1 --set slub.max_order=2 --suite test --icount -- -smp 2").unwrap();
    assert_eq!(c.machine.firmware, Firmware::Uefi);
    assert_eq!(c.machine.smp, Some(16));
    assert_eq!(c.machine.mem_mib, Some(4096));
    assert_eq!(c.machine.topology.name, "snc");
    assert_eq!(c.cmdline(), "suite=test acpi.dump=1 slub.max_order=2");
    assert!(c.host.icount);
    // The machine after `--` is read once into its typed form; nothing else is left over.
    assert!(c.host.extra.is_empty(), "{:?}", c.host.extra);
    assert!(c.user_describes_machine());
    assert_eq!(c.machine_size(), (2, 128));
    assert_eq!(c.machine_args().unwrap(), vec!["-smp", "2"]);
    // A machine word QEMU could not read either is refused before anything is built.
    for bad in [
        "-- -smp eight",
        "-- -m",
        "-- -numa dist,src=0,dst=1,val=300",
    ] {
        let e = parse_run(bad).unwrap_err();
        assert_eq!(e.exit_code(), crate::cli::exit::USAGE, "{bad}");
        assert!(
            e.to_string().contains("the QEMU arguments after --"),
            "{bad}: {e}"
        );
    }
    let e = parse(words("bench -- -smp 4,cores")).unwrap_err();
    assert_eq!(e.exit_code(), crate::cli::exit::USAGE);
}

#[test]
fn defaults_and_the_main_job() {
    let Ok(Request::Main(o)) = parse(Vec::<String>::new()) else {
        panic!("no arguments is not the main job");
    };
    assert!(!o.verbose);
    let c = o.config();
    assert_eq!(
        (
            c.machine.topology.name,
            c.kernel.suite.name(),
            c.machine.firmware
        ),
        ("4node", "all", Firmware::Bios)
    );
    assert_eq!(c.host.timeout, Duration::from_secs(600));
    assert!(c.output.echo && !c.host.icount && c.host.extra.is_empty() && c.output.log.is_none());
    // Any argument, even a lone `--`, is one boot.
    assert!(matches!(parse(words("--")), Ok(Request::Run(_))));
    let q = parse_run("--quiet --log x.log --timeout 0 --qemu q/qemu").unwrap();
    assert!(!q.output.echo);
    assert_eq!(q.output.log, Some(PathBuf::from("x.log")));
    assert_eq!(q.host.timeout, Duration::from_secs(1));
    assert_eq!(q.host.qemu, Some(PathBuf::from("q/qemu")));
    // A later occurrence of an option overrides an earlier one, as before.
    assert_eq!(
        parse_run("--topology uma --topology 2node")
            .unwrap()
            .machine
            .topology
            .name,
        "2node"
    );
}

#[test]
fn rejects_bad_input() {
    for bad in [
        "--bogus",
        "--smp 0",
        "--smp 256",
        "--smp x",
        "--mem 1K",
        "--mem 32M",
        "--mem 99999999999999G",
        "--mem 2048G",
        "--topology nope",
        "--set novalue",
        "--set =1",
        "--set slub.min_partal=64",
        "--set fault.slab=101",
        "--suite fast",
        "--timeout soon",
        "--smp",
        "bogus",
        "--topology uma bench",
        "bench --smoke --topology",
    ] {
        let e = error(bad);
        assert_eq!(e.exit_code(), exit::USAGE, "{bad}: {e}");
        assert!(e.use_stderr(), "{bad}");
    }
}

#[test]
fn errors_say_what_is_wrong() {
    let cases = [
        ("--bogus", "unexpected argument '--bogus'"),
        ("--smp 0", "0 is outside 1..=255 (the TCG limit)"),
        ("--smp x", "not a number"),
        ("--mem 1K", "expected a size such as 2G or 512M"),
        (
            "--topology nope",
            "invalid value 'nope' for '--topology <NAME>'",
        ),
        ("--set novalue", "expected KEY=VALUE"),
        (
            "--set slub.min_partal=64",
            "unknown kernel option 'slub.min_partal': did you mean 'slub.min_partial' (auto or an integer 0..=1048576)?",
        ),
        (
            "--set slub.max_order=11",
            "option slub.max_order: bad value '11' (valid: integer 0..=10)",
        ),
        (
            "bench --set bench=no_such_bench",
            "option bench: bad value 'no_such_bench': no experiment 'no_such_bench'",
        ),
        (
            "bench --set bench=numa_localty",
            "no experiment 'numa_localty': did you mean 'numa_locality'?",
        ),
        (
            "bench --set vmalloc.nodes=tree",
            "option vmalloc.nodes: bad value 'tree' (valid: global, cpu, numa)",
        ),
        (
            "--suite fast",
            "[possible values: test, stress, bench, all, soak]",
        ),
        ("--smp", "a value is required for '--smp <N>'"),
        (
            "bench --suite test",
            "--suite is chosen by the bench runner itself",
        ),
        (
            "bench --log x",
            "--log is chosen by the bench runner itself",
        ),
        (
            "bench --quiet",
            "--quiet is chosen by the bench runner itself",
        ),
        ("bench --compare a.jsonl", "2 values required"),
    ];
    for (bad, want) in cases {
        let text = error(bad).to_string();
        assert!(text.contains(want), "{bad}: {text}");
        assert!(text.contains("try '--help'"), "{bad}: {text}");
    }
    // The topology error names the presets.
    let text = error("--topology nope").to_string();
    assert!(
        text.contains("4node") && text.contains("memoryless"),
        "{text}"
    );
}

#[test]
fn help_is_not_an_error() {
    for ask in ["-h", "--help", "bench -h", "bench --help", "--smp 2 --help"] {
        let e = error(ask);
        assert_eq!(e.kind(), ErrorKind::DisplayHelp, "{ask}");
        assert_eq!(e.exit_code(), exit::PASS, "{ask}");
    }
    // After `--`, -h is QEMU's.
    assert_eq!(parse_run("-- -h").unwrap().host.extra, vec!["-h"]);
    let long = Cli::command()
        .term_width(1000)
        .render_long_help()
        .to_string();
    for p in presets::all() {
        assert!(
            long.contains(p.name) && long.contains(p.about),
            "{}",
            p.name
        );
    }
    for flag in [
        "--topology",
        "--smp",
        "--mem",
        "--uefi",
        "--suite",
        "--set",
        "--timeout",
        "--icount",
        "--qemu",
        "--log",
        "--quiet",
        "bench",
    ] {
        assert!(long.contains(flag), "{flag} missing from --help");
    }
}

#[test]
fn user_machine_drops_preset() {
    let c = parse_run("-- -numa node,nodeid=0").unwrap();
    let a = c
        .qemu_args(std::path::Path::new("x.img"))
        .unwrap()
        .join(" ");
    assert!(!a.contains("-smp"));
    assert!(a.ends_with("-numa node,nodeid=0"));
}

#[test]
fn topology_and_machine() {
    let Ok(Request::Topology(p)) = parse(words("topology some/dir")) else {
        panic!("topology did not parse");
    };
    assert_eq!(p, PathBuf::from("some/dir"));
    assert_eq!(error("topology").exit_code(), exit::USAGE);
    let Err(e) = resolve(parse(words("--machine /no/such/source --suite test")).unwrap()) else {
        panic!("a missing source is not refused");
    };
    assert_eq!(e, "--machine: /no/such/source: No such file or directory");
    let Err(e) = resolve(parse(words("bench --machine /no/such/source")).unwrap()) else {
        panic!("a missing source is not refused for bench");
    };
    assert!(e.starts_with("--machine: /no/such/source: "), "{e}");
    let Err(e) = resolve(parse(words("--machine x -- -smp 4")).unwrap()) else {
        panic!("--machine with -smp after -- is not refused");
    };
    assert!(e.contains("'-smp' after -- cannot describe it too"), "{e}");
    // A usable source: the run and bench get its QEMU machine instead of a preset.
    let f = std::env::temp_dir().join(format!("numalab-cli-{}.numactl", std::process::id()));
    std::fs::write(&f, crate::machine::samples::eight_node_numactl().text()).unwrap();
    let line = format!("--machine {} --smp 8 --mem 512M --suite test", f.display());
    let Ok(Job::Replay(c, plan)) = resolve(parse(words(&line)).unwrap()) else {
        panic!("{line} is not a replay");
    };
    assert_eq!(c.machine_size(), (8, 512));
    assert!(c.user_describes_machine() && c.host.extra[0] == "-acpitable");
    assert_eq!(
        c.machine_args().unwrap()[..5],
        ["-smp", "8", "-m", "512M", "-acpitable"]
    );
    assert_eq!((plan.cpus, plan.mem_mib, plan.notes.len()), (8, 512, 2));
    let Ok(Job::Bench(b)) = resolve(
        parse(words(
            &format!("bench --smoke {line}").replace(" --suite test", ""),
        ))
        .unwrap(),
    ) else {
        panic!("bench --machine is not a bench");
    };
    assert_eq!(b.machine.qemu_args[..4], ["-smp", "8", "-m", "512M"]);
    let _ = std::fs::remove_file(&f);
    let text = error("--machine x --topology uma").to_string();
    assert!(text.contains("cannot be used with"), "{text}");
    let long = Cli::command().render_long_help().to_string();
    assert!(long.contains("--machine <SOURCE>") && long.contains("topology"));
}

#[test]
fn memory_sizes() {
    assert_eq!(parse_mem_mib("2G"), Some(2048));
    assert_eq!(parse_mem_mib("512m"), Some(512));
    assert_eq!(parse_mem_mib("1024"), Some(1024));
    assert_eq!(parse_mem_mib("63"), None);
    assert_eq!(parse_mem_mib(""), None);
    assert_eq!(parse_mem_mib("G"), None);
    assert_eq!(parse_mem_mib("99999999999999999999G"), None);
    assert_eq!(parse_mem_mib("18014398509481984G"), None);
}
