//! End to end: output paths refused before anything is built or booted,
//! with nothing written: a `--log` naming the `--machine` source or another input, or in a
//! folder that does not exist; an `--out` that cannot be made (under /proc); `--hugepages` on
//! a folder that is not a hugetlbfs mount; a `--cost-model` that is a FIFO or a device.

use super::outputs::snapshot;
use super::script::{qemu_run, refused_in, scratch};
use std::process::Command;

/// A two-node numactl -H text.
const NUMACTL: &str = "available: 2 nodes (0-1)\nnode 0 cpus: 0 1\nnode 0 size: 1024 MB\n\
node 0 free: 900 MB\nnode 1 cpus: 2 3\nnode 1 size: 1024 MB\nnode 1 free: 900 MB\n\
node distances:\nnode   0   1\n  0:  10  21\n  1:  21  10\n";

#[test]
fn a_log_over_an_input_or_in_a_missing_folder_is_refused_and_nothing_written() {
    let d = scratch("log-paths");
    std::fs::write(d.join("box.numactl"), NUMACTL).unwrap();
    std::fs::create_dir_all(d.join("tables")).unwrap();
    let before = snapshot(&d);
    let m = [
        "--machine",
        "box.numactl",
        "--suite",
        "test",
        "--timeout",
        "5",
    ];
    let with = |extra: &[&'static str]| -> Vec<&str> { m.iter().chain(extra).copied().collect() };
    let cases: Vec<(&str, Vec<&str>, &str)> = vec![
        (
            "--log the --machine source",
            with(&["--log", "box.numactl"]),
            "is the --machine source",
        ),
        (
            "--log the --machine source spelt ./",
            with(&["--log", "./tables/../box.numactl"]),
            "is the --machine source",
        ),
        (
            "--log in a missing folder",
            with(&["--log", "nope/run.log"]),
            "does not exist",
        ),
        ("--log a folder", with(&["--log", "tables"]), "is a folder"),
        (
            "--log under /proc",
            vec!["--suite", "test", "--log", "/proc/numalab.log"],
            "cannot write in /proc",
        ),
        (
            "--log in a missing folder, soak",
            vec!["soak", "--short", "--log", "nope/soak.log"],
            "does not exist",
        ),
    ];
    for (label, args, want) in cases {
        refused_in(&d, label, &args, want);
    }
    assert_eq!(snapshot(&d), before, "something was written");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn an_out_that_cannot_be_made_and_hugepages_off_hugetlbfs_are_refused() {
    let d = scratch("out-proc");
    let before = snapshot(&d);
    for (label, args) in [
        (
            "bench --out /proc/x",
            vec!["bench", "--smoke", "--out", "/proc/numalab-out"],
        ),
        (
            "bench --out /proc",
            vec!["bench", "--smoke", "--out", "/proc"],
        ),
        (
            "sweep --out /proc/x",
            vec!["sweep", "--out", "/proc/numalab-out", "--", "--smoke"],
        ),
    ] {
        refused_in(&d, label, &args, "cannot be written");
    }
    std::fs::create_dir_all(d.join("huge")).unwrap();
    for args in [
        vec!["--suite", "test", "--hugepages", "huge"],
        vec!["--suite", "test", "--accel", "kvm", "--hugepages", "huge"],
        vec!["bench", "--smoke", "--hugepages", "huge"],
    ] {
        let line = refused_in(
            &d,
            "--hugepages on a plain folder",
            &args,
            "not a hugetlbfs mount",
        );
        assert!(
            line.contains(&d.join("huge").display().to_string()),
            "{line}"
        );
    }
    refused_in(
        &d,
        "--hugepages missing",
        &["--suite", "test", "--hugepages", "nope"],
        "No such file",
    );
    std::fs::remove_dir(d.join("huge")).unwrap();
    assert_eq!(snapshot(&d), before, "something was written");
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_cost_model_that_is_a_fifo_or_a_device_is_refused_at_once() {
    let d = scratch("cost-fifo");
    let fifo = d.join("fifo.mlc");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    for (label, model) in [("a FIFO", "fifo.mlc"), ("a device", "/dev/zero")] {
        refused_in(
            &d,
            &format!("--cost-model {label}"),
            &["bench", "--trace", "mem", "--cost-model", model],
            "not a regular file",
        );
    }
    // The removed --trace-latency is refused by the parser whatever it names: never opened.
    let (out, _) = qemu_run(
        &d,
        &["bench", "--trace", "mem", "--trace-latency", "fifo.mlc"],
    );
    assert_eq!(out.status.code(), Some(2));
    let _ = std::fs::remove_dir_all(&d);
}
