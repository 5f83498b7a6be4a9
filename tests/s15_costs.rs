//! Layer 15: the cost models end to end (docs/costs.md). The in-kernel MLC
//! (`latency_matrix`) runs under the trace plugin on each shipped preset's own topology, with
//! the preset as the cost model (`bench --icount --smoke --trace mem --cost-model P --topology
//! P --set bench=latency_matrix`): every DRAM and c2c cell's modelled ns per load must be the
//! cost model's own figure within 2%, each cache level within 5%, and each cell's loads served
//! where it measures (boot/src/trace/mlc_table.rs). The same with a cost model of MLC's raw text
//! written here (`--cost-model FILE`), and a malformed one exits 2 before anything boots.

use numalab_boot::bench::Boot;
use numalab_boot::run::BootRun;
use numalab_boot::trace::mlc_table::{self, Kind};
use std::path::PathBuf;

/// `bench --icount --smoke --trace mem --set bench=latency_matrix --topology TOPO
/// --cost-model MODEL`: its traced boots (icount and det).
fn latency_matrix(topology: &str, model: &str) -> Vec<BootRun> {
    numalab::bench_boots(&format!(
        "--icount --smoke --trace mem --set bench=latency_matrix --topology {topology} --cost-model {model}"
    ))
}

/// Every traced boot passed its check; the det boot measured every DRAM cell (CPU nodes x
/// memory nodes), `c2c` cells (at least `c2c` of them) and the three levels. Returns the det
/// boot's tables.
fn check(runs: &[BootRun], cpu_nodes: usize, mem_nodes: usize, c2c: usize) -> String {
    let mut det_text = None;
    for r in runs {
        assert!(r.outcome.passed(), "{}", r.outcome.failure_report());
        let t = r.trace.as_ref().expect("a traced boot");
        let m = t.mlc.as_ref().expect("latency_matrix's tables");
        assert!(m.failures.is_empty(), "{}", m.text);
        if r.boot == Boot::Det {
            let cells = mlc_table::cells(&r.outcome.boot_log);
            let count = |f: fn(&Kind) -> bool| cells.iter().filter(|c| f(&c.kind)).count();
            assert_eq!(
                count(|k| matches!(k, Kind::Dram { .. })),
                cpu_nodes * mem_nodes,
                "{}",
                m.text
            );
            assert!(
                count(|k| matches!(k, Kind::C2c { .. })) >= c2c,
                "{}",
                m.text
            );
            assert_eq!(count(|k| matches!(k, Kind::Level(_))), 3, "{}", m.text);
            det_text = Some(m.text.clone());
        }
    }
    det_text.expect("a det boot")
}

/// Slow (a bench run per preset): `./qemu-run.sh test --slow` and CI run it. By hand:
/// `cargo test --test qemu s15_ -- --ignored`.
#[test]
#[ignore]
fn s15_latency_matrix_reproduces_every_preset() {
    // (preset, CPU nodes, memory nodes): one vCPU per node, so no c2c diagonal.
    let presets = [
        ("cascadelake-2s", 2, 2),
        ("genoa-9224-nps2", 4, 4),
        ("genoa-9224-cxl", 4, 5),
        ("gnr-6980p-snc3", 6, 6),
    ];
    for (p, cpu, mem) in presets {
        let text = check(&latency_matrix(p, p), cpu, mem, cpu * (cpu - 1));
        assert!(text.contains(&format!("cost model {p}")), "{text}");
        println!("{text}");
    }
}

fn cost_dir() -> PathBuf {
    let d = numalab_boot::build::image::repo_root()
        .join("target")
        .join("cost-tests");
    std::fs::create_dir_all(&d).expect("target/cost-tests");
    d
}

/// MLC's raw output for a 2-node machine, figures of our own (not a preset's).
const HAND: &str = concat!(
    "Intel(R) Memory Latency Checker - v3.11\n",
    "Measuring idle latencies for random access (in ns)...\n",
    "\t\tNuma node\n",
    "Numa node\t     0\t     1\n",
    "       0\t  90.0\t 160.0\n",
    "       1\t 170.0\t  95.0\n",
    "\n",
    "Measuring cache-to-cache transfer latency (in ns)...\n",
    "Local Socket L2->L2 HIT  latency\t60.0\n",
    "Local Socket L2->L2 HITM latency\t62.0\n",
    "Remote Socket L2->L2 HITM latency (data address homed in writer socket)\n",
    "\t\t\tReader Numa Node\n",
    "Writer Numa Node     0\t     1\n",
    "            0\t     -\t 130.0\n",
    "            1\t 140.0\t     -\n",
);

#[test]
#[ignore]
fn s15_a_hand_written_mlc_text_works_the_same() {
    let path = cost_dir().join("hand-2node.mlc");
    std::fs::write(&path, HAND).expect("write the cost model");
    let runs = latency_matrix("cascadelake-2s", path.to_str().unwrap());
    let text = check(&runs, 2, 2, 2);
    assert!(text.contains("cost model hand-2node"), "{text}");
    // The model's own figures, in MLC's layout, and numalab's beside them.
    for figure in ["90.0", "160.0", "170.0", "95.0", "130.0", "140.0"] {
        assert!(text.contains(figure), "no {figure}:\n{text}");
    }
}

#[test]
fn s15_a_malformed_mlc_text_exits_2() {
    // A row one entry short: refused before anything is built or booted, naming its line.
    let bad = HAND.replace("       1\t 170.0\t  95.0\n", "       1\t 170.0\n");
    assert_ne!(
        bad, HAND,
        "the malformed text must differ from the good one"
    );
    let path = cost_dir().join("malformed.mlc");
    std::fs::write(&path, bad).expect("write the cost model");
    let (status, _, err) = numalab::qemu_run_sh(&[
        "bench",
        "--icount",
        "--smoke",
        "--trace",
        "mem",
        "--topology",
        "cascadelake-2s",
        "--cost-model",
        path.to_str().unwrap(),
        "--set",
        "bench=latency_matrix",
    ]);
    assert_eq!(status, Some(2), "{err}");
    assert!(err.contains("line 6"), "{err}");
}
