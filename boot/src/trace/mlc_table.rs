//! `latency_matrix` under `--trace mem`: numalab's modelled idle latency matrix, c2c matrix
//! and cache levels in Intel MLC's own layout, beside the cost model's, with each cell's ratio;
//! and the experiment's check: every matrix cell within 2% of the cost model's, every level
//! within 5%, and the counts showing each chase served where it should be (a DRAM cell under
//! 1% cache hits, a c2c cell's loads HITMs, a level's loads hits of that level).
//!
//! The cells come from the console (kernel/src/bench/latency_matrix.rs): each region's label
//! (`# trace region 0xKEY: latency_matrix CASE cpus 1`), its loads (`# trace ops 0xKEY N`)
//! and the line `# latency_matrix: CASE: cpu C node N memory M: ...` (the chasing CPU, its
//! node, the buffer's node). The modelled ns and the cost model's own figures come through
//! [`MlcModel`], which the cost model implements; the counts from the plugin's output.
//!
//! Wired: `trace::analyse` calls [`report`] with the boot's log, the parsed plugin output and
//! the applied cost model (`model::Modelled` implements [`MlcModel`]); the bench console (and
//! the main job's `--verbose` one) prints [`MlcReport::text`], the run folder's
//! `c2c-BOOT-repN.txt` holds it, and the run exits 1 naming each failing cell when
//! [`MlcReport::failures`] is not empty (run/report.rs). The runner sets `bench.mlc_*` from
//! the cost model whenever the plugin is loaded (run/execute.rs), so the buffers match the
//! caches the plugin models.
//!
//! MLC's layout, as published `mlc --latency_matrix` and `mlc --c2c_latency` runs print it
//! (tab-separated, six-wide columns, `-` where MLC measures nothing):
//!
//! ```text
//! Measuring idle latencies for random access (in ns)...
//!                 Numa node
//! Numa node            0       1
//!        0          78.5   134.8
//! ```

use super::output::{Counters, TraceOutput};
use crate::wire::BootLog;
use numalab_algo::bench::mlc::Level;

/// The experiment's name (its catalog entry).
pub const BENCH: &str = "latency_matrix";
/// A matrix cell may differ from the cost model's by this fraction.
pub const CELL_LIMIT: f64 = 0.02;
/// A cache level may differ by this fraction.
pub const LEVEL_LIMIT: f64 = 0.05;
/// A DRAM cell's loads may hit a cache at most this often; a c2c cell's loads must be HITMs
/// and a level's loads hits of that level at least 1 - this often.
pub const CLASS_LIMIT: f64 = 0.01;

/// What the table needs of the cost model (implemented where the model lives).
pub trait MlcModel {
    /// The cost model's name, printed with every figure.
    fn name(&self) -> String;
    /// A note printed under the tables (e.g. `SLIT-scaled fallback`), if any.
    fn note(&self) -> Option<String>;
    /// Modelled ns of region `key` over all its vCPU rows (None: the plugin did not see it).
    fn region_ns(&self, key: u64) -> Option<f64>;
    /// The model's idle latency from a CPU of `cpu_node` to memory of `mem_node`.
    fn dram_ns(&self, cpu_node: usize, mem_node: usize) -> Option<f64>;
    /// The model's HITM latency, writer on `writer_node`, reader on `reader_node`, the line
    /// homed on `home_node`.
    fn c2c_ns(&self, writer_node: usize, reader_node: usize, home_node: usize) -> Option<f64>;
    /// The model's latency of a hit in `level`.
    fn level_ns(&self, level: Level) -> Option<f64>;
}

/// Which figure a cell is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A CPU of node `row` reads memory of node `col`.
    Dram {
        row: usize,
        col: usize,
    },
    /// A line written by a CPU of node `row`, read by a CPU of node `col`.
    C2c {
        row: usize,
        col: usize,
    },
    Level(Level),
}

impl Kind {
    /// The kind of case `case`, if it is one of the experiment's.
    pub fn of(case: &str) -> Option<Kind> {
        let level = Level::ALL.into_iter().find(|l| l.case() == case);
        if let Some(l) = level {
            return Some(Kind::Level(l));
        }
        let (prefix, rest) = case.split_once('_')?;
        let (a, b) = rest.split_once('_')?;
        let (row, col) = (a.parse().ok()?, b.parse().ok()?);
        match prefix {
            "dram" => Some(Kind::Dram { row, col }),
            "c2c" => Some(Kind::C2c { row, col }),
            _ => None,
        }
    }
}

