//! Host tests of the twin's det boots (det.rs): planned under `--trace mem` only, on numalab's
//! det machine with `clock=det` and numalab's quantum, traced with numalab's cost model, the
//! order-4 half in a second boot; their logs' and c2c files' names; the contract's det rule.

use super::twin::{cmdline, det, LinuxKernel};
use crate::bench::Boot;
use crate::qemu::LinuxBoot;
use crate::run::plan::{self, Guest, PlannedBoot};
use crate::run::{self, BenchArgs};
use numalab_algo::options::slub::SLUB_DESIGN;
use std::path::{Path, PathBuf};

fn args(s: &str) -> BenchArgs {
    let words: Vec<String> = s.split_whitespace().map(String::from).collect();
    run::parse(&words).unwrap()
}

fn linux() -> LinuxBoot {
    LinuxBoot {
        vmlinuz: "/boot/vmlinuz-6.1.0-57-amd64".into(),
        initramfs: "/t/initramfs.cpio".into(),
        release: "6.1.0-57-amd64".into(),
        append: None,
        kernel: LinuxKernel::V6_1,
        packages: vec![],
    }
}

/// The Linux det boots of `a`'s plan.
fn det_boots(a: &BenchArgs) -> Vec<PlannedBoot> {
    plan::plan(a)
        .unwrap()
        .boots
        .into_iter()
        .filter(|b| b.guest != Guest::Numalab && b.boot == Boot::Det)
        .collect()
}

/// The command line Linux gets in boot `b`.
fn cmdline(b: &PlannedBoot) -> String {
    let mut l = linux();
    if let Guest::Linux { append, .. } = &b.guest {
        l.append = append.clone();
    }
    l.cmdline(&b.config)
}

#[test]
fn det_boots_only_under_trace_with_the_det_words() {
    let sel =
        "--set bench=slub_list_lock,numa_locality,sheaves_vs_partial,vmalloc_scaling,page_alloc";
    assert!(det_boots(&args(&format!("--kernel linux --smoke {sel}"))).is_empty());
    let a = args(&format!("--kernel all --smoke --trace mem {sel}"));
    let p = plan::plan(&a).unwrap();
    let numalab_det = p
        .boots
        .iter()
        .find(|b| b.guest == Guest::Numalab && b.boot == Boot::Det)
        .unwrap();
    let det = det_boots(&a);
    // Linux 7.x's det boot of the four and the order-4 one of slub_list_lock; Linux 6.1's
    // two run on QEMU 10.0 where linux/qemu10.sh installed it, and a note says so; without
    // it, 6.1 has none, and a note says why (det::qemu_of).
    let on_10 = det
        .iter()
        .filter(|b| {
            b.config
                .host
                .qemu
                .as_deref()
                .is_some_and(|q| q.ends_with("linux/qemu10.sh"))
        })
        .count();
    let q10_note = |n: &String| n.contains("linux-6.1's det boots run on QEMU 10.0");
    let none_note = |n: &String| n.contains("no linux-6.1 det boot") && n.contains("second CPU");
    match det::qemu_here(LinuxKernel::V6_1) {
        Ok(_) => {
            assert_eq!((det.len(), on_10), (4, 2), "{det:?}");
            assert!(p.linux_notes.iter().any(q10_note), "{:?}", p.linux_notes);
        }
        Err(_) => {
            assert_eq!((det.len(), on_10), (2, 0), "{det:?}");
            assert!(p.linux_notes.iter().any(none_note), "{:?}", p.linux_notes);
        }
    }
    let det: Vec<_> = det
        .into_iter()
        .filter(|b| b.config.host.qemu.is_none())
        .collect();
    assert_eq!(det.len(), 2, "{det:?}");
    for b in &det {
        assert!(b.trace && b.costs.is_some());
        assert_eq!(
            b.costs.as_ref().map(|c| c.label()),
            numalab_det.costs.as_ref().map(|c| c.label())
        );
        // numalab's det machine: all CPUs, icount, TCG, the same machine arguments.
        assert!(b.config.host.icount && b.config.machine.cpus_online.is_none());
        assert_eq!(b.config.host.accel, numalab_det.config.host.accel);
        assert_eq!(
            b.config.machine_args().unwrap(),
            numalab_det.config.machine_args().unwrap()
        );
        let q = {
            let mut c = b.config.clone();
            c.kernel.linux = Some(linux());
            c.qemu_args(Path::new("-")).unwrap().join(" ")
        };
        assert!(q.contains("-icount shift=0,sleep=off"), "{q}");
    }
    let line = cmdline(&det[0]);
    assert!(
        line.contains(
            "numalab_twin.clock=det numalab_twin.det_quantum=1000 numalab_twin.smoke=1 \
             numalab_twin.bench=slub_list_lock,numa_locality,vmalloc_scaling,sheaves_vs_partial"
        ),
        "{line}"
    );
    assert!(!line.contains("sll_order4"), "{line}");
    let order4 = cmdline(&det[1]);
    assert!(
        order4.contains("numalab_twin.bench=slub_list_lock")
            && order4.contains(cmdline::ORDER4_WORDS),
        "{order4}"
    );
    // The quantum is numalab's for the run.
    let a =
        args("--kernel linux-7 --trace mem --set bench=numa_locality --set bench.det_quantum=250");
    let det = det_boots(&a);
    assert_eq!(det.len(), 1);
    assert!(cmdline(&det[0]).contains("numalab_twin.det_quantum=250"));
    // Without one of the four, no det boot, and a note says so.
    let a = args("--kernel linux-7 --trace mem --set bench=page_alloc");
    assert!(det_boots(&a).is_empty());
    let notes = plan::plan(&a).unwrap().linux_notes;
    assert!(
        notes.iter().any(|n| n.contains("no Linux det boot")),
        "{notes:?}"
    );
    let a = args("--kernel linux-7 --trace mem --set bench=vmalloc_scaling");
    let notes = plan::plan(&a).unwrap().linux_notes;
    assert!(notes.iter().any(|n| n.contains("SLUB_STATS")), "{notes:?}");
    // The icount boot keeps clock=icount.
    let icount = plan::plan(&a)
        .unwrap()
        .boots
        .into_iter()
        .find(|b| b.boot == Boot::Icount && b.guest != Guest::Numalab)
        .unwrap();
    let line = cmdline(&icount);
    assert!(
        line.contains("numalab_twin.clock=icount ") && !line.contains("det_quantum"),
        "{line}"
    );
}

