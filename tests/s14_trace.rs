//! Layer 14: the trace plugin (`--trace mem`, docs/trace.md) against answers known in advance
//! and against the kernel's own view of the machine.
//! - The kernel's `trace` suite (kernel/src/bench/region_tests.rs) runs three probes under the
//!   plugin in a det boot of 2node: a CPU of node 0 reading 256 lines of node 1 (256 remote
//!   accesses, 0 local), two CPUs of two nodes handing one line back and forth 100 times (199
//!   remote HITM on it, +-1), a CPU rewriting its own 256 lines (no transfer, no invalidation,
//!   no miss). The same boot twice writes the same output, byte for byte, and in every region
//!   the event classes add up to the accesses. (What ran before the kernel, key 0, is the
//!   firmware's and is not compared.)
//! - The plugin's node map (the runner's, boot/src/trace/map.rs) equals the SRAT the kernel
//!   read (`acpi.dump=1`) on 4node, memoryless, cpuless, 8node and two replayed machines
//!   (an injected SRAT with sparse domains and memoryless nodes, an 8-node numactl text).
//! - `bench --icount --smoke --trace mem --set bench=slub_list_lock` prints perf c2c tables
//!   whose rows name the cache's list_locks, with records of every region, and each of
//!   SLUB's per-node locks (`... node N list_lock`, `... barn node N lock`) is homed on node N
//!   (the Node column; a memoryless N: its nearest memory node), as Linux places them.

use numalab_boot::machine;
use numalab_boot::trace::{self, labels, map::NodeMap, output};
use numalab_boot::RunConfig;
use std::path::PathBuf;
use std::time::Duration;

fn trace_dir() -> PathBuf {
    numalab_boot::build::image::repo_root()
        .join("target")
        .join("trace-tests")
}

/// The machine of `c` as the runner renders it.
fn node_map(c: &RunConfig) -> NodeMap {
    NodeMap::of(&c.typed_machine(), &c.host.extra).expect("node map")
}

/// A det boot of 2node running the kernel's trace suite under the plugin (output `name`).
fn traced_boot(name: &str) -> (String, String) {
    let mut c = numalab::config("2node");
    c.host.icount = true;
    c.host.timeout = Duration::from_secs(300);
    c.kernel.options.set_word("filter=trace").unwrap();
    c.kernel.options.set_word("acpi.dump=1").unwrap();
    let files = trace::prepare(
        &c.qemu_binary(),
        &c.typed_machine(),
        &c.host.extra,
        None,
        &trace_dir(),
        name,
    );
    c.output.trace = Some(files.expect("trace plugin and config"));
    let out = numalab::boot(&c);
    assert!(out.passed(), "{}", out.failure_report());
    let text =
        std::fs::read_to_string(&c.output.trace.as_ref().unwrap().out).expect("plugin output");
    (out.log.clone(), text)
}

fn region<'a>(regions: &'a [labels::Region], case: &str) -> &'a labels::Region {
    regions
        .iter()
        .find(|r| r.bench == "trace_check" && r.case == case)
        .unwrap_or_else(|| panic!("no region trace_check {case}"))
}