/// One measured cell of a boot's log.
#[derive(Clone, Debug, PartialEq)]
pub struct Cell {
    pub case: String,
    pub kind: Kind,
    pub key: u64,
    /// The chase's loads (`# trace ops`).
    pub loads: u64,
    /// The buffer's node (a c2c line's home).
    pub memory: usize,
}

/// The cells of `log`: latency_matrix regions with their loads and their cell line.
pub fn cells(log: &BootLog) -> Vec<Cell> {
    let mut memory: Vec<(String, usize)> = Vec::new();
    for rest in log.diagnostics_of(BENCH) {
        let Some((case, rest)) = rest.split_once(": ") else {
            continue;
        };
        let w: Vec<&str> = rest.split_whitespace().collect();
        if let ["cpu", _, "node", _, "memory", m, ..] = w.as_slice() {
            if let Ok(m) = m.trim_end_matches(':').parse() {
                memory.push((case.to_string(), m));
            }
        }
    }
    log.trace
        .regions
        .iter()
        .filter(|r| r.bench == BENCH)
        .filter_map(|r| {
            let kind = Kind::of(&r.case)?;
            let memory = memory.iter().rev().find(|(c, _)| *c == r.case)?.1;
            Some(Cell {
                kind,
                key: r.key,
                loads: r.ops.filter(|&n| n > 0)?,
                memory,
                case: r.case.clone(),
            })
        })
        .collect()
}

/// One cell's figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub cell: Cell,
    /// numalab's modelled ns per load.
    pub ns: Option<f64>,
    /// The cost model's.
    pub model_ns: Option<f64>,
    /// Where the loads were served, as fractions: (the class the cell measures, its share).
    pub served: (&'static str, f64),
}

impl Figure {
    pub fn ratio(&self) -> Option<f64> {
        match (self.ns, self.model_ns) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        }
    }

    fn limit(&self) -> f64 {
        match self.cell.kind {
            Kind::Level(_) => LEVEL_LIMIT,
            _ => CELL_LIMIT,
        }
    }

    /// Why this cell fails the check, if it does.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        let case = &self.cell.case;
        match (self.ns, self.model_ns) {
            (None, _) => out.push(format!(
                "{BENCH}: {case}: the trace has no counts for its region"
            )),
            (_, None) => out.push(format!(
                "{BENCH}: {case}: the cost model has no figure for this cell"
            )),
            (Some(ns), Some(m)) => match self.ratio() {
                None => out.push(format!(
                    "{BENCH}: {case}: the cost model's figure {m} ns is not positive"
                )),
                Some(r) if (r - 1.0).abs() > self.limit() => out.push(format!(
                    "{BENCH}: {case}: numalab {ns:.1} ns against the cost model's {m:.1} ns (ratio {r:.3}, limit {:.0}%)",
                    self.limit() * 100.0
                )),
                Some(_) => {}
            },
        }
        let (class, share) = self.served;
        if share < 1.0 - CLASS_LIMIT {
            out.push(format!(
                "{BENCH}: {case}: {:.2}% of its loads were {class} (at least {:.0}% should be)",
                share * 100.0,
                (1.0 - CLASS_LIMIT) * 100.0
            ));
        }
        out
    }
}

/// The share of `loads` that `c` counts in the class a cell of `kind` measures.
fn served(kind: Kind, c: &Counters, loads: u64) -> (&'static str, f64) {
    let (class, n) = match kind {
        Kind::Dram { .. } => ("DRAM reads", c.get("miss_local") + c.get("miss_remote")),
        Kind::C2c { .. } => ("HITMs", c.hitm()),
        Kind::Level(Level::L1) => ("L1 hits", c.get("hits")),
        Kind::Level(Level::L2) => ("L2 hits", c.get("l2_hits")),
        Kind::Level(Level::Llc) => ("LLC hits", c.get("llc_hits")),
    };
    // The region's few loads besides the chase (its entry and exit) may land anywhere.
    (class, (n.min(loads)) as f64 / loads.max(1) as f64)
}

