//! Property-based tests (proptest, with shrinking) of the pure core, each against a simple
//! model: the buddy allocator against a page-ownership map, the vmalloc free-space allocator
//! against a page bitmap, the SRAT and SLIT readers against the tables they were built from,
//! and the options parser against a map of the last value given per key. Case counts are
//! bounded so `cargo test` stays fast.

use numalab_algo::acpi::{slit, srat};
use numalab_algo::frame::buddy::{Buddy, FreeError, VecStore};
use numalab_algo::options::{Kind, Options, Spec};
use numalab_algo::vmalloc::free_space::FreeSpace;
use proptest::prelude::*;
use std::collections::BTreeMap;

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        max_shrink_iters: 2000,
        ..ProptestConfig::default()
    }
}

/// One step of a buddy workload: allocate an order, or free the i-th live block (i taken
/// modulo the live count), or free a wrong address (a double free or a tail page).
#[derive(Clone, Debug)]
enum BuddyOp {
    Alloc(u8),
    Free(usize),
    BadFree(usize, u8),
}

fn buddy_op() -> impl Strategy<Value = BuddyOp> {
    prop_oneof![
        4 => (0u8..=6).prop_map(BuddyOp::Alloc),
        3 => any::<usize>().prop_map(BuddyOp::Free),
        1 => (any::<usize>(), 0u8..=3).prop_map(|(i, k)| BuddyOp::BadFree(i, k)),
    ]
}