#[test]
fn system_map_paths_and_the_kernel_name() {
    assert_eq!(
        det::system_map_path(LinuxKernel::V6_1, "6.1.0-57-amd64", None),
        Path::new("/boot/System.map-6.1.0-57-amd64")
    );
    let cache = Path::new("/nonexistent/cache/numalab/linux7");
    assert_eq!(
        det::system_map_path(LinuxKernel::V7, "7.3.4+deb13-amd64", Some(cache)),
        cache.join("root/usr/lib/modules/7.3.4+deb13-amd64/System.map")
    );
    let dir = std::env::temp_dir().join(format!("numalab-det-test-{}", std::process::id()));
    let abi = dir.join("7.3.4+deb13");
    std::fs::create_dir_all(&abi).unwrap();
    std::fs::write(abi.join("System.map"), "ffffffff82a0b000 D jiffies_64\n").unwrap();
    assert_eq!(
        det::system_map_path(LinuxKernel::V7, "7.3.4+deb13-amd64", Some(&dir)),
        abi.join("System.map")
    );
    let _ = std::fs::remove_dir_all(&dir);
    let log = "# bench: clock=det smoke=0 cpus_online=8 nodes=4 selected=all kernel=linux-7.3.4 sll_order4=0\n";
    assert_eq!(
        crate::trace::labels::kernel_name(&crate::wire::BootLog::parse(log), &[], LinuxKernel::V7),
        "linux-7.3.4"
    );
    assert_eq!(
        crate::trace::labels::kernel_name(&crate::wire::BootLog::parse(""), &[], LinuxKernel::V7),
        "linux-7"
    );
}

