//! Host tests of the 0-day style comparison (compare.rs, compare_text.rs, compare_html.rs),
//! with records built here: noise folded, real moves first, exact changes, one-sided
//! measurements, differing headers, the Linux twin's records, the HTML page.

use super::compare::{compare, Run, Stats, Verdict};
use super::compare_text::render_text;
use super::record::{BenchRecord, Boot};
use serde_json::json;

pub(crate) fn rec(metric: &str, unit: &str, boot: Boot, rep: u32, value: f64) -> BenchRecord {
    BenchRecord::for_test(
        ["slub_list_lock", "linux_default", metric, unit],
        8,
        boot,
        rep,
        value,
    )
}

/// `values` as repetitions 0, 1, ... of a tsc metric.
pub(crate) fn reps(metric: &str, values: &[f64]) -> Vec<BenchRecord> {
    values
        .iter()
        .enumerate()
        .map(|(i, &v)| rec(metric, "ops_per_sec", Boot::Tsc, i as u32, v))
        .collect()
}

fn header(topology: &str, sets: &[&str]) -> serde_json::Value {
    json!({"record": "header", "git_rev": "abc1234", "date": "2026-12-01T10:00:00Z",
           "host": "h", "host_cpus": 2, "vcpus": 8, "topology": topology, "reps": 3,
           "qemu": "QEMU emulator version 7.2.15",
           "options": {"smoke": false, "main_job": false, "reps": 3, "sets": sets,
                       "firmware": "bios", "extra_qemu_args": []}})
}

pub(crate) fn run(label: &str, records: Vec<BenchRecord>) -> Run {
    Run {
        label: label.into(),
        header: Some(header("4node", &["bench=slub_list_lock"])),
        records,
    }
}

/// The row lines of a text report (those with 0-day's `bench.case.metric` name).
fn row_lines(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| l.contains("slub_list_lock.linux_default."))
        .collect()
}

#[test]
fn stddev_is_a_percentage_of_the_mean() {
    let s = Stats::of(&[1.0, 2.0, 3.0]).unwrap();
    assert_eq!(
        (s.n, s.median, s.mean, s.min, s.max),
        (3, 2.0, 2.0, 1.0, 3.0)
    );
    assert!((s.stddev_pct.unwrap() - 50.0).abs() < 1e-9, "{s:?}");
    assert_eq!(Stats::of(&[5.0]).unwrap().stddev_pct, None);
    assert_eq!(Stats::of(&[4.0, 4.0]).unwrap().stddev_pct, Some(0.0));
    assert!(Stats::of(&[]).is_none());
}

#[test]
fn identical_runs_within_spread_fold_into_summary_lines() {
    let mut a = reps("ops_per_cpu", &[100.0, 110.0, 105.0]);
    a.extend(reps("allocations_per_sec", &[50.0, 52.0, 51.0]));
    a.push(rec(
        "list_lock_acquisitions_per_kop",
        "acquisitions",
        Boot::Det,
        0,
        9.5,
    ));
    let mut b = reps("ops_per_cpu", &[104.0, 99.0, 108.0]);
    b.extend(reps("allocations_per_sec", &[51.5, 50.5, 53.0]));
    b.push(rec(
        "list_lock_acquisitions_per_kop",
        "acquisitions",
        Boot::Det,
        0,
        9.5,
    ));
    let c = compare(&run("A", a), &run("B", b));
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    let verdicts: Vec<Verdict> = c.rows.iter().map(|r| r.verdict).collect();
    assert_eq!(
        verdicts,
        [
            Verdict::ExactSame,
            Verdict::WithinSpread,
            Verdict::WithinSpread
        ]
    );
    let text = render_text(&c, false);
    assert!(row_lines(&text).is_empty(), "nothing listed:\n{text}");
    assert!(text.contains("numalab: 2 metrics within spread"), "{text}");
    assert!(
        text.contains("numalab: 1 exact metrics unchanged"),
        "{text}"
    );
    for layout in [
        "%stddev     %change         %stddev",
        "\\          |                \\",
        "base abc1234",
        "new abc1234",
    ] {
        assert!(text.contains(layout), "{layout}:\n{text}");
    }
    // --all lists them, with the overlap mark and both ranges.
    let all = render_text(&c, true);
    let rows = row_lines(&all);
    assert_eq!(rows.len(), 3, "{all}");
    assert!(
        all.contains("100..110 | 99..108  overlap: within noise"),
        "{all}"
    );
}

