//! Layer 5: vmalloc. The test_vmalloc.c cases pass under the global, cpu and numa designs on
//! the uma and 4node presets, with the vmap node counts that follow from what QEMU was told,
//! a /proc/vmallocinfo dump, reported bad frees, and a caught fault on a freed area; the
//! kvfree_rcu cases hand their areas through RCU (counts asserted), also in the
//! `test_vmalloc` experiment under each `rcu.kfree` way.

use numalab::*;

const CASES: &[&str] = &[
    "fix_size_alloc_test",
    "full_fit_alloc_test",
    "long_busy_list_alloc_test",
    "random_size_alloc_test",
    "fix_align_alloc_test",
    "random_size_align_alloc_test",
    "align_shift_alloc_test",
    "pcpu_alloc_test",
    "kvfree_rcu_1_arg_vmalloc_test",
    "kvfree_rcu_2_arg_vmalloc_test",
    "vm_map_ram_test",
];

/// The number after `word ` in `line`.
fn count_after(line: &str, word: &str) -> u64 {
    let tail = line
        .split(&format!(" {word} "))
        .nth(1)
        .unwrap_or_else(|| panic!("no {word} in {line}"));
    tail.split_whitespace().next().unwrap().parse().unwrap()
}

/// Checks everything the vmalloc tests printed in a shared boot (its shape has
/// `vmalloc.test_loops=50`). `cpu_nodes`/`numa_nodes`: the vmap node counts the kernel must
/// derive from QEMU's machine.
fn check(out: &Outcome, cpu_nodes: usize, numa_nodes: usize) {
    let want = format!("vmap nodes: global 1, cpu {cpu_nodes}, numa {numa_nodes};");
    let range = lines_with(out, "vmalloc: range ");
    assert_eq!(range.len(), 1, "{}", out.log);
    assert!(range[0].contains(&want), "{}\nwanted {want}", range[0]);

    for case in CASES {
        let r = out
            .boot_log
            .ktap
            .result(&format!("vmalloc.{case}"))
            .unwrap_or_else(|| panic!("vmalloc.{case} did not run\n{}", out.log));
        assert!(r.ok, "vmalloc.{case}: {}", r.reason);
        for policy in ["global", "cpu", "numa"] {
            let prefix = format!("# vmalloc[{policy}] Summary: {case} passed: ");
            let lines = lines_with(out, &prefix);
            assert_eq!(
                lines.len(),
                1,
                "no Summary for {case} under {policy}\n{}",
                out.log
            );
            assert!(lines[0].contains(" failed: 0 "), "{}", lines[0]);
            if *case == "align_shift_alloc_test" {
                assert!(
                    lines[0].contains(&format!("{prefix}0 failed: 0 xfailed: ")),
                    "{}",
                    lines[0]
                );
                assert!(
                    !lines[0].contains("xfailed: 0 "),
                    "expected failure missing: {}",
                    lines[0]
                );
            } else {
                assert!(lines[0].contains("xfailed: 0 "), "{}", lines[0]);
                assert!(
                    !lines[0].starts_with(&format!("{prefix}0 ")),
                    "{}",
                    lines[0]
                );
            }
        }
    }
    // The kvfree_rcu cases: every CPU's 50 areas (vmalloc.test_loops=50) went to kvfree_rcu
    // and were vfree'd after a grace period (kvfree_rcu_barrier before the check).
    // (The cpu design has one vmap node per CPU: cpu_nodes is the CPU count.)
    for case in [
        "kvfree_rcu_1_arg_vmalloc_test",
        "kvfree_rcu_2_arg_vmalloc_test",
    ] {
        for policy in ["global", "cpu", "numa"] {
            let l = lines_with(out, &format!("# vmalloc[{policy}] {case} kvfree_rcu: "));
            assert_eq!(l.len(), 1, "{case} under {policy}\n{}", out.log);
            let queued = count_after(l[0], "queued");
            assert_eq!(queued, 50 * cpu_nodes as u64, "{}", l[0]);
            assert_eq!(count_after(l[0], "vfreed"), queued, "{}", l[0]);
            assert_eq!(count_after(l[0], "waiting"), 0, "{}", l[0]);
            assert!(count_after(l[0], "grace_periods") >= 1, "{}", l[0]);
            assert!(count_after(l[0], "cbs_invoked") >= 1, "{}", l[0]);
        }
    }
    for t in [
        "bad_input",
        "api",
        "lazy_purge_shootdown",
        "exhaustion",
        "fault_on_freed_area",
        "vmallocinfo",
    ] {
        let r = out
            .boot_log
            .ktap
            .result(&format!("vmalloc.{t}"))
            .expect("test ran");
        assert!(r.ok, "vmalloc.{t}: {}", r.reason);
    }

    // vmallocinfo: "0x...-0x...   16384 file:line pages=3 vmalloc N0=3", one per design.
    let info: Vec<&str> = out
        .log
        .lines()
        .filter(|l| l.starts_with("0xffff") && l.contains(" pages=3 vmalloc N"))
        .collect();
    assert_eq!(info.len(), 3, "{}", out.log);
    for l in &info {
        let words: Vec<&str> = l.split_whitespace().collect();
        assert_eq!(words[1], "16384", "{l}");
        assert!(words[2].starts_with("src/mm/vmalloc/tests.rs:"), "{l}");
        assert_eq!(words[3], "pages=3");
        let pages: u64 = words[5..]
            .iter()
            .map(|w| {
                w.split_once('=')
                    .expect("N<i>=<pages>")
                    .1
                    .parse::<u64>()
                    .unwrap()
            })
            .sum();
        assert_eq!(pages, 3, "{l}");
    }
    for policy in ["global", "cpu", "numa"] {
        let c = lines_with(out, &format!("vmalloc[{policy}]: vmap nodes "));
        assert_eq!(c.len(), 1, "{}", out.log);
        assert!(c[0].contains(" tlb_shootdowns "), "{}", c[0]);
        let l = lines_with(
            out,
            &format!("vmalloc[{policy}]: global lock acquisitions "),
        );
        assert_eq!(l.len(), 1);
        assert!(l[0].contains("(all free)"), "{}", l[0]);
    }

    // Bad frees: address and reason, counted, ignored.
    let warnings = lines_with(out, "numalab: warning: vfree(");
    assert!(warnings
        .iter()
        .any(|w| w.contains("not the start of an area; ignored")));
    assert!(warnings
        .iter()
        .any(|w| w.contains("area already freed (double free); ignored")));
    assert!(warnings
        .iter()
        .any(|w| w.starts_with("numalab: warning: vfree(0x1234): not a vmalloc address")));
    let fault = lines_with(out, "# vmalloc: caught fault at ");
    assert_eq!(fault.len(), 1, "{}", out.log);
    assert!(
        fault[0].contains("former owner src/mm/vmalloc/tests.rs:"),
        "{}",
        fault[0]
    );
}