/// Every cell's figures.
pub fn figures(cells: &[Cell], out: &TraceOutput, model: &dyn MlcModel) -> Vec<Figure> {
    cells
        .iter()
        .map(|cell| {
            let model_ns = match cell.kind {
                Kind::Dram { row, col } => model.dram_ns(row, col),
                Kind::C2c { row, col } => model.c2c_ns(row, col, cell.memory),
                Kind::Level(l) => model.level_ns(l),
            };
            Figure {
                ns: model.region_ns(cell.key).map(|ns| ns / cell.loads as f64),
                model_ns,
                served: served(cell.kind, &out.region_total(cell.key), cell.loads),
                cell: cell.clone(),
            }
        })
        .collect()
}

/// MLC's heads of a node x node table.
pub struct Layout {
    /// The line above the table (`\t\tNuma node`).
    pub across: &'static str,
    /// The start of the column line (`Numa node\t`).
    pub down: &'static str,
    /// The width of a row's node number.
    pub row_width: usize,
}

/// `mlc --latency_matrix`.
pub const IDLE: Layout = Layout {
    across: "\t\tNuma node",
    down: "Numa node\t",
    row_width: 8,
};

/// `mlc --c2c_latency`'s matrices.
pub const C2C: Layout = Layout {
    across: "\t\t\tReader Numa Node",
    down: "Writer Numa Node",
    row_width: 13,
};

/// A node x node table in MLC's layout, filled by `cell(row, col)` (None: `-`, as MLC prints
/// a cell it does not measure).
pub fn matrix(
    layout: &Layout,
    rows: &[usize],
    cols: &[usize],
    cell: &dyn Fn(usize, usize) -> Option<String>,
) -> String {
    let mut s = format!("{}\n{}", layout.across, layout.down);
    for (i, c) in cols.iter().enumerate() {
        s.push_str(&format!("{}{c:>6}", if i == 0 { "" } else { "\t" }));
    }
    s.push('\n');
    for &r in rows {
        s.push_str(&format!("{r:>w$}", w = layout.row_width));
        for &c in cols {
            s.push_str(&format!(
                "\t{:>6}",
                cell(r, c).unwrap_or_else(|| "-".into())
            ));
        }
        s.push('\n');
    }
    s
}

/// The rows and columns of the cells of one matrix, sorted.
fn axes(figs: &[&Figure]) -> (Vec<usize>, Vec<usize>) {
    let mut rows = Vec::new();
    let mut cols = Vec::new();
    for f in figs {
        if let Kind::Dram { row, col } | Kind::C2c { row, col } = f.cell.kind {
            rows.push(row);
            cols.push(col);
        }
    }
    for v in [&mut rows, &mut cols] {
        v.sort_unstable();
        v.dedup();
    }
    (rows, cols)
}

/// One matrix three times: numalab's ns, the cost model's ns, their ratio (`!` past the limit).
fn three(title: &str, layout: &Layout, figs: &[&Figure], model: &dyn MlcModel) -> String {
    let (rows, cols) = axes(figs);
    let at = |r: usize, c: usize| {
        figs.iter().find(|f| {
            matches!(f.cell.kind, Kind::Dram { row, col } | Kind::C2c { row, col } if row == r && col == c)
        })
    };
    let ns = |pick: fn(&Figure) -> Option<f64>| {
        move |r: usize, c: usize| at(r, c).and_then(|f| pick(f)).map(|v| format!("{v:.1}"))
    };
    let mut s = format!("numalab (modelled from the trace's counts):\n{title}\n");
    s.push_str(&matrix(layout, &rows, &cols, &ns(|f| f.ns)));
    s.push_str(&format!("\ncost model {}:\n{title}\n", model.name()));
    s.push_str(&matrix(layout, &rows, &cols, &ns(|f| f.model_ns)));
    s.push_str(&format!(
        "\nnumalab / cost model (limit {:.0}%, ! past it):\n",
        CELL_LIMIT * 100.0
    ));
    let ratio = |r: usize, c: usize| {
        at(r, c).and_then(|f| f.ratio()).map(|x| {
            let mark = if (x - 1.0).abs() > CELL_LIMIT {
                "!"
            } else {
                ""
            };
            format!("{x:.3}{mark}")
        })
    };
    s.push_str(&matrix(layout, &rows, &cols, &ratio));
    s
}

