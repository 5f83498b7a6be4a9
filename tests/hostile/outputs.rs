//! End to end: an output never overwrites, mixes with or lands inside an
//! input; an `--out` naming a file is refused before anything is built; a JSONL holding two
//! runs (two headers, `cat A B`) is refused by compare and merge.

use super::script::{refused_in, scratch};
use std::path::{Path, PathBuf};

/// A bench header as the runner writes it, reduced to what compare and merge read.
pub fn header(host: &str) -> String {
    format!(
        "{{\"record\":\"header\",\"git_rev\":\"abc1234\",\"host\":\"{host}\",\"host_cpus\":2,\
         \"vcpus\":4,\"reps\":1,\"topology\":\"4node\",\"oversubscribed\":false,\"options\":\
         {{\"smoke\":true,\"sets\":[],\"firmware\":\"bios\",\"extra_qemu_args\":[],\"smp\":null,\
         \"mem_mib\":null}}}}\n"
    )
}

/// One measurement record.
pub fn record(value: u32) -> String {
    format!(
        "{{\"bench\":\"b\",\"case\":\"c\",\"metric\":\"m\",\"value\":{value},\"unit\":\"ops\",\
         \"cpus\":1,\"nodes\":4,\"clock\":\"tsc\"}}\n"
    )
}

/// A job folder `root/name` as `bench --out` leaves it: one JSONL and its run folder.
pub fn job(root: &Path, name: &str, value: u32) -> PathBuf {
    let dir = root.join(name);
    let stem = "20261201-120000-abc1234";
    std::fs::create_dir_all(dir.join(stem)).unwrap();
    std::fs::write(
        dir.join(format!("{stem}.jsonl")),
        header(name) + &record(value),
    )
    .unwrap();
    std::fs::write(dir.join(stem).join("tsc.log"), "log\n").unwrap();
    dir
}

/// Every file under `dir` with its contents, and every link with its target (to see that
/// nothing changed).
pub fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let meta = std::fs::symlink_metadata(&p).unwrap();
            if meta.file_type().is_symlink() {
                // A link is its target's name (never followed: it may loop).
                let target = std::fs::read_link(&p).unwrap();
                out.push((p, target.into_os_string().into_encoded_bytes()));
            } else if meta.is_dir() {
                todo.push(p.clone());
                out.push((p, Vec::new()));
            } else {
                let bytes = std::fs::read(&p).unwrap();
                out.push((p, bytes));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn compare_refuses_an_html_output_that_is_one_of_its_inputs() {
    let d = scratch("compare-html");
    std::fs::write(d.join("a.jsonl"), header("a") + &record(1)).unwrap();
    std::fs::write(d.join("b.jsonl"), header("b") + &record(2)).unwrap();
    let before = snapshot(&d);
    for (label, html) in [
        ("--html BASE", "a.jsonl"),
        ("--html NEW spelt ./b.jsonl", "./b.jsonl"),
    ] {
        refused_in(
            &d,
            &format!("bench --compare: {label}"),
            &["bench", "--compare", "a.jsonl", "b.jsonl", "--html", html],
            "is one of the inputs",
        );
    }
    assert_eq!(snapshot(&d), before, "an input changed");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn merge_refuses_an_out_equal_to_or_inside_a_job_folder_and_writes_nothing() {
    let d = scratch("merge-into-input");
    let j1 = job(&d, "j1", 1);
    job(&d, "j2", 2);
    let before = snapshot(&d);
    for (label, out) in [
        ("--out a job folder", "j1".to_string()),
        ("--out inside a job folder", "j1/merged".to_string()),
        (
            "--out a job folder spelt absolutely",
            j1.display().to_string(),
        ),
    ] {
        refused_in(
            &d,
            &format!("merge: {label}"),
            &["merge", "j1", "j2", "--out", &out],
            "inside one of the folders being merged",
        );
    }
    assert_eq!(snapshot(&d), before, "merge wrote something");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_out_that_names_a_file_is_refused_before_any_build() {
    let d = scratch("out-file");
    job(&d, "j1", 1);
    job(&d, "j2", 2);
    std::fs::write(d.join("file"), "keep me\n").unwrap();
    let cases: [(&str, &[&str]); 4] = [
        ("bench --out FILE", &["bench", "--smoke", "--out", "file"]),
        (
            "bench --out FILE/sub",
            &["bench", "--smoke", "--out", "file/sub"],
        ),
        (
            "sweep --out FILE",
            &["sweep", "--out", "file", "--", "--smoke"],
        ),
        ("merge --out FILE", &["merge", "j1", "j2", "--out", "file"]),
    ];
    for (label, args) in cases {
        refused_in(&d, label, args, "is a file, not a folder");
    }
    assert_eq!(
        std::fs::read_to_string(d.join("file")).unwrap(),
        "keep me\n"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_jsonl_holding_two_runs_is_refused_by_compare_and_merge() {
    let d = scratch("two-runs");
    let a = header("a") + &record(1);
    let b = header("b") + &record(2);
    std::fs::write(d.join("a.jsonl"), &a).unwrap();
    std::fs::write(d.join("ab.jsonl"), format!("{a}{b}")).unwrap();
    refused_in(
        &d,
        "bench --compare on cat A B",
        &["bench", "--compare", "ab.jsonl", "a.jsonl"],
        "a second header",
    );
    let j = d.join("j1").join("20261201-120000-abc1234.jsonl");
    std::fs::create_dir_all(j.parent().unwrap()).unwrap();
    std::fs::write(&j, format!("{a}{b}")).unwrap();
    job(&d, "j2", 2);
    refused_in(
        &d,
        "merge of a job whose JSONL holds two runs",
        &["merge", "j1", "j2", "--out", "merged"],
        "a second header",
    );
    assert!(!d.join("merged").exists());
    let _ = std::fs::remove_dir_all(&d);
}