#[test]
fn s14_known_answers_exact_and_repeated() {
    let (log, text) = traced_boot("known-a");
    let t = output::parse(&text).expect("plugin output reads");
    let regions = numalab_boot::wire::BootLog::parse(&log).trace.regions;

    let reads = t.region_total(region(&regions, "remote_reads").key);
    assert_eq!(reads.get("loads"), 256, "{reads:?}");
    assert_eq!(reads.get("remote"), 256, "{reads:?}");
    assert_eq!(reads.get("local"), 0, "{reads:?}");
    assert_eq!(reads.get("stores") + reads.get("atomics"), 0, "{reads:?}");

    let pp = region(&regions, "ping_pong");
    let line = t
        .region_lines(pp.key)
        .into_iter()
        .find(|l| pp.name_of(l.vaddr) == Some("ping_pong line"))
        .expect("the ping-pong line is among the region's hottest");
    assert!(
        (198..=200).contains(&line.hitm_remote),
        "2 x 100 - 1 remote HITM expected (+-1): {line:?}"
    );
    assert_eq!(line.hitm_local, 0, "{line:?}");

    let own = t.region_total(region(&regions, "private_writes").key);
    assert_eq!(own.get("stores"), 256, "{own:?}");
    assert_eq!(own.hitm() + own.get("inval"), 0, "{own:?}");
    assert_eq!(own.get("miss_local") + own.get("miss_remote"), 0, "{own:?}");

    // The classes add up, in every region and vCPU and for the whole boot.
    for ((key, vcpu), c) in t
        .regions
        .iter()
        .chain(std::iter::once((&(u64::MAX, 0), &t.total)))
    {
        let accesses = c.get("loads") + c.get("stores") + c.get("atomics");
        assert_eq!(accesses, c.accesses(), "region {key:#x} vcpu {vcpu}: {c:?}");
        let served = c.get("hits") + c.get("miss_local") + c.get("miss_remote") + c.hitm();
        assert_eq!(accesses, served, "region {key:#x} vcpu {vcpu}: {c:?}");
    }

    // The same boot again: the same output, byte for byte, from the kernel's entry on (key 0
    // and the whole-boot total hold the firmware and the loader, whose length depends on the
    // host's disk I/O: docs/benchmarks.md "Why det counts repeat").
    let (_, again) = traced_boot("known-b");
    let kernel_part = |t: &str| -> Vec<String> {
        t.lines()
            .filter(|l| !l.starts_with("region 0x0 ") && !l.starts_with("total "))
            .map(String::from)
            .collect()
    };
    assert!(
        kernel_part(&text) == kernel_part(&again),
        "two identical det boots wrote different trace output"
    );
}

/// An SRAT memory entry: (start, end, proximity domain).
type MemEntry = (u64, u64, u32);

/// (start, end, pxm) of the enabled memory entries and (apic id, pxm) of the processors in an
/// `acpi.dump=1` log.
fn dumped_srat(log: &str) -> (Vec<MemEntry>, Vec<(u32, u32)>) {
    let hex = |w: &str| u64::from_str_radix(w.trim_start_matches("0x"), 16).unwrap();
    let mut mem = Vec::new();
    let mut cpus = Vec::new();
    for line in log
        .lines()
        .filter(|l| l.starts_with("acpi: SRAT entry") && l.ends_with("(enabled)"))
    {
        let body = line.split_once(": ").unwrap().1.split_once(": ").unwrap().1;
        let pxm: u32 = body
            .split("-> PXM ")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap()
            .parse()
            .unwrap();
        if let Some(range) = body.strip_prefix("memory ") {
            let (a, rest) = range.split_once('-').unwrap();
            let b = rest.split_whitespace().next().unwrap();
            if hex(a) != hex(b) {
                mem.push((hex(a), hex(b), pxm));
            }
        } else if let Some(p) = body.strip_prefix("processor APIC id ") {
            cpus.push((p.split_whitespace().next().unwrap().parse().unwrap(), pxm));
        }
    }
    (mem, cpus)
}

