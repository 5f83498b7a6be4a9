//! Host tests of the traced side by side with a synthetic run whose answers are known: the
//! ratios, the direction verdicts (same, opposite, one flat, n/a), the missing figures and
//! their reasons, the hottest lines from a c2c text, and the ratio records read back by
//! `--compare`.

use super::*;
use crate::bench::{self, compare, read_jsonl};

const L61: &str = "linux-6.1.192";
const L7: &str = "linux-7.3.4";

/// The seven figures of one region: FIGURES[i] = base * (i + 1).
fn region(kernel: &str, bench: &str, case: &str, cpus: u32, base: f64) -> Vec<BenchRecord> {
    FIGURES
        .iter()
        .enumerate()
        .map(|(i, f)| BenchRecord {
            kernel: kernel.into(),
            ..BenchRecord::for_test(
                [bench, case, f, "x"],
                cpus,
                Boot::Det,
                0,
                base * (i + 1) as f64,
            )
        })
        .collect()
}

/// numalab (main det boot: sheaves) and both Linux kernels; 7.x traced sheaves_vs_partial only.
fn run_records() -> Vec<BenchRecord> {
    let mut r = Vec::new();
    let sll = "slub_list_lock";
    r.extend(region("numalab", sll, "linux_default", 8, 100.0));
    r.extend(region("numalab", sll, "linux_default", 2, 10.0));
    r.extend(region("numalab", sll, "cpu_partial_x2", 8, 110.0)); // +10%
    r.extend(region("numalab", sll, "partial_64", 8, 90.0)); // -10%
    r.extend(region("numalab", sll, "order_4", 8, 101.0)); // +1%: flat
    r.extend(region(L61, sll, "linux/default", 8, 400.0));
    r.extend(region(L61, sll, "linux/cpu_partial_x2", 8, 440.0)); // +10%: same
    r.extend(region(L61, sll, "linux/partial_64", 8, 480.0)); // +20%: opposite
                                                              // linux/order_4 not traced: n/a.
    let svp = "sheaves_vs_partial";
    r.extend(region("numalab", svp, "partial", 2, 50.0));
    r.extend(region("numalab", svp, "partial", 8, 50.5)); // +1%: flat
    r.extend(region("numalab", svp, "sheaves", 2, 40.0));
    r.extend(region("numalab", svp, "sheaves", 8, 20.0)); // -50%
    r.extend(region(L61, svp, "linux", 2, 60.0));
    r.extend(region(L61, svp, "linux", 8, 90.0)); // +50%: one flat
    r.extend(region(L7, svp, "linux", 2, 80.0));
    r.extend(region(L7, svp, "linux", 8, 40.0)); // -50%: same
    r.extend(region("numalab", "numa_locality", "default", 8, 5.0));
    r.extend(region("numalab", "numa_locality", "prefer_local", 8, 4.0));
    r.extend(region(L61, "numa_locality", "linux", 8, 10.0));
    // Not a trace figure, and not a det record: ignored.
    r.push(BenchRecord {
        kernel: L61.into(),
        ..BenchRecord::for_test(
            [sll, "linux/default", "ops_per_cpu", "ops"],
            8,
            Boot::Tsc,
            0,
            1.0,
        )
    });
    r
}

fn c2c_row(i: u32, hitm: u64, records: u64, name: &str) -> String {
    format!(
        "  {i:>5}  {:>#18x}  {:>4}  {:>6}  {:>6.2}%  {hitm:>7}  {:>7}  {:>7}  {records:>7}  {:>7}  {:>7}  {:>7}  {:>7}  {name}\n",
        0x1000 + 64 * i, 0, 1, 1.0, 0, hitm, 0, 0, 0, 0
    )
}

