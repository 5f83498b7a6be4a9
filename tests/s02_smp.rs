//! Layer 2: SMP bring-up. Every CPU QEMU was given comes online on the node QEMU put it on,
//! the in-kernel SMP tests pass, and odd machines (`--smp 1`, `-smp 4,maxcpus=8`) boot cleanly.

use numalab::*;

/// The `numalab: smp: N of M CPUs online in X ms` line, as (N, M, milliseconds).
fn online_line(out: &Outcome) -> (u32, u32, f64) {
    let lines = lines_with(out, "numalab: smp: ");
    let line = lines
        .iter()
        .find(|l| l.contains(" CPUs online"))
        .unwrap_or_else(|| panic!("no bring-up line:\n{}", out.log));
    let words: Vec<&str> = line.split_whitespace().collect();
    let n = words[2].parse().expect("online count");
    let m = words[4].parse().expect("CPU count");
    let ms = words
        .iter()
        .position(|w| *w == "in")
        .and_then(|i| words[i + 1].parse().ok())
        .unwrap_or(0.0);
    (n, m, ms)
}

/// (cpu, apic id, node) from the `smp.verbose=1` lines.
fn verbose_cpus(out: &Outcome) -> Vec<(u32, u32, u32)> {
    lines_with(out, "numalab: smp: CPU ")
        .iter()
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (
                w[3].parse().unwrap(),
                w[6].parse().unwrap(),
                w[8].parse().unwrap(),
            )
        })
        .collect()
}

fn smp_tests_passed(out: &Outcome) {
    for name in [
        "smp.cpus_check_in",
        "smp.percpu_private",
        "smp.call_roundtrip",
        "smp.shootdown_flushes",
        "smp.stack_guard_pages",
        "smp.lock_hammer",
    ] {
        let r = out
            .boot_log
            .ktap
            .result(name)
            .unwrap_or_else(|| panic!("{name} did not run:\n{}", out.log));
        assert!(r.ok, "{name} failed:\n{}", out.log);
    }
    let warnings = lines_with(out, "numalab: warning: smp");
    assert!(warnings.is_empty(), "SMP warnings: {warnings:?}");
}

/// Checks the shared boot of `preset` (its shape has smp.verbose=1): the SMP tests passed and
/// CPU i came up on the node the preset put it on (QEMU numbers APIC ids like CPU ids on these
/// machines).
fn check_preset(preset: &str, out: &Outcome) {
    smp_tests_passed(out);
    let topology = numalab_boot::qemu::presets::find(preset).expect("preset");
    let cpus = topology.cpus;
    let (n, m, ms) = online_line(out);
    assert_eq!((n, m), (cpus, cpus), "{}", out.log);
    println!("{preset}: {n} CPUs online in {ms} ms (guest TSC, first SIPI to last online)");
    let layout = topology.layout(cpus, topology.mem_mib);
    let mut expected: Vec<(u32, u32, u32)> = Vec::new();
    for (node, (ids, _)) in layout.iter().enumerate() {
        for &id in ids {
            if id != 0 {
                expected.push((id, id, node as u32));
            }
        }
    }
    let mut seen = verbose_cpus(out);
    seen.sort_unstable();
    expected.sort_unstable();
    assert_eq!(seen, expected, "{}", out.log);
}

#[test]
fn s02_uma_all_cpus_online() {
    check_preset("uma", &shapes::uma());
}

#[test]
fn s02_4node_cpus_on_their_nodes() {
    check_preset("4node", &shapes::four_node());
}

#[test]
fn s02_memoryless_node_cpus_use_nearest_memory() {
    let out = shapes::memoryless();
    check_preset("memoryless", &out);
    let r = out.boot_log.ktap.result("smp.percpu_on_node").expect("ran");
    assert!(r.ok, "{}", out.log);
}

/// Slow, so `./qemu-run.sh test --slow` (and CI) run it, not the default test command: the 8node
/// whole-suite boot (64 vCPUs), 40.6 s of both cores on the loaded host (docs/testing.md, "Where
/// the time goes"). By hand: `cargo test --test qemu s02_8node_64_cpus_online -- --ignored`.
#[test]
#[ignore]
fn s02_8node_64_cpus_online() {
    check_preset("8node", &shapes::eight_node());
}