/// The presets, and two replayed machines (docs/replay.md: an injected SRAT with sparse
/// domains and memoryless nodes, and an 8-node numactl text), each with `filter=options`.
fn map_machines() -> Vec<(String, RunConfig)> {
    let mut out = Vec::new();
    for preset in ["4node", "memoryless", "cpuless", "8node"] {
        out.push((preset.to_string(), numalab::config(preset)));
    }
    let dir = std::env::temp_dir().join(format!("numalab-s14-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    machine::samples::write_all(&dir).unwrap();
    for source in ["four-socket", "eight-node.numactl"] {
        let (_, args) = machine::replay::prepare(
            &dir.join(source),
            Some(16),
            Some(1024),
            &[],
            &machine::replay::tables_dir(),
        )
        .expect("replay");
        let mut c = numalab::config("4node");
        c.prepend_qemu_args(&args).unwrap();
        out.push((format!("replayed {source}"), c));
    }
    out
}

#[test]
fn s14_plugin_node_map_equals_the_kernels_srat() {
    for (preset, mut c) in map_machines() {
        c.kernel.options.set_word("filter=options").unwrap();
        c.kernel.options.set_word("acpi.dump=1").unwrap();
        let out = numalab::shared_pass(&c);
        let (mut mem, cpus) = dumped_srat(&out.log);
        // The kernel's nodes are the proximity domains in increasing order.
        let mut pxms: Vec<u32> = mem
            .iter()
            .map(|m| m.2)
            .chain(cpus.iter().map(|c| c.1))
            .collect();
        pxms.sort_unstable();
        pxms.dedup();
        let node = |pxm: u32| pxms.iter().position(|&p| p == pxm).unwrap() as u32;
        for m in &mut mem {
            m.2 = node(m.2);
        }
        mem.sort_unstable();
        let map = node_map(&c);
        let ours: Vec<(u64, u64, u32)> = map
            .ranges
            .iter()
            .map(|r| (r.start, r.end, r.node))
            .collect();
        assert_eq!(
            ours, mem,
            "{preset}: the plugin's ranges differ from the SRAT's"
        );
        assert!(!cpus.is_empty(), "{preset}: no processor entry dumped");
        for (apic, pxm) in cpus {
            assert_eq!(
                map.vcpu_nodes.get(apic as usize),
                Some(&node(pxm)),
                "{preset}: APIC id {apic}"
            );
        }
    }
}

/// Slow, so `./qemu-run.sh test --slow` (and CI) run it, not the default test command: a bench run
/// under the trace plugin (docs/testing.md, "Where the time goes"). By hand: `cargo test --test
/// qemu s14_bench_trace_prints_c2c_tables_naming_the_list_locks -- --ignored`.
#[test]
#[ignore]
fn s14_bench_trace_prints_c2c_tables_naming_the_list_locks() {
    let words = "--icount --smoke --trace mem --set bench=slub_list_lock";
    let runs = numalab::bench_boots(words);
    // The same arguments, for the machine's node map.
    let split: Vec<String> = words.split_whitespace().map(String::from).collect();
    let args = numalab_boot::run::parse(&split).expect("bench arguments parse");
    let det = runs
        .iter()
        .find(|r| r.boot == numalab_boot::bench::Boot::Det)
        .expect("a det boot");
    assert!(det.outcome.passed(), "{}", det.outcome.failure_report());
    let t = det.trace.as_ref().expect("the det boot was traced");
    assert!(
        t.console.contains("Shared Data Cache Line Table"),
        "{}",
        t.console
    );
    assert!(
        t.tables
            .lines()
            .any(|l| l.ends_with(" list_lock") && l.contains("slub_list_lock node ")),
        "no row names a list_lock:\n{}",
        t.tables
    );
    let wrong = misplaced_node_locks(&t.tables, &node_map(&args.base));
    assert!(
        wrong.is_empty(),
        "per-node locks off their node:\n{}",
        wrong.join("\n")
    );
    for case in ["linux_default", "cpu_partial_x2"] {
        for metric in [
            "remote_access_fraction",
            "hitm_remote_per_kop",
            "modelled_cycles_per_op",
        ] {
            assert!(
                det.records
                    .iter()
                    .any(|r| r.case == case && r.metric == metric && r.cpus == 8),
                "no {case} {metric} at 8 CPUs"
            );
        }
    }
}

/// The plugin on the largest machine QEMU's TCG runs (255 vCPUs, the directory's sharer sets
/// near their 256-vCPU bound): the boot completes and every vCPU's row adds up. Slow: --slow.
#[test]
#[ignore]
fn s14_slow_a_255_vcpu_boot_with_the_plugin_completes() {
    let mut c = numalab::config("8node");
    c.machine.smp = Some(255);
    c.host.icount = true;
    c.host.timeout = Duration::from_secs(1200);
    c.kernel.options.set_word("filter=options").unwrap();
    let files = trace::prepare(
        &c.qemu_binary(),
        &c.typed_machine(),
        &c.host.extra,
        None,
        &trace_dir(),
        "vcpus-255",
    );
    c.output.trace = Some(files.expect("trace plugin and config"));
    let out = numalab::boot(&c);
    assert!(out.passed(), "{}", out.failure_report());
    let text =
        std::fs::read_to_string(&c.output.trace.as_ref().unwrap().out).expect("plugin output");
    let t = output::parse(&text).expect("plugin output reads");
    assert_eq!(t.vcpus, 255);
    for ((key, vcpu), c) in &t.regions {
        let accesses = c.get("loads") + c.get("stores") + c.get("atomics");
        let served = c.get("hits") + c.get("miss_local") + c.get("miss_remote") + c.hitm();
        assert_eq!(accesses, served, "region {key:#x} vcpu {vcpu}: {c:?}");
    }
    assert!(
        t.regions.keys().filter(|(k, _)| *k != 0).count() >= 255,
        "every vCPU marked itself"
    );
}

/// The node whose memory serves node `n` (Linux's numa_mem_id): `n` when it has memory, else
/// the nearest node that has (the lowest id among the nearest).
fn memory_node_of(map: &NodeMap, n: u32) -> u32 {
    let has_memory = |m: u32| map.ranges.iter().any(|r| r.node == m);
    if has_memory(n) {
        return n;
    }
    let row = &map.distances[n as usize];
    (0..row.len() as u32)
        .filter(|&m| has_memory(m))
        .min_by_key(|&m| (row[m as usize], m))
        .unwrap_or(n)
}

/// Rows of perf c2c `tables` whose symbol names one of SLUB's per-node locks (`node N
/// list_lock`, `barn node N lock`) and whose Node column is not N's memory node, one line
/// each. Panics when no row names such a lock (nothing was checked). vmap nodes' labels are
/// not checked: their N is a vmap node, a NUMA node only in the numa design.
fn misplaced_node_locks(tables: &str, map: &NodeMap) -> Vec<String> {
    let mut node_col = None;
    let (mut checked, mut wrong) = (0, Vec::new());
    for line in tables.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if line.starts_with("# Index") {
            node_col = words[1..].iter().position(|w| *w == "Node");
            continue;
        }
        let Some(col) = node_col else { continue };
        let Some(i) = words.iter().position(|w| *w == "node") else {
            continue;
        };
        let (Some(n), Some(what)) = (words.get(i + 1), words.get(i + 2)) else {
            continue;
        };
        let barn = i > 0 && words[i - 1] == "barn" && *what == "lock";
        let Ok(n) = n.parse::<u32>() else { continue };
        if *what != "list_lock" && !barn {
            continue;
        }
        checked += 1;
        let want = memory_node_of(map, n);
        if words.get(col).and_then(|w| w.parse::<u32>().ok()) != Some(want) {
            wrong.push(format!("want Node {want}: {line}"));
        }
    }
    assert!(checked > 0, "no row names a per-node lock:\n{tables}");
    wrong
}

/// The check above on hand-written rows: a lock homed on its node passes, one on another
/// node and a memoryless node's lock off its nearest memory node are reported.
#[test]
fn s14_misplaced_node_locks_reads_the_node_column() {
    let map = NodeMap {
        distances: vec![vec![10, 20, 30], vec![20, 10, 20], vec![30, 20, 10]],
        ranges: vec![
            numalab_boot::trace::map::MemRange {
                start: 0,
                end: 1 << 30,
                node: 0,
            },
            numalab_boot::trace::map::MemRange {
                start: 1 << 30,
                end: 2 << 30,
                node: 2,
            },
        ],
        vcpu_nodes: vec![0, 1, 2],
        ram_per_node: true,
    };
    let head = "# Index             Address  Node  PA cnt     Hitm    Total  LclHitm  RmtHitm  records    Loads   Stores  Atomics    Inval  Symbol";
    let row = |node: u32, symbol: &str| {
        format!("      0       0x280035f5440     {node}       1    0.27%       30       30        0     1488      699      527      262       30  {symbol}")
    };
    let good = [
        head.to_string(),
        row(0, "slub_list_lock node 0 list_lock"),
        row(2, "maple_node barn node 2 lock"),
        row(0, "slub_list_lock node 1 list_lock"),
        row(0, "vmap node 1 busy.lock"),
    ]
    .join("\n");
    assert_eq!(misplaced_node_locks(&good, &map), Vec::<String>::new());
    let bad = [
        head.to_string(),
        row(0, "slub_list_lock node 2 list_lock"),
        row(2, "maple_node barn node 1 lock"),
    ]
    .join("\n");
    assert_eq!(misplaced_node_locks(&bad, &map).len(), 2);
}