#[test]
fn a_move_beyond_the_spread_is_listed_first_and_an_exact_change_before_it() {
    let mut a = reps("ops_per_cpu", &[100.0, 110.0, 105.0]);
    a.extend(reps("small_move", &[100.0, 101.0, 102.0]));
    a.extend(reps("big_move", &[100.0, 101.0, 102.0]));
    a.push(rec(
        "list_lock_acquisitions_per_kop",
        "acquisitions",
        Boot::Det,
        0,
        7.0,
    ));
    a.push(rec(
        "instructions_per_pair",
        "instructions",
        Boot::Icount,
        0,
        40.0,
    ));
    let mut b = reps("ops_per_cpu", &[104.0, 99.0, 108.0]);
    b.extend(reps("small_move", &[110.0, 111.0, 112.0]));
    b.extend(reps("big_move", &[150.0, 151.0, 152.0]));
    b.push(rec(
        "list_lock_acquisitions_per_kop",
        "acquisitions",
        Boot::Det,
        0,
        8.0,
    ));
    b.push(rec(
        "instructions_per_pair",
        "instructions",
        Boot::Icount,
        0,
        40.0,
    ));
    let c = compare(&run("A", a), &run("B", b));
    let text = render_text(&c, false);
    let rows = row_lines(&text);
    assert_eq!(rows.len(), 3, "{text}");
    // The exact count changed by one: an exact change, listed first.
    assert!(
        rows[0].contains("list_lock_acquisitions_per_kop")
            && rows[0].contains("+14.3%")
            && rows[0].ends_with("exact"),
        "{text}"
    );
    assert!(rows[0].contains("(8 cpus, det, acquisitions)"), "{text}");
    // Then the host-time moves beyond the spread, the largest first.
    assert!(
        rows[1].contains(".big_move") && rows[1].contains("+49.5%"),
        "{text}"
    );
    assert!(
        rows[2].contains(".small_move") && rows[2].contains("+9.9%"),
        "{text}"
    );
    assert!(rows[1].ends_with("beyond spread"), "{text}");
    assert!(rows[1].contains("± "), "0-day's stddev column: {text}");
    assert!(text.contains("1 metrics within spread"), "{text}");
    assert!(text.contains("1 exact metrics unchanged"), "{text}");
}

#[test]
fn one_sided_and_once_measured_metrics_are_listed_or_summarised() {
    let mut a = reps("ops_per_cpu", &[100.0, 110.0, 105.0]);
    a.push(rec("gone_kib", "kib", Boot::Det, 0, 3.0));
    a.push(rec("once", "ops_per_sec", Boot::Tsc, 0, 10.0));
    let mut b = reps("ops_per_cpu", &[104.0, 99.0, 108.0]);
    b.push(rec("added_kib", "kib", Boot::Det, 0, 4.0));
    b.push(rec("once", "ops_per_sec", Boot::Tsc, 0, 13.0));
    let c = compare(&run("A", a), &run("B", b));
    let text = render_text(&c, false);
    let rows = row_lines(&text);
    assert!(
        rows.iter()
            .any(|l| l.contains(".gone_kib") && l.ends_with("only in base")),
        "{text}"
    );
    assert!(
        rows.iter()
            .any(|l| l.contains(".added_kib") && l.ends_with("only in new")),
        "{text}"
    );
    assert!(
        text.contains(
            "1 metrics of a host-time boot measured once on a side: no spread to judge by \
             (changes +30.0%..+30.0%"
        ),
        "{text}"
    );
}

#[test]
fn differing_headers_are_said_loudly() {
    let a = run("A", reps("ops_per_cpu", &[1.0, 2.0, 3.0]));
    let mut b = run("B", reps("ops_per_cpu", &[1.0, 2.0, 3.0]));
    b.header = Some(header(
        "2x8",
        &["bench=slub_list_lock", "slub.cpu_partial=0"],
    ));
    let c = compare(&a, &b);
    let text = render_text(&c, false);
    assert!(
        text.contains("WARNING: MACHINES DIFFER: topology: 4node -> 2x8"),
        "{text}"
    );
    assert!(
        text.contains(
            "WARNING: OPTIONS DIFFER: sets: bench=slub_list_lock -> bench=slub_list_lock slub.cpu_partial=0"
        ),
        "{text}"
    );
    assert!(!text.contains("KERNELS DIFFER"), "{text}");
    // The facts line names both runs in 0-day's `a/b/c:` form.
    assert!(
        text.contains("\n  h/2/8/4node/7.2.15/bios/")
            && text.contains("\n  base abc1234  2026-12-01T10:00:00Z  A\n"),
        "{text}"
    );
    let mut none = run("C", reps("ops_per_cpu", &[1.0]));
    none.header = None;
    let text = render_text(&compare(&a, &none), false);
    assert!(
        text.contains("WARNING: the new run has no header line"),
        "{text}"
    );
}

