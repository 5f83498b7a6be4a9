//! Layer 1: the NUMA topology from ACPI. Boots QEMU with each topology preset, with raw `-numa`
//! arguments, and with SRAT/SLIT tables written here and injected with `-acpitable`, and checks
//! the `numactl -H` block the kernel prints and its warning lines.
//!
//! What is asserted exactly: the node count, every node's CPU list, the distance matrix, and
//! each expected warning. Sizes: QEMU's firmware and the bootloader keep some RAM, so a node's
//! printed size is the MiB QEMU was told minus at most `LOW_NODE_SLACK_MIB` for the node that
//! holds physical address 0 (the real-mode area below 1 MiB, the bootloader, the kernel image
//! and its page tables, boot info) and minus at most `SLACK_MIB` for every other node (ACPI
//! tables at the top of RAM below 4 GiB), and never more than told. Free memory is at most the
//! size.
//!
//! QEMU facts these tests rely on (QEMU 7.2): `-acpitable file=` rewrites the header's length
//! and checksum to match the file, so a bad checksum or a lying table length cannot be
//! injected (those cases are covered by the unit tests in kernel/algo/src/acpi/); QEMU puts
//! injected tables after its own, so with `-numa` an injected SRAT is the second one.

use numalab::*;
use numalab_algo::acpi::madt::FLAG_ENABLED;
use numalab_algo::acpi::slit::build::slit;
use numalab_algo::acpi::srat::build::{cpu, mem, srat, x2cpu};
use numalab_boot::qemu::presets;

const MIB: u64 = 1 << 20;
const LOW_NODE_SLACK_MIB: u64 = 32;
const SLACK_MIB: u64 = 1;

/// What a node should look like: its CPUs and the MiB QEMU was told.
#[derive(Clone, Debug)]
struct Want {
    cpus: Vec<u32>,
    told_mib: u64,
}

/// The expected machine: nodes, distance matrix, warnings (substrings, each on its own line).
struct Expect {
    nodes: Vec<Want>,
    distances: Vec<Vec<u8>>,
    warnings: Vec<&'static str>,
}

fn default_distances(n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| (0..n).map(|j| if i == j { 10 } else { 20 }).collect())
        .collect()
}

/// What the preset tells QEMU, from boot's own preset data.
fn expect_preset(name: &str) -> Expect {
    let p = presets::find(name).unwrap();
    let nodes: Vec<Want> = p
        .layout(p.cpus, p.mem_mib)
        .into_iter()
        .map(|(cpus, told_mib)| Want { cpus, told_mib })
        .collect();
    let distances = if p.distances.is_empty() {
        default_distances(nodes.len())
    } else {
        p.distances.clone()
    };
    Expect {
        nodes,
        distances,
        warnings: vec![],
    }
}

/// The `numactl -H` block of the log: from `available:` to the last distance row.
fn numactl_block(log: &str) -> Vec<String> {
    let lines: Vec<&str> = log.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.starts_with("available: "))
        .unwrap_or_else(|| panic!("no numactl block in:\n{log}"));
    let n: usize = lines[start]["available: ".len()..]
        .split(' ')
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or_else(|| panic!("bad line {:?}", lines[start]));
    let len = 1 + 3 * n + 2 + n;
    assert!(
        start + len <= lines.len(),
        "numactl block cut short:\n{log}"
    );
    lines[start..start + len]
        .iter()
        .map(|l| l.to_string())
        .collect()
}