#[test]
fn numalabs_other_designs_face_linux_in_traced_runs_with_both_kernels() {
    let sel = "--set bench=slub_list_lock,numa_locality,vmalloc_scaling,sheaves_vs_partial";
    let designs = |a: &BenchArgs| -> Vec<(Option<String>, String)> {
        plan::plan(a)
            .unwrap()
            .boots
            .iter()
            .filter(|b| b.guest == Guest::Numalab && b.boot == Boot::Det)
            .map(|b| (b.variant.clone(), b.config.kernel_cmdline()))
            .collect()
    };
    let key = SLUB_DESIGN.spec.key;
    let d = designs(&args(&format!("--kernel all --smoke --trace mem {sel}")));
    assert_eq!(d.len(), 3, "{d:?}");
    assert_eq!(d[0].0, None);
    assert!(!d[0].1.contains(&format!("{key}=")), "{}", d[0].1);
    for (i, name) in [(1, "partial"), (2, "hybrid")] {
        let word = format!("{key}={name}");
        assert_eq!(d[i].0.as_deref(), Some(word.as_str()));
        assert!(d[i].1.contains(&word), "{}", d[i].1);
        assert!(
            d[i].1
                .contains("bench=slub_list_lock,numa_locality,vmalloc_scaling "),
            "{}",
            d[i].1
        );
        assert!(d[i].1.contains("bench.clock=icount"), "{}", d[i].1);
    }
    // The run's design is the one left out.
    let d = designs(&args(&format!(
        "--kernel both --trace mem --set slub.design=partial {sel}"
    )));
    let v: Vec<Option<String>> = d.iter().map(|x| x.0.clone()).collect();
    let want = |name: &str| Some(format!("{key}={name}"));
    assert_eq!(v, [None, want("sheaves"), want("hybrid")]);
    // Not without --trace, nor without Linux, nor without one of its experiments.
    assert_eq!(designs(&args(&format!("--kernel both {sel}"))).len(), 1);
    assert_eq!(designs(&args(&format!("--trace mem {sel}"))).len(), 1);
    let only = "--kernel both --trace mem --set bench=sheaves_vs_partial";
    assert!(designs(&args(only)).iter().all(|x| x.0.is_none()));
}

