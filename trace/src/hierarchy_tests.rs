//! Known answers of the cache hierarchy, one per class and rule (docs/trace.md lists which
//! test caught which mutated rule), and the pointer-chase facts the in-kernel MLC relies on.

use crate::account::{Counters, Kind, Mem, Model};
use crate::config::parse;

/// 2 nodes, vCPUs 0-1 on node 0 (LLC domain 0), 2-3 on node 1 (domain 1). One set per cache:
/// L1d 2 ways, L2 4 ways, LLC 8 ways, so the LRU order is the access order.
fn model(policy: &str) -> Model {
    let cfg = format!(
        "nodes 2\ndistance 0 10 20\ndistance 1 20 10\n\
         mem 0x0 0x20000000 0\nmem 0x20000000 0x40000000 1\n\
         vcpu 0 0\nvcpu 1 0\nvcpu 2 1\nvcpu 3 1\n\
         l1d 128 2\nl2 256 4\nllc 512 8 {policy}\nllc_of 0 0\nllc_of 1 1\n"
    );
    Model::new(parse(&cfg).unwrap())
}

const NODE1: u64 = 0x2000_0000;

/// Line `i` of node 0's memory.
fn a(i: u64) -> u64 {
    0x10_0000 + i * 64
}

/// Line `i` of node 1's memory.
fn b(i: u64) -> u64 {
    NODE1 + 0x10_0000 + i * 64
}

/// One access; returns where it was served and its `inval`.
fn go(m: &mut Model, cpu: usize, p: u64, kind: Kind) -> (&'static str, u64) {
    let before = m.vcpu_totals(cpu);
    m.access(cpu, p, Mem::Phys(p), kind);
    let after = m.vcpu_totals(cpu);
    let d = |f: fn(&Counters) -> u64| f(&after) - f(&before);
    let classes = [
        ("l1", d(|c| c.hits)),
        ("l2", d(|c| c.l2_hits)),
        ("llc", d(|c| c.llc_hits)),
        ("dram_local", d(|c| c.miss_local)),
        ("dram_remote", d(|c| c.miss_remote)),
        ("hitm_local", d(|c| c.hitm_local)),
        ("hitm_remote", d(|c| c.hitm_remote)),
    ];
    let served: Vec<_> = classes.iter().filter(|c| c.1 > 0).collect();
    assert_eq!(served.len(), 1, "{classes:?}");
    (served[0].0, d(|c| c.inval))
}

fn load(m: &mut Model, cpu: usize, p: u64) -> &'static str {
    go(m, cpu, p, Kind::Load).0
}

fn store(m: &mut Model, cpu: usize, p: u64) -> (&'static str, u64) {
    go(m, cpu, p, Kind::Store)
}

const POLICIES: [&str; 3] = ["inclusive", "non_inclusive", "victim"];

#[test]
fn l1_hit_and_l2_hit_after_an_l1_eviction() {
    for policy in POLICIES {
        let mut m = model(policy);
        assert_eq!(load(&mut m, 0, a(0)), "dram_local");
        assert_eq!(load(&mut m, 0, a(0) + 8), "l1");
        // Two more lines push a(0) out of the 2-way L1d; it stays in the L2.
        load(&mut m, 0, a(1));
        load(&mut m, 0, a(2));
        assert_eq!(load(&mut m, 0, a(0)), "l2", "{policy}");
        // The L2 hit filled the L1d.
        assert_eq!(load(&mut m, 0, a(0)), "l1", "{policy}");
        // A store to an L2-only line: an L2 hit too.
        load(&mut m, 0, a(1));
        load(&mut m, 0, a(2));
        assert_eq!(store(&mut m, 0, a(0)), ("l2", 0));
    }
}

#[test]
fn llc_hit_after_an_l2_eviction() {
    for policy in POLICIES {
        let mut m = model(policy);
        for i in 0..5 {
            load(&mut m, 0, a(i));
        }
        // a(0) left the 4-way L2 (and so the L1d); the LLC (filled at the miss, or by the
        // victim fill) serves it.
        assert_eq!(load(&mut m, 0, a(0)), "llc", "{policy}");
        assert_eq!(load(&mut m, 0, a(0)), "l1", "{policy}");
    }
}