fn c2c_text(region_line: &str, rows: &[(u64, u64, &str)]) -> String {
    let mut s = String::from(
        "summary\n\n=================================================\n           Shared Data Cache Line Table          \n",
    );
    s.push_str(&format!("  {region_line} (region 0x2a033)\n"));
    s.push_str(
        "=================================================\n#\n# Index  Address ...\n# .....\n",
    );
    for (i, (h, r, n)) in rows.iter().enumerate() {
        s.push_str(&c2c_row(i as u32, *h, *r, n));
    }
    s
}

fn c2c() -> Vec<(String, String)> {
    vec![
        (
            "numalab".into(),
            c2c_text(
                "slub_list_lock linux_default cpus 8",
                &[
                    (10, 5, "slub_list_lock mailbox 1"),
                    (30, 1, "slub_list_lock node 0 list_lock"),
                    (10, 9, "slub_list_lock node 1 list_lock"),
                    (2, 99, "[dynamic]"),
                ],
            ),
        ),
        (
            L61.into(),
            c2c_text(
                "slub_list_lock linux/default cpus 8",
                &[
                    (7, 1, "numalab_sll node 0 list_lock"),
                    (9, 1, "[dynamic]"),
                    (8, 1, "[dynamic]"),
                ],
            ),
        ),
    ]
}

fn run_of(records: &[BenchRecord]) -> Run<'_> {
    Run::new(records, &[], "sheaves")
}

fn ratio_of(v: &Verdict, bench: &str, case: Option<&str>, cpus: u32, figure: &str) -> Cell {
    v.ratios
        .iter()
        .find(|r| {
            r.pairing.bench == bench
                && r.pairing.case == case
                && r.cpus == cpus
                && r.figure == figure
        })
        .map(|r| r.ratio.clone())
        .unwrap_or_else(|| Err("no such ratio".into()))
}

fn verdict_of(v: &Verdict, label: &str, cpus: Option<u32>, figure: &str) -> String {
    v.moves
        .iter()
        .find(|m| m.label == label && m.cpus == cpus && m.figure == figure)
        .map_or("absent".into(), |m| m.verdict.clone())
}

#[test]
fn ratios_are_numalab_over_linux_of_the_same_design() {
    let records = run_records();
    let run = run_of(&records);
    let v61 = run.verdict("partial", LinuxKernel::V6_1);
    let v7 = run.verdict("sheaves", LinuxKernel::V7);
    assert_eq!(v61.kernel_name, L61);
    assert_eq!(v7.kernel_name, L7);
    for f in FIGURES {
        let sll = ratio_of(&v61, "slub_list_lock", Some("linux_default"), 8, f);
        assert_eq!(sll, Ok(0.25), "{f}");
        // sheaves_vs_partial: the numalab case is the design.
        assert_eq!(
            ratio_of(&v61, "sheaves_vs_partial", None, 2, f),
            Ok(50.0 / 60.0)
        );
        assert_eq!(ratio_of(&v7, "sheaves_vs_partial", None, 8, f), Ok(0.5));
        assert_eq!(
            ratio_of(&v61, "numa_locality", Some("default"), 8, f),
            Ok(0.5)
        );
    }
    // numalab's slub_list_lock is the partial design in every boot: no sheaves ratio.
    let why = ratio_of(&v7, "slub_list_lock", Some("linux_default"), 8, FIGURES[0]);
    assert!(why
        .unwrap_err()
        .contains("partial design in every numalab boot"));
    let why = ratio_of(&v61, "slub_list_lock", Some("order_4"), 8, FIGURES[0]).unwrap_err();
    assert!(why.contains("no linux/order_4 region at 8 CPUs"), "{why}");
    let why = ratio_of(&v61, "numa_locality", Some("prefer_local"), 8, FIGURES[0]).unwrap_err();
    assert!(why.contains("no Linux counterpart"), "{why}");
    let why = ratio_of(&v61, "slub_list_lock", Some("linux_default"), 2, FIGURES[0]).unwrap_err();
    assert!(why.contains("not run"), "{why}");
}

