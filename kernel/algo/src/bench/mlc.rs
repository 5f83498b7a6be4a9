//! The plan of `latency_matrix` (kernel/src/bench/latency_matrix.rs), the in-kernel Intel MLC:
//! which cells a machine has, how big each buffer is, and why a cell is skipped. Pure, so that
//! the rules are host-tested; the kernel allocates, chases and records.
//!
//! - `dram_I_J`: a CPU of node I (a node with CPUs online) chases a buffer on node J (a node
//!   with memory) of at least 4 x the LLC: a cyclic sweep over more lines than a set has ways
//!   misses every time under LRU.
//! - `l1`, `l2`, `llc`: on the first CPU's memory node, a buffer of half the level (it fits),
//!   at least twice the level below (so the level below never hits under LRU).
//! - `c2c_I_J`: a writer CPU of node I stores to every line of a buffer homed on its memory
//!   node (half its L2: it stays Modified there), then a reader CPU of node J (another CPU
//!   when I == J) chases it.

use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Bytes per chased line.
pub const LINE_BYTES: u64 = 64;
/// A DRAM buffer is at least this many times the LLC.
pub const DRAM_LLC_FACTOR: u64 = 4;

/// The cache sizes the experiment is told (`bench.mlc_*_bytes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSizes {
    pub l1d_bytes: u64,
    pub l2_bytes: u64,
    pub llc_bytes: u64,
}

/// A cache level case.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    L1,
    L2,
    Llc,
}

impl Level {
    pub const ALL: [Level; 3] = [Level::L1, Level::L2, Level::Llc];

    /// Its case name.
    pub fn case(self) -> &'static str {
        match self {
            Level::L1 => "l1",
            Level::L2 => "l2",
            Level::Llc => "llc",
        }
    }
}

/// Rounds `bytes` down to whole lines.
fn lines_of(bytes: u64) -> u64 {
    bytes / LINE_BYTES * LINE_BYTES
}

impl CacheSizes {
    /// The buffer of a level case: half the level, at least twice the level below; or why
    /// the sizes do not allow the case.
    pub fn level_bytes(&self, level: Level) -> Result<u64, String> {
        let (name, size, below) = match level {
            Level::L1 => ("l1d", self.l1d_bytes, None),
            Level::L2 => ("l2", self.l2_bytes, Some(("l1d", self.l1d_bytes))),
            Level::Llc => ("llc", self.llc_bytes, Some(("l2", self.l2_bytes))),
        };
        let bytes = lines_of(size / 2);
        if bytes < LINE_BYTES {
            return Err(format!("{name} of {size} bytes holds no line"));
        }
        if let Some((below_name, below_size)) = below {
            if bytes < 2 * below_size {
                return Err(format!(
                    "half the {name} ({bytes} bytes) is less than twice the {below_name} \
                     ({below_size} bytes): the {below_name} would hit"
                ));
            }
        }
        Ok(bytes)
    }

    /// A DRAM cell's buffer: 4 x the LLC (whole lines).
    pub fn dram_bytes(&self) -> u64 {
        lines_of(self.llc_bytes.saturating_mul(DRAM_LLC_FACTOR))
    }

    /// A c2c cell's buffer: half the L2 (it stays in the writer's L2, Modified).
    pub fn c2c_bytes(&self) -> u64 {
        lines_of(self.l2_bytes / 2).max(LINE_BYTES)
    }
}

/// Blocks of at most `2^max_order` pages of `page_bytes` that hold `bytes`: (order, count),
/// all of one order (the largest needed, so that each block is physically contiguous and
/// spreads its lines evenly over a cache's sets). The buffer uses `bytes` of one block, or
/// `count` whole blocks.
pub fn blocks_for(bytes: u64, page_bytes: u64, max_order: u8) -> (u8, u64) {
    let mut order = 0u8;
    while order < max_order && (page_bytes << order) < bytes {
        order += 1;
    }
    let block = page_bytes << order;
    (order, bytes.div_ceil(block).max(1))
}