#[test]
fn s02_one_cpu_boots_cleanly() {
    let mut c = config("uma");
    c.machine.smp = Some(1);
    c.kernel.options.set_word("filter=smp").unwrap();
    let out = boot_pass(&c);
    smp_tests_passed(&out);
    assert!(
        out.log
            .contains("numalab: smp: 1 of 1 CPUs online (no other CPU to start)"),
        "{}",
        out.log
    );
}

#[test]
fn s02_maxcpus_skips_absent_cpus_silently() {
    let mut c = config("uma");
    c.kernel.options.set_word("filter=smp").unwrap();
    let qemu_args: Vec<String> = ["-smp", "4,maxcpus=8", "-m", "1G"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    c.prepend_qemu_args(&qemu_args).unwrap();
    let out = boot_pass(&c);
    smp_tests_passed(&out);
    let (n, m, _) = online_line(&out);
    assert_eq!((n, m), (4, 4), "{}", out.log);
}

#[test]
fn s02_silent_cpu_is_reported_and_left_out() {
    let mut c = config("uma");
    c.kernel.options.set_word("filter=smp").unwrap();
    c.kernel.options.set_word("smp.hold_apic=2").unwrap();
    // Long enough that a loaded 2-core host never makes a live CPU look silent.
    c.kernel.options.set_word("smp.timeout_ms=3000").unwrap();
    let out = boot_pass(&c);
    assert_eq!(
        lines_with(&out, "numalab: warning: smp"),
        vec![
            "numalab: warning: smp: CPU 2 (APIC id 2, node 0) did not answer within 3000 ms; \
             continuing without it"
        ],
        "{}",
        out.log
    );
    let (n, m, _) = online_line(&out);
    assert_eq!((n, m), (3, 4), "{}", out.log);
    for name in [
        "smp.cpus_check_in",
        "smp.call_roundtrip",
        "smp.shootdown_flushes",
    ] {
        assert!(
            out.boot_log.ktap.result(name).expect("ran").ok,
            "{}",
            out.log
        );
    }
}

/// Slow, so `./qemu-run.sh test --slow` (and CI) run it, not the default test command: the 4node
/// stress-suite boot, 24.0 s on the loaded host (docs/testing.md, "Where the time goes"). By hand:
/// `cargo test --test qemu s02_lock_hammer_stress -- --ignored`.
#[test]
#[ignore]
fn s02_lock_hammer_stress() {
    // The shared 4node boot of the whole stress suite.
    let out = shapes::four_node_stress();
    assert!(
        out.boot_log
            .ktap
            .result("smp.lock_hammer_stress")
            .expect("ran")
            .ok
    );
}

/// 255 vCPUs (the TCG limit) without NUMA, the whole test suite. A slow
/// shape, ignored by default: on the 2-core host the boot took 4m53s (`./qemu-run.sh
/// --topology uma --smp 255 --mem 2G --suite test`: 67 passed, 2 skipped, 292.9 s in the
/// kernel) once vmalloc's purges stopped piling 255 CPUs up behind one lock; before, the same
/// suite ran 72 minutes and was not in CI. `./qemu-run.sh test --slow` (and CI) run it; by
/// hand: `cargo test --test qemu s02_uma_255 -- --ignored`.
#[test]
#[ignore]
fn s02_uma_255_cpus_whole_suite() {
    let mut c = config("uma");
    // CPU-seconds per busy QEMU thread (time_limit.rs): a loaded host stretches wall time,
    // not this.
    c.host.timeout = std::time::Duration::from_secs(1500);
    c.machine.smp = Some(255);
    c.machine.mem_mib = Some(2048);
    let out = boot_pass(&c);
    smp_tests_passed(&out);
    let (n, m, ms) = online_line(&out);
    assert_eq!((n, m), (255, 255), "{}", out.log);
    for suite in ["frame", "slub", "vmalloc", "fault"] {
        let s = out.boot_log.ktap.suite(suite);
        assert!(
            s.is_some_and(|s| s.cases > 0 && s.result.as_ref().is_some_and(|r| r.ok)),
            "suite {suite} did not pass on 255 vCPUs"
        );
    }
    println!("uma: 255 CPUs online in {ms} ms, the whole suite passed");
}
