//! Tests of the MLC-layout table and the latency_matrix check: the layout against published
//! MLC output, the cells read from a console log, and each limit of the check.

use super::*;
use std::collections::BTreeMap;

/// A cost model of fixed figures; the modelled ns of region KEY are `region[KEY]`.
struct Fixed {
    region: BTreeMap<u64, f64>,
    dram: [[f64; 2]; 2],
    c2c: [[f64; 2]; 2],
    levels: [f64; 3],
}

impl MlcModel for Fixed {
    fn name(&self) -> String {
        "fixed".into()
    }
    fn note(&self) -> Option<String> {
        Some("SLIT-scaled fallback".into())
    }
    fn region_ns(&self, key: u64) -> Option<f64> {
        self.region.get(&key).copied()
    }
    fn dram_ns(&self, cpu_node: usize, mem_node: usize) -> Option<f64> {
        self.dram.get(cpu_node)?.get(mem_node).copied()
    }
    fn c2c_ns(&self, writer_node: usize, reader_node: usize, _home: usize) -> Option<f64> {
        self.c2c.get(writer_node)?.get(reader_node).copied()
    }
    fn level_ns(&self, level: Level) -> Option<f64> {
        Some(self.levels[level as usize])
    }
}

#[test]
fn the_idle_matrix_has_mlcs_layout() {
    // Published `mlc` v3.9a output of a 2-socket Xeon 8269CY (the cells as MLC printed them,
    // without its trailing tabs).
    let published = "\t\tNuma node\nNuma node\t     0\t     1\n       0\t  78.5\t 134.8\n       1\t 133.7\t  79.2\n";
    let v = [[78.5, 134.8], [133.7, 79.2]];
    let got = matrix(&IDLE, &[0, 1], &[0, 1], &|r, c| {
        Some(format!("{:.1}", v[r][c]))
    });
    assert_eq!(got, published);
    // `mlc --c2c_latency`: a cell MLC does not measure is `-`.
    let published = "\t\t\tReader Numa Node\nWriter Numa Node     0\t     1\n            0\t     -\t 112.8\n            1\t 112.7\t     -\n";
    let v = [[0.0, 112.8], [112.7, 0.0]];
    let got = matrix(&C2C, &[0, 1], &[0, 1], &|r, c| {
        (r != c).then(|| format!("{:.1}", v[r][c]))
    });
    assert_eq!(got, published);
}

/// A det boot's console: two DRAM cells, one c2c cell, the l1 level.
const LOG: &str = "# latency_matrix: l1: cpu 0 node 0 memory 0: chases 24576 bytes (384 lines)\n\
    # trace region 0x10: latency_matrix l1 cpus 1\n\
    # trace ops 0x10 1000\n\
    # latency_matrix: dram_0_0: cpu 0 node 0 memory 0: chases 33554432 bytes (524288 lines)\n\
    # trace region 0x11: latency_matrix dram_0_0 cpus 1\n\
    # trace ops 0x11 1000\n\
    # latency_matrix: dram_0_1: cpu 0 node 0 memory 1: chases 33554432 bytes (524288 lines)\n\
    # trace region 0x12: latency_matrix dram_0_1 cpus 1\n\
    # trace ops 0x12 1000\n\
    # latency_matrix: c2c_1_0: cpu 0 node 0 memory 1: reads 1048576 bytes (16384 lines) written by cpu 2 node 1, 2 rounds\n\
    # trace region 0x13: latency_matrix c2c_1_0 cpus 1\n\
    # trace ops 0x13 1000\n\
    # latency_matrix: c2c_0_1: skipped: no reader\n\
    # trace region 0x14: slub_list_lock partial_64 cpus 2\n";

fn counts(pairs: &[(&str, u64)]) -> Counters {
    Counters(pairs.iter().map(|(k, v)| (k.to_string(), *v)).collect())
}

/// The plugin's counts of LOG's regions: each chase served where it should be.
fn served_right() -> TraceOutput {
    let mut out = TraceOutput::default();
    out.regions.insert((0x10, 0), counts(&[("hits", 1000)]));
    out.regions
        .insert((0x11, 0), counts(&[("miss_local", 1000), ("hits", 3)]));
    out.regions
        .insert((0x12, 0), counts(&[("miss_remote", 1000)]));
    out.regions
        .insert((0x13, 0), counts(&[("hitm_remote", 1000)]));
    out
}

/// A model whose regions reproduce its own figures scaled by `err` (1.0: exactly).
fn model(err: [f64; 4]) -> Fixed {
    let dram = [[80.0, 130.0], [130.0, 80.0]];
    let c2c = [[45.0, 110.0], [112.0, 45.0]];
    let levels = [1.5, 5.0, 20.0];
    let region = [
        (0x10, levels[0] * err[0]),
        (0x11, dram[0][0] * err[1]),
        (0x12, dram[0][1] * err[2]),
        (0x13, c2c[1][0] * err[3]),
    ]
    .into_iter()
    .map(|(k, ns)| (k, ns * 1000.0))
    .collect();
    Fixed {
        region,
        dram,
        c2c,
        levels,
    }
}