/// One node as the plan sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeShape {
    /// CPUs of the node online in this boot.
    pub cpus: usize,
    /// True when the node has memory.
    pub memory: bool,
}

/// Which matrix a cell belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Matrix {
    Dram,
    C2c,
}

impl Matrix {
    pub fn prefix(self) -> &'static str {
        match self {
            Matrix::Dram => "dram",
            Matrix::C2c => "c2c",
        }
    }
}

/// One cell: row (the CPU's node, or the c2c writer's), column (the memory node, or the c2c
/// reader's), and why it is skipped (None: measured).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub matrix: Matrix,
    pub row: usize,
    pub col: usize,
    pub skip: Option<String>,
}

impl Cell {
    /// `dram_I_J` / `c2c_I_J`.
    pub fn case(&self) -> String {
        format!("{}_{}_{}", self.matrix.prefix(), self.row, self.col)
    }
}

/// Every cell of `matrix` on a machine of `nodes` (by node id): rows are nodes with CPUs
/// online; DRAM columns nodes with memory, c2c columns nodes with CPUs online. Cells of
/// nodes at or above `cell_nodes` (the catalog's limit) are skipped, and so are c2c cells
/// with one CPU on the node (I == J) or with fewer than two CPUs online.
pub fn cells(matrix: Matrix, nodes: &[NodeShape], cell_nodes: usize) -> Vec<Cell> {
    let rows: Vec<usize> = (0..nodes.len()).filter(|&n| nodes[n].cpus > 0).collect();
    let cols: Vec<usize> = match matrix {
        Matrix::Dram => (0..nodes.len()).filter(|&n| nodes[n].memory).collect(),
        Matrix::C2c => rows.clone(),
    };
    let online: usize = nodes.iter().map(|n| n.cpus).sum();
    let mut out = Vec::new();
    for &row in &rows {
        for &col in &cols {
            let skip = if row >= cell_nodes || col >= cell_nodes {
                Some(format!(
                    "the catalog lists cells of nodes 0..{} only",
                    cell_nodes.saturating_sub(1)
                ))
            } else if matrix == Matrix::C2c && online < 2 {
                Some(format!("needs two CPUs online, {online} is"))
            } else if matrix == Matrix::C2c && row == col && nodes[row].cpus < 2 {
                Some(format!(
                    "node {row} has one CPU online (a writer and a reader on one node need two)"
                ))
            } else {
                None
            };
            out.push(Cell {
                matrix,
                row,
                col,
                skip,
            });
        }
    }
    out
}

