//! Host tests of the sweep: planning the jobs (cross product, names, command lines, sh
//! quoting, refusals before anything runs), the joblog, and merging (variants, repetitions,
//! the revision check, the files written).

use super::parallel::{read_joblog, Ended};
use super::*;
use crate::bench::{parse_log, tables, Boot};
use crate::cli::{self, Axis, Request};
use serde_json::{json, Value};

fn axis(key: &str, values: &[&str]) -> Axis {
    Axis {
        key: key.into(),
        values: values.iter().map(|v| v.to_string()).collect(),
    }
}

fn words(s: &str) -> Vec<String> {
    s.split_whitespace().map(String::from).collect()
}

#[test]
fn the_jobs_are_the_cross_product_in_order() {
    let jobs = plan(
        &words("4node 2node"),
        &[axis("slub.design", &["partial", "sheaves"])],
        2,
        &words("--smoke --set bench=clock_overhead"),
    )
    .unwrap();
    let names: Vec<&str> = jobs.iter().map(|j| j.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "01-4node-slub.design=partial-r0",
            "02-4node-slub.design=partial-r1",
            "03-4node-slub.design=sheaves-r0",
            "04-4node-slub.design=sheaves-r1",
            "05-2node-slub.design=partial-r0",
            "06-2node-slub.design=partial-r1",
            "07-2node-slub.design=sheaves-r0",
            "08-2node-slub.design=sheaves-r1",
        ]
    );
    // Two axes multiply; one repetition leaves the -rN off.
    let jobs = plan(
        &words("4node"),
        &[
            axis("slub.design", &["partial", "sheaves"]),
            axis("frame.pcp", &["0", "1"]),
        ],
        1,
        &[],
    )
    .unwrap();
    let sets: Vec<String> = jobs.iter().map(|j| j.sets.join(" ")).collect();
    assert_eq!(
        sets,
        [
            "slub.design=partial frame.pcp=0",
            "slub.design=partial frame.pcp=1",
            "slub.design=sheaves frame.pcp=0",
            "slub.design=sheaves frame.pcp=1",
        ]
    );
    assert_eq!(jobs[3].name, "04-4node-slub.design=sheaves-frame.pcp=1");
}

#[test]
fn a_job_line_runs_bench_with_its_own_out_folder() {
    let jobs = plan(
        &words("2node"),
        &[axis("slub.design", &["partial"])],
        1,
        &words("--smoke --set bench=clock_overhead"),
    )
    .unwrap();
    let line = jobs[0].command_line(Path::new("/src/numalab"), Path::new("/res/s1"));
    assert_eq!(
        line,
        "cd /src/numalab && mkdir -p /res/s1/jobs/01-2node-slub.design=partial && ./qemu-run.sh bench --topology 2node --set slub.design=partial --out /res/s1/jobs/01-2node-slub.design=partial --smoke --set bench=clock_overhead > /res/s1/jobs/01-2node-slub.design=partial/bench.out 2>&1"
    );
}

#[test]
fn quoting_survives_sh() {
    let odd = [
        "plain",
        "two words",
        "it's",
        "$HOME",
        "a;b&&c|d",
        "",
        "back\\slash",
        "*",
    ];
    let quoted: Vec<String> = odd.iter().map(|w| shell_quote(w)).collect();
    assert_eq!(quoted[0], "plain");
    assert_eq!(quoted[2], r"'it'\''s'");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("printf '%s\\n' {}", quoted.join(" ")))
        .output()
        .expect("sh runs");
    let back: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(String::from)
        .collect();
    assert_eq!(back, odd);
    // A checkout path with a space and bench words with spaces stay whole in a job line.
    let jobs = plan(
        &words("4node"),
        &[],
        1,
        &[
            "--smoke".into(),
            "--kernel".into(),
            "both".into(),
            "--linux-append".into(),
            "init_on_alloc=0 quiet".into(),
        ],
    )
    .unwrap();
    let line = jobs[0].command_line(Path::new("/my src/numalab"), Path::new("/r"));
    assert!(line.starts_with("cd '/my src/numalab' && "), "{line}");
    assert!(
        line.contains("--linux-append 'init_on_alloc=0 quiet'"),
        "{line}"
    );
}

