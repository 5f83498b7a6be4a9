//! The facts the in-kernel MLC (`latency_matrix`) relies on, through the whole model: a random
//! cyclic pointer chase over more lines per set than a level's ways never hits that level
//! (true LRU), and one over half a level's size, more than twice the level below, hits that
//! level on every load after the warm pass. For each level and each LLC policy.

use crate::account::{Counters, Kind, Mem, Model};
use crate::config::parse;

/// (bytes, ways, sets) of L1d, L2 and LLC; the LLC's 96 sets are not a power of two.
const L1: (u64, u64, u64) = (2048, 4, 8);
const L2: (u64, u64, u64) = (16384, 8, 32);
const LLC: (u64, u64, u64) = (73728, 12, 96);

fn model(policy: &str) -> Model {
    let cfg = format!(
        "nodes 1\ndistance 0 10\nmem 0x0 0x10000000 0\nvcpu 0 0\n\
         l1d {} {}\nl2 {} {}\nllc {} {} {policy}\nllc_of 0 0\n",
        L1.0, L1.1, L2.0, L2.1, LLC.0, LLC.1
    );
    Model::new(parse(&cfg).unwrap())
}

/// A random cyclic order of `n` lines from 1 MiB (Fisher-Yates with a fixed xorshift).
fn cycle(n: u64, seed: u64) -> Vec<u64> {
    let mut v: Vec<u64> = (0..n).map(|i| 0x10_0000 + i * 64).collect();
    let mut x = seed | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

/// [L1, L2, LLC, DRAM] counts of `passes` passes over `n` lines after one warm pass.
fn chase(policy: &str, n: u64, passes: u64) -> [u64; 4] {
    let mut m = model(policy);
    let order = cycle(n, n * 7919);
    let run = |m: &mut Model| {
        for &p in &order {
            m.access(0, p, Mem::Phys(p), Kind::Load);
        }
    };
    run(&mut m);
    let before = m.vcpu_totals(0);
    for _ in 0..passes {
        run(&mut m);
    }
    let after = m.vcpu_totals(0);
    let d = |f: fn(&Counters) -> u64| f(&after) - f(&before);
    let got = [
        d(|c| c.hits),
        d(|c| c.l2_hits),
        d(|c| c.llc_hits),
        d(|c| c.miss_local),
    ];
    assert_eq!(got.iter().sum::<u64>(), n * passes);
    got
}

const POLICIES: [&str; 3] = ["inclusive", "non_inclusive", "victim"];

#[test]
fn half_of_each_level_always_hits_that_level() {
    for policy in POLICIES {
        for (level, (bytes, _, _)) in [L1, L2, LLC].into_iter().enumerate() {
            let n = bytes / 64 / 2;
            let mut want = [0; 4];
            want[level] = 2 * n;
            assert_eq!(chase(policy, n, 2), want, "{policy} level {level}");
        }
    }
}

#[test]
fn one_line_per_set_more_than_the_ways_never_hits_that_level() {
    for policy in POLICIES {
        // L1d: served by the L2; L2: by the LLC.
        let n = L1.0 / 64 + L1.2;
        assert_eq!(chase(policy, n, 2), [0, 2 * n, 0, 0], "{policy}");
        let n = L2.0 / 64 + L2.2;
        assert_eq!(chase(policy, n, 2), [0, 0, 2 * n, 0], "{policy}");
    }
    // The LLC alone (a victim LLC and the L2 together hold more, so not for victim).
    for policy in ["inclusive", "non_inclusive"] {
        let n = LLC.0 / 64 + LLC.2;
        assert_eq!(chase(policy, n, 2), [0, 0, 0, 2 * n], "{policy}");
    }
}

#[test]
fn four_times_the_llc_hits_nothing() {
    for policy in POLICIES {
        let n = 4 * LLC.0 / 64;
        assert_eq!(chase(policy, n, 2), [0, 0, 0, 2 * n], "{policy}");
    }
}