#[test]
fn twin_records_compare_like_with_like() {
    let linux = |r: BenchRecord| BenchRecord {
        kernel: "linux-6.1.192".into(),
        ..r
    };
    let numalab_det = rec(
        "instructions_per_pair",
        "instructions",
        Boot::Icount,
        0,
        40.0,
    );
    let a = vec![
        numalab_det.clone(),
        linux(rec(
            "instructions_per_pair",
            "instructions",
            Boot::Icount,
            0,
            90.0,
        )),
    ];
    let b = vec![
        BenchRecord {
            value: 41.0,
            ..numalab_det.clone()
        },
        linux(rec(
            "instructions_per_pair",
            "instructions",
            Boot::Icount,
            0,
            90.0,
        )),
    ];
    let c = compare(&run("A", a.clone()), &run("B", b));
    let text = render_text(&c, false);
    let rows = row_lines(&text);
    // numalab's 40 -> 41, Linux's unchanged: never numalab 40 against Linux's 90.
    assert_eq!(rows.len(), 1, "{text}");
    assert!(rows[0].contains("+2.5%"), "{text}");
    assert!(
        text.contains("linux-6.1.192: 1 exact metrics unchanged"),
        "{text}"
    );
    assert!(
        text.contains("numalab: exact (det, icount): changed (1)"),
        "{text}"
    );
    // A kernel only one side ran is reported, not compared.
    let c = compare(&run("A", a), &run("B", vec![numalab_det]));
    assert_eq!(
        c.lone_kernels,
        vec![("base", "linux-6.1.192".to_string(), 1)]
    );
    let text = render_text(&c, false);
    assert!(
        text.contains("WARNING: kernel linux-6.1.192 only in base (1 records): not compared"),
        "{text}"
    );
    assert!(text.contains("KERNELS DIFFER: record kernels"), "{text}");
}

#[test]
fn a_count_from_a_host_time_boot_says_it_depends_on_the_host() {
    let counts = |vals: &[f64]| -> Vec<BenchRecord> {
        vals.iter()
            .enumerate()
            .map(|(i, &v)| rec("alloc_slab", "slabs", Boot::Tsc, i as u32, v))
            .collect()
    };
    let c = compare(
        &run("A", counts(&[184.0, 186.0, 196.0])),
        &run("B", counts(&[175.0, 179.0, 179.0])),
    );
    let text = render_text(&c, false);
    let rows = row_lines(&text);
    assert_eq!(rows.len(), 1, "{text}");
    assert!(
        rows[0].ends_with("184..196 | 175..179  beyond spread, host-dependent count"),
        "{text}"
    );
}

/// Two replays whose headers alike ("custom (QEMU arguments)") ran on
/// machines of 4 and 2 nodes: said on top, both machines named.
#[test]
fn runs_of_different_machines_say_so_on_top_naming_both() {
    let mut a = run("A", reps("ops_per_cpu", &[1.0, 2.0, 3.0]));
    a.header = Some(header("custom (QEMU arguments)", &["bench=slub_list_lock"]));
    let mut b = a.clone();
    for r in &mut b.records {
        r.nodes = 2;
    }
    a.records.iter_mut().for_each(|r| r.nodes = 4);
    let text = render_text(&compare(&a, &b), true);
    let want = "WARNING: MACHINES DIFFER: nodes: 4 -> 2 (base: custom (QEMU arguments), 8 vCPUs, \
                4 nodes, host h; new: custom (QEMU arguments), 8 vCPUs, 2 nodes, host h)";
    assert!(text.contains(want), "{text}");
    // On top: before the first row.
    assert!(
        text.find(want) < text.find("slub_list_lock.linux_default."),
        "{text}"
    );
}

/// Runs of different experiment sets say on top what only one side has.
#[test]
fn runs_of_different_experiment_sets_say_what_only_one_side_has_on_top() {
    let mut a = reps("ops_per_cpu", &[1.0, 2.0, 3.0]);
    a.push(rec("gone_kib", "kib", Boot::Det, 0, 3.0));
    let mut other = rec("x", "kib", Boot::Det, 0, 1.0);
    other.bench = "vmalloc_scaling".into();
    a.push(other.clone());
    let mut b = reps("ops_per_cpu", &[1.0, 2.0, 3.0]);
    other.bench = "numa_locality".into();
    b.push(other);
    let text = render_text(&compare(&run("A", a), &run("B", b)), false);
    let want = "WARNING: EXPERIMENTS DIFFER: only in base: slub_list_lock (1 of its 2 metrics), \
                vmalloc_scaling (the whole experiment, 1 metrics); only in new: numa_locality \
                (the whole experiment, 1 metrics); those are listed at the end, not compared";
    assert!(text.contains(want), "{text}");
    assert!(
        text.find(want) < text.find("slub_list_lock.linux_default."),
        "{text}"
    );
    // Alike runs: no such line.
    let same = render_text(
        &compare(&run("A", reps("m", &[1.0])), &run("B", reps("m", &[2.0]))),
        false,
    );
    assert!(!same.contains("DIFFER"), "{same}");
}