#[test]
fn an_l2_eviction_also_leaves_the_l1d() {
    // L1d hits do not refresh the L2's LRU: a(0), hot in the L1d, ages out of the L2 and so out
    // of the L1d (the L2 is inclusive).
    let mut m = model("non_inclusive");
    for i in 1..=4 {
        load(&mut m, 0, a(0));
        load(&mut m, 0, a(i));
    }
    assert_eq!(load(&mut m, 0, a(0)), "llc");
}

#[test]
fn capacity_misses_are_served_by_the_home_node() {
    for policy in POLICIES {
        let mut m = model(policy);
        // 13 lines of each node: more than L2 + LLC hold, so the second pass misses again.
        for _ in 0..2 {
            for i in 0..13 {
                assert_eq!(load(&mut m, 0, b(i)), "dram_remote", "{policy}");
                assert_eq!(load(&mut m, 2, b(i)), "dram_local", "{policy}");
                assert_eq!(load(&mut m, 2, a(i)), "dram_remote", "{policy}");
            }
        }
        let rows = m.dram_rows();
        assert_eq!(
            rows,
            vec![(0, 0, 1, 26, 0), (0, 2, 0, 26, 0), (0, 2, 1, 26, 0)],
            "{policy}"
        );
    }
}

#[test]
fn an_eviction_drops_the_vcpu_from_the_sharers() {
    let mut m = model("non_inclusive");
    load(&mut m, 0, a(0));
    for i in 1..=4 {
        load(&mut m, 0, a(i));
    }
    // vCPU 0 no longer holds a(0): vCPU 1's store invalidates nobody.
    assert_eq!(store(&mut m, 1, a(0)), ("llc", 0));
    // Control: a sharer that kept its copy is invalidated.
    load(&mut m, 0, a(9));
    assert_eq!(store(&mut m, 1, a(9)), ("llc", 1));
    // ... and its copy is gone: its next load takes the line from vCPU 1.
    assert_eq!(load(&mut m, 0, a(9)), "hitm_local");
}

#[test]
fn a_dirty_l2_eviction_is_a_writeback_to_the_home_node() {
    for policy in POLICIES {
        let mut m = model(policy);
        store(&mut m, 0, b(0));
        load(&mut m, 0, a(7)); // clean: its eviction writes nothing back
        for i in 1..=4 {
            load(&mut m, 0, a(i));
        }
        let c = m.vcpu_totals(0);
        assert_eq!(c.writebacks, 1, "{policy}");
        assert!(m.dram_rows().contains(&(0, 0, 1, 1, 1)), "{policy}");
        // The line is uncached now: node 1's vCPU reads it from its memory, no HITM.
        assert_eq!(load(&mut m, 2, b(0)), "dram_local", "{policy}");
    }
}

#[test]
fn an_inclusive_llc_eviction_invalidates_the_domains_caches() {
    let mut m = model("inclusive");
    load(&mut m, 0, a(0));
    store(&mut m, 0, b(0));
    // vCPU 1 (same domain) brings 8 lines into LLC 0: a(0) and b(0) leave it, and vCPU 0's
    // caches; b(0) was Modified: a writeback on vCPU 0's row.
    for i in 1..=8 {
        load(&mut m, 1, a(i));
    }
    assert_eq!(m.vcpu_totals(0).writebacks, 1);
    assert_eq!(m.vcpu_totals(1).writebacks, 0);
    assert_eq!(load(&mut m, 0, a(0)), "dram_local");
    assert_eq!(load(&mut m, 2, b(0)), "dram_local");
    // Non-inclusive: vCPU 0 keeps both (an L1d hit, and the Modified line is still its own).
    let mut m = model("non_inclusive");
    load(&mut m, 0, a(0));
    store(&mut m, 0, b(0));
    for i in 1..=8 {
        load(&mut m, 1, a(i));
    }
    assert_eq!(load(&mut m, 0, a(0)), "l1");
    assert_eq!(load(&mut m, 2, b(0)), "hitm_remote");
    // Domain 0's LLC evicting does not touch domain 1's caches.
    let mut m = model("inclusive");
    load(&mut m, 2, a(0));
    load(&mut m, 0, a(0));
    for i in 1..=8 {
        load(&mut m, 1, a(i));
    }
    assert_eq!(load(&mut m, 0, a(0)), "dram_local");
    assert_eq!(load(&mut m, 2, a(0)), "l1");
    // An LLC of another domain evicting does not touch domain 0.
    let mut m = model("inclusive");
    load(&mut m, 0, a(0));
    for i in 1..=8 {
        load(&mut m, 2, a(i));
    }
    assert_eq!(load(&mut m, 0, a(0)), "l1");
}

