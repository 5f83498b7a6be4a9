//! Known-answer and property tests of the accounting model (directory + nodes + regions).

use super::*;
use crate::config::parse;

/// 2 nodes of 512 MiB, vCPUs 0-1 on node 0, 2-3 on node 1, SLIT 10/20.
pub(crate) const TWO_NODES: &str = "nodes 2\ndistance 0 10 20\ndistance 1 20 10\n\
    mem 0x0 0x20000000 0\nmem 0x20000000 0x40000000 1\n\
    vcpu 0 0\nvcpu 1 0\nvcpu 2 1\nvcpu 3 1\ntop 3\n";
const NODE1: u64 = 0x2000_0000;

fn model() -> Model {
    Model::new(parse(TWO_NODES).unwrap())
}

fn load(m: &mut Model, cpu: usize, paddr: u64) {
    m.access(cpu, paddr, Mem::Phys(paddr), Kind::Load);
}

fn store(m: &mut Model, cpu: usize, paddr: u64) {
    m.access(cpu, paddr, Mem::Phys(paddr), Kind::Store);
}

fn transfers(c: &Counters) -> u64 {
    c.hitm_local + c.hitm_remote + c.inval
}

#[test]
fn node0_reads_n_lines_of_node1() {
    let mut m = model();
    let n = 100;
    for i in 0..n {
        load(&mut m, 0, NODE1 + 0x1000 + i * LINE_BYTES);
    }
    let c = m.vcpu_totals(0);
    assert_eq!((c.loads, c.remote, c.local), (n, n, 0));
    assert_eq!((c.miss_remote, c.miss_local, c.hits), (n, 0, 0));
    assert_eq!(c.dist_sum, 20 * n);
    // Read again: all hits, still remote accesses.
    for i in 0..n {
        load(&mut m, 0, NODE1 + 0x1000 + i * LINE_BYTES);
    }
    let c = m.vcpu_totals(0);
    assert_eq!((c.remote, c.local, c.hits, c.miss_remote), (2 * n, 0, n, n));
    // Node 1's own vCPU reading the same lines: local misses, no transfer (they are shared).
    load(&mut m, 2, NODE1 + 0x1000);
    let c = m.vcpu_totals(2);
    assert_eq!(
        (c.local, c.remote, c.miss_local, transfers(&c)),
        (1, 0, 1, 0)
    );
}

#[test]
fn ping_pong_between_nodes_is_2k_remote_hitm() {
    let k = 500;
    let line = 0x4000;
    // Stores only: every store after the first takes the line from the other node.
    let mut m = model();
    for _ in 0..k {
        store(&mut m, 0, line);
        store(&mut m, 2, line + 8);
    }
    let t = m.total();
    assert!((2 * k - 1..=2 * k).contains(&t.hitm_remote), "{t:?}");
    assert_eq!(t.hitm_local, 0);
    assert_eq!(t.inval, 2 * k - 1);
    // A lock-like load-then-store: the load fetches the modified line (HITM), the store
    // upgrades it (hit) and invalidates the other copy.
    let mut m = model();
    for _ in 0..k {
        for cpu in [0, 2] {
            load(&mut m, cpu, line);
            m.access(cpu, line, Mem::Phys(line), Kind::Atomic);
        }
    }
    let t = m.total();
    assert!((2 * k - 1..=2 * k).contains(&t.hitm_remote), "{t:?}");
    assert_eq!((t.hitm_local, t.atomics, t.loads), (0, 2 * k, 2 * k));
    // The same between two vCPUs of one node: local HITM.
    let mut m = model();
    for _ in 0..k {
        store(&mut m, 2, line);
        store(&mut m, 3, line);
    }
    let t = m.total();
    assert_eq!((t.hitm_local, t.hitm_remote), (2 * k - 1, 0));
}