fn sweep_error(args: &str) -> String {
    match cli::parse(words(&format!("sweep {args}"))) {
        Ok(Request::Sweep(o)) => {
            plan(&o.topologies(), &o.axes, o.reps, &o.bench_args).expect_err("planned a bad sweep")
        }
        Ok(other) => panic!("not a sweep: {other:?}"),
        Err(e) => {
            assert_eq!(e.exit_code(), 2, "{e}");
            e.to_string()
        }
    }
}

#[test]
fn bad_sweeps_are_refused_before_anything_runs() {
    // A typo in an axis key is the --set check's: the closest key and what it accepts.
    let e = sweep_error("--axis slub.desing=partial,sheaves -- --smoke");
    assert!(e.contains("unknown kernel option 'slub.desing'"), "{e}");
    assert!(e.contains("slub.design"), "{e}");
    let e = sweep_error("--axis slub.design=partial,sheavs -- --smoke");
    assert!(e.contains("sheavs"), "{e}");
    assert!(sweep_error("--axis slub.design=partial,,sheaves").contains("empty value"));
    assert!(sweep_error("--axis slub.design=partial,partial").contains("given twice"));
    let e = sweep_error("--axis slub.design=partial --axis slub.design=sheaves");
    assert!(e.contains("--axis slub.design given twice"), "{e}");
    assert!(sweep_error("--topology 4node,5node").contains("unknown topology '5node'"));
    assert!(sweep_error("--topology 4node,4node").contains("given twice"));
    assert!(sweep_error("--reps 0").contains("--reps"));
    assert!(sweep_error("--repo /x").contains("--emit-jobs"));
    // Bench arguments: the sweep's own options, a --set of an axis key, and whatever bench
    // itself refuses (named with the job it would have run).
    let e = sweep_error("-- --smoke --topology 2node");
    assert!(e.contains("--topology is the sweep's own"), "{e}");
    assert!(sweep_error("-- --out=/tmp/x").contains("--out is the sweep's own"));
    let e = sweep_error("--axis slub.design=partial -- --set slub.design=sheaves");
    assert!(e.contains("slub.design is an axis of the sweep"), "{e}");
    let e = sweep_error("-- --smok");
    assert!(e.contains("job 01-4node") && e.contains("--smok"), "{e}");
    let e = sweep_error("-- --set slub.min_partal=3");
    assert!(e.contains("slub.min_partial"), "{e}");
    // After the QEMU arguments' `--`, words are QEMU's, not checked as bench options.
    let ok = cli::parse(words("sweep --topology 2node -- --smoke -- -d int")).unwrap();
    let Request::Sweep(o) = ok else { panic!() };
    assert_eq!(o.bench_args, words("--smoke -- -d int"));
    assert!(plan(&o.topologies(), &o.axes, o.reps, &o.bench_args).is_ok());
}

#[test]
fn the_joblog_says_how_each_job_ended() {
    let log = "Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand\n\
               1\t:\t1764600000.123\t52.301\t0\t0\t0\t0\tcd /r && ./qemu-run.sh bench\n\
               2\tlab2\t1764600000.200\t3.5\t0\t0\t2\t0\tcd /r && x\n\
               3\t:\t1764600001.000\t1.0\t0\t0\t0\t9\tcd /r && y\n";
    assert_eq!(
        read_joblog(log),
        [
            Ended {
                seq: 1,
                host: ":".into(),
                seconds: 52.301,
                exit: 0
            },
            Ended {
                seq: 2,
                host: "lab2".into(),
                seconds: 3.5,
                exit: 2
            },
            Ended {
                seq: 3,
                host: ":".into(),
                seconds: 1.0,
                exit: 137
            },
        ]
    );
}

/// A bench header as results.rs writes it, reduced to what a merge reads.
fn header(topology: &str, sets: &[&str], rev: &str, host: &str) -> Value {
    json!({
        "record": "header", "git_rev": rev, "host": host, "host_cpus": 2, "vcpus": 8,
        "reps": 1, "topology": topology, "oversubscribed": true,
        "options": {"smoke": true, "sets": sets, "firmware": "bios", "extra_qemu_args": [],
                    "smp": null, "mem_mib": null},
    })
}

