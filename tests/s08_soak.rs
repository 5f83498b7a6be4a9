//! The soak (kernel/src/soak, `qemu-run.sh soak`): the short soak of CI (at least one million
//! operations on 4node) passes with every checkpoint's per-node conservation, per-cache
//! object count and every tag intact, and so does a soak under fault injection at all three
//! points, whose injected failures are counted as clean allocation failures, a soak on a
//! replayed 66-node machine (SLUB's per-node counters beyond node 63) and one with every SLUB
//! debug flag; with the leak mutation (`soak.leak_kfree=64`: kfree drops one slab-object free
//! in 64) the soak fails, naming the cache and the objects lost.

use numalab::*;
use numalab_algo::formats::numactl::{Numactl, NumactlNode};
use numalab_boot::cli::{parse, Request};
use numalab_boot::machine::replay;

fn soak_config(args: &str) -> RunConfig {
    match parse(args.split_whitespace()) {
        Ok(Request::Soak(o)) => numalab_boot::run::soak::config(&o).unwrap(),
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

/// The soak's lines of a boot (`# soak:`), as the BootLog read them.
fn soak_lines(out: &Outcome) -> Vec<&str> {
    out.boot_log.soak.iter().map(String::as_str).collect()
}

/// The checks every passing soak log satisfies on 4node; returns the `done` line.
fn check_soak(out: &Outcome, min_ops: u64, checkpoints: usize) -> String {
    check_soak_on(out, min_ops, checkpoints, 4)
}

/// The checks every passing soak log satisfies on a machine with `mem_nodes` memory nodes.
fn check_soak_on(out: &Outcome, min_ops: u64, checkpoints: usize, mem_nodes: usize) -> String {
    let lines = soak_lines(out);
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
    // Every memory node per checkpoint and at the end, each "ok".
    assert_eq!(
        node_lines.len(),
        mem_nodes * (checkpoints + 1),
        "{}",
        out.log
    );
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

/// Slow, so `./qemu-run.sh test --slow` (and CI) run it, not the default test command: 10^6
/// operations, 50.9 s on the loaded host (docs/testing.md, "Where the time goes"). By hand: `cargo
/// test --test qemu s08_short_soak_on_4node -- --ignored`.
#[test]
#[ignore]
fn s08_short_soak_on_4node() {
    let mut c = soak_config("soak --short --quiet");
    c.host.timeout = std::time::Duration::from_secs(1200);
    let out = boot_pass(&c);
    let done = check_soak(&out, 1_000_000, 10);
    assert!(
        done.contains("(injected: page_alloc 0, slab 0, vmalloc 0)"),
        "{done}"
    );
    // kvfree_rcu in the mix: frees went through it, and every checkpoint counted
    // the blocks waiting for a grace period before its barrier freed them all (a block left
    // unfreed would have failed the run).
    assert!(number_before(&done, "through") > 0, "{done}");
    let lines = soak_lines(&out);
    let rcu_lines = lines
        .iter()
        .filter(|l| l.contains(" kvfree_rcu (") && l.contains(" waiting for a grace period"))
        .count();
    assert_eq!(rcu_lines, 10, "{}", out.log);
    println!("{done}");
}

/// The short soak under the partial design (the default is sheaves): the same operations
/// and checks pass on the per-CPU slab design.
/// Slow, so `./qemu-run.sh test --slow` (and CI) run it, not the default test command: 10^6
/// operations, 61.5 s on the loaded host (docs/testing.md, "Where the time goes"). By hand: `cargo
/// test --test qemu s08_short_soak_on_4node_partial_design -- --ignored`.
#[test]
#[ignore]
fn s08_short_soak_on_4node_partial_design() {
    let mut c = soak_config("soak --short --quiet --set slub.design=partial");
    c.host.timeout = std::time::Duration::from_secs(1200);
    let out = boot_pass(&c);
    assert!(out.log.contains("; design partial"), "{}", out.log);
    let done = check_soak(&out, 1_000_000, 10);
    println!("{done}");
}

/// A soak under the hybrid design (its 192-byte shared cache opted in to sheaves, the others
/// on the partial design) and fault injection at all three points: conservation and tags
/// hold with sheaves stacked over the per-CPU slabs.
#[test]
fn s08_soak_hybrid_under_fault_injection() {
    let mut c = soak_config(
        "soak --ops 300000 --quiet --set slub.design=hybrid --set fault.page_alloc=2,1,5 \
         --set fault.slab=5,1,6 --set fault.vmalloc=5,1,7",
    );
    c.host.timeout = std::time::Duration::from_secs(900);
    let out = boot_pass(&c);
    assert!(out.log.contains("; design hybrid"), "{}", out.log);
    let done = check_soak(&out, 300_000, 10);
    println!("{done}");
}

#[test]
fn s08_soak_under_fault_injection() {
    let mut c = soak_config(
        "soak --ops 300000 --quiet --set fault.page_alloc=2,1,5 --set fault.slab=5,1,6 \
         --set fault.vmalloc=5,1,7",
    );
    c.host.timeout = std::time::Duration::from_secs(900);
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
    c.host.timeout = std::time::Duration::from_secs(600);
    let out = boot(&c);
    assert_eq!(out.verdict, Verdict::Fail, "{}", out.failure_report());
    let soak = out.boot_log.ktap.result("soak.soak").expect("the soak ran");
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

/// A `numactl -H` text of `nodes` nodes of 64 MiB each, one CPU (on node 0), distances 10/20:
/// the smallest machine a replay gives that many memory nodes (64 MiB is the replay's floor).
fn one_cpu_machine(nodes: u32) -> Numactl {
    Numactl {
        nodes: (0..nodes)
            .map(|id| NumactlNode {
                id,
                cpus: if id == 0 { vec![0] } else { vec![] },
                size_mib: 64,
                free_mib: 64,
            })
            .collect(),
        distances: (0..nodes)
            .map(|i| (0..nodes).map(|j| if i == j { 10 } else { 20 }).collect())
            .collect(),
    }
}

/// SLUB counted the descriptor pool and large kmallocs of every node >= 63 in
/// one slot (`MAX_NODES = 64`), so on 66 nodes the soak's per-node conservation of node 63 was
/// off by what nodes 64 and 65 held: `--machine` of this machine with `--smp 1`, `--suite
/// soak --set soak.ops=400000 --set soak.checkpoints=40`, seeds 2-5, failed with `node 63:
/// 16272 pages accounted, 16256 at the start (-16 missing)`. This is that soak with seed 2; it
/// failed that way on the code before the fix (at checkpoint 19/40) and boots for about 9 s
/// (docs/slub.md). 100000 operations did not reach the failing checkpoint.
/// Slow, so `./qemu-run.sh test --slow` (and CI) run it, not the default test command: 400000
/// operations on 66 nodes, 30.3 s on the loaded host (docs/testing.md, "Where the time goes"). By
/// hand: `cargo test --test qemu s08_soak_on_66_nodes -- --ignored`.
#[test]
#[ignore]
fn s08_soak_on_66_nodes() {
    let dir = std::env::temp_dir().join(format!("numalab-s08-{}-66node", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("66-nodes.numactl");
    std::fs::write(&source, one_cpu_machine(66).text()).unwrap();
    let (plan, args) = replay::prepare(&source, Some(1), None, &[], &dir).unwrap();
    assert_eq!(plan.nodes.len(), 66);
    let mut c = soak_config("soak --ops 400000 --seed 2 --quiet --set soak.checkpoints=40");
    c.prepend_qemu_args(&args).unwrap();
    c.host.timeout = std::time::Duration::from_secs(300);
    let out = boot_pass(&c);
    if let Err(bad) = replay::check(
        &plan,
        &out.log,
        replay::Slack::for_firmware(c.machine.firmware),
    ) {
        panic!("{}\n{}", bad.join("\n"), out.log);
    }
    let done = check_soak_on(&out, 400_000, 40, 66);
    assert!(done.ends_with(", seed 2"), "{done}");
    println!("{done}");
}

/// The soak with every SLUB debug flag on every cache (`slub.debug=FZPU`):
/// red zones, poison and tracking words checked at every allocation and free of 100000
/// operations, every checkpoint's conservation intact and no debug report.
#[test]
fn s08_soak_with_every_debug_flag() {
    let mut c = soak_config("soak --ops 100000 --quiet --set slub.debug=FZPU");
    c.host.timeout = std::time::Duration::from_secs(300);
    let out = boot_pass(&c);
    check_soak(&out, 100_000, 10);
    assert!(out.log.contains("debug FZPU"), "{}", out.log);
    assert!(!out.log.contains("numalab: warning: slub: "), "{}", out.log);
}
