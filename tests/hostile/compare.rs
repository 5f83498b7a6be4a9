//! End to end: `bench --compare` of runs of different machines or of
//! different experiment sets says what differs on top (both machines named, what is only in
//! base and only in new), never compares them as if alike.

use super::script::{qemu_run, scratch};

/// A header as the runner writes it, reduced to what compare reads.
fn header(topology: &str, vcpus: u32) -> String {
    format!(
        "{{\"record\":\"header\",\"git_rev\":\"abc1234\",\"host\":\"h\",\"host_cpus\":2,\
         \"vcpus\":{vcpus},\"reps\":1,\"topology\":\"{topology}\",\"options\":{{\"smoke\":true,\
         \"sets\":[],\"firmware\":\"bios\",\"extra_qemu_args\":[]}}}}\n"
    )
}

fn record(bench: &str, metric: &str, nodes: u32, value: u32) -> String {
    format!(
        "{{\"bench\":\"{bench}\",\"case\":\"c\",\"metric\":\"{metric}\",\"value\":{value},\
         \"unit\":\"kib\",\"cpus\":1,\"nodes\":{nodes},\"clock\":\"icount\"}}\n"
    )
}

#[test]
fn compare_of_unlike_runs_says_what_differs_on_top() {
    let d = scratch("unlike");
    std::fs::write(
        d.join("a.jsonl"),
        header("custom (QEMU arguments)", 4) + &record("b1", "m", 4, 1) + &record("b2", "m", 4, 1),
    )
    .unwrap();
    std::fs::write(
        d.join("b.jsonl"),
        header("custom (QEMU arguments)", 4) + &record("b1", "m", 2, 2) + &record("b3", "m", 2, 1),
    )
    .unwrap();
    let (out, secs) = qemu_run(&d, &["bench", "--compare", "a.jsonl", "b.jsonl", "--all"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first_row = stdout.find("b1.c.m").expect("no row");
    for want in [
        "WARNING: MACHINES DIFFER: nodes: 4 -> 2 (base: custom (QEMU arguments), 4 vCPUs, 4 \
         nodes, host h; new: custom (QEMU arguments), 4 vCPUs, 2 nodes, host h)",
        "WARNING: EXPERIMENTS DIFFER: only in base: b2 (the whole experiment, 1 metrics); only \
         in new: b3 (the whole experiment, 1 metrics)",
    ] {
        let at = stdout
            .find(want)
            .unwrap_or_else(|| panic!("no {want:?} in:\n{stdout}"));
        assert!(at < first_row, "not on top:\n{stdout}");
    }
    println!("hostile: bench --compare of unlike runs: exit 0 in {secs:.3} s");
    let _ = std::fs::remove_dir_all(&d);
}