#[test]
fn cells_come_from_the_labels_the_ops_and_the_cell_lines() {
    let c = cells(&crate::wire::BootLog::parse(LOG));
    let cases: Vec<&str> = c.iter().map(|c| c.case.as_str()).collect();
    assert_eq!(cases, ["l1", "dram_0_0", "dram_0_1", "c2c_1_0"]);
    assert_eq!(c[2].kind, Kind::Dram { row: 0, col: 1 });
    assert_eq!(c[2].memory, 1);
    assert_eq!(c[3].kind, Kind::C2c { row: 1, col: 0 });
    assert_eq!(c[3].memory, 1);
    assert_eq!(c[0].kind, Kind::Level(Level::L1));
    assert!(c.iter().all(|c| c.loads == 1000));
    assert_eq!(Kind::of("dram_x_1"), None);
    assert_eq!(Kind::of("partial_64"), None);
    assert!(report(
        &crate::wire::BootLog::parse("# trace region 0x1: other x cpus 1\n"),
        &served_right(),
        &model([1.0; 4])
    )
    .is_none());
}

#[test]
fn a_model_that_reproduces_itself_passes_and_prints_mlcs_tables() {
    let r = report(
        &crate::wire::BootLog::parse(LOG),
        &served_right(),
        &model([1.0; 4]),
    )
    .unwrap();
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    let t = &r.text;
    assert!(t.contains("Measuring idle latencies for random access (in ns)...\n\t\tNuma node\nNuma node\t     0\t     1\n       0\t  80.0\t 130.0\n"), "{t}");
    assert!(
        t.contains("Writer Numa Node     0\n            1\t 112.0\n"),
        "{t}"
    );
    assert!(t.contains("l1\t   1.50\t  1.50\t 1.000\n"), "{t}");
    assert!(
        t.contains("cost model fixed") && t.contains("SLIT-scaled fallback"),
        "{t}"
    );
    assert!(t.contains("check passed"), "{t}");
    assert!(
        t.contains("c2c_0_1\tnot measured (not checked): no reader\n"),
        "{t}"
    );
}

#[test]
fn a_cell_past_two_percent_fails_a_level_past_five() {
    // 1.9% off in a DRAM cell and 4.9% in a level: within the limits.
    let r = report(
        &crate::wire::BootLog::parse(LOG),
        &served_right(),
        &model([1.049, 1.019, 0.981, 1.0]),
    )
    .unwrap();
    assert!(r.failures.is_empty(), "{:?}", r.failures);
    // 2.1% off in a DRAM cell, a c2c cell, and 5.1% in a level: each fails, named.
    let r = report(
        &crate::wire::BootLog::parse(LOG),
        &served_right(),
        &model([1.051, 1.0, 1.021, 0.979]),
    )
    .unwrap();
    assert_eq!(r.failures.len(), 3, "{:?}", r.failures);
    assert!(r.failures[0].contains("l1:") && r.failures[0].contains("limit 5%"));
    assert!(r.failures[1].contains("dram_0_1:") && r.failures[1].contains("limit 2%"));
    assert!(r.failures[2].contains("c2c_1_0:"));
    assert!(r.text.contains("1.021!"), "{}", r.text);
    assert!(
        r.text.contains("worst matrix cell: c2c_1_0 ratio 0.9790\n"),
        "{}",
        r.text
    );
    assert!(
        r.text.contains("worst level: l1 ratio 1.0510\n"),
        "{}",
        r.text
    );
    assert!(r.text.contains("check FAILED: 3 problems"), "{}", r.text);
}

#[test]
fn loads_served_by_the_wrong_class_fail() {
    // A DRAM cell whose loads hit a cache 2% of the time (a buffer below 4x the LLC).
    let mut out = served_right();
    out.regions
        .insert((0x12, 0), counts(&[("miss_remote", 980), ("llc_hits", 20)]));
    // A c2c cell whose reader found clean lines (no HITM).
    out.regions.insert((0x13, 0), counts(&[("llc_hits", 1000)]));
    let r = report(&crate::wire::BootLog::parse(LOG), &out, &model([1.0; 4])).unwrap();
    assert_eq!(r.failures.len(), 2, "{:?}", r.failures);
    assert!(r.failures[0].contains("dram_0_1: 98.00% of its loads were DRAM reads"));
    assert!(r.failures[1].contains("c2c_1_0: 0.00% of its loads were HITMs"));
}

#[test]
fn a_cell_without_counts_or_model_figure_fails() {
    let mut m = model([1.0; 4]);
    m.region.remove(&0x11);
    m.c2c = [[0.0; 2]; 2];
    let mut log = LOG.to_string();
    log.push_str("# latency_matrix: dram_1_1: cpu 2 node 1 memory 1: chases 8 bytes (1 lines)\n# trace region 0x15: latency_matrix dram_1_1 cpus 1\n# trace ops 0x15 1000\n");
    let mut out = served_right();
    out.regions
        .insert((0x15, 2), counts(&[("miss_local", 1000)]));
    m.region.insert(0x15, 80.0 * 1000.0);
    m.dram = [[80.0, 130.0], [130.0, 80.0]];
    let r = report(&crate::wire::BootLog::parse(&log), &out, &m).unwrap();
    assert!(
        r.failures
            .iter()
            .any(|f| f.contains("dram_0_0: the trace has no counts")),
        "{:?}",
        r.failures
    );
    // A cost model figure of 0 has no ratio: the cell fails rather than passing unseen.
    assert!(
        r.failures.iter().any(|f| f.contains("c2c_1_0")),
        "{:?}",
        r.failures
    );
    assert!(
        !r.failures.iter().any(|f| f.contains("dram_1_1")),
        "{:?}",
        r.failures
    );
}
