//! Layer 10: a sweep end to end. `qemu-run.sh sweep` over 2 topologies x 2 SLUB designs of the
//! smallest benchmark (`--smoke --icount --set bench=clock_overhead`: one one-CPU boot a job),
//! its 4 jobs run by GNU parallel with the local login, merged into one JSONL whose records
//! carry the 4 variants and one run folder with a subfolder per job; and a typo in an axis key
//! refused before anything runs. The jobs' QEMUs take the test process's QEMU slots.

use numalab_boot::bench::read_jsonl;
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Instant;

/// Runs `f` holding `n` of the test process's QEMU slots.
fn with_slots<T>(n: usize, cost: u64, f: impl FnOnce() -> T) -> T {
    if n == 0 {
        f()
    } else {
        numalab::with_qemu_slot(cost, || with_slots(n - 1, cost, f))
    }
}

/// Slow, so `./qemu-run.sh test --slow` (and CI) run it, not the default test command: four bench
/// jobs through GNU parallel, then a merge (docs/testing.md, "Where the time goes"). By hand:
/// `cargo test --test qemu s10_sweep_runs_through_gnu_parallel_and_merges_four_variants --
/// --ignored`.
#[test]
#[ignore]
fn s10_sweep_runs_through_gnu_parallel_and_merges_four_variants() {
    // Built here first, under this process's build lock: the jobs find the kernel and image up
    // to date and only boot them.
    let _ = numalab::image(numalab::Firmware::Bios);
    let out: PathBuf = std::env::temp_dir().join(format!("numalab-s10-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let at_once = numalab::qemu_jobs().min(2);
    let jobs = at_once.to_string();
    let out_s = out.display().to_string();
    let start = Instant::now();
    // The cost of one one-CPU bench boot, held for every QEMU the sweep may run at once.
    let (code, stdout, stderr) = with_slots(at_once, 6, || {
        numalab::qemu_run_sh(&[
            "sweep",
            "--topology",
            "4node,2node",
            "--axis",
            "slub.design=partial,sheaves",
            "--jobs",
            &jobs,
            "--out",
            &out_s,
            "--",
            "--smoke",
            "--icount",
            "--set",
            "bench=clock_overhead",
            "--timeout",
            "240",
        ])
    });
    println!(
        "numalab: the sweep took {:.1} s ({at_once} jobs at once)",
        start.elapsed().as_secs_f64()
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    // GNU parallel ran each job on the local login and logged it.
    let joblog = std::fs::read_to_string(out.join("joblog.tsv")).expect("joblog");
    assert_eq!(joblog.lines().skip(1).count(), 4, "{joblog}");
    assert!(
        joblog
            .lines()
            .skip(1)
            .all(|l| l.split('\t').nth(1) == Some(":")),
        "{joblog}"
    );
    // One merged JSONL beside the jobs, its records in 4 variants.
    let merged: Vec<PathBuf> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    assert_eq!(merged.len(), 1, "{merged:?}");
    let (header, records) = read_jsonl(&std::fs::read_to_string(&merged[0]).unwrap()).unwrap();
    let header = header.expect("header");
    assert_eq!(header["merged"], "sweep");
    assert_eq!(header["jobs"].as_array().map(Vec::len), Some(4));
    let variants: BTreeSet<&str> = records
        .iter()
        .map(|r| r.variant.as_deref().expect("every record has a variant"))
        .collect();
    let want: BTreeSet<&str> = [
        "2node slub.design=partial",
        "2node slub.design=sheaves",
        "4node slub.design=partial",
        "4node slub.design=sheaves",
    ]
    .into();
    assert_eq!(variants, want);
    // Each variant has its own clock_overhead record (one icount boot each), and its table.
    for v in &want {
        assert!(
            records
                .iter()
                .any(|r| r.variant.as_deref() == Some(v) && r.metric == "min_ticks_per_read"),
            "{v}"
        );
        assert!(
            stdout.contains(&format!("== clock_overhead, variant {v} (")),
            "{stdout}"
        );
    }
    // The run folder holds every job's icount log under the job's name.
    let run_dir = merged[0].with_extension("");
    let job_logs = std::fs::read_dir(&run_dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().join("icount.log").is_file())
        })
        .count();
    assert_eq!(job_logs, 4, "{}", run_dir.display());
    // One report of the merged run: a table per variant.
    let html = std::fs::read_to_string(run_dir.join("index.html")).expect("merged report");
    for v in &want {
        assert!(html.contains(&format!("<h3>variant {v}</h3>")), "{v}");
    }
    let _ = std::fs::remove_dir_all(&out);
}

#[test]
fn s10_a_typo_in_an_axis_key_is_refused_before_anything_runs() {
    let (code, out, err) =
        numalab::qemu_run_sh(&["sweep", "--axis", "slub.desing=partial,sheaves"]);
    assert_eq!(code, Some(2), "{out}\n{err}");
    assert!(
        err.contains("unknown kernel option 'slub.desing': did you mean 'slub.design'"),
        "{err}"
    );
}
