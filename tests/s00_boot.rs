//! Layer 0: the image boots under BIOS and UEFI, prints the banner and KTAP, and the exit
//! protocol turns kernel failures and bad options into failed runs with the log shown.

use numalab::*;
use numalab_boot::wire::ktap::WarningLine;

#[test]
fn s00_bios_boots_and_passes() {
    // The uma shape: the whole test suite under BIOS (shared with s01..s05).
    let out = shapes::uma();
    assert!(
        out.log.contains("numalab 0.1.0 booting"),
        "no banner:\n{}",
        out.log
    );
    assert!(out.log.contains("KTAP version 1"));
    assert!(out.log.contains("# Totals: pass:"));
    assert!(out.boot_log.ktap.result("options.valid").unwrap().ok);
    // KTAP v1 as KUnit prints it: one subtest block per suite, every case counted, suites in
    // the order of their `uses` graph (a suite after the suites whose services it uses, suites
    // of one depth by name).
    assert_eq!(
        out.boot_log.ktap.structure_errors(),
        Vec::<String>::new(),
        "{}",
        out.log
    );
    let suites: Vec<&str> = out
        .boot_log
        .ktap
        .suites
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        suites,
        [
            "options",
            "ktest",
            "early",
            "topology",
            "smp",
            "frame",
            "slub",
            "rcu",
            "trace",
            "kfree_rcu",
            "vmalloc",
            "fault"
        ],
        "{}",
        out.log
    );
    for suite in &out.boot_log.ktap.suites {
        assert!(
            suite.cases > 0 && suite.result.as_ref().unwrap().ok,
            "{suite:?}"
        );
    }
    assert!(out.log.contains("    # Subtest: slub\n"), "{}", out.log);
    assert!(out.log.contains("# slub: pass:"), "{}", out.log);
}

#[test]
fn s00_every_warning_the_tests_provoke_is_declared() {
    // The main job's console shows no deliberate misuse. Every warning the whole
    // test suite provokes on purpose (invalid and double frees, red zones, bad vfrees, a
    // destroy with objects left) is declared by its test (`# expect-warnings`), so the console
    // counts it and the log keeps it; whatever is left would be printed.
    let out = shapes::four_node();
    let declared = out.boot_log.warnings_of(WarningLine::Declared);
    assert!(declared.len() >= 300, "{} declared", declared.len());
    assert_eq!(
        out.boot_log.warnings_of(WarningLine::Undeclared),
        Vec::<String>::new()
    );
    assert_eq!(out.boot_log.declared_warnings(), declared.len());
}

#[test]
fn s00_uefi_boots_and_passes() {
    let mut c = config("uma");
    c.machine.firmware = Firmware::Uefi;
    let out = boot_pass(&c);
    assert!(out.log.contains("numalab 0.1.0 booting"));
    assert!(out.boot_log.ktap.passed() > 0);
}

#[test]
fn s00_deliberate_failure_fails_the_run() {
    let mut c = config("uma");
    c.kernel.options.set_word("test.fail=1").unwrap();
    // Only the failing test (and the options test, which always runs): the other tests'
    // results are checked in the shared boots.
    c.kernel
        .options
        .set_word("filter=deliberate_failure")
        .unwrap();
    let out = boot(&c);
    assert_eq!(out.verdict, Verdict::Fail, "{}", out.failure_report());
    let failed = out
        .boot_log
        .ktap
        .result("ktest.deliberate_failure")
        .expect("test ran");
    assert!(!failed.ok);
    // The failing case fails its suite, and only that suite.
    assert_eq!(out.boot_log.ktap.structure_errors(), Vec::<String>::new());
    assert!(
        !out.boot_log
            .ktap
            .suite("ktest")
            .unwrap()
            .result
            .as_ref()
            .unwrap()
            .ok
    );
    assert!(
        out.boot_log
            .ktap
            .suite("options")
            .unwrap()
            .result
            .as_ref()
            .unwrap()
            .ok
    );
    let report = out.failure_report();
    assert!(report.contains("QEMU command: qemu-system-x86_64"));
    assert!(report.contains("---- serial log ----"));
    assert!(report.contains("not ok") && report.contains("deliberate failure requested"));
}