#[test]
fn case_pairs_move_same_opposite_or_flat() {
    let records = run_records();
    let run = run_of(&records);
    let v61 = run.verdict("partial", LinuxKernel::V6_1);
    let v7 = run.verdict("sheaves", LinuxKernel::V7);
    for f in FIGURES {
        let at8 = Some(8);
        assert_eq!(
            verdict_of(&v61, "cpu_partial_x2 vs linux_default", at8, f),
            "same"
        );
        assert_eq!(
            verdict_of(&v61, "partial_64 vs linux_default", at8, f),
            "opposite"
        );
        let order4 = verdict_of(&v61, "order_4 vs linux_default", at8, f);
        assert_eq!(
            order4,
            "n/a (linux-6.1.192: not run (no linux/order_4 region at 8 CPUs))"
        );
        let nl = verdict_of(&v61, "prefer_local vs default", at8, f);
        assert_eq!(nl, "n/a (no Linux counterpart)");
        assert_eq!(verdict_of(&v61, "cpus 8 vs 2", None, f), "one flat");
        assert_eq!(verdict_of(&v7, "cpus 8 vs 2", None, f), "same");
    }
    let m = v61
        .moves
        .iter()
        .find(|m| m.label == "cpu_partial_x2 vs linux_default" && m.cpus == Some(8))
        .unwrap();
    assert!((m.numalab.clone().unwrap() - 0.1).abs() < 1e-12);
    assert!((m.linux.clone().unwrap() - 0.1).abs() < 1e-12);
}

#[test]
fn direction_rule() {
    assert_eq!(direction(100.0, 102.0), Dir::Flat);
    assert_eq!(direction(100.0, 98.0), Dir::Flat);
    assert_eq!(direction(100.0, 102.5), Dir::Up);
    assert_eq!(direction(100.0, 97.5), Dir::Down);
    assert_eq!(direction(0.0, 0.0), Dir::Flat);
    assert_eq!(direction(0.0, 1.0), Dir::Up);
    assert_eq!(direction(-10.0, -5.0), Dir::Up);
    assert_eq!(agreement(Dir::Up, Dir::Up), "same");
    assert_eq!(agreement(Dir::Flat, Dir::Flat), "same");
    assert_eq!(agreement(Dir::Down, Dir::Flat), "one flat");
    assert_eq!(agreement(Dir::Down, Dir::Up), "opposite");
}