#[test]
fn s05_vmalloc_uma() {
    // uma: 4 CPUs, no -numa: cpu design clamp(4, 1, 128) = 4 vmap nodes, numa design 1.
    check(&shapes::uma(), 4, 1);
}

#[test]
fn s05_vmalloc_4node() {
    // 4node: 8 CPUs on 4 NUMA nodes: cpu design 8 vmap nodes, numa design 4.
    check(&shapes::four_node(), 8, 4);
}

#[test]
fn s05_vmalloc_bad_policy_is_a_named_option_error() {
    // One boot with several bad options, shared with s00's unknown key and bad suite.
    let out = shapes::bad_options();
    assert_eq!(out.verdict, Verdict::Fail, "{}", out.failure_report());
    let r = out
        .boot_log
        .ktap
        .result("options.valid")
        .expect("options test ran");
    assert!(
        r.reason.contains("vmalloc.nodes: bad value 'node'"),
        "{}",
        r.reason
    );
    assert!(
        r.reason.contains("global, cpu, numa") || r.reason.contains("global"),
        "{}",
        r.reason
    );
}

/// `test_vmalloc` with only its kvfree_rcu tests (`run_test_mask=768`: bits 8 and 9), 8
/// workers on 4node's 8 CPUs, under `rcu.kfree=way`: both tests run and pass, each worker
/// queued its 100 areas, and all of them were vfree'd after a grace period.
fn test_vmalloc_kvfree_rcu(way: &str) -> String {
    let mut c = config("4node");
    c.kernel.suite = numalab_algo::options::Suite::Bench;
    for w in [
        "bench=test_vmalloc",
        "test_vmalloc.run_test_mask=768",
        "test_vmalloc.nr_threads=8",
    ] {
        c.kernel.options.set_word(w).unwrap();
    }
    c.kernel
        .options
        .set_word(&format!("rcu.kfree={way}"))
        .unwrap();
    let out = boot_pass(&c);
    for case in [
        "kvfree_rcu_1_arg_vmalloc_test",
        "kvfree_rcu_2_arg_vmalloc_test",
    ] {
        let sums = lines_with(&out, &format!("# test_vmalloc: Summary: {case} passed: "));
        assert_eq!(sums.len(), 8, "{case}: one Summary per worker\n{}", out.log);
        for l in &sums {
            assert!(
                l.contains(" passed: 1 failed: 0 repeat: 1 loops: 100 "),
                "{l}"
            );
        }
        let queued = lines_with(&out, &format!("# test_vmalloc: {case} worker"));
        assert_eq!(queued.len(), 8, "{}", out.log);
        for l in &queued {
            assert!(l.ends_with(": kvfree_rcu queued 100 vmalloc areas"), "{l}");
        }
    }
    let line = lines_with(
        &out,
        &format!("# test_vmalloc: kvfree_rcu ({way}): queued "),
    );
    assert_eq!(line.len(), 1, "{}", out.log);
    let l = line[0];
    println!("{l}");
    assert_eq!(count_after(l, "queued"), 1600, "{l}");
    assert_eq!(count_after(l, "freed"), 1600, "{l}");
    assert_eq!(count_after(l, "vfreed"), 1600, "{l}");
    assert_eq!(count_after(l, "waiting"), 0, "{l}");
    assert!(count_after(l, "grace_periods") >= 1, "{l}");
    assert!(!out.log.contains("not run"), "{}", out.log);
    l.to_string()
}

