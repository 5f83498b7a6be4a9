//! `--cost-model` (docs/costs.md) with hostile files, refused before anything is built or
//! booted: a FIFO (refused at once, never read), a malformed MLC text (its line named), a
//! matrix of another size than the machine, and the removed `--trace-latency`.

use super::script::{qemu_run, refused_in, scratch};
use std::process::Command;

const ROW: &str = "\t80.0\t140.0\n";

fn mlc(rows: &[&str]) -> String {
    let mut s = String::from(
        "Measuring idle latencies for random access (in ns)...\n\t\tNuma node\nNuma node\t0\t1\n",
    );
    for r in rows {
        s.push_str(r);
    }
    s
}

#[test]
fn cost_model_files_are_refused_naming_why() {
    let d = scratch("costs");
    // A FIFO with no writer: reading it would block forever.
    let fifo = d.join("fifo.mlc");
    let made = Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        refused_in(
            &d,
            "a FIFO as the cost model",
            &["bench", "--trace", "mem", "--cost-model", "fifo.mlc"],
            "not a regular file",
        );
    }
    // A missing entry on line 5, a negative one, a word: each named by its line.
    let cases = [
        ("missing", format!("0{ROW}1\t140.0\n")),
        ("negative", format!("0{ROW}1\t-140.0\t80.0\n")),
        ("not a number", format!("0{ROW}1\tabc\t80.0\n")),
    ];
    for (want, rows) in &cases {
        std::fs::write(d.join("bad.mlc"), mlc(&[rows])).unwrap();
        let line = refused_in(
            &d,
            &format!("a cost model with a {want} entry"),
            &["bench", "--trace", "mem", "--cost-model", "bad.mlc"],
            want,
        );
        assert!(line.contains("line 5"), "{line}");
    }
    // A complete 2-node matrix on the default 4-node machine.
    std::fs::write(
        d.join("two.mlc"),
        mlc(&[&format!("0{ROW}"), &format!("1{ROW}")]),
    )
    .unwrap();
    refused_in(
        &d,
        "a 2x2 matrix on a 4-node machine",
        &["bench", "--trace", "mem", "--cost-model", "two.mlc"],
        "2x2",
    );
    // The removed option: clap's refusal (its usage lines follow the error line).
    let (out, _) = qemu_run(
        &d,
        &["bench", "--trace", "mem", "--trace-latency", "two.mlc"],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(out.stdout.is_empty() && !err.contains("panicked"), "{err}");
    assert!(
        err.contains("error: bench: --trace-latency was replaced by --cost-model"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&d);
}