/// Checks the printed block against `want` (sizes within the documented slack).
fn check_block(log: &str, want: &Expect) {
    let block = numactl_block(log);
    let n = want.nodes.len();
    let range = if n == 1 {
        "0".to_string()
    } else {
        format!("0-{}", n - 1)
    };
    assert_eq!(block[0], format!("available: {n} nodes ({range})"), "{log}");
    let low_node = want.nodes.iter().position(|w| w.told_mib > 0);
    for (i, w) in want.nodes.iter().enumerate() {
        let cpus: String = w.cpus.iter().map(|c| format!(" {c}")).collect();
        assert_eq!(block[1 + 3 * i], format!("node {i} cpus:{cpus}"), "{log}");
        let mb = |line: &str, what: &str| -> u64 {
            let prefix = format!("node {i} {what}: ");
            let rest = line
                .strip_prefix(&prefix)
                .and_then(|r| r.strip_suffix(" MB"))
                .unwrap_or_else(|| panic!("expected {prefix:?}..MB, got {line:?}\n{log}"));
            rest.parse().unwrap()
        };
        let size = mb(&block[2 + 3 * i], "size");
        let free = mb(&block[3 + 3 * i], "free");
        let slack = if Some(i) == low_node {
            LOW_NODE_SLACK_MIB
        } else {
            SLACK_MIB
        };
        assert!(
            size <= w.told_mib && size + slack >= w.told_mib,
            "node {i}: size {size} MB, QEMU was told {} MiB (slack {slack})\n{log}",
            w.told_mib
        );
        assert!(free <= size, "node {i}: free {free} > size {size}\n{log}");
    }
    let d = 1 + 3 * n;
    assert_eq!(block[d], "node distances:");
    let head: String = (0..n).map(|j| format!("{j:>3} ")).collect();
    assert_eq!(block[d + 1], format!("node {head}").trim_end(), "{log}");
    for (i, row) in want.distances.iter().enumerate() {
        let cols: String = row.iter().map(|v| format!("{v:>3} ")).collect();
        assert_eq!(
            block[d + 2 + i],
            format!("{i:>3}: {cols}").trim_end(),
            "{log}"
        );
    }
    // The warnings printed before the first test: in a boot that runs only the options test
    // these are all of them; in a shared boot of the whole suite the tests' own come later.
    let warnings = boot_warnings(log);
    for w in &want.warnings {
        assert!(
            warnings.iter().any(|l| l.contains(w)),
            "no warning containing {w:?}; warnings: {warnings:#?}"
        );
    }
    assert_eq!(
        warnings.len(),
        want.warnings.len(),
        "unexpected warnings: {warnings:#?}"
    );
}

fn lines_with_prefix<'a>(log: &'a str, prefix: &str) -> Vec<&'a str> {
    log.lines().filter(|l| l.starts_with(prefix)).collect()
}

/// A short run: only the options test, so the boot and the topology print are what is timed.
fn cfg(topology: &str, extra: &[&str]) -> RunConfig {
    let mut c = config(topology);
    c.kernel.options.set_word("filter=options").unwrap();
    let qemu_args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
    c.prepend_qemu_args(&qemu_args).unwrap();
    c
}

fn boot_and_check(c: &RunConfig, want: &Expect) -> Outcome {
    let out = boot_pass(c);
    check_block(&out.log, want);
    out
}