#[test]
fn s05_test_vmalloc_kvfree_rcu_call_rcu() {
    let l = test_vmalloc_kvfree_rcu("call_rcu");
    // One callback per 2-arg area; the 1-arg form waits a grace period per area inline,
    // concurrent waits sharing grace periods: at least the 100 loops of one worker.
    assert_eq!(count_after(&l, "kfree_rcu_callbacks"), 800, "{l}");
    assert!(count_after(&l, "grace_periods") >= 100, "{l}");
    assert!(count_after(&l, "cbs_invoked") >= 800, "{l}");
}

#[test]
fn s05_test_vmalloc_kvfree_rcu_batched() {
    let l = test_vmalloc_kvfree_rcu("batched");
    // Areas in blocks, one callback per batch: far fewer callbacks than areas.
    let cbs = count_after(&l, "kfree_rcu_callbacks");
    assert!((1..1600).contains(&cbs), "{l}");
}

#[test]
fn s05_test_vmalloc_kvfree_rcu_sheaf() {
    // vmalloc areas are no slab objects: the sheaf way hands them to batched.
    let l = test_vmalloc_kvfree_rcu("sheaf");
    let cbs = count_after(&l, "kfree_rcu_callbacks");
    assert!((1..1600).contains(&cbs), "{l}");
}
