//! The catalog's own consistency: names unique and lower_snake_case, the baseline one of the
//! cases, required metrics and seed rows naming cases the experiment prints in that boot,
//! twin counterparts naming numalab cases.

use super::*;
use crate::bench::plan::{is_case_name, is_snake_name};
use alloc::vec::Vec;

#[test]
fn names_are_unique_and_snake_case() {
    let mut names: Vec<&str> = names().collect();
    assert_eq!(names.len(), CATALOG.len());
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), CATALOG.len(), "an experiment is listed twice");
    for e in CATALOG {
        assert!(is_snake_name(e.name), "{}", e.name);
        assert_eq!(find(e.name).map(|f| f.name), Some(e.name));
        let mut cases: Vec<&str> = e.cases.iter().map(|c| c.name).collect();
        assert!(!cases.is_empty(), "{}: no case", e.name);
        cases.sort_unstable();
        cases.dedup();
        assert_eq!(
            cases.len(),
            e.cases.len(),
            "{}: a case is listed twice",
            e.name
        );
        for c in e.cases {
            assert!(is_case_name(c.name), "{}: case {}", e.name, c.name);
            assert!(
                c.boots.within(e.boots) && c.boots != Boots(0),
                "{}: case {} prints in boots the experiment does not",
                e.name,
                c.name
            );
        }
    }
    assert!(find("sheaves_vs_partail").is_none());
}

#[test]
fn baseline_is_one_of_the_cases() {
    for e in CATALOG {
        match e.baseline {
            Baseline::Case(b) => assert!(e.has_case(b), "{}: baseline {b}", e.name),
            Baseline::PerWorkload(prefix) => {
                // Every workload some case measures has its baseline case.
                for c in e.cases {
                    let base = e.baseline.of(c.name).expect("ALLOCATOR/WORKLOAD case");
                    assert!(e.has_case(&base), "{}: {} has no {base}", e.name, c.name);
                    assert!(base.starts_with(prefix));
                }
            }
        }
    }
    assert_eq!(ALLOC_PEERS.baseline.rule(), "numalab/*");
    assert_eq!(
        ALLOC_PEERS.baseline.of("talc/burst256").as_deref(),
        Some("numalab/burst256")
    );
}

#[test]
fn required_metrics_name_cases_printed_in_their_boot() {
    for e in CATALOG {
        for r in e.required {
            assert!(
                e.boots.contains(r.boot),
                "{}: required in {:?}",
                e.name,
                r.boot
            );
            assert!(!r.metrics.is_empty(), "{}", e.name);
            for m in r.metrics {
                assert!(is_snake_name(m), "{}: metric {m}", e.name);
            }
            if let Cases::Only(names) = r.cases {
                for n in names {
                    let c = e.find_case(n);
                    assert!(
                        c.is_some_and(|c| c.boots.contains(r.boot) && c.always),
                        "{}: required case {n} is not always printed in {:?}",
                        e.name,
                        r.boot
                    );
                }
            }
        }
        for (case, metric, boot) in e.required_triples() {
            assert!(case == "*" || e.has_case(case), "{}: {case}", e.name);
            assert!(!metric.is_empty() && e.boots.contains(boot));
        }
    }
}

#[test]
fn seed_rows_name_existing_cases_and_required_metrics() {
    let mut seeds: Vec<&str> = Vec::new();
    for e in CATALOG {
        for s in e.seeds {
            for (case, boot) in [(s.case, s.boot), (s.base, s.base_boot)] {
                let c = e.find_case(case);
                assert!(
                    c.is_some_and(|c| c.boots.contains(boot)),
                    "{} seed {}: {case} is not printed in the {} boot",
                    e.name,
                    s.seed,
                    boot.name()
                );
                assert!(
                    e.required_triples()
                        .iter()
                        .any(|&(rc, m, b)| (rc == case || rc == "*") && m == s.metric && b == boot),
                    "{} seed {}: {case} {} in {} is not a required measurement",
                    e.name,
                    s.seed,
                    s.metric,
                    boot.name()
                );
            }
            assert!(s.thread_ratio >= 0.0 && s.thread_ratio != 1.0, "{s:?}");
            assert!(s.seed.len() == 3 && s.seed.bytes().all(|b| b.is_ascii_digit()));
            seeds.push(s.seed);
        }
    }
    for s in ["000", "001", "002", "003", "004"] {
        assert!(seeds.contains(&s), "no row replays seed {s}");
    }
}