/// QEMU arguments for a 4-CPU, 1 GiB machine without `-numa` (no SRAT of QEMU's own), plus
/// the given tables.
fn raw_machine_with(tables: &[(&str, Vec<u8>)]) -> Vec<String> {
    let mut args: Vec<String> = ["-smp", "4", "-m", "1024M"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    for (name, bytes) in tables {
        args.push("-acpitable".into());
        args.push(format!("file={}", acpi_table_file(name, bytes).display()));
    }
    args
}

fn cfg_owned(topology: &str, extra: Vec<String>) -> RunConfig {
    let mut c = cfg(topology, &[]);
    c.prepend_qemu_args(&extra).unwrap();
    c
}

fn want(cpus_mib: &[(&[u32], u64)], distances: Vec<Vec<u8>>, warnings: &[&'static str]) -> Expect {
    Expect {
        nodes: cpus_mib
            .iter()
            .map(|(c, m)| Want {
                cpus: c.to_vec(),
                told_mib: *m,
            })
            .collect(),
        distances,
        warnings: warnings.to_vec(),
    }
}

#[test]
fn s01_uma_without_numa_is_one_node_with_a_warning() {
    // The uma preset is `-smp 4 -m 1024M` without `-numa`: the shared uma boot.
    let w = want(
        &[(&[0, 1, 2, 3], 1024)],
        default_distances(1),
        &["SRAT: no SRAT table: single node holding all memory and CPUs"],
    );
    check_block(&shapes::uma().log, &w);
}

#[test]
fn s01_preset_2node() {
    boot_and_check(&cfg("2node", &[]), &expect_preset("2node"));
}

#[test]
fn s01_preset_4node_with_slit_and_dump() {
    // The shared 4node boot has acpi.dump=1.
    let out = shapes::four_node();
    check_block(&out.log, &expect_preset("4node"));
    let dump = lines_with_prefix(&out.log, "acpi: ");
    for needle in [
        "acpi: table SRAT at",
        "acpi: table SLIT at",
        "acpi: MADT entry 7: local APIC id 7 uid 7 (enabled)",
        "acpi: SRAT entry 7: processor APIC id 7 -> PXM 3 (enabled)",
        "acpi: SRAT entry 12: memory 0x60000000-0x80000000 (512 MiB) -> PXM 3 (enabled)",
        "acpi: SRAT entry 13: memory 0x0-0x0 (0 MiB) -> PXM 0 (disabled)",
        "acpi: SLIT locality 2: 32 32 10 16",
    ] {
        assert!(
            dump.iter().any(|l| l.starts_with(needle)),
            "no {needle:?} in {dump:#?}"
        );
    }
}

#[test]
fn s01_preset_4node_uefi() {
    let mut c = cfg("4node", &[]);
    c.machine.firmware = Firmware::Uefi;
    let out = boot_pass(&c);
    // Under OVMF the firmware keeps more RAM on several nodes: CPUs and distances are exact,
    // sizes only bounded by what QEMU was told.
    let block = numactl_block(&out.log);
    let w = expect_preset("4node");
    assert_eq!(block[0], "available: 4 nodes (0-3)");
    for (i, node) in w.nodes.iter().enumerate() {
        let cpus: String = node.cpus.iter().map(|c| format!(" {c}")).collect();
        assert_eq!(block[1 + 3 * i], format!("node {i} cpus:{cpus}"));
    }
    assert_eq!(block[15], "  0:  10  16  32  32");
    assert!(
        lines_with_prefix(&out.log, "numalab: warning:").is_empty(),
        "{}",
        out.log
    );
}

#[test]
fn s01_preset_memoryless() {
    check_block(&shapes::memoryless().log, &expect_preset("memoryless"));
}

#[test]
fn s01_preset_cpuless() {
    boot_and_check(&cfg("cpuless", &[]), &expect_preset("cpuless"));
}

#[test]
fn s01_preset_asym_keeps_both_directions() {
    let mut w = expect_preset("asym");
    w.warnings = vec!["SLIT: asymmetric distances [0][1]=15 [1][0]=25: kept as given (legal)"];
    boot_and_check(&cfg("asym", &[]), &w);
}

/// Slow, so `./qemu-run.sh test --slow` (and CI) run it, not the default test command: the 8node
/// whole-suite boot (64 vCPUs), 40.6 s of both cores on the loaded host (docs/testing.md, "Where
/// the time goes"). By hand: `cargo test --test qemu s01_preset_8node_64_cpus -- --ignored`.
#[test]
#[ignore]
fn s01_preset_8node_64_cpus() {
    check_block(&shapes::eight_node().log, &expect_preset("8node"));
}

#[test]
fn s01_raw_numa_with_maxcpus_leaves_absent_cpus_out_silently() {
    let c = cfg(
        "uma",
        &[
            "-smp",
            "4,maxcpus=8",
            "-m",
            "1024M",
            "-object",
            "memory-backend-ram,size=512M,id=m0",
            "-object",
            "memory-backend-ram,size=512M,id=m1",
            "-numa",
            "node,nodeid=0,cpus=0-1,cpus=4-5,memdev=m0",
            "-numa",
            "node,nodeid=1,cpus=2-3,cpus=6-7,memdev=m1",
        ],
    );
    let w = want(&[(&[0, 1], 512), (&[2, 3], 512)], default_distances(2), &[]);
    boot_and_check(&c, &w);
}

#[test]
fn s01_injected_sparse_proximity_domains_0_7_200() {
    let s = srat(&[
        cpu(0, 0, true),
        cpu(7, 1, true),
        cpu(200, 2, true),
        cpu(200, 3, true),
        mem(0, 0, 384 * MIB, FLAG_ENABLED),
        mem(7, 384 * MIB, 384 * MIB, FLAG_ENABLED),
        mem(200, 768 * MIB, 256 * MIB, FLAG_ENABLED),
    ]);
    let dist = |i: usize, j: usize| -> u8 {
        match (i.min(j), i.max(j)) {
            (a, b) if a == b => 10,
            (0, 7) => 17,
            (7, 200) => 21,
            _ => 28,
        }
    };
    let l = slit(
        &(0..201)
            .map(|i| (0..201).map(|j| dist(i, j)).collect())
            .collect::<Vec<Vec<u8>>>(),
    );
    let c = cfg_owned(
        "uma",
        raw_machine_with(&[("sparse-srat", s), ("sparse-slit", l)]),
    );
    let w = want(
        &[(&[0], 384), (&[1], 384), (&[2, 3], 256)],
        vec![vec![10, 17, 28], vec![17, 10, 21], vec![28, 21, 10]],
        &[],
    );
    boot_and_check(&c, &w);
}

#[test]
fn s01_injected_bad_entries_are_dropped_one_warning_each() {
    // Entry 9 says 40 bytes with 16 left (the walk stops there, as it cannot go on).
    let mut past_end = cpu(1, 3, true);
    past_end[1] = 40;
    let s = srat(&[
        cpu(0, 0, true),
        cpu(0, 1, true),
        cpu(1, 2, true),
        cpu(1, 3, true),
        cpu(1, 9, true),
        mem(0, 0, 512 * MIB, FLAG_ENABLED),
        mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED),
        mem(1, 64 << 30, 1 << 30, FLAG_ENABLED),
        mem(0, 0, 0, 0),
        past_end,
    ]);
    let l = slit(&[vec![10, 255], vec![30, 10]]);
    let c = cfg_owned("uma", raw_machine_with(&[("bad-srat", s), ("bad-slit", l)]));
    let w = want(
        &[(&[0, 1], 512), (&[2, 3], 512)],
        vec![vec![10, 255], vec![30, 10]],
        &[
            "SRAT entry 9 at offset 288 (type 0): length 40 runs past the end of the table (304 bytes): entry dropped",
            "SRAT entry 7 (memory PXM 1 0x1000000000+0x40000000): outside RAM (no part of it is in the memory map): entry dropped",
            "SRAT entries 4 (processor APIC ids 9): APIC id not in the MADT: entries dropped",
            "SLIT entries [0][1]: distance 255 (unreachable): kept as given",
            "SLIT: asymmetric distances [0][1]=255 [1][0]=30: kept as given (legal)",
        ],
    );
    boot_and_check(&c, &w);
}

/// What Linux declares a bad SRAT (an entry too short for its type: bad_srat()) or
/// refuses as NUMA (memory of two domains that overlaps: numa_cleanup_meminfo) boots as one
/// node, as Linux boots it.
#[test]
fn s01_injected_srat_linux_refuses_boots_one_node() {
    let mut truncated = mem(1, 0, 0, 0);
    truncated.truncate(24);
    truncated[1] = 24;
    let base = || {
        vec![
            cpu(0, 0, true),
            cpu(0, 1, true),
            cpu(1, 2, true),
            cpu(1, 3, true),
            mem(0, 0, 512 * MIB, FLAG_ENABLED),
            mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED),
        ]
    };
    for (name, extra, warning) in [
        (
            "short-entry-srat",
            truncated,
            "SRAT entry 6 (memory affinity): length 24, Linux needs at least 40 (bad_srat(): \"SRAT: SRAT not used.\"): single node holding all memory and CPUs",
        ),
        (
            "overlap-srat",
            mem(1, 256 * MIB, 128 * MIB, FLAG_ENABLED),
            "SRAT entry 6 (memory PXM 1 0x10000000+0x8000000): overlaps entry 4 of PXM 0 (0x0-0x20000000): Linux's numa_cleanup_meminfo() refuses overlapping nodes (NUMA off): single node holding all memory and CPUs",
        ),
    ] {
        let mut e = base();
        e.push(extra);
        let c = cfg_owned("uma", raw_machine_with(&[(name, srat(&e))]));
        let w = want(&[(&[0, 1, 2, 3], 1024)], default_distances(1), &[warning]);
        boot_and_check(&c, &w);
    }
}