#[test]
fn writing_only_own_lines_transfers_nothing() {
    let mut m = model();
    for round in 0..50 {
        for cpu in 0..4u64 {
            // Each vCPU's own 8 lines, on both nodes, loads and stores interleaved.
            for i in 0..8 {
                let base = if i % 2 == 0 {
                    0x10_0000
                } else {
                    NODE1 + 0x10_0000
                };
                let p = base + (cpu * 8 + i) * LINE_BYTES + round % 64;
                store(&mut m, cpu as usize, p);
                load(&mut m, cpu as usize, p);
            }
        }
    }
    let t = m.total();
    assert_eq!(transfers(&t), 0, "{t:?}");
    assert_eq!(t.miss_local + t.miss_remote, 32);
    assert_eq!(t.hits, 50 * 32 * 2 - 32);
}

/// xorshift64*: a seeded sequence that repeats on every host.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The caches of the property test: one set each, 1, 2 and 3 ways, so that the few lines
/// below are evicted at every level.
const TINY: &str = "l1d 64 1\nl2 128 2\nllc 192 3 POLICY\nllc_of 0 0\nllc_of 1 1\n";

#[test]
fn classes_sum_to_sources_for_every_seed() {
    let configs = [
        String::new(),
        TINY.replace("POLICY", "inclusive"),
        TINY.replace("POLICY", "non_inclusive"),
        TINY.replace("POLICY", "victim"),
    ];
    for caches in &configs {
        let mut seen = Counters::default();
        for seed in 1..=300u64 {
            let t = random_sequence(&format!("{TWO_NODES}{caches}"), seed);
            seen.add(&t);
        }
        if !caches.is_empty() {
            assert!(
                seen.l2_hits > 0 && seen.llc_hits > 0 && seen.writebacks > 0,
                "{caches}: {seen:?}"
            );
        }
    }
}

/// One seeded random sequence on config `cfg`; checks the sums per vCPU; returns the total.
fn random_sequence(cfg: &str, seed: u64) -> Counters {
    let mut m = Model::new(parse(cfg).unwrap());
    let mut rng = Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    // A few lines on both nodes, some sharing a page, one crossing into the next line.
    let lines = [
        0x1000,
        0x1040,
        0x1fc0,
        0x8000,
        NODE1,
        NODE1 + 0x40,
        NODE1 + 0x3000,
    ];
    let mut expect = [0u64; 4];
    for _ in 0..2000 {
        let cpu = rng.below(4) as usize;
        match rng.below(20) {
            0 => m.tb_exec(cpu, rng.below(30)),
            1 => {
                m.marker(cpu);
                let key = [0, 0x10, 0x20][rng.below(3) as usize];
                m.access(cpu, key, Mem::Phys(0x1000), Kind::Load);
            }
            2 => m.access(cpu, 0xfee0_0000, Mem::Io, Kind::Store),
            3 => m.access(cpu, 0x5000_0000, Mem::Unmapped, Kind::Load),
            4 => m.access(cpu, 0x4000_0000, Mem::Phys(0x4000_0000), Kind::Load),
            _ => {
                let p = lines[rng.below(lines.len() as u64) as usize] + rng.below(64);
                let kind = [Kind::Load, Kind::Store, Kind::Atomic][rng.below(3) as usize];
                m.access(cpu, p, Mem::Phys(p), kind);
                expect[cpu] += 1;
            }
        }
    }
    let dram = m.dram_rows();
    for (cpu, &n) in expect.iter().enumerate() {
        let c = m.vcpu_totals(cpu);
        let accesses = c.loads + c.stores + c.atomics;
        let sources = c.hits
            + c.l2_hits
            + c.llc_hits
            + c.miss_local
            + c.miss_remote
            + c.hitm_local
            + c.hitm_remote;
        assert_eq!(accesses, sources, "seed {seed} vcpu {cpu}: {c:?}");
        assert_eq!(c.local + c.remote, accesses, "seed {seed} vcpu {cpu}");
        assert_eq!(
            accesses, n,
            "seed {seed} vcpu {cpu}: RAM accesses lost or invented"
        );
        assert_eq!(c.dist_sum, 10 * c.local + 20 * c.remote, "seed {seed}");
        // The DRAM rows: reads are the misses, writebacks the row's.
        let mine = dram.iter().filter(|r| r.1 == cpu as u64);
        let (reads, wb) = mine.fold((0, 0), |(r, w), x| (r + x.3, w + x.4));
        assert_eq!(
            reads,
            c.miss_local + c.miss_remote,
            "seed {seed} vcpu {cpu}"
        );
        assert_eq!(wb, c.writebacks, "seed {seed} vcpu {cpu}");
        let hitm: u64 = m
            .hitm_rows()
            .iter()
            .filter(|r| r.1 == cpu as u64)
            .map(|r| r.4)
            .sum();
        assert_eq!(hitm, c.hitm_local + c.hitm_remote, "seed {seed} vcpu {cpu}");
    }
    let t = m.total();
    assert!(
        t.hitm_local + t.hitm_remote > 0,
        "seed {seed}: no sharing exercised"
    );
    t
}