/// The report of one traced boot: the tables, and the check's failures (empty: it passed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MlcReport {
    pub text: String,
    pub failures: Vec<String>,
}

/// The tables and the check for `log`'s latency_matrix cells, or None when it has none.
pub fn report(log: &BootLog, out: &TraceOutput, model: &dyn MlcModel) -> Option<MlcReport> {
    let cells = cells(log);
    if cells.is_empty() {
        return None;
    }
    let figs = figures(&cells, out, model);
    let mut text = format!(
        "== {BENCH}: numalab's modelled latencies in Intel MLC's layout (cost model {}) ==\n",
        model.name()
    );
    let dram: Vec<&Figure> = figs
        .iter()
        .filter(|f| matches!(f.cell.kind, Kind::Dram { .. }))
        .collect();
    if !dram.is_empty() {
        let title = "Measuring idle latencies for random access (in ns)...";
        text.push_str(&three(title, &IDLE, &dram, model));
    }
    let c2c: Vec<&Figure> = figs
        .iter()
        .filter(|f| matches!(f.cell.kind, Kind::C2c { .. }))
        .collect();
    if !c2c.is_empty() {
        let title = "Measuring cache-to-cache transfer latency (in ns)...\n\
                     L2->L2 HITM latency (data address homed in writer's memory node; the \
                     diagonal: writer and reader on one node)";
        text.push('\n');
        text.push_str(&three(title, &C2C, &c2c, model));
    }
    let levels: Vec<&Figure> = figs
        .iter()
        .filter(|f| matches!(f.cell.kind, Kind::Level(_)))
        .collect();
    if !levels.is_empty() {
        text.push_str(&format!(
            "\nCache levels (in ns; limit {:.0}%):\nlevel\tnumalab\t model\t ratio\n",
            LEVEL_LIMIT * 100.0
        ));
        for f in &levels {
            let v = |x: Option<f64>, p: usize| {
                x.map_or_else(|| "-".to_string(), |v| format!("{v:.p$}"))
            };
            text.push_str(&format!(
                "{}\t{:>7}\t{:>6}\t{:>6}\n",
                f.cell.case,
                v(f.ns, 2),
                v(f.model_ns, 2),
                v(f.ratio(), 3)
            ));
        }
    }
    text.push_str("\nWhere each cell's loads were served (the class it measures):\n");
    for f in &figs {
        text.push_str(&format!(
            "{}\t{} loads, {:.2}% {}\n",
            f.cell.case,
            f.cell.loads,
            f.served.1 * 100.0,
            f.served.0
        ));
    }
    // A cell the kernel could not measure is not checked: say which and why.
    for line in log.diagnostics_of(BENCH) {
        if let Some((case, why)) = line.split_once(": skipped: ") {
            text.push_str(&format!("{case}\tnot measured (not checked): {why}\n"));
        }
    }
    for (what, level) in [("matrix cell", false), ("level", true)] {
        let worst = figs
            .iter()
            .filter(|f| matches!(f.cell.kind, Kind::Level(_)) == level)
            .filter_map(|f| f.ratio().map(|r| (f, r)))
            .max_by(|a, b| (a.1 - 1.0).abs().total_cmp(&(b.1 - 1.0).abs()));
        if let Some((f, r)) = worst {
            text.push_str(&format!("worst {what}: {} ratio {r:.4}\n", f.cell.case));
        }
    }
    if let Some(note) = model.note() {
        text.push_str(&format!("({note})\n"));
    }
    let failures: Vec<String> = figs.iter().flat_map(|f| f.problems()).collect();
    text.push_str(&if failures.is_empty() {
        format!("{BENCH}: check passed: every cell within its limit\n")
    } else {
        format!(
            "{BENCH}: check FAILED: {} problems\n{}\n",
            failures.len(),
            failures.join("\n")
        )
    });
    Some(MlcReport { text, failures })
}

#[cfg(test)]
#[path = "mlc_table_tests.rs"]
mod tests;