#[test]
fn s00_bad_kernel_option_is_a_failed_test_naming_the_key() {
    // One boot with several bad options, shared with s05's bad vmalloc.nodes value.
    let out = shapes::bad_options();
    assert_eq!(out.verdict, Verdict::Fail, "{}", out.failure_report());
    let r = out
        .boot_log
        .ktap
        .result("options.valid")
        .expect("options test ran");
    assert!(
        r.reason.contains("unknown kernel option 'no.such.key'"),
        "{}",
        r.reason
    );
    assert!(r.reason.contains("suite: bad value 'fast'"), "{}", r.reason);
}

#[test]
fn s00_bogus_runner_option_exits_2_with_usage() {
    let (code, _, err) = qemu_run_sh(&["--bogus"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("unexpected argument '--bogus'"), "{err}");
    assert!(err.contains("Usage: qemu-run.sh"), "{err}");
    // bench's own command line, through the script's dispatch.
    let (code, _, err) = qemu_run_sh(&["bench", "--log", "x"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--log is chosen by the bench runner"), "{err}");
    assert!(err.contains("Usage: qemu-run.sh bench"), "{err}");
    let (code, help, _) = qemu_run_sh(&["bench", "--help"]);
    assert_eq!(code, Some(0));
    assert!(
        help.contains("--compare") && help.contains("--smoke"),
        "{help}"
    );
}

#[test]
fn s00_the_production_kernel_carries_no_tests() {
    // A plain build (no `ktest` feature) has no `ktests` section; the images' kernel has one.
    let plain =
        std::fs::read(numalab_boot::build::image::build_kernel_plain().expect("plain build"))
            .unwrap();
    let names = elf::section_names(&plain);
    assert!(names.iter().any(|n| n == ".text"), "{names:?}");
    assert!(
        !names.iter().any(|n| n == "ktests"),
        "plain kernel has a ktests section: {names:?}"
    );
    let tested =
        std::fs::read(numalab_boot::build::image::build_kernel().expect("kernel build")).unwrap();
    let names = elf::section_names(&tested);
    assert!(
        names.iter().any(|n| n == "ktests"),
        "test kernel lacks ktests: {names:?}"
    );
    // No test hook either: the `test` option group (acpi.corrupt, smp.hold_apic,
    // test.fail, ...) is neither in the option table of the plain kernel nor parsed by it, and
    // no hook function is linked in. The ktest kernel has the keys: the check can fail.
    let symbols = elf::symbol_names(&plain);
    assert!(symbols.len() > 100, "plain kernel has no symbol table");
    for hook in ["corrupt_for_test", "held_apic", "ktest"] {
        let found: Vec<&String> = symbols.iter().filter(|s| s.contains(hook)).collect();
        assert!(
            found.is_empty(),
            "plain kernel links test hook {hook}: {found:?}"
        );
    }
    for spec in numalab_algo::options::test::TEST.specs {
        assert!(
            !elf::contains(&plain, spec.key),
            "plain kernel carries the test option {}",
            spec.key
        );
        assert!(
            elf::contains(&tested, spec.key),
            "ktest kernel lacks the test option {}",
            spec.key
        );
    }
}

#[test]
fn s00_a_timeout_says_so_with_the_host_load() {
    // One second is far too short for any boot: the run is killed once QEMU has used its
    // CPU budget (a second per busy thread, time_limit.rs) or 20 s of wall time have passed,
    // and the report says it timed out (with the host's load and the CPU time), not that a
    // result was wrong.
    let mut c = numalab::config("uma");
    c.host.timeout = std::time::Duration::from_secs(1);
    let out = numalab::boot(&c);
    assert_eq!(out.verdict, Verdict::Timeout, "{}", out.failure_report());
    let report = out.failure_report();
    assert!(report.contains("timed out after "), "{report}");
    assert!(report.contains(" s (host load "), "{report}");
    assert!(report.contains(" cores; QEMU used "), "{report}");
    assert!(report.contains(" CPU-seconds, wall cap 20 s)"), "{report}");
    assert!(out.elapsed.as_secs() < 60, "{:?}", out.elapsed);
}