#[test]
fn hitm_side_is_the_owners_node_and_miss_side_the_memorys() {
    let mut m = model();
    // Line on node 1, owned by vCPU 0 (node 0); vCPU 1 (node 0) takes it: a local HITM even
    // though the memory is remote.
    store(&mut m, 0, NODE1 + 0x40);
    load(&mut m, 1, NODE1 + 0x40);
    let c = m.vcpu_totals(1);
    assert_eq!((c.hitm_local, c.hitm_remote, c.remote), (1, 0, 1));
    // Line on node 0 owned by vCPU 0; vCPU 2 (node 1) takes it: a remote HITM.
    store(&mut m, 0, 0x40);
    store(&mut m, 2, 0x40);
    let c = m.vcpu_totals(2);
    assert_eq!((c.hitm_local, c.hitm_remote, c.inval), (0, 1, 1));
    // vCPU 0 of node 0 missing on node 0's memory: a local miss; on node 1's: remote.
    let c0 = m.vcpu_totals(0);
    assert_eq!((c0.miss_local, c0.miss_remote), (1, 1));
}

#[test]
fn io_and_unmapped_count_only_themselves() {
    let mut m = model();
    m.access(0, 0xfee0_0300, Mem::Io, Kind::Store);
    m.access(0, 0x4000_0000, Mem::Phys(0x4000_0000), Kind::Load);
    m.access(0, 0x1, Mem::Unmapped, Kind::Atomic);
    let c = m.vcpu_totals(0);
    assert_eq!((c.io, c.unmapped), (1, 2));
    assert_eq!(
        c.loads + c.stores + c.atomics + c.local + c.remote + c.hits,
        0
    );
}

#[test]
fn turns_and_insns() {
    let mut m = model();
    m.tb_exec(0, 5);
    m.tb_exec(0, 7);
    m.tb_exec(1, 3);
    m.tb_exec(0, 1);
    assert_eq!((m.vcpu_totals(0).turns, m.vcpu_totals(0).insns), (2, 13));
    assert_eq!((m.vcpu_totals(1).turns, m.vcpu_totals(1).insns), (1, 3));
}

#[test]
fn marker_load_names_the_region_and_is_not_counted() {
    let mut m = model();
    load(&mut m, 0, 0x100);
    m.marker(0);
    m.access(0, 0xdead_0000, Mem::Phys(0x2000), Kind::Load);
    assert_eq!(m.key_of(0), 0xdead_0000);
    assert_eq!(m.key_of(1), 0);
    store(&mut m, 0, 0x100);
    m.tb_exec(0, 4);
    let rows = m.region_rows();
    let row = |key: u64, v: usize| rows.iter().find(|r| r.0 == key && r.1 == v).unwrap().2;
    assert_eq!((row(0, 0).loads, row(0, 0).stores), (1, 0));
    assert_eq!(
        (
            row(0xdead_0000, 0).loads,
            row(0xdead_0000, 0).stores,
            row(0xdead_0000, 0).insns
        ),
        (0, 1, 4)
    );
    // The marker's line was never touched in the directory: vCPU 1 misses on it.
    load(&mut m, 1, 0x2000);
    assert_eq!(m.vcpu_totals(1).miss_local, 1);
    // Back to key 0.
    m.marker(0);
    m.access(0, 0, Mem::Io, Kind::Load);
    assert_eq!((m.key_of(0), m.vcpu_totals(0).io), (0, 0));
}