/// A job folder under a fresh temporary folder, with one JSONL and a run folder with a log.
fn job_dir(root: &Path, name: &str, head: &Value, value: f64) -> PathBuf {
    let dir = root.join(name);
    let stem = "20261201-120000-abc1234";
    std::fs::create_dir_all(dir.join(stem)).unwrap();
    let (records, _) = parse_log(
        &crate::bench::tests::line(
            "clock_overhead",
            "rdtsc",
            "min_ticks_per_read",
            &value.to_string(),
            1,
        ),
        Boot::Tsc,
    );
    assert_eq!(records.len(), 1);
    let mut text = format!("{head}\n");
    for r in &records {
        text.push_str(&format!("{}\n", r.to_json()));
    }
    std::fs::write(dir.join(format!("{stem}.jsonl")), text).unwrap();
    std::fs::write(
        dir.join(stem).join("icount.log"),
        format!("log of {name}\n"),
    )
    .unwrap();
    std::fs::write(dir.join("bench.out"), "numalab: PASS\n").unwrap();
    dir
}

fn temp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("numalab-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn variants_name_what_tells_jobs_apart() {
    let a = header(
        "4node",
        &["bench=clock_overhead", "slub.design=partial"],
        "r",
        "h",
    );
    let b = header(
        "4node",
        &["bench=clock_overhead", "slub.design=sheaves"],
        "r",
        "h",
    );
    let c = header(
        "2node",
        &["bench=clock_overhead", "slub.design=partial"],
        "r",
        "h",
    );
    assert_eq!(
        variants(&[&a, &b, &c]),
        [
            "4node slub.design=partial",
            "4node slub.design=sheaves",
            "2node slub.design=partial"
        ]
    );
    // One job alone, or jobs that differ only by host: the topology names the variant.
    assert_eq!(variants(&[&a]), ["4node"]);
    let mut uefi = a.clone();
    uefi["options"]["firmware"] = json!("uefi");
    uefi["options"]["smp"] = json!(4);
    assert_eq!(variants(&[&a, &uefi]), ["4node bios", "4node smp=4 uefi"]);
}