#[test]
fn s01_injected_all_disabled_srat_falls_back_to_one_node() {
    let s = srat(&[
        cpu(0, 0, false),
        cpu(1, 2, false),
        mem(0, 0, 512 * MIB, 0),
        mem(1, 512 * MIB, 512 * MIB, 0),
    ]);
    let c = cfg_owned("uma", raw_machine_with(&[("disabled-srat", s)]));
    let w = want(
        &[(&[0, 1, 2, 3], 1024)],
        default_distances(1),
        &["SRAT: no enabled memory affinity entry covers usable RAM (2 memory entries, 0 kept): single node holding all memory and CPUs"],
    );
    boot_and_check(&c, &w);
}

#[test]
fn s01_second_srat_is_ignored_and_slit_below_10_gives_defaults() {
    // 2node has QEMU's own SRAT and no SLIT: the injected SRAT is the second one.
    let s = srat(&[cpu(5, 0, true), mem(5, 0, 1 << 30, FLAG_ENABLED)]);
    let l = slit(&[vec![10, 5], vec![5, 10]]);
    let c = cfg_owned("2node", raw_args(&[("second-srat", s), ("low-slit", l)]));
    let mut w = expect_preset("2node");
    w.warnings = vec![
        "SRAT: another SRAT (table 2 of 2) ignored: the first valid one is used",
        "SLIT entry [0][1]: remote distance 5 is below 10: SLIT not used, default distances 10/20",
    ];
    boot_and_check(&c, &w);
}