fn enter(m: &mut Model, cpu: usize, key: u64) {
    m.marker(cpu);
    m.access(cpu, key, Mem::Phys(0), Kind::Load);
}

#[test]
fn lines_only_in_regions_and_pruned_to_top_k_when_left() {
    let mut m = model();
    store(&mut m, 0, 0x40); // key 0: no line row
    enter(&mut m, 0, 0x10);
    enter(&mut m, 2, 0x10);
    // Five lines: line i gets i HITM pairs, line 0x3000 has stores only.
    for i in 1..=4u64 {
        let p = NODE1 + i * 0x40;
        for _ in 0..i {
            store(&mut m, 0, p);
            store(&mut m, 2, p);
        }
    }
    for _ in 0..3 {
        store(&mut m, 0, 0x3000);
    }
    assert_eq!(m.live_lines(), 5);
    enter(&mut m, 0, 0x20);
    // vCPU 2 still in 0x10: nothing pruned yet.
    assert_eq!(m.line_rows().count(), 0);
    enter(&mut m, 2, 0x20);
    let kept: Vec<(u64, u64, u64)> = m
        .line_rows()
        .map(|(k, p, s)| (k, p, s.hitm_local + s.hitm_remote))
        .collect();
    // top 3 by HITM.
    assert_eq!(
        kept,
        vec![
            (0x10, NODE1 + 0x100, 7),
            (0x10, NODE1 + 0xc0, 5),
            (0x10, NODE1 + 0x80, 3)
        ]
    );
    assert_eq!(m.live_lines(), 0);
    let (_, _, s) = m.line_rows().next().unwrap();
    assert_eq!(
        (s.node, s.stores, s.inval, s.vaddr),
        (1, 8, 7, NODE1 + 0x100)
    );
    // Region 0x20 is left at exit only.
    store(&mut m, 3, 0x3000);
    enter(&mut m, 3, 0x20);
    store(&mut m, 3, 0x3040);
    m.finish();
    let keys: Vec<u64> = m.line_rows().map(|(k, _, _)| k).collect();
    assert_eq!(keys, vec![0x10, 0x10, 0x10, 0x20]);
}

#[test]
fn ranking_ties_go_by_stores_then_address() {
    let mut m = model();
    enter(&mut m, 0, 0x10);
    for (p, n) in [(0x1c0u64, 2), (0x140, 5), (0x100, 2), (0x180, 1)] {
        for _ in 0..n {
            store(&mut m, 0, p);
        }
    }
    load(&mut m, 0, 0x200);
    m.finish();
    let order: Vec<u64> = m.line_rows().map(|(_, p, _)| p).collect();
    assert_eq!(order, vec![0x140, 0x100, 0x1c0]);
}

#[test]
fn reentered_region_merges_its_kept_lines() {
    let mut m = model();
    enter(&mut m, 0, 0x10);
    store(&mut m, 0, 0x40);
    enter(&mut m, 0, 0);
    enter(&mut m, 0, 0x10);
    store(&mut m, 0, 0x40);
    m.finish();
    let rows: Vec<(u64, u64)> = m.line_rows().map(|(k, p, s)| (k, p + s.stores)).collect();
    assert_eq!(rows, vec![(0x10, 0x42)]);
}

#[test]
fn a_watched_line_is_kept_past_the_top_k_and_its_marker_access_is_not_counted() {
    let mut m = model();
    // The kernel names the line at 0x1c0 (watch marker, then a load of it): not counted.
    m.watch(0);
    m.access(0, 0x1c0, Mem::Phys(0x1c8), Kind::Load);
    assert_eq!(m.vcpu_totals(0).loads, 0);
    enter(&mut m, 0, 0x10);
    for (p, n) in [
        (0x100u64, 5),
        (0x140, 4),
        (0x180, 3),
        (0x1c0, 1),
        (0x200, 2),
    ] {
        for _ in 0..n {
            store(&mut m, 0, p);
        }
    }
    m.finish();
    // Top 3 by stores, then the watched line, although 0x200 outranks it.
    let order: Vec<u64> = m.line_rows().map(|(_, p, _)| p).collect();
    assert_eq!(order, vec![0x100, 0x140, 0x180, 0x1c0]);
}