/// Whole passes over `lines` lines that make at least `target` loads (at least one pass).
pub fn passes_for(target: u64, lines: u64) -> u64 {
    target.div_ceil(lines.max(1)).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEFAULT: CacheSizes = CacheSizes {
        l1d_bytes: 48 << 10,
        l2_bytes: 2 << 20,
        llc_bytes: 8 << 20,
    };

    #[test]
    fn level_buffers_fit_their_level_and_overflow_the_one_below() {
        assert_eq!(DEFAULT.level_bytes(Level::L1), Ok(24 << 10));
        assert_eq!(DEFAULT.level_bytes(Level::L2), Ok(1 << 20));
        // Exactly twice the L2: every L2 set sees twice its ways, cyclically: all miss.
        assert_eq!(DEFAULT.level_bytes(Level::Llc), Ok(4 << 20));
        let small_llc = CacheSizes {
            llc_bytes: 6 << 20,
            ..DEFAULT
        };
        let e = small_llc.level_bytes(Level::Llc).unwrap_err();
        assert!(e.contains("less than twice the l2"), "{e}");
        let big_l1 = CacheSizes {
            l1d_bytes: 600 << 10,
            ..DEFAULT
        };
        assert!(big_l1.level_bytes(Level::L2).is_err());
        assert!(big_l1.level_bytes(Level::L1).is_ok());
        let odd = CacheSizes {
            l1d_bytes: 100,
            ..DEFAULT
        };
        assert!(odd.level_bytes(Level::L1).is_err());
        assert_eq!(DEFAULT.dram_bytes(), 32 << 20);
        assert_eq!(DEFAULT.c2c_bytes(), 1 << 20);
    }

    #[test]
    fn blocks_are_of_one_order_and_cover_the_buffer() {
        assert_eq!(blocks_for(24 << 10, 4096, 10), (3, 1));
        assert_eq!(blocks_for(1 << 20, 4096, 10), (8, 1));
        assert_eq!(blocks_for(4 << 20, 4096, 10), (10, 1));
        assert_eq!(blocks_for(32 << 20, 4096, 10), (10, 8));
        assert_eq!(blocks_for((32 << 20) + 1, 4096, 10), (10, 9));
        assert_eq!(blocks_for(64, 4096, 10), (0, 1));
    }

    fn shape(cpus: usize, memory: bool) -> NodeShape {
        NodeShape { cpus, memory }
    }

    fn measured(cells: &[Cell]) -> Vec<String> {
        cells
            .iter()
            .filter(|c| c.skip.is_none())
            .map(|c| c.case())
            .collect()
    }

    #[test]
    fn rows_are_cpu_nodes_and_dram_columns_memory_nodes() {
        // memoryless: node 0 has CPUs and no memory, node 1 both.
        let nodes = [shape(4, false), shape(4, true)];
        assert_eq!(
            measured(&cells(Matrix::Dram, &nodes, 8)),
            ["dram_0_1", "dram_1_1"]
        );
        assert_eq!(
            measured(&cells(Matrix::C2c, &nodes, 8)),
            ["c2c_0_0", "c2c_0_1", "c2c_1_0", "c2c_1_1"]
        );
        // cpuless: node 2 is a column only.
        let nodes = [shape(2, true), shape(2, true), shape(0, true)];
        let dram = measured(&cells(Matrix::Dram, &nodes, 8));
        assert_eq!(dram.len(), 6);
        assert!(dram.contains(&"dram_1_2".into()) && !dram.contains(&"dram_2_0".into()));
        assert_eq!(measured(&cells(Matrix::C2c, &nodes, 8)).len(), 4);
    }

    #[test]
    fn skipped_cells_say_why() {
        // One CPU online (the icount boot): DRAM row 0 only, no c2c cell.
        let nodes = [shape(1, true), shape(0, true)];
        assert_eq!(
            measured(&cells(Matrix::Dram, &nodes, 8)),
            ["dram_0_0", "dram_0_1"]
        );
        let c2c = cells(Matrix::C2c, &nodes, 8);
        assert_eq!(c2c.len(), 1);
        assert!(c2c[0].skip.as_deref().unwrap().contains("two CPUs online"));
        // 8node-2mem: one CPU per node: the diagonal of c2c is skipped.
        let nodes: Vec<NodeShape> = (0..8).map(|i| shape(1, i % 4 == 3)).collect();
        assert_eq!(measured(&cells(Matrix::Dram, &nodes, 8)).len(), 16);
        let c2c = cells(Matrix::C2c, &nodes, 8);
        assert_eq!(measured(&c2c).len(), 56);
        assert!(c2c.iter().filter(|c| c.row == c.col).all(|c| c
            .skip
            .as_deref()
            .unwrap()
            .contains("one CPU online")));
        // Past the catalog's nodes.
        let nodes = [shape(1, true); 3];
        let dram = cells(Matrix::Dram, &nodes, 2);
        assert_eq!(
            measured(&dram),
            ["dram_0_0", "dram_0_1", "dram_1_0", "dram_1_1"]
        );
        assert!(dram[2].skip.as_deref().unwrap().contains("0..1 only"));
    }

    #[test]
    fn passes_cover_the_target() {
        assert_eq!(passes_for(1 << 20, 384), 2731);
        assert_eq!(passes_for(10, 384), 1);
        assert_eq!(passes_for(0, 0), 1);
    }
}