#[test]
fn an_l2_eviction_leaves_a_non_victim_llc_as_it_is() {
    for policy in ["inclusive", "non_inclusive"] {
        let mut m = model(policy);
        // a(0) is the oldest in LLC 0 and leaves vCPU 0's L2 at a(4): it keeps its place.
        for i in 0..=4 {
            load(&mut m, 0, a(i));
        }
        // Four more lines fill LLC 0 past its 8 ways: a(0), the oldest, goes.
        for i in 5..=8 {
            load(&mut m, 1, a(i));
        }
        assert_eq!(load(&mut m, 0, a(0)), "dram_local", "{policy}");
    }
}

#[test]
fn a_victim_llc_is_filled_by_l2_evictions_only() {
    let mut m = model("victim");
    load(&mut m, 0, a(0));
    // Not filled at the miss: vCPU 1 of the same domain reads memory.
    assert_eq!(load(&mut m, 1, a(0)), "dram_local");
    for i in 1..=4 {
        load(&mut m, 0, a(i));
        load(&mut m, 1, a(i));
    }
    // a(0) left both L2s into the LLC.
    assert_eq!(load(&mut m, 0, a(0)), "llc");
    // An LLC hit leaves it there (victim): vCPU 1 hits it too.
    assert_eq!(load(&mut m, 1, a(0)), "llc");
    // Non-inclusive, for contrast: filled at the miss.
    let mut m = model("non_inclusive");
    load(&mut m, 0, a(0));
    assert_eq!(load(&mut m, 1, a(0)), "llc");
}

#[test]
fn a_store_drops_the_other_llcs_copies() {
    for policy in ["non_inclusive", "victim"] {
        let mut m = model(policy);
        // vCPU 2 (domain 1) reads a(0) and evicts it: LLC 1 holds it, nobody else.
        load(&mut m, 2, a(0));
        for i in 1..=4 {
            load(&mut m, 2, b(i));
        }
        assert_eq!(load(&mut m, 3, a(0)), "llc", "{policy}");
        for i in 5..=8 {
            load(&mut m, 3, b(i));
        }
        // vCPU 0 (domain 0) stores a(0): LLC 1's copy is stale and goes.
        assert_eq!(store(&mut m, 0, a(0)).0, "dram_local", "{policy}");
        for i in 1..=4 {
            load(&mut m, 0, a(i));
        }
        assert_eq!(m.vcpu_totals(0).writebacks, 1, "{policy}");
        assert_eq!(load(&mut m, 3, a(0)), "dram_remote", "{policy}");
    }
}

#[test]
fn an_upgrade_drops_the_other_vcpus_copies() {
    for policy in POLICIES {
        let mut m = model(policy);
        load(&mut m, 0, a(0));
        load(&mut m, 1, a(0));
        load(&mut m, 2, a(0));
        assert_eq!(store(&mut m, 0, a(0)), ("l1", 2), "{policy}");
        assert_eq!(load(&mut m, 1, a(0)), "hitm_local", "{policy}");
        // vCPU 2's copy went too, and so did LLC 1's: node 0's memory serves it.
        assert_eq!(load(&mut m, 2, a(0)), "dram_remote", "{policy}");
    }
}

#[test]
fn hitm_rows_by_owner_node_and_home_node() {
    let mut m = model("non_inclusive");
    store(&mut m, 0, b(0));
    assert_eq!(load(&mut m, 2, b(0)), "hitm_remote");
    store(&mut m, 0, a(0));
    assert_eq!(load(&mut m, 1, a(0)), "hitm_local");
    assert_eq!(store(&mut m, 3, a(0)), ("dram_remote", 2));
    assert_eq!(store(&mut m, 2, a(0)), ("hitm_local", 1));
    assert_eq!(
        m.hitm_rows(),
        vec![(0, 1, 0, 0, 1), (0, 2, 0, 1, 1), (0, 2, 1, 0, 1)]
    );
    // A load HITM keeps the old owner's copy (Shared) and fills the reader's LLC.
    assert_eq!(load(&mut m, 0, a(0)), "hitm_remote");
    assert_eq!(load(&mut m, 2, a(0)), "l1");
    for i in 1..=4 {
        load(&mut m, 0, a(i));
    }
    assert_eq!(load(&mut m, 1, a(0)), "llc");
}