#[test]
fn tables_columns_missing_figures_and_hottest_lines() {
    let records = run_records();
    let texts = c2c();
    let run = Run::new(&records, &texts, "sheaves");
    let tables = run.tables();
    let t = tables
        .iter()
        .find(|t| t.pairing.case == Some("linux_default") && t.cpus == 8)
        .unwrap();
    let titles: Vec<&str> = t.columns.iter().map(|(_, h)| h.as_str()).collect();
    assert_eq!(titles, ["numalab partial", L61, L7]);
    assert_eq!(t.rows[0].1[0], Ok(100.0));
    assert_eq!(t.rows[6].1[1], Ok(2800.0));
    assert!(t.rows[0].1[2].clone().unwrap_err().starts_with("not run"));
    assert_eq!(
        t.hot[0],
        Ok(vec![
            "slub_list_lock node 0 list_lock".to_string(),
            "slub_list_lock node 1 list_lock".into(),
            "slub_list_lock mailbox 1".into()
        ])
    );
    assert_eq!(
        t.hot[1],
        Ok(vec![
            "[dynamic]".to_string(),
            "[dynamic]".into(),
            "numalab_sll node 0 list_lock".into()
        ])
    );
    assert!(t.hot[2].clone().unwrap_err().contains("no c2c table"));
    // sheaves_vs_partial has both designs; vmalloc_scaling was traced by no kernel.
    let svp = tables
        .iter()
        .find(|t| t.pairing.bench == "sheaves_vs_partial")
        .unwrap();
    assert_eq!(svp.columns.len(), 4);
    assert!(!tables.iter().any(|t| t.pairing.bench == "vmalloc_scaling"));
    let out = render(&records, &texts, "sheaves");
    // The console: each pairing at its most CPUs only, the reasons as footnotes.
    assert!(out.console.contains(
        "-- slub_list_lock, cpus 8: ratio numalab sheaves / linux-7.3.4: n/a, slub_list_lock \
         runs the partial design in every numalab boot (catalog)\n"
    ));
    assert!(out
        .console
        .contains("-- slub_list_lock: linux_default | linux/default, cpus 8"));
    assert!(!out
        .console
        .contains("linux_default | linux/default, cpus 2"));
    assert!(out.console.contains(
        "-- slub_list_lock, cpus 8: ratio numalab sheaves / linux-7.3.4: n/a, slub_list_lock \
         runs the partial design in every numalab boot (catalog)\n"
    ));
    assert!(out
        .console
        .contains("[1] not run (linux-7.3.4 traced no det boot of it)"));
    assert!(out.console.contains(
        "-- slub_list_lock, cpus 8: ratio numalab sheaves / linux-7.3.4: n/a, slub_list_lock \
         runs the partial design in every numalab boot (catalog)\n"
    ));
    assert!(out
        .console
        .contains("numalab partial: slub_list_lock node 0 list_lock; "));
    assert!(
        out.console.contains("same (+10.0% | +10.0%)"),
        "{}",
        out.console
    );
    assert!(out.console.contains("one flat (+1.0% | +50.0%)"));
    assert!(out.console.contains(
        "-- slub_list_lock, cpus 8: ratio numalab sheaves / linux-7.3.4: n/a, slub_list_lock \
         runs the partial design in every numalab boot (catalog)\n"
    ));
    assert!(out
        .console
        .contains("[1] linux-6.1.192: not run (no linux/order_4 region at 8 CPUs)\n"));
    // The HTML: every CPU count, escaped.
    assert!(out.html.contains("linux_default | linux/default, cpus 2"));
    assert!(out
        .html
        .contains("<td class=\"num\">[dynamic] x2<br>numalab_sll node 0 list_lock</td>"));
    assert!(!render(&[], &texts, "sheaves").html.contains("<table"));
}

#[test]
fn a_variant_boot_gives_the_other_design_of_a_boot_experiment() {
    // alloc_peers is not paired, so use the column logic directly on a boot-design bench.
    let mut records = region("numalab", "alloc_peers", "kmalloc", 8, 1.0);
    records.extend(
        region("numalab", "alloc_peers", "kmalloc", 8, 2.0)
            .into_iter()
            .map(|r| BenchRecord {
                variant: Some("slub.design=partial".into()),
                ..r
            }),
    );
    records.extend(
        region("numalab", "alloc_peers", "kmalloc", 8, 3.0)
            .into_iter()
            .map(|r| BenchRecord {
                variant: Some("slub.design=hybrid".into()),
                ..r
            }),
    );
    let texts = [(
        "numalab [slub.design=partial]".to_string(),
        c2c_text(
            "alloc_peers kmalloc cpus 8",
            &[(5, 1, "alloc_peers node 0 list_lock")],
        ),
    )];
    let run = Run::new(&records, &texts, "sheaves");
    let designs = run.numalab_designs("alloc_peers");
    assert_eq!(designs, ["partial", "sheaves", "hybrid"]);
    let p = Pairing {
        bench: "alloc_peers",
        case: Some("kmalloc"),
        linux: None,
    };
    let f = |d| run.figure(&p, Column::Numalab(d), 8, FIGURES[0]);
    assert_eq!(
        (f("partial"), f("sheaves"), f("hybrid")),
        (Ok(2.0), Ok(1.0), Ok(3.0))
    );
    // The partial column's hottest lines are the partial boot's c2c table's.
    let hot = run.hottest(&p, Column::Numalab("partial"), 8);
    assert_eq!(hot, Ok(vec!["alloc_peers node 0 list_lock".to_string()]));
    let none = run.hottest(&p, Column::Numalab("sheaves"), 8).unwrap_err();
    assert!(
        none.contains("no c2c table of the numalab det boot"),
        "{none}"
    );
}

