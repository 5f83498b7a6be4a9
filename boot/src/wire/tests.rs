//! BootLog: a log holding one line of every kind is read into each field, from lines written
//! with numalab_algo::wire's writers where the kernel uses them.

use super::*;
use numalab_algo::formats::ktap::{self as ktap_fmt, Outcome as KOutcome};
use numalab_algo::formats::lock_stat::{write, LockCounts, LockStatRow, Unit};
use numalab_algo::wire::trace::Write as TraceWrite;
use numalab_algo::wire::{soak, trace};

fn log() -> String {
    let mut l: Vec<String> = vec!["numalab 0.1.0 booting".into()];
    l.extend(
        "available: 1 nodes (0)\nnode 0 cpus: 0\nnode 0 size: 1 MB\nnode 0 free: 1 MB\n\
         node distances:\nnode   0\n  0:  10"
            .lines()
            .map(String::from),
    );
    l.push(format!(
        "{}{}",
        numalab_algo::wire::console::WARNING,
        "SRAT: none"
    ));
    l.push("KTAP version 1".into());
    l.push("1..1".into());
    l.extend(ktap_fmt::subtest_header("bench", 2));
    l.push(ktap_fmt::expect_warnings_line(1, ktap_fmt::INVALID_FREE));
    l.push("numalab: warning: frame: invalid free of 0x1000".into());
    l.push(bench::registered_line(["alloc_peers", "latency_matrix"]));
    l.push(bench::header_line("tsc", false, 2, 1, "all"));
    l.push(
        "# bench: memoryless_sheaves: cpu 0 on node 0, sheaf_capacity 60 (-1: no such file)".into(),
    );
    l.push(format!("{}", TraceWrite::Kernel(0x2000)));
    l.push(format!(
        "{}",
        TraceWrite::Name {
            addr: 0x40,
            bytes: 64,
            label: &"line"
        }
    ));
    l.push(format!(
        "{}",
        TraceWrite::Region {
            key: 0x20,
            bench: "alloc_peers",
            case: "c",
            cpus: 2
        }
    ));
    l.push(format!("{}", TraceWrite::Ops { key: 0x20, ops: 9 }));
    l.push("# latency_matrix: l1: cpu 0 node 0 memory 0: chases".into());
    l.push("BENCH {\"bench\":\"x\"}".into());
    l.push(format!("{}", soak::Line("done: 3 operations")));
    l.push("# sysfs: BEGIN caches=1".into());
    l.push("# sysfs: kmalloc-64/object_size 64".into());
    l.push("# proc/slabinfo: slabinfo - version: 2.1".into());
    l.push("# sysfs: END".into());
    let table = write(
        &[LockStatRow::new("a", None, &LockCounts::default())],
        Unit::TscTicks,
        true,
    );
    l.extend(table.iter().map(|t| numalab_algo::wire::lock_stat::line(t)));
    l.push(format!(
        "{}{}",
        ktap_fmt::INDENT,
        ktap_fmt::result_line(1, "plan", &KOutcome::Pass)
    ));
    l.push(format!(
        "{}{}",
        ktap_fmt::INDENT,
        ktap_fmt::result_line(2, "x", &KOutcome::Skip("no".into()))
    ));
    l.push(ktap_fmt::result_line(1, "bench", &KOutcome::Pass));
    l.push("numalab: warning: frame: invalid free of 0x2000".into());
    l.push("BUG numalab_x (Not tainted): Objects remaining on __kmem_cache_shutdown()".into());
    l.push("numalab: out of memory: slub: none".into());
    l.join("\r\n") + "\n"
}

#[test]
fn every_kind_lands_in_its_field() {
    let b = BootLog::parse(&log());
    assert!(
        b.ktap.header && b.ktap.structure_errors().is_empty(),
        "{:?}",
        b.ktap
    );
    assert!(b.ktap.result("bench.x").unwrap().skipped);
    assert_eq!(b.declared_warnings(), 1);
    assert_eq!(
        b.unexpected_warnings(),
        ["numalab: warning: frame: invalid free of 0x2000"]
    );
    assert_eq!(
        b.warnings_of(WarningLine::Undeclared),
        ["numalab: warning: SRAT: none"]
    );
    assert_eq!(b.records.len(), 1);
    assert_eq!(b.records[0].json(), "{\"bench\":\"x\"}");
    assert_eq!(b.records[0].line_no, b.records[0].line_no.max(20));
    assert!(b.registered.contains("latency_matrix") && b.registered.len() == 2);
    assert_eq!((b.nodes(), b.kernel()), (Some(1), None));
    assert_eq!(
        b.notes_of("memoryless_sheaves").collect::<Vec<_>>(),
        ["cpu 0 on node 0, sheaf_capacity 60 (-1: no such file)"]
    );
    assert_eq!(b.diagnostics_of("latency_matrix").count(), 1);
    assert_eq!(b.soak, ["# soak: done: 3 operations"]);
    assert_eq!(b.trace.kernel, Some((0x2000, None)));
    assert_eq!(b.trace.regions.len(), 1);
    assert_eq!(b.trace.regions[0].ops, Some(9));
    assert_eq!(b.trace.regions[0].name_of(0x41), Some("line"));
    let tree = b.sysfs.clone().unwrap().unwrap();
    assert_eq!(tree.get("kmalloc-64", "object_size"), Some("64"));
    assert_eq!(tree.slabinfo, "slabinfo - version: 2.1\n");
    assert!(b
        .lock_stat
        .as_deref()
        .unwrap()
        .starts_with("lock_stat version 0.4\n"));
    assert_eq!(b.numactl.as_ref().map(Vec::len), Some(7));
    assert_eq!(b.objects_remaining, ["numalab_x"]);
    assert_eq!(
        b.out_of_memory.as_deref(),
        Some("numalab: out of memory: slub: none")
    );
    let _ = trace::PREFIX;
}

#[test]
fn an_empty_log_has_nothing() {
    let b = BootLog::parse("");
    assert!(b.records.is_empty() && b.sysfs.is_none() && b.numactl.is_none());
    assert!(b.lock_stat.is_none() && b.trace.kernel.is_none() && b.nodes().is_none());
}