/// The symbol boot on the installed 6.1 and 7.x (QEMU, about 15 s each): `cargo test -p
/// numalab-boot --lib run::twin_det_tests::the_symbol_boot -- --ignored`.
#[test]
#[ignore = "boots Linux under QEMU"]
fn the_symbol_boot_reads_linuxs_data_symbols() {
    let (release, vmlinuz) = super::twin::installed_release().unwrap();
    let v6 = LinuxBoot {
        vmlinuz,
        release,
        ..self::linux()
    };
    let root = crate::build::image::repo_root();
    let v7 = super::twin::linux7::installed(&root).map(|i| LinuxBoot {
        vmlinuz: i.vmlinuz,
        release: i.release,
        kernel: LinuxKernel::V7,
        ..self::linux()
    });
    let dir = std::env::temp_dir().join(format!("numalab-kallsyms-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let qemu = Path::new("qemu-system-x86_64");
    for (linux, statics) in [(Ok(v6), "vmap_area_lock"), (v7, "vmap_nodes")] {
        let Ok(linux) = linux else { continue };
        let text = super::twin::kallsyms::system_map(&dir, &linux, qemu).unwrap();
        let syms = crate::trace::sysmap::symbols(&text).unwrap();
        let find = |n: &str| syms.iter().find(|s| s.2 == n).cloned();
        // nokaslr: link-time addresses, as System.map.
        let j = find("jiffies_64").expect("jiffies_64");
        assert!(j.0 >= 0xffff_ffff_8100_0000, "{} {j:?}", linux.release);
        assert!(find(statics).is_some(), "{} {statics}", linux.release);
        assert!(syms.len() > 10_000, "{} {}", linux.release, syms.len());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A finished boot of `b` that printed `log`, with `records` and a trace when `traced`.
fn finished(b: &PlannedBoot, log: &str, records: Vec<crate::bench::BenchRecord>) -> run::BootRun {
    let mut config = b.config.clone();
    if let Guest::Linux { kernel, .. } = &b.guest {
        config.kernel.linux = Some(LinuxBoot {
            kernel: *kernel,
            ..linux()
        });
    }
    run::BootRun {
        boot: b.boot,
        rep: b.rep,
        variant: b.variant.clone(),
        config,
        outcome: crate::qemu::Outcome {
            verdict: crate::qemu::Verdict::Pass,
            command: String::new(),
            log: log.into(),
            boot_log: crate::wire::BootLog::parse(log),
            stderr: String::new(),
            elapsed: std::time::Duration::ZERO,
            host_load_at_timeout: None,
            cpu_at_timeout: None,
        },
        records,
        violations: Vec::new(),
        trace: b.trace.then(crate::trace::TraceReport::default),
    }
}

#[test]
fn every_traced_boot_has_its_own_c2c_file() {
    let a = args(
        "--kernel all --smoke --trace mem --set bench=slub_list_lock,numa_locality,vmalloc_scaling",
    );
    let p = plan::plan(&a).unwrap();
    let (numalab, linux): (Vec<&PlannedBoot>, Vec<&PlannedBoot>) =
        p.boots.iter().partition(|b| b.guest == Guest::Numalab);
    let runs = run::Runs {
        numalab: numalab.iter().map(|b| finished(b, "", vec![])).collect(),
        linux: linux.iter().map(|b| finished(b, "", vec![])).collect(),
        image: "-".into(),
    };
    let names: Vec<String> = run::results::c2c_names(&a, &runs)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    // Linux 6.1's two det boots where QEMU 10.0 is installed (twin::det::qemu_of).
    let six = if det::qemu_here(LinuxKernel::V6_1).is_ok() {
        vec!["c2c-linux-det.txt", "c2c-linux-det-2.txt"]
    } else {
        vec![]
    };
    let mut want = vec![
        "c2c-det-rep0.txt",
        "c2c-icount-rep0.txt",
        "c2c-det-partial-rep0.txt",
        "c2c-det-hybrid-rep0.txt",
    ];
    want.extend(six);
    want.extend(["c2c-linux7-det.txt", "c2c-linux7-det-2.txt"]);
    assert_eq!(names, want);
    let logs: Vec<String> = run::results::log_names(&a, &runs)
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    assert!(logs.contains(&"det-partial.log".to_string()), "{logs:?}");
    assert!(logs.contains(&"linux7-det-2.log".to_string()), "{logs:?}");
}

#[test]
fn a_linux_det_boot_owes_the_trace_of_each_experiment_it_ran() {
    let a = args("--kernel linux-7 --trace mem --set bench=vmalloc_scaling");
    let p = plan::plan(&a).unwrap();
    let det = p.boots.iter().find(|b| b.boot == Boot::Det).unwrap();
    // KTAP: vmalloc_scaling ran (registered and passed).
    let log = "KTAP version 1\n1..1\n    KTAP version 1\n    # Subtest: bench\n    1..1\n\
               # bench: registered vmalloc_scaling\n    ok 1 vmalloc_scaling\nok 1 bench\n";
    let mut r = finished(det, log, vec![]);
    r.outcome.boot_log = crate::wire::BootLog::parse(log);
    assert!(r.ran().contains("vmalloc_scaling"), "{:?}", r.ran());
    let problems = super::twin::contract_problems(std::slice::from_ref(&r));
    assert!(
        problems
            .iter()
            .any(|p| p.contains("vmalloc_scaling ran but no traced region")),
        "{problems:?}"
    );
    let mut rec = crate::bench::BenchRecord::for_test(
        [
            "vmalloc_scaling",
            "linux",
            "instructions_per_op",
            "instructions",
        ],
        8,
        Boot::Det,
        0,
        900.0,
    );
    rec.kernel = "linux-6.1.192".into();
    r.records.push(rec);
    assert_eq!(super::twin::contract_problems(&[r]), Vec::<String>::new());
}

#[test]
fn linux_6_1_det_boots_need_qemu_10() {
    let dir = std::env::temp_dir().join(format!("numalab-q10-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let repo = Path::new("/r");
    assert_eq!(det::qemu_of(LinuxKernel::V7, repo, Some(&dir)), Ok(None));
    let why = det::qemu_of(LinuxKernel::V6_1, repo, Some(&dir)).unwrap_err();
    assert!(
        why.contains("second CPU") && why.contains("./qemu-run.sh setup"),
        "{why}"
    );
    assert!(det::qemu_of(LinuxKernel::V6_1, repo, None).is_err());
    let bin = dir.join("root/usr/bin");
    std::fs::create_dir_all(&bin).unwrap();
    for f in ["qemu-system-x86_64", "ld-numalab.so", "qemu-bundle"] {
        std::fs::write(bin.join(f), "").unwrap();
        // Until every piece and the version file exist, it is not installed.
        assert!(det::qemu_of(LinuxKernel::V6_1, repo, Some(&dir)).is_err());
    }
    std::fs::write(dir.join("qemu10.version"), "qemu-system-x86=1:10.0.13\n").unwrap();
    assert_eq!(
        det::qemu_of(LinuxKernel::V6_1, repo, Some(&dir)),
        Ok(Some((
            PathBuf::from("/r/linux/qemu10.sh"),
            "qemu-system-x86=1:10.0.13".to_string()
        )))
    );
    let _ = std::fs::remove_dir_all(&dir);
}