#[test]
fn merging_keeps_variants_apart_and_repetitions_together() {
    let root = temp("merge");
    let part = ["bench=clock_overhead", "slub.design=partial"];
    let shv = ["bench=clock_overhead", "slub.design=sheaves"];
    let dirs = [
        job_dir(
            &root,
            "01-4node-p-r0",
            &header("4node", &part, "abc1234", "lab1"),
            10.0,
        ),
        job_dir(
            &root,
            "02-4node-p-r1",
            &header("4node", &part, "abc1234", "lab2"),
            12.0,
        ),
        job_dir(
            &root,
            "03-4node-s-r0",
            &header("4node", &shv, "abc1234", "lab1"),
            30.0,
        ),
    ];
    let jobs: Vec<JobResult> = dirs.iter().map(|d| load(d).unwrap()).collect();
    let (head, records, lines) = merged(&jobs, false, "2026-12-01T12:00:00Z", "me").unwrap();
    assert_eq!(head["merged"], "sweep");
    assert_eq!(head["git_rev"], "abc1234");
    assert_eq!(
        head["variants"],
        json!(["4node slub.design=partial", "4node slub.design=sheaves"])
    );
    assert_eq!(head["jobs"][1]["host"], "lab2");
    assert_eq!(head["jobs"][1]["header"]["host"], "lab2");
    assert_eq!(head["jobs"][2]["sets"], json!(shv));
    // The two repetitions of one variant are reps 0 and 1 of one measurement; the other
    // variant's record is its own.
    let got: Vec<(Option<&str>, u32, f64)> = records
        .iter()
        .map(|r| (r.variant.as_deref(), r.rep, r.value))
        .collect();
    assert_eq!(
        got,
        [
            (Some("4node slub.design=partial"), 0, 10.0),
            (Some("4node slub.design=partial"), 1, 12.0),
            (Some("4node slub.design=sheaves"), 0, 30.0),
        ]
    );
    assert_eq!(lines[2]["job"], "03-4node-s-r0");
    assert_eq!(lines[2]["variant"], "4node slub.design=sheaves");
    let t = tables(&records, 2);
    assert!(
        t.contains("== clock_overhead, variant 4node slub.design=partial ("),
        "{t}"
    );
    let row = t
        .lines()
        .skip_while(|l| !l.contains("variant 4node slub.design=partial"))
        .find(|l| l.starts_with("min_ticks_per_read"))
        .unwrap();
    assert_eq!(
        &row.split_whitespace().collect::<Vec<_>>()[4..7],
        ["2", "11", "10..12"]
    );
    // Written: the JSONL reads back with its variants; each job's files under its name.
    let out = root.join("merged");
    let (jsonl, run_dir) = merge::write(&jobs, &head, &lines, &out, "stem").unwrap();
    let (h, back) = crate::bench::read_jsonl(&std::fs::read_to_string(&jsonl).unwrap()).unwrap();
    assert_eq!(h.unwrap()["merged"], "sweep");
    assert_eq!(back, records);
    assert_eq!(
        std::fs::read_to_string(run_dir.join("02-4node-p-r1/icount.log")).unwrap(),
        "log of 02-4node-p-r1\n"
    );
    assert!(run_dir.join("03-4node-s-r0/bench.out").is_file());
    // A second merge into the same --out with the same stem (two merges in one
    // second) stops before writing: the first one's files are kept whole.
    let kept = std::fs::read(&jsonl).unwrap();
    let e = merge::write(&jobs[..1], &head, &lines[..1], &out, "stem").unwrap_err();
    assert!(e.contains("already exists: another merge into"), "{e}");
    assert_eq!(std::fs::read(&jsonl).unwrap(), kept);
    // The command: exit 0, and the merged folder refused as a job folder of a second merge.
    assert_eq!(merge_dirs(&dirs, &root.join("cmd"), false), 0);
    let e = load(&root.join("cmd")).unwrap_err();
    assert!(e.contains("already a merged sweep"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn different_revisions_are_refused_unless_forced() {
    let root = temp("revs");
    let s = ["slub.design=partial"];
    let dirs = [
        job_dir(&root, "a", &header("4node", &s, "abc1234", "lab1"), 1.0),
        job_dir(
            &root,
            "b",
            &header("2node", &s, "def5678-dirty", "lab2"),
            2.0,
        ),
    ];
    let jobs: Vec<JobResult> = dirs.iter().map(|d| load(d).unwrap()).collect();
    let e = merged(&jobs, false, "now", "me").unwrap_err();
    assert!(
        e.contains("different git revisions (abc1234: a; def5678-dirty: b)")
            && e.contains("--force"),
        "{e}"
    );
    assert_eq!(merge_dirs(&dirs, &root.join("out"), false), 2);
    assert!(!root.join("out").exists(), "nothing written when refused");
    let (head, records, _) = merged(&jobs, true, "now", "me").unwrap();
    assert_eq!(
        (head["git_rev"].as_str(), head["forced"].as_bool()),
        (Some("mixed"), Some(true))
    );
    assert_eq!(head["jobs"][1]["git_rev"], "def5678-dirty");
    assert_eq!(records.len(), 2);
    // Not a job folder: one line saying why.
    let e = load(&root).unwrap_err();
    assert!(e.contains("no bench JSONL"), "{e}");
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_failed_job_shows_why_from_its_console() {
    let console = "numalab: bench: icount boot (suite=bench, smoke): -display none\n\
         numalab: run failed: timed out after 1 s\n\
         numalab: QEMU command: qemu-system-x86_64 -display none\n\
         numalab: ---- serial log ----\n\
         numalab: ---- end of serial log ----\n\
         numalab: bench: the icount boot failed\n\
         numalab: bench: host 2 cores, machine 1 vCPUs\n\
         == clock_overhead ==\n\
         numalab: bench: wrote /r/x.jsonl\n\
         numalab: FAIL: 0 measurements from 1 boots (2.3 s)\n";
    assert_eq!(
        failure_lines(console),
        [
            "numalab: run failed: timed out after 1 s",
            "numalab: bench: the icount boot failed",
            "numalab: FAIL: 0 measurements from 1 boots (2.3 s)",
        ]
    );
    // Nothing of the runner's own (cargo could not build it): the end of the console.
    let other: String = (1..=20).map(|i| format!("line {i}\n")).collect();
    let lines = failure_lines(&other);
    assert_eq!(
        (lines.len(), lines[0], lines[14]),
        (15, "line 6", "line 20")
    );
}