#[test]
fn twin_counterparts_face_numalab_cases() {
    for e in CATALOG {
        let Some(t) = &e.twin else { continue };
        assert!(!t.required.is_empty(), "{}", e.name);
        for r in t.required {
            assert!(is_case_name(r.case) && is_snake_name(r.metric), "{r:?}");
        }
        for c in t.counterparts {
            assert!(
                e.find_case(c.case)
                    .is_some_and(|x| x.boots.contains(c.boot)),
                "{}: counterpart {} is not printed in {:?}",
                e.name,
                c.case,
                c.boot
            );
            assert!(is_case_name(c.linux_case), "{c:?}");
        }
    }
}

#[test]
fn boots_and_derived_facts() {
    assert!(SLUB_LIST_LOCK.multi_cpu_only() && SLUB_LIST_LOCK.in_det());
    assert!(!PAGE_ALLOC.multi_cpu_only() && !PAGE_ALLOC.in_det());
    const { assert!(NUMA_LOCALITY.numa_only && !VMALLOC_SCALING.numa_only) };
    let det: Vec<&str> = CATALOG
        .iter()
        .filter(|e| e.in_det())
        .map(|e| e.name)
        .collect();
    assert_eq!(det.len(), 11, "{det:?}");
    for b in Boot::ALL {
        assert_eq!(Boot::from_name(b.name()), Some(b));
    }
    assert_eq!(
        TSC_DET.iter().collect::<Vec<_>>(),
        alloc::vec![Boot::Det, Boot::Tsc]
    );
    // The det boot requires only what the tsc boot also requires (counts), nothing else.
    for e in CATALOG {
        let all = e.required_triples();
        for &(c, m, _) in all.iter().filter(|t| t.2 == Boot::Det) {
            assert!(
                all.contains(&(c, m, Boot::Tsc)),
                "{}: {c} {m} required in det but not in tsc",
                e.name
            );
        }
    }
}

#[test]
fn check_refuses_what_the_catalog_lacks() {
    assert_eq!(
        check(NUMA_LOCALITY.name, "default").map(|e| e.name),
        Ok(NUMA_LOCALITY.name)
    );
    let e = check(NUMA_LOCALITY.name, "prefer_remote").unwrap_err();
    assert!(
        e.contains("case 'prefer_remote', which its catalog entry does not list"),
        "{e}"
    );
    assert!(e.contains("prefer_local, default"), "{e}");
    let e = check("sheaves_vs_partail", "x").unwrap_err();
    assert!(
        e.contains("'sheaves_vs_partail' is not in the catalog"),
        "{e}"
    );
    assert!(e.contains(SLUB_LIST_LOCK.name), "{e}");
}

#[test]
fn every_headline_names_cases_printed_in_its_boot() {
    for e in CATALOG {
        let (_, case, base, boot) = e.headline.parts();
        for c in core::iter::once(case).chain(base) {
            let found = e
                .find_case(c)
                .unwrap_or_else(|| panic!("{}: headline case {c} is not a case", e.name));
            assert!(
                found.boots.contains(boot) && e.boots.contains(boot),
                "{}: headline case {c} is not printed in the {} boot",
                e.name,
                boot.name()
            );
        }
    }
}

#[test]
fn latency_matrix_lists_every_cell_of_eight_nodes() {
    let e = &LATENCY_MATRIX;
    assert_eq!(e.cases.len(), 2 * CELL_NODES * CELL_NODES + 3);
    for prefix in ["dram", "c2c"] {
        for i in 0..CELL_NODES {
            for j in 0..CELL_NODES {
                let name = alloc::format!("{prefix}_{i}_{j}");
                assert_eq!(cell_case(prefix, i, j), Some(name.as_str()));
                assert!(!e.find_case(&name).unwrap().always, "{name}");
            }
        }
        assert_eq!(cell_case(prefix, CELL_NODES, 0), None);
        assert_eq!(cell_case(prefix, 0, CELL_NODES), None);
    }
    // The c2c cells need two CPUs: never in the one-CPU icount boot.
    assert!(!e.find_case("c2c_0_0").unwrap().boots.contains(Boot::Icount));
    assert!(e
        .find_case("dram_0_0")
        .unwrap()
        .boots
        .contains(Boot::Icount));
    for level in ["l1", "l2", "llc"] {
        assert!(e.has_case(level), "{level}");
    }
    assert_eq!(cell_case("dram", 12, 3), None);
}
