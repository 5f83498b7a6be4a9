//! End to end: qemu-run.sh changes into the checkout, yet every relative
//! path a user types is read against the folder the command was run from: topology sources,
//! `--machine`, compare and merge inputs, `--out` and `--html`.

use super::script::{qemu_run, refused_in, scratch};

/// A two-node numactl -H text.
const NUMACTL: &str = "available: 2 nodes (0-1)\nnode 0 cpus: 0 1\nnode 0 size: 1024 MB\n\
node 0 free: 900 MB\nnode 1 cpus: 2 3\nnode 1 size: 1024 MB\nnode 1 free: 900 MB\n\
node distances:\nnode   0   1\n  0:  10  21\n  1:  21  10\n";

#[test]
fn topology_reads_a_relative_source_from_the_callers_folder() {
    let d = scratch("rel-topology");
    std::fs::create_dir_all(d.join("sub")).unwrap();
    std::fs::write(d.join("sub/box.numactl"), NUMACTL).unwrap();
    let (out, secs) = qemu_run(&d, &["topology", "sub/box.numactl"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("  0:  10  21"), "{stdout}");
    println!("hostile: topology sub/box.numactl from another folder: exit 0 in {secs:.3} s");
    // A name only the caller's folder lacks is not found in the checkout either: README.md
    // exists in the checkout, not here.
    refused_in(
        &d,
        "topology README.md (the checkout's, not the caller's)",
        &["topology", "README.md"],
        "No such file",
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn machine_compare_merge_out_and_html_are_read_from_the_callers_folder() {
    let d = scratch("rel-all");
    std::fs::write(
        d.join("bad.numactl"),
        "available: 1 nodes (0)\nnode 0 cpus:\n",
    )
    .unwrap();
    // --machine: the caller's file is read (and refused for its own reason, not "not found").
    refused_in(
        &d,
        "--machine relative",
        &["--machine", "bad.numactl", "--suite", "test"],
        "bad.numactl",
    );
    let line = refused_in(
        &d,
        "--machine relative, missing",
        &["--machine", "nope.numactl", "--suite", "test"],
        "No such file",
    );
    assert!(line.contains(&d.display().to_string()), "{line}");
    // compare: relative inputs and a relative --html, written in the caller's folder.
    let head = "{\"record\":\"header\",\"git_rev\":\"abc1234\"}\n";
    let rec = |v: u32| {
        format!(
            "{{\"bench\":\"b\",\"case\":\"c\",\"metric\":\"m\",\"value\":{v},\"unit\":\"ops\",\
             \"cpus\":1,\"nodes\":4,\"clock\":\"tsc\"}}\n"
        )
    };
    std::fs::write(d.join("a.jsonl"), format!("{head}{}", rec(1))).unwrap();
    std::fs::write(d.join("b.jsonl"), format!("{head}{}", rec(2))).unwrap();
    let (out, secs) = qemu_run(
        &d,
        &[
            "bench",
            "--compare",
            "a.jsonl",
            "b.jsonl",
            "--html",
            "c.html",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        d.join("c.html").is_file(),
        "no c.html in the caller's folder"
    );
    println!(
        "hostile: bench --compare a b --html c.html from another folder: exit 0 in {secs:.3} s"
    );
    // merge: relative job folders and --out (a missing job folder is named as the caller's).
    let line = refused_in(
        &d,
        "merge of relative folders",
        &["merge", "j1", "j2", "--out", "m"],
        "cannot read",
    );
    assert!(line.contains(&d.join("j1").display().to_string()), "{line}");
    let _ = std::fs::remove_dir_all(&d);
}
