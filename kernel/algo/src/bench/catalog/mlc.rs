//! Catalog entry of `latency_matrix`, the in-kernel Intel MLC (kernel/src/bench/latency_matrix.rs):
//! its cases are one per cell of the DRAM matrix (`dram_I_J`: a CPU of node I chasing memory of
//! node J), one per cell of the c2c matrix (`c2c_I_J`: a line modified by a CPU of node I read
//! by a CPU of node J) and the cache levels `l1`, `l2`, `llc`. The cells are listed for nodes
//! 0..[`CELL_NODES`]; which of them a boot prints depends on its topology (a row per node with
//! CPUs, a column per node with memory), so every case is `sometimes`.

use super::{Baseline, Boot, Boots, Case, Cases, Designs, Experiment, Headline, Required};

/// Nodes the catalog lists cells for: a machine with more nodes skips the cells of nodes at
/// or above this (the experiment says which).
pub const CELL_NODES: usize = 8;

/// The boots it prints in: icount (one CPU: node 0's row and the levels), det and tsc.
const BOOTS: Boots = Boots::ICOUNT.and(Boots::DET).and(Boots::TSC);
/// The c2c cells need two CPUs: not in the one-CPU icount boot.
const C2C_BOOTS: Boots = Boots::DET.and(Boots::TSC);

const fn cell(name: &'static str, boots: Boots) -> Case {
    Case {
        name,
        boots,
        always: false,
    }
}

/// `PREFIX_I_0 .. PREFIX_I_7` for one row I.
macro_rules! row {
    ($prefix:literal, $boots:expr, $i:literal) => {
        [
            cell(concat!($prefix, "_", $i, "_0"), $boots),
            cell(concat!($prefix, "_", $i, "_1"), $boots),
            cell(concat!($prefix, "_", $i, "_2"), $boots),
            cell(concat!($prefix, "_", $i, "_3"), $boots),
            cell(concat!($prefix, "_", $i, "_4"), $boots),
            cell(concat!($prefix, "_", $i, "_5"), $boots),
            cell(concat!($prefix, "_", $i, "_6"), $boots),
            cell(concat!($prefix, "_", $i, "_7"), $boots),
        ]
    };
}

/// The rows 0..7 of a matrix, flattened, then the three levels.
macro_rules! cases {
    ($(($prefix:literal, $boots:expr)),*) => {{
        const ROWS: [[[Case; CELL_NODES]; CELL_NODES]; 2] = [$([
            row!($prefix, $boots, "0"),
            row!($prefix, $boots, "1"),
            row!($prefix, $boots, "2"),
            row!($prefix, $boots, "3"),
            row!($prefix, $boots, "4"),
            row!($prefix, $boots, "5"),
            row!($prefix, $boots, "6"),
            row!($prefix, $boots, "7"),
        ]),*];
        const ALL: [Case; 2 * CELL_NODES * CELL_NODES + 3] = {
            let mut out = [cell("l1", BOOTS); 2 * CELL_NODES * CELL_NODES + 3];
            out[1] = cell("l2", BOOTS);
            out[2] = cell("llc", BOOTS);
            let mut k = 0;
            while k < 2 * CELL_NODES * CELL_NODES {
                let m = k / (CELL_NODES * CELL_NODES);
                let i = (k / CELL_NODES) % CELL_NODES;
                out[3 + k] = ROWS[m][i][k % CELL_NODES];
                k += 1;
            }
            out
        };
        &ALL
    }};
}

/// kernel/src/bench/latency_matrix.rs: MLC's idle latency matrix, c2c matrix and cache
/// levels as dependent pointer chases, each cell its own trace region; per cell the loads
/// and the instructions (icount, det: exact) or ns per load (tsc: a trend).
pub const LATENCY_MATRIX: Experiment = Experiment {
    name: "latency_matrix",
    cases: cases!(("dram", BOOTS), ("c2c", C2C_BOOTS)),
    baseline: Baseline::Case("l1"),
    boots: BOOTS,
    numa_only: false,
    designs: Designs::NoSlab,
    required: &[
        Required {
            cases: Cases::Any,
            metrics: &["loads", "instructions", "instructions_per_load"],
            boot: Boot::Icount,
        },
        Required {
            cases: Cases::Any,
            metrics: &["loads"],
            boot: Boot::Det,
        },
        Required {
            cases: Cases::Any,
            metrics: &["loads", "ns_per_load"],
            boot: Boot::Tsc,
        },
    ],
    seeds: &[],
    headline: Headline::Value {
        metric: "instructions_per_load",
        case: "l1",
        boot: Boot::Icount,
    },
    twin: None,
};

/// The case name of cell (`row`, `col`) of matrix `prefix` (`dram` or `c2c`), if the catalog
/// lists it.
pub fn cell_case(prefix: &str, row: usize, col: usize) -> Option<&'static str> {
    LATENCY_MATRIX.cases.iter().map(|c| c.name).find(|n| {
        n.strip_prefix(prefix)
            .and_then(|r| r.strip_prefix('_'))
            .and_then(|r| r.split_once('_'))
            .is_some_and(|(a, b)| a.parse() == Ok(row) && b.parse() == Ok(col))
    })
}