#[test]
fn s01_injected_cpus_without_entry_and_bad_self_distance() {
    // APIC ids 2 and 3 have no processor entry: they join node 0 (the boot CPU's node).
    let s = srat(&[
        cpu(0, 0, true),
        cpu(1, 1, true),
        mem(0, 0, 512 * MIB, FLAG_ENABLED),
        mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED),
    ]);
    let l = slit(&[vec![10, 20], vec![20, 12]]);
    let c = cfg_owned(
        "uma",
        raw_machine_with(&[("nocpu-srat", s), ("self-slit", l)]),
    );
    let w = want(
        &[(&[0, 2, 3], 512), (&[1], 512)],
        default_distances(2),
        &[
            "SRAT: no processor affinity entry for APIC ids 2 3: placed on node 0",
            "SLIT entry [1][1]: self-distance 12, must be 10: SLIT not used, default distances 10/20",
        ],
    );
    boot_and_check(&c, &w);
}

#[test]
fn s01_injected_invalid_apic_ids_are_not_cpus() {
    // APIC id 0xff (local APIC entry) and 0xffffffff (local x2APIC entry) are
    // the reserved invalid ids: each entry is dropped with its own warning, not taken for a
    // CPU the MADT lacks.
    let s = srat(&[
        cpu(0, 0, true),
        cpu(0, 1, true),
        cpu(1, 2, true),
        cpu(1, 3, true),
        cpu(1, 0xff, true),
        x2cpu(1, u32::MAX, true),
        mem(0, 0, 512 * MIB, FLAG_ENABLED),
        mem(1, 512 * MIB, 512 * MIB, FLAG_ENABLED),
    ]);
    let c = cfg_owned("uma", raw_machine_with(&[("invalid-apic-srat", s)]));
    let w = want(
        &[(&[0, 1], 512), (&[2, 3], 512)],
        default_distances(2),
        &[
            "SRAT entry 4 (processor APIC id 0xff): invalid APIC id",
            "SRAT entry 5 (processor x2APIC id 0xffffffff): invalid APIC id",
        ],
    );
    boot_and_check(&c, &w);
}

#[test]
fn s01_injected_slit_smaller_than_the_nodes_is_used_for_the_localities_it_has() {
    let s = srat(&[
        cpu(0, 0, true),
        cpu(0, 1, true),
        cpu(2, 2, true),
        cpu(2, 3, true),
        mem(0, 0, 512 * MIB, FLAG_ENABLED),
        mem(2, 512 * MIB, 512 * MIB, FLAG_ENABLED),
    ]);
    // Linux's acpi_numa_slit_init uses the rows there are, 10/20 for the rest.
    let l = slit(&[vec![10, 20], vec![20, 10]]);
    let c = cfg_owned(
        "uma",
        raw_machine_with(&[("small-srat", s), ("small-slit", l)]),
    );
    let w = want(
        &[(&[0, 1], 512), (&[2, 3], 512)],
        default_distances(2),
        &["SLIT: 2 localities, fewer than the nodes' proximity domains: no row for PXM 2; their distances are 10 to self and 20 to others, as Linux's acpi_numa_slit_init() leaves them"],
    );
    boot_and_check(&c, &w);
}

/// Only `-acpitable` arguments (the preset still describes the machine).
fn raw_args(tables: &[(&str, Vec<u8>)]) -> Vec<String> {
    raw_machine_with(tables).split_off(4)
}

/// A bad-table case QEMU cannot produce (it recomputes checksum and length of `-acpitable`
/// tables): the kernel's copy of QEMU's own SRAT is damaged by the `acpi.corrupt` test hook,
/// and the boot must warn once about the SRAT and fall back to one node.
fn boot_with_corrupt_srat(how: &str, warning: &str) {
    let mut c = cfg("2node", &[]);
    c.kernel
        .options
        .set_word(&format!("acpi.corrupt={how}"))
        .unwrap();
    let out = boot_pass(&c);
    let warnings = lines_with_prefix(&out.log, "numalab: warning: SRAT");
    assert!(
        warnings.iter().any(|l| l.contains(warning)),
        "no SRAT warning containing {warning:?}: {warnings:#?}"
    );
    let block = numactl_block(&out.log);
    assert_eq!(
        block.first().map(String::as_str),
        Some("available: 1 nodes (0)"),
        "{block:#?}"
    );
    assert!(
        block.iter().any(|l| l == "node 0 cpus: 0 1 2 3"),
        "{block:#?}"
    );
}