#[test]
fn ratio_records_round_trip_and_compare_reads_them() {
    let records = run_records();
    let out = render(&records, &[], "sheaves");
    let r = out
        .records
        .iter()
        .find(|r| r.case == "linux_default/vs/linux/default" && r.cpus == 8)
        .unwrap();
    assert_eq!(
        (r.metric.as_str(), r.kernel.as_str(), r.boot, r.value),
        ("ratio_instructions_per_op", L61, Boot::Det, 0.25)
    );
    let svp7 = out
        .records
        .iter()
        .filter(|r| r.kernel == L7 && r.case == "sheaves/vs/linux")
        .count();
    assert_eq!(svp7, 2 * FIGURES.len());
    // Every ratio record is a valid JSONL line.
    let mut text = String::from("{\"record\":\"header\"}\n");
    for r in &out.records {
        text.push_str(&r.to_json().to_string());
        text.push('\n');
    }
    let (_, back) = read_jsonl(&text).unwrap();
    assert_eq!(back, out.records);
    // A numalab change moves its ratio; compare reports it per Linux kernel, exactly.
    let mut changed = records.clone();
    for x in changed.iter_mut() {
        if x.kernel == "numalab" && x.case == "linux_default" && x.cpus == 8 {
            x.value *= 2.0;
        }
    }
    let again = render(&changed, &[], "sheaves").records;
    let side = |label: &str, records: Vec<BenchRecord>| bench::Run {
        label: label.into(),
        header: None,
        records,
    };
    let c = compare(&side("a", back), &side("b", again));
    let row = c
        .rows
        .iter()
        .find(|r| {
            r.kernel == L61
                && r.case == "linux_default/vs/linux/default"
                && r.metric == "ratio_modelled_cycles_per_op"
        })
        .unwrap();
    assert_eq!(row.verdict, bench::Verdict::ExactChange);
    assert_eq!(row.change_pct(), Some(100.0));
}

#[test]
fn c2c_file_names_name_their_boots() {
    let r = BenchRecord {
        kernel: "linux-7.3.4".into(),
        ..BenchRecord::for_test(["b", "c", "m", "u"], 8, Boot::Det, 0, 1.0)
    };
    let records = [r];
    let of = |n: &str| c2c_boot(n, &records);
    assert_eq!(of("c2c-det-rep0.txt").as_deref(), Some("numalab"));
    assert_eq!(of("c2c-linux7-det.txt").as_deref(), Some("linux-7.3.4"));
    assert_eq!(of("c2c-linux7-det-2.txt").as_deref(), Some("linux-7.3.4"));
    assert_eq!(of("c2c-linux-det-2.txt").as_deref(), Some("linux-6.1"));
    assert_eq!(
        of("c2c-det-partial-rep0.txt").as_deref(),
        Some("numalab [slub.design=partial]")
    );
    assert_eq!(of("c2c-det-nosuch-rep0.txt"), None);
    assert_eq!(of("c2c-icount-rep0.txt"), None);
    assert_eq!(of("c2c-linux-icount.txt"), None);
    assert_eq!(of("c2c-linux-detour.txt"), None);
    assert_eq!(of("det.log"), None);
    let files = vec![
        ("c2c-det-rep0.txt".to_string(), "A".to_string()),
        ("c2c-tsc-rep0.txt".to_string(), "B".to_string()),
    ];
    assert_eq!(
        c2c_of_folder(&files, &records),
        [("numalab".to_string(), "A".to_string())]
    );
}