proptest! {
    #![proptest_config(config(64))]

    /// Every block handed out is aligned, inside a free range, disjoint from every live
    /// block; frees of live blocks succeed and wrong ones are refused without changing
    /// anything; free + live pages == managed after every step; all freed, the lists hold
    /// every page in maximal blocks again.
    #[test]
    fn buddy_matches_an_ownership_model(
        base in 0u64..4096,
        holes in proptest::collection::vec((0u64..600, 1u64..40), 0..4),
        ops in proptest::collection::vec(buddy_op(), 1..300),
    ) {
        const PAGES: u64 = 1024;
        let mut b = Buddy::new(VecStore::new(PAGES as usize), base);
        // Free ranges: the span minus the holes.
        let mut usable = vec![true; PAGES as usize];
        for &(at, len) in &holes {
            for p in at..(at + len).min(PAGES) {
                usable[p as usize] = false;
            }
        }
        let mut p = 0;
        while p < PAGES {
            if usable[p as usize] {
                let s = p;
                while p < PAGES && usable[p as usize] {
                    p += 1;
                }
                b.add_free_range(base + s, base + p);
            } else {
                p += 1;
            }
        }
        let managed = usable.iter().filter(|&&u| u).count();
        prop_assert_eq!(b.managed_pages(), managed);
        let mut owner = vec![false; PAGES as usize];
        let mut live: Vec<(u64, u8)> = Vec::new();
        let mut live_pages = 0usize;
        for op in ops {
            match op {
                BuddyOp::Alloc(order) => {
                    if let Some(pfn) = b.alloc(order) {
                        prop_assert_eq!(pfn % (1 << order), 0, "unaligned order {}", order);
                        for q in pfn - base..pfn - base + (1 << order) {
                            prop_assert!(usable[q as usize], "hole page {} handed out", q + base);
                            prop_assert!(!owner[q as usize], "page {} handed out twice", q + base);
                            owner[q as usize] = true;
                        }
                        live.push((pfn, order));
                        live_pages += 1 << order;
                    }
                }
                BuddyOp::Free(i) if !live.is_empty() => {
                    let (pfn, order) = live.swap_remove(i % live.len());
                    prop_assert_eq!(b.free(pfn, order), Ok(()));
                    for q in pfn - base..pfn - base + (1 << order) {
                        owner[q as usize] = false;
                    }
                    live_pages -= 1 << order;
                }
                BuddyOp::Free(_) => {}
                BuddyOp::BadFree(i, k) => {
                    let before = b.free_pages();
                    let bad = if live.is_empty() || i % 2 == 0 {
                        // Somewhere not heading a live block: a free page, a hole, a tail.
                        let q = (i as u64) % PAGES;
                        if live.iter().any(|&(p, o)| p == base + q && o == k) {
                            continue;
                        }
                        (base + q, k)
                    } else {
                        let (pfn, order) = live[i % live.len()];
                        if order == 0 { continue; }
                        (pfn + 1, 0) // a tail page
                    };
                    prop_assert!(b.free(bad.0, bad.1).is_err(), "bad free {:?} accepted", bad);
                    prop_assert_eq!(b.free_pages(), before);
                }
            }
            prop_assert_eq!(b.free_pages() + live_pages, managed);
        }
        for (pfn, order) in live.drain(..) {
            prop_assert_eq!(b.free(pfn, order), Ok(()));
        }
        prop_assert!(b.check_lists().is_ok());
        prop_assert_eq!(b.free_pages(), managed);
        // Double frees of anything are refused now.
        prop_assert!(matches!(b.free(base, 0), Err(FreeError::AlreadyFree) | Err(FreeError::NotAllocated(_))));
    }

    /// FreeSpace against a page bitmap: allocations are aligned, inside the range, never
    /// overlap live ones, refused only when Linux's search rule finds no room; frees give back exactly what was taken; double frees are refused;
    /// free bytes always equal the model's; everything freed, the range is one free block.
    #[test]
    fn vmalloc_free_space_matches_a_bitmap(
        ops in proptest::collection::vec((any::<bool>(), 1u64..24, 0u32..4, any::<usize>()), 1..200),
    ) {
        const PAGE: u64 = 4096;
        const PAGES: u64 = 256;
        let start = 0x1000_0000u64;
        let mut fs = FreeSpace::new(start, start + PAGES * PAGE);
        let mut used = vec![false; PAGES as usize];
        let mut live: Vec<(u64, u64)> = Vec::new();
        for (alloc, pages, align_shift, pick) in ops {
            if alloc || live.is_empty() {
                let align = PAGE << align_shift;
                match fs.alloc(pages * PAGE, align) {
                    Ok(a) => {
                        prop_assert_eq!(a % align, 0);
                        prop_assert!(a >= start && a + pages * PAGE <= start + PAGES * PAGE);
                        for p in (a - start) / PAGE..(a - start) / PAGE + pages {
                            prop_assert!(!used[p as usize], "page {} allocated twice", p);
                            used[p as usize] = true;
                        }
                        live.push((a, pages * PAGE));
                    }
                    Err(_) => {
                        // Only when the model has no room by Linux's rule (adjust_search_size):
                        // a page-aligned request refuses only when no run of `pages` free pages
                        // exists; a larger alignment only when no run of `pages + align/PAGE - 1`
                        // free pages exists (one that fits only at its one aligned address is
                        // not searched for, as in Linux).
                        let need = pages + align / PAGE - 1;
                        let fits = (0..PAGES).any(|p| {
                            p + need <= PAGES && (p..p + need).all(|q| !used[q as usize])
                        });
                        prop_assert!(!fits, "refused {} pages at align {} though a run of {} is free", pages, align, need);
                    }
                }
            } else {
                let (a, size) = live.swap_remove(pick % live.len());
                prop_assert!(fs.free(a, size).is_ok());
                for p in (a - start) / PAGE..(a - start + size) / PAGE {
                    used[p as usize] = false;
                }
                prop_assert!(fs.free(a, size).is_err(), "double free accepted");
            }
            let model_free = used.iter().filter(|&&u| !u).count() as u64 * PAGE;
            prop_assert_eq!(fs.free_bytes(), model_free);
            prop_assert!(fs.check().is_ok(), "{:?}", fs.check());
        }
        for (a, size) in live {
            prop_assert!(fs.free(a, size).is_ok());
        }
        prop_assert!(fs.is_all_free());
        prop_assert_eq!(fs.nr_blocks(), 1);
    }

    /// The SRAT reader returns exactly the CPU and memory entries a table was built from, in
    /// order; any truncation or corrupted byte gives an error or a subset, never a panic.
    #[test]
    fn srat_reader_round_trips(
        cpus in proptest::collection::vec((0u32..300, any::<u8>(), any::<bool>()), 0..12),
        mems in proptest::collection::vec((0u32..300, 0u64..1 << 40, 1u64..1 << 32, 0u32..8), 0..12),
        cut in any::<usize>(),
        flip in any::<(usize, u8)>(),
    ) {
        let mut entries = Vec::new();
        for &(pxm, apic, en) in &cpus {
            entries.push(srat::build::cpu(pxm, apic, en));
        }
        for &(pxm, base, len, flags) in &mems {
            entries.push(srat::build::mem(pxm, base, len, flags));
        }
        let table = srat::build::srat(&entries);
        let parsed = srat::parse(&table).map_err(TestCaseError::fail)?;
        let got_cpus: Vec<(u32, u32, bool)> = parsed.cpus.iter().map(|c| (c.pxm, c.apic_id, c.enabled)).collect();
        let want_cpus: Vec<(u32, u32, bool)> = cpus.iter().map(|&(p, a, e)| (p, u32::from(a), e)).collect();
        prop_assert_eq!(got_cpus, want_cpus);
        let got_mems: Vec<(u32, u64, u64, u32)> = parsed.mems.iter().map(|m| (m.pxm, m.base, m.length, m.flags)).collect();
        prop_assert_eq!(got_mems, mems.clone());
        // Damaged copies: never a panic; a parse that succeeds yields no more entries.
        let short = &table[..cut % (table.len() + 1)];
        if let Ok(s) = srat::parse(short) {
            prop_assert!(s.cpus.len() + s.mems.len() <= cpus.len() + mems.len());
        }
        let mut bad = table.clone();
        let i = flip.0 % bad.len();
        bad[i] ^= flip.1 | 1;
        if let Ok(s) = srat::parse(&bad) {
            prop_assert!(s.cpus.len() + s.mems.len() <= cpus.len() + mems.len() + 1);
        }
    }

    /// The SLIT reader returns the matrix it was built from.
    #[test]
    fn slit_reader_round_trips(n in 1usize..10, seed in any::<u64>()) {
        let mut x = seed | 1;
        let matrix: Vec<Vec<u8>> = (0..n)
            .map(|i| (0..n).map(|j| if i == j { 10 } else {
                x ^= x << 13; x ^= x >> 7; x ^= x << 17;
                11 + (x % 200) as u8
            }).collect())
            .collect();
        let table = slit::build::slit(&matrix);
        let parsed = slit::parse(&table).map_err(TestCaseError::fail)?;
        prop_assert_eq!(parsed.localities, n);
        prop_assert_eq!(parsed.matrix, matrix.concat());
    }

    /// The options parser against a model: for each key the last valid value given wins,
    /// others keep their default; every bad word (unknown key, bad value, no '=') is one
    /// error naming it; valid words never produce errors.
    #[test]
    fn options_parser_matches_a_last_value_model(
        words in proptest::collection::vec((0usize..6, 0u64..40, any::<bool>()), 0..24),
    ) {
        const SPECS: &[Spec] = &[
            Spec { key: "a.flag", kind: Kind::Bool, default: "0", help: "" },
            Spec { key: "b.num", kind: Kind::U64 { min: 1, max: 20 }, default: "5", help: "" },
            Spec { key: "c.pick", kind: Kind::Choice(&["x", "y"]), default: "x", help: "" },
            Spec { key: "d.text", kind: Kind::Text, default: "", help: "" },
        ];
        let mut model: BTreeMap<&str, String> = BTreeMap::new();
        let mut line = Vec::new();
        let mut bad = 0;
        for (which, v, valid) in words {
            let (word, ok) = match which {
                0 => (format!("a.flag={}", if valid { (v % 2).to_string() } else { "2".into() }), valid),
                1 => {
                    let n = if valid { 1 + v % 20 } else { 21 + v };
                    (format!("b.num={}", n), valid)
                }
                2 => (format!("c.pick={}", if valid { "y" } else { "z" }), valid),
                3 => (format!("d.text=w{}", v), true),
                4 => (format!("no.such{}=1", v), false),
                _ => (format!("missing_equals{}", v), false),
            };
            if ok {
                let (k, val) = word.split_once('=').expect("valid words have '='");
                let k: &str = SPECS.iter().find(|s| s.key == k).expect("known").key;
                model.insert(k, val.to_string());
            } else {
                bad += 1;
            }
            line.push(word);
        }
        let opts = Options::parse(&line.join(" "), SPECS);
        prop_assert_eq!(opts.errors.len(), bad, "{:?}", opts.errors);
        let describe = opts.describe();
        for spec in SPECS {
            let want = model.get(spec.key).cloned().unwrap_or_else(|| spec.default.to_string());
            if want.is_empty() {
                continue;
            }
            let shown = match spec.key {
                "a.flag" => format!("{}={}", spec.key, if want == "1" { "1" } else { "0" }),
                _ => format!("{}={}", spec.key, want),
            };
            prop_assert!(describe.contains(&shown), "{} not in '{}' (line {:?})", shown, describe, line);
        }
    }
}
