//! Layer 5: vmalloc. The test_vmalloc.c cases pass under the global, cpu and numa designs on
//! the uma and 4node presets, with the vmap node counts that follow from what QEMU was told,
//! a /proc/vmallocinfo dump, reported bad frees, and a caught fault on a freed area.

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
    "vm_map_ram_test",
];

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
    for t in [
        "bad_input",
        "api",
        "lazy_purge_shootdown",
        "exhaustion",
        "fault_on_freed_area",
        "vmallocinfo",
    ] {
        let r = out.ktap.result(&format!("vmalloc.{t}")).expect("test ran");
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
    let r = out.ktap.result("options.valid").expect("options test ran");
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
