//! The soak (kernel/src/soak, `qemu-run.sh soak`): the short soak of CI (at least one million
//! operations on 4node) passes with every checkpoint's per-node conservation, per-cache
//! object count and every tag intact, and so does a soak under fault injection at all three
//! points, whose injected failures are counted as clean allocation failures; with the leak
//! mutation (`soak.leak_kfree=64`: kfree drops one slab-object free in 64) the soak fails,
//! naming the cache and the objects lost.

use numalab::*;
use numalab_boot::cli::{parse, Job};

fn soak_config(args: &str) -> RunConfig {
    match parse(args.split_whitespace()) {
        Ok(Job::Soak(o)) => numalab_boot::soak::config(&o),
        other => panic!("{args}: {other:?}"),
    }
}

/// The number after `key ` in `line` (`1000000 operations` -> key "operations" before).
fn number_before(line: &str, word: &str) -> u64 {
    let words: Vec<&str> = line.split_whitespace().collect();
    let i = words
        .iter()
        .position(|w| w.trim_matches(|c: char| !c.is_alphanumeric()) == word)
        .unwrap_or_else(|| panic!("no '{word}' in {line}"));
    words[i - 1]
        .trim_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .unwrap_or_else(|_| panic!("no number before '{word}' in {line}"))
}

/// The checks every passing soak log satisfies; returns the `done` line.
fn check_soak(out: &Outcome, min_ops: u64, checkpoints: usize) -> String {
    let lines = numalab_boot::soak::soak_lines(&out.log);
    let done = lines
        .iter()
        .find(|l| l.starts_with("# soak: done: "))
        .unwrap_or_else(|| panic!("no done line:\n{}", out.log));
    assert!(number_before(done, "operations") >= min_ops, "{done}");
    assert!(number_before(done, "invariants") > 0, "{done}");
    assert!(done.contains(" ops/s)"), "{done}");
    assert!(
        done.ends_with(", seed 1") || done.contains(", seed "),
        "{done}"
    );
    let node_lines: Vec<&&str> = lines
        .iter()
        .filter(|l| l.contains(" node ") && l.contains(" = "))
        .collect();
    // Four memory nodes per checkpoint and at the end, each "ok".
    assert_eq!(node_lines.len(), 4 * (checkpoints + 1), "{}", out.log);
    assert!(
        node_lines.iter().all(|l| l.ends_with(": ok")),
        "{}",
        out.log
    );
    assert!(
        lines.iter().any(|l| l.starts_with("# soak: mix: ")),
        "{}",
        out.log
    );
    // Per-cache objects at every checkpoint, at the end, and after the soak's caches went.
    let object_lines: Vec<&&str> = lines.iter().filter(|l| l.contains(" objects: ")).collect();
    assert_eq!(object_lines.len(), checkpoints + 2, "{}", out.log);
    assert!(
        object_lines.iter().all(|l| l.ends_with(": ok")),
        "{}",
        out.log
    );
    done.to_string()
}

#[test]
fn s08_short_soak_on_4node() {
    let mut c = soak_config("soak --short --quiet");
    c.timeout = std::time::Duration::from_secs(1200);
    let out = boot_pass(&c);
    let done = check_soak(&out, 1_000_000, 10);
    assert!(
        done.contains("(injected: page_alloc 0, slab 0, vmalloc 0)"),
        "{done}"
    );
    println!("{done}");
}

#[test]
fn s08_soak_under_fault_injection() {
    let mut c = soak_config(
        "soak --ops 300000 --quiet --set fault.page_alloc=2,1,5 --set fault.slab=5,1,6 \
         --set fault.vmalloc=5,1,7",
    );
    c.timeout = std::time::Duration::from_secs(900);
    let out = boot_pass(&c);
    let done = check_soak(&out, 300_000, 10);
    assert!(number_before(&done, "allocation") > 0, "{done}");
    for point in ["page_alloc", "slab", "vmalloc"] {
        let at = done.find(&format!("{point} ")).expect("injected counts");
        let n: u64 = done[at + point.len() + 1..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        assert!(n > 0, "no {point} failure injected: {done}");
    }
    assert!(
        lines_with(&out, "numalab: fault: fault.slab armed").len() == 1,
        "{}",
        out.log
    );
    println!("{done}");
}

#[test]
fn s08_soak_fails_on_a_kfree_leak() {
    // Short: 10^5 operations on 2 CPUs; the first checkpoint already sees the lost objects.
    let mut c = soak_config("soak --ops 100000 --smp 2 --quiet --set soak.leak_kfree=64");
    c.timeout = std::time::Duration::from_secs(600);
    let out = boot(&c);
    assert_eq!(out.verdict, Verdict::Fail, "{}", out.failure_report());
    let soak = out.ktap.result("soak.soak").expect("the soak ran");
    assert!(!soak.ok, "{}", out.log);
    assert!(
        soak.reason.contains(": cache kmalloc-") && soak.reason.contains("objects unaccounted for"),
        "{}",
        soak.reason
    );
    assert!(
        soak.reason.contains("mutation soak.leak_kfree=64: "),
        "{}",
        soak.reason
    );
    println!("{}", soak.reason);
}