/// A bad checksum is used with a warning, as ACPICA and Linux do (the hook adds 1
/// to the checksum byte, so the bytes sum to 0x01): the 2node machine boots whole.
#[test]
fn s01_srat_with_bad_checksum_is_used_with_a_warning() {
    let mut c = cfg("2node", &[]);
    c.kernel
        .options
        .set_word("acpi.corrupt=srat_checksum")
        .unwrap();
    let out = boot_pass(&c);
    let warnings = lines_with_prefix(&out.log, "numalab: warning: SRAT");
    assert!(
        warnings
            .iter()
            .any(|l| l.contains("SRAT: incorrect checksum")
                && l.contains("sum to 0x01, not 0")
                && l.contains("table used anyway")),
        "{warnings:#?}"
    );
    let block = numactl_block(&out.log);
    assert_eq!(
        block.first().map(String::as_str),
        Some("available: 2 nodes (0-1)"),
        "{block:#?}"
    );
}

#[test]
fn s01_srat_whose_length_runs_past_the_table_falls_back_to_one_node() {
    boot_with_corrupt_srat("srat_length", "runs past the");
}

/// Linux's MAX_NUMNODES (NODES_SHIFT 10), the most nodes the kernel takes.
const MAX_NUMNODES: u32 = 1024;

/// A machine of 1024 nodes, Linux's MAX_NUMNODES, boots whole: an injected
/// SRAT (no SLIT: one of 1024 x 1024 bytes is more than QEMU's 64 KiB for `-acpitable`, so
/// the distances are Linux's 10/20) gives node 0 258 MiB and each other node 2 MiB, with the
/// 4 CPUs on nodes 0, 341, 682 and 1023 (node codes above frame's 8-bit one included), and
/// the kernel prints every node with its CPUs and size. SLUB's per-node counters have a slot
/// for each of the 1024 nodes (`slub.node_counters`: a large kmalloc on every node moves only
/// its own node's count).
#[test]
fn s01_injected_1024_nodes() {
    let cpu_nodes = [0u32, 341, 682, 1023];
    let mut entries: Vec<Vec<u8>> = cpu_nodes
        .iter()
        .enumerate()
        .map(|(apic, &pxm)| cpu(pxm, apic as u8, true))
        .collect();
    let low_mib = 258;
    entries.push(mem(0, 0, low_mib * MIB, FLAG_ENABLED));
    for pxm in 1..MAX_NUMNODES {
        let base = (low_mib + 2 * (pxm as u64 - 1)) * MIB;
        entries.push(mem(pxm, base, 2 * MIB, FLAG_ENABLED));
    }
    let total_mib = low_mib + 2 * (MAX_NUMNODES as u64 - 1);
    let mut args: Vec<String> = vec![
        "-smp".into(),
        "4".into(),
        "-m".into(),
        format!("{total_mib}M"),
    ];
    args.push("-acpitable".into());
    args.push(format!(
        "file={}",
        acpi_table_file("1024-node-srat", &srat(&entries)).display()
    ));
    let mut c = cfg_owned("uma", args);
    c.kernel.options = numalab_algo::options::Cmdline::new();
    c.kernel.options.set_word("filter=node_counters").unwrap();
    c.host.timeout = std::time::Duration::from_secs(300);
    let out = boot_pass(&c);
    let want = Expect {
        nodes: (0..MAX_NUMNODES)
            .map(|n| Want {
                cpus: cpu_nodes
                    .iter()
                    .position(|&p| p == n)
                    .map(|cpu| vec![cpu as u32])
                    .unwrap_or_default(),
                told_mib: if n == 0 { low_mib } else { 2 },
            })
            .collect(),
        distances: default_distances(MAX_NUMNODES as usize),
        warnings: vec![],
    };
    check_block(&out.log, &want);
    let r = out
        .boot_log
        .ktap
        .result("slub.node_counters")
        .expect("node_counters ran");
    assert!(r.ok && !r.skipped, "{}", r.reason);
    assert!(
        out.log
            .contains("# slub node_counters: 1024 nodes counted, "),
        "{}",
        out.log
    );
}
