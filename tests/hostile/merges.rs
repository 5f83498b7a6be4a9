//! (merge and --emit-jobs), end to end: `sweep --emit-jobs` naming one of
//! the sweep's inputs is refused with the input untouched; merge meets a JSONL cut mid-line, a
//! symbolic link loop inside a job folder, an empty job folder and jobs of two revisions, and
//! each gets one line naming the file, exit 2, nothing written.

use super::outputs::{header, job, record, snapshot};
use super::script::{refused_in, scratch};
use numalab_boot::build::image::repo_root;

#[test]
fn emit_jobs_over_an_input_is_refused_and_the_input_kept() {
    let d = scratch("emit-over-input");
    std::fs::write(d.join("my-qemu"), "keep me\n").unwrap();
    let before = snapshot(&d);
    refused_in(
        &d,
        "--emit-jobs naming a BENCH ARGS input",
        &[
            "sweep",
            "--emit-jobs",
            "my-qemu",
            "--",
            "--smoke",
            "--qemu",
            "./my-qemu",
        ],
        "an input the BENCH ARGS name",
    );
    let readme = repo_root().join("README.md");
    let kept = std::fs::read(&readme).unwrap();
    refused_in(
        &d,
        "--emit-jobs naming a file of the checkout",
        &[
            "sweep",
            "--emit-jobs",
            &readme.display().to_string(),
            "--",
            "--smoke",
        ],
        "is a file of the checkout",
    );
    assert_eq!(std::fs::read(&readme).unwrap(), kept, "README.md changed");
    assert_eq!(snapshot(&d), before, "an input changed");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn merge_names_the_file_of_a_cut_jsonl_a_link_loop_an_empty_job_and_two_revisions() {
    let d = scratch("merge-damaged");
    job(&d, "good", 1);
    // A JSONL cut mid-line (the job killed while writing).
    let cut = job(&d, "cut", 2);
    let f = cut.join("20261201-120000-abc1234.jsonl");
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, &text[..text.len() - 10]).unwrap();
    // A link loop in a job's run folder.
    let looped = job(&d, "looped", 3);
    std::os::unix::fs::symlink(".", looped.join("20261201-120000-abc1234/loop")).unwrap();
    // An empty job folder, and a job of another revision.
    std::fs::create_dir_all(d.join("empty")).unwrap();
    let other = d.join("other");
    std::fs::create_dir_all(other.join("20261201-120000-def5678")).unwrap();
    std::fs::write(
        other.join("20261201-120000-def5678.jsonl"),
        header("other").replace("abc1234", "def5678") + &record(4),
    )
    .unwrap();
    let before = snapshot(&d);
    for (label, bad, want) in [
        ("a JSONL cut mid-line", "cut", "line 2 is cut short"),
        (
            "a symbolic link loop",
            "looped",
            "loop: a symbolic link to a folder",
        ),
        ("an empty job folder", "empty", "no bench JSONL"),
        ("two revisions", "other", "different git revisions"),
    ] {
        let line = refused_in(
            &d,
            &format!("merge of {label}"),
            &["merge", "good", bad, "--out", "merged"],
            want,
        );
        assert!(line.contains(bad), "{line}");
    }
    assert_eq!(snapshot(&d), before, "merge wrote something");
    let _ = std::fs::remove_dir_all(&d);
}

/// : a relative path inside `-- BENCH ARGS` means the
/// caller's folder, as every other path typed: the job list carries it absolute, since the
/// jobs run in the checkout.
#[test]
fn relative_paths_in_bench_args_are_the_callers() {
    let d = scratch("sweep-rel");
    std::fs::create_dir_all(d.join("models")).unwrap();
    std::fs::copy(
        repo_root().join("costs/cascadelake-2s.mlc"),
        d.join("models/box.mlc"),
    )
    .unwrap();
    let (out, _) = super::script::qemu_run(
        &d,
        &[
            "sweep",
            "--emit-jobs",
            "jobs.txt",
            "--",
            "--smoke",
            "--trace",
            "mem",
            "--cost-model",
            "models/box.mlc",
            "--qemu=bin/qemu",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let jobs = std::fs::read_to_string(d.join("jobs.txt")).unwrap();
    let model = d.join("models/box.mlc").display().to_string();
    let qemu = d.join("bin/qemu").display().to_string();
    assert!(jobs.contains(&format!(" --cost-model {model} ")), "{jobs}");
    assert!(jobs.contains(&format!(" --qemu={qemu} ")), "{jobs}");
    let _ = std::fs::remove_dir_all(&d);
}

/// A bad option inside `-- BENCH ARGS` is refused before any job runs (or
/// is written to a job list), not once per job: a cost model that is missing or a FIFO.
#[test]
fn a_bad_path_in_bench_args_is_refused_before_any_job() {
    let d = scratch("sweep-bad-arg");
    let fifo = d.join("fifo.mlc");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for (label, model, want) in [
        ("missing", "nope.mlc", "not a readable file"),
        ("a FIFO", "fifo.mlc", "not a regular file"),
    ] {
        refused_in(
            &d,
            &format!("sweep with a {label} cost model"),
            &[
                "sweep",
                "--emit-jobs",
                "jobs.txt",
                "--",
                "--smoke",
                "--trace",
                "mem",
                "--cost-model",
                model,
            ],
            want,
        );
    }
    assert!(!d.join("jobs.txt").exists(), "a job list was written");
    let _ = std::fs::remove_dir_all(&d);
}
