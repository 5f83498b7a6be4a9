//! Tests of the report on a run folder built here: header facts, machine block, every
//! experiment's section and charts, exact and oversubscribed rows, the Linux twin's records,
//! relative links, proc files, and bad input.

use super::*;
use crate::bench::{BenchRecord, Boot};
use crate::report::svg;
use serde_json::json;

/// A record of `[bench, case, metric, unit]`.
fn rec(what: [&str; 4], cpus: u32, boot: Boot, rep: u32, value: f64) -> BenchRecord {
    BenchRecord::for_test(what, cpus, boot, rep, value)
}

const NUMACTL: &str = "available: 2 nodes (0-1)\nnode 0 cpus: 0 1\nnode 0 size: 500 MB\n\
node 0 free: 463 MB\nnode 1 cpus: 2 3\nnode 1 size: 500 MB\nnode 1 free: 470 MB\n\
node distances:\nnode   0   1\n  0:  10  20\n  1:  20  10\n";

/// A run folder `DIR/20260101-000000-abc/` with its JSONL beside it.
fn run_dir(tag: &str, records: &[BenchRecord], twin: bool) -> (PathBuf, PathBuf, PathBuf) {
    let base = std::env::temp_dir().join(format!("numalab-html-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let run = base.join("20260101-000000-abc");
    std::fs::create_dir_all(run.join("proc")).unwrap();
    std::fs::create_dir_all(run.join("sys/kernel/slab/kmalloc-64")).unwrap();
    std::fs::write(run.join("sys/kernel/slab/kmalloc-64/objects"), "12 N0=12\n").unwrap();
    std::fs::write(
        run.join("proc/slabinfo"),
        "slabinfo - version: 2.1\n# name <active_objs> <num_objs>\nkmalloc-64 12 64\n",
    )
    .unwrap();
    std::fs::write(
        run.join("tsc.log"),
        format!("numalab banner\n{NUMACTL}KTAP version 1\n"),
    )
    .unwrap();
    std::fs::write(run.join("det.log"), "no machine here\n").unwrap();
    let mut head = json!({
        "record": "header", "command": ["numalab-boot", "bench", "--smoke", "--set", "bench=a b"],
        "date": "2026-01-01T00:00:00Z", "git_rev": "abc", "host": "box<1>", "host_cpus": 2,
        "vcpus": 8, "oversubscribed": true, "reps": 3, "qemu": "QEMU emulator version 7.2",
        "topology": "4node",
        "options": {"smoke": true, "main_job": false, "reps": 3, "sets": ["bench=slub_list_lock"],
                    "firmware": "bios", "extra_qemu_args": []},
        "boots": [{"boot": "tsc", "rep": 0, "topology": "4node", "vcpus": 8,
                   "kernel_cmdline": "suite=bench", "qemu_args": ["-smp", "8"],
                   "verdict": "Pass", "seconds": 12.5,
                   "cost_model": "genoa-9224-nps2, remote HITM: SLIT-scaled fallback"}],
    });
    if twin {
        head["kernel"] = json!("both");
        head["linux_boots"] = json!([{"boot": "icount", "release": "6.1.0-1", "verdict": "Fail",
            "kernel_cmdline": "console=ttyS0", "qemu_args": [], "seconds": 3.0}]);
    }
    let mut text = format!("{head}\n");
    for r in records {
        text.push_str(&format!("{}\n", r.to_json()));
    }
    let jsonl = base.join("20260101-000000-abc.jsonl");
    std::fs::write(&jsonl, text).unwrap();
    (base, run, jsonl)
}

fn sample() -> Vec<BenchRecord> {
    const L: &str = "slub_list_lock";
    let ops = |case| [L, case, "ops_per_cpu", "ops_per_sec"];
    let acq = |case| [L, case, "list_lock_acquisitions_per_kop", "acquisitions"];
    let mut rs = Vec::new();
    for (i, v) in [100.0, 90.0, 120.0].into_iter().enumerate() {
        let i = i as u32;
        rs.push(rec(ops("linux_default"), 2, Boot::Tsc, i, v));
        rs.push(rec(ops("linux_default"), 8, Boot::Tsc, i, v / 2.0));
        rs.push(rec(ops("partial_64"), 2, Boot::Tsc, i, v * 2.0));
        rs.push(rec(ops("partial_64"), 8, Boot::Tsc, i, v));
    }
    for (cpus, v) in [(2, 9.5), (8, 11.25)] {
        rs.push(rec(acq("linux_default"), cpus, Boot::Det, 0, v));
        rs.push(rec(acq("partial_64"), cpus, Boot::Det, 0, v / 2.0));
    }
    let clock = [
        "clock_overhead",
        "rdtsc",
        "min_ticks_per_read",
        "instructions",
    ];
    rs.push(rec(clock, 1, Boot::Icount, 0, 4.0));
    rs
}

#[test]
fn report_shows_the_run_machine_experiments_charts_and_files() {
    let (base, run, jsonl) = run_dir("full", &sample(), false);
    // The chart files as write_results writes them, so that the report links them.
    svg::scaling_charts(&sample(), &run, 2).unwrap();
    let out = write_report(&jsonl, &run).unwrap();
    assert_eq!(out, run.join("index.html"));
    let html = std::fs::read_to_string(&out).unwrap();
    // Self-contained: no script, nothing fetched.
    assert!(
        !html.contains("<script") && !html.contains("src=\"http"),
        "{html}"
    );
    assert!(!html.contains("<link "), "{html}");
    // What ran: the command (quoted where needed), revision, date, host with its cores.
    assert!(
        html.contains("numalab-boot bench --smoke --set &#39;bench=a b&#39;"),
        "{html}"
    );
    assert!(html.contains("<code>abc</code>") && html.contains("2026-01-01T00:00:00Z"));
    assert!(html.contains("box&lt;1&gt;, 2 cores"), "{html}");
    assert!(
        html.contains("8 vCPUs") && html.contains("OVERSUBSCRIBED"),
        "{html}"
    );
    // The machine: the numactl block of tsc.log, linked.
    assert!(
        html.contains("node   0   1\n  0:  10  20\n  1:  20  10</pre>"),
        "{html}"
    );
    assert!(html.contains("<a href=\"tsc.log\">tsc.log</a>"), "{html}");
    // Every experiment's section, its charts inline with the experiment's class.
    for bench in ["slub_list_lock", "clock_overhead"] {
        assert!(
            html.contains(&format!(
                "<section class=\"experiment\" id=\"exp-{bench}\">"
            )),
            "{bench}"
        );
    }
    assert_eq!(
        html.matches("class=\"chart exp-slub_list_lock\"").count(),
        2,
        "{html}"
    );
    assert!(
        html.contains("id=\"chart-slub_list_lock-ops_per_cpu-tsc\""),
        "{html}"
    );
    assert!(
        !html.contains("exp-clock_overhead\" width"),
        "one CPU count: no chart"
    );
    // Rows: median and min..max over 3 reps, ratio; det counts exact, contention oversubscribed.
    let row = |needle: &str| -> &str {
        html.lines()
            .find(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no row {needle} in {html}"))
    };
    let p64 = row("<td>partial_64</td><td class=\"num\">8</td><td>tsc</td>");
    assert!(
        p64.contains(">100<") && p64.contains(">90..120<") && p64.contains(">2.00x<"),
        "{p64}"
    );
    assert!(
        p64.contains("class=\"oversubscribed\"") && p64.contains("8 vCPUs &gt; 2 cores"),
        "{p64}"
    );
    let p64_2 = row("<td>partial_64</td><td class=\"num\">2</td><td>tsc</td>");
    assert!(!p64_2.contains("OVERSUBSCRIBED"), "{p64_2}");
    let det = row("<td>partial_64</td><td class=\"num\">8</td><td>det</td>");
    assert!(
        det.contains("<tr class=\"exact\">") && det.contains("tag exact"),
        "{det}"
    );
    assert!(det.contains(">5.63<") || det.contains(">5.625<"), "{det}");
    assert!(
        det.contains(">0.50x<") && det.contains(">acquisitions<"),
        "{det}"
    );
    // Files: the JSONL beside the folder, each log and chart, proc files shown, sysfs linked.
    assert!(
        html.contains("<a href=\"../20260101-000000-abc.jsonl\">"),
        "{html}"
    );
    assert!(html.contains("<a href=\"det.log\">det.log</a>"), "{html}");
    assert!(
        html.contains("<a href=\"slub_list_lock-ops_per_cpu-tsc.svg\">"),
        "{html}"
    );
    assert!(
        html.contains("<a href=\"sys/kernel/slab/\">sys/kernel/slab/</a>"),
        "{html}"
    );
    assert!(
        html.contains("# name &lt;active_objs&gt; &lt;num_objs&gt;\nkmalloc-64 12 64"),
        "{html}"
    );
    assert!(html.contains("<h3 id=\"proc-slabinfo\">"), "{html}");
    assert!(
        !html.contains("kmalloc-64/objects"),
        "the sysfs tree is linked, not listed"
    );
    // The seeds table has its rows, linked to the experiments this run has, only those.
    assert!(!html.contains("href=\"#exp-memoryless_node\""), "{html}");
    assert!(
        html.contains("<table class=\"seeds\">") && html.contains("href=\"#exp-slub_list_lock\"")
    );
    // The seeds table names the cost model of its modelled rows (docs/costs.md).
    assert!(
        html.contains(
            "<p>modelled rows: cost model genoa-9224-nps2, remote HITM: SLIT-scaled fallback</p>"
        ),
        "{html}"
    );
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn twin_records_get_a_kernel_column() {
    let mut rs = sample();
    let linux: Vec<BenchRecord> = rs
        .iter()
        .filter(|r| r.boot == Boot::Tsc)
        .map(|r| BenchRecord {
            kernel: "linux-6.1.0-1".into(),
            ..r.clone()
        })
        .collect();
    rs.extend(linux);
    let (base, run, jsonl) = run_dir("twin", &rs, true);
    let html = std::fs::read_to_string(write_report(&jsonl, &run).unwrap()).unwrap();
    assert!(html.contains("<th>kernel</th>"), "{html}");
    assert!(
        html.contains("<td>partial_64</td><td>linux-6.1.0-1</td>"),
        "{html}"
    );
    assert!(
        html.contains("<td>partial_64</td><td>numalab</td>"),
        "{html}"
    );
    assert!(
        html.contains("partial_64 (linux-6.1.0-1)"),
        "chart series by kernel: {html}"
    );
    assert!(
        html.contains("linux 6.1.0-1") && html.contains("tag fail"),
        "{html}"
    );
    assert!(html.contains("--kernel both"), "{html}");
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn bad_input_is_one_error() {
    let (base, run, jsonl) = run_dir("bad", &sample(), false);
    std::fs::write(&jsonl, "{\"bench\":1}\n").unwrap();
    let e = write_report(&jsonl, &run).unwrap_err();
    assert!(
        e.contains("not a result file") && e.contains("line 1"),
        "{e}"
    );
    let e = write_report(&base.join("missing.jsonl"), &run).unwrap_err();
    assert!(
        e.starts_with("cannot read ") && e.contains("missing.jsonl"),
        "{e}"
    );
    std::fs::write(&jsonl, "").unwrap();
    let e = write_report(&jsonl, &base.join("no-such-dir")).unwrap_err();
    assert!(e.contains("no-such-dir"), "{e}");
    std::fs::remove_dir_all(&base).unwrap();
}

#[test]
fn numactl_block_and_shell_line() {
    let log = format!("x\n{NUMACTL}y\n");
    let b = numactl_block(&log).unwrap();
    assert_eq!(b.len(), 11);
    assert_eq!(b[0], "available: 2 nodes (0-1)");
    assert_eq!(b[10], "  1:  20  10");
    // Cut short: none.
    assert_eq!(
        numactl_block("available: 2 nodes (0-1)\nnode 0 cpus: 0\n"),
        None
    );
    assert_eq!(numactl_block("nothing"), None);
    let argv: Vec<serde_json::Value> = ["a", "b c", "it's", ""].iter().map(|s| json!(s)).collect();
    assert_eq!(shell_line(&argv), "a 'b c' 'it'\\''s' ''");
}
