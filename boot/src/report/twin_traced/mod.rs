//! The traced side-by-side tables of `bench --kernel all --trace mem`:
//! from the det boots' trace records of numalab (each SLUB design present) and of Linux 6.1 and
//! 7.x, one table per experiment, case pairing and CPU count (the figures of [`FIGURES`] and the
//! hottest lines of each boot's c2c text), and the verdict: numalab partial against Linux 6.1,
//! numalab sheaves against 7.x, the ratio numalab/Linux of every figure and whether each case
//! pair moves the same way in both kernels. Pure: [`render`] gives the console text, the HTML
//! fragment and the ratio records for the JSONL (`--compare` reads them as any records). A leaf
//! (bench records in, text out) so that the runner (run/twin/traced.rs) and the HTML report
//! (html/twin.rs) both use it.

pub mod hot;
mod render;
#[cfg(test)]
mod tests;
mod verdict;

pub use verdict::{
    agreement, change, direction, ratio_case, ratio_records, Dir, Move, MoveVerdict, Ratio,
    Verdict, FLAT, MOVES,
};

use crate::bench::catalog::{self, Designs};
use crate::bench::{BenchRecord, Boot, Spread};
use crate::build::linux_kernel::LinuxKernel;

/// The figures of each table, in row order (the trace's per-region metrics).
pub const FIGURES: [&str; 7] = [
    "instructions_per_op",
    "remote_access_fraction",
    "hitm_local_per_kop",
    "hitm_remote_per_kop",
    "invalidations_per_kop",
    "modelled_cycles_per_op",
    "mean_turn_instructions",
];

/// Hottest lines named per column.
pub const HOT_LINES: usize = 3;

/// One table's pairing: numalab's case (None: the case is the column's SLUB design, as in
/// sheaves_vs_partial) against Linux's (None: Linux has no counterpart).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pairing {
    pub bench: &'static str,
    pub case: Option<&'static str>,
    pub linux: Option<&'static str>,
}

const fn pair(bench: &'static str, case: &'static str, linux: Option<&'static str>) -> Pairing {
    Pairing {
        bench,
        case: Some(case),
        linux,
    }
}

/// The contract's pairings (docs/linux-twin.md, "The traced side by side and the verdict"), in table order.
pub const PAIRINGS: &[Pairing] = &[
    pair("slub_list_lock", "linux_default", Some("linux/default")),
    pair("slub_list_lock", "partial_64", Some("linux/partial_64")),
    pair("slub_list_lock", "order_4", Some("linux/order_4")),
    pair(
        "slub_list_lock",
        "cpu_partial_x2",
        Some("linux/cpu_partial_x2"),
    ),
    pair("numa_locality", "default", Some("linux")),
    pair("numa_locality", "prefer_local", None),
    Pairing {
        bench: "sheaves_vs_partial",
        case: None,
        linux: Some("linux"),
    },
    pair("vmalloc_scaling", "global", Some("linux")),
    pair("vmalloc_scaling", "cpu", Some("linux")),
    pair("vmalloc_scaling", "numa", Some("linux")),
];

/// A column: numalab in one SLUB design (`""`: an experiment without slab caches), or a Linux.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    Numalab(&'static str),
    Linux(LinuxKernel),
}

/// Why a Linux figure of a numalab case without a Linux case is missing.
pub const NO_COUNTERPART: &str = "no Linux counterpart";

/// Why a figure is missing (the footnote of its "-").
pub type Missing = String;

/// A figure, or why not.
pub type Cell = Result<f64, Missing>;

/// One table: an experiment's pairing at one CPU count.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub pairing: Pairing,
    pub cpus: u32,
    /// (column, its title).
    pub columns: Vec<(Column, String)>,
    /// (figure, one cell per column).
    pub rows: Vec<(&'static str, Vec<Cell>)>,
    /// The hottest lines' names per column, or why none.
    pub hot: Vec<Result<Vec<String>, Missing>>,
}

/// What [`render`] gives: the console text (each table at its largest CPU count), the HTML
/// fragment (every CPU count) and the verdict's ratios as records for the JSONL.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Traced {
    pub console: String,
    pub html: String,
    pub records: Vec<BenchRecord>,
}

/// The input, indexed: the det boots' figures and the c2c texts.
pub struct Run<'a> {
    records: Vec<&'a BenchRecord>,
    c2c: Vec<(String, Vec<hot::RegionLines>)>,
    /// The main det boot's SLUB design.
    pub design: &'static str,
}

/// numalab's SLUB designs, in column order (`slub.design`; the catalog's default is sheaves).
pub const DESIGNS: [&str; 3] = ["partial", "sheaves", "hybrid"];

/// `design` as one of [`DESIGNS`], or None.
fn known(design: &str) -> Option<&'static str> {
    DESIGNS.into_iter().find(|d| *d == design)
}

/// The SLUB design a numalab record's boot ran: the main det boot's for no variant, else the
/// variant's `slub.design=X` word (None: a variant of another kind, not compared here).
fn boot_design(r: &BenchRecord, main: &'static str) -> Option<&'static str> {
    match &r.variant {
        None => Some(main),
        Some(v) => v
            .split_whitespace()
            .find_map(|w| w.strip_prefix("slub.design="))
            .and_then(known),
    }
}

impl<'a> Run<'a> {
    /// `records`: the run's records (only det boots' figures are read); `c2c_texts`: (boot,
    /// c2c text) with boot the records' `kernel` (`numalab`, `linux-6.1.192`), a numalab
    /// variant boot as `numalab [VARIANT]`; `design`: the main det boot's `slub.design`.
    pub fn new(
        records: &'a [BenchRecord],
        c2c_texts: &[(String, String)],
        design: &str,
    ) -> Run<'a> {
        Run {
            records: records
                .iter()
                .filter(|r| r.boot == Boot::Det && FIGURES.contains(&r.metric.as_str()))
                .collect(),
            c2c: c2c_texts
                .iter()
                .map(|(k, t)| (k.clone(), hot::parse(t)))
                .collect(),
            design: known(design).unwrap_or("sheaves"),
        }
    }

    /// The record name of `kernel` in this run (`linux-6.1.192`), or its `--kernel` name.
    pub fn kernel_name(&self, kernel: LinuxKernel) -> String {
        self.records
            .iter()
            .find(|r| kernel.owns(&r.kernel))
            .map_or(kernel.name().to_string(), |r| r.kernel.clone())
    }

    /// The numalab columns of `bench`: per the catalog, the design its cases run.
    pub fn numalab_designs(&self, bench: &str) -> Vec<&'static str> {
        match catalog::find(bench).map(|e| e.designs) {
            Some(Designs::Both) => vec!["partial", "sheaves"],
            Some(Designs::Partial) => vec!["partial"],
            Some(Designs::NoSlab) | None => vec![""],
            Some(Designs::Boot) => DESIGNS
                .into_iter()
                .filter(|d| {
                    self.records
                        .iter()
                        .any(|r| r.kernel == "numalab" && boot_design(r, self.design) == Some(d))
                })
                .collect(),
        }
    }

    /// The case `column` measures in `p`: numalab's (or its design), Linux's (None: none).
    fn case_of(p: &Pairing, column: Column) -> Option<&'static str> {
        match column {
            Column::Numalab(d) => p.case.or(Some(d)),
            Column::Linux(_) => p.linux,
        }
    }

    /// The numalab records of `bench` that column design `d` reads: the main det boot's when
    /// it ran that design (or the design is not the boot's choice), else a variant boot's.
    fn numalab_records(&self, bench: &str, d: &'static str) -> Vec<&'a BenchRecord> {
        let boot_chooses = matches!(catalog::find(bench).map(|e| e.designs), Some(Designs::Boot));
        let mine: Vec<&'a BenchRecord> = self
            .records
            .iter()
            .copied()
            .filter(|r| r.kernel == "numalab" && r.bench == bench)
            .filter(|r| boot_design(r, self.design).is_some())
            .filter(|r| !boot_chooses || boot_design(r, self.design) == Some(d))
            .collect();
        // One boot's figures: the main's first, else the first variant's.
        let mut variants: Vec<&Option<String>> = mine.iter().map(|r| &r.variant).collect();
        variants.sort();
        match variants.first() {
            Some(v) => mine.into_iter().filter(|r| &r.variant == *v).collect(),
            None => Vec::new(),
        }
    }

    /// The records of `column` for `bench` (any case, CPU count and figure).
    fn column_records(&self, bench: &str, column: Column) -> Vec<&'a BenchRecord> {
        match column {
            Column::Numalab(d) => self.numalab_records(bench, d),
            Column::Linux(k) => self
                .records
                .iter()
                .copied()
                .filter(|r| k.owns(&r.kernel) && r.bench == bench)
                .collect(),
        }
    }

    /// The figure of `column` in `p` at `cpus` (median over the boot's repetitions), or why not.
    pub fn figure(&self, p: &Pairing, column: Column, cpus: u32, figure: &str) -> Cell {
        let Some(case) = Self::case_of(p, column) else {
            return Err(NO_COUNTERPART.into());
        };
        let recs = self.column_records(p.bench, column);
        if recs.is_empty() {
            return Err(match column {
                Column::Numalab(d) if !d.is_empty() => {
                    format!("not run (no numalab det boot of slub.design={d} traced it)")
                }
                Column::Numalab(_) => "not run (no numalab det boot traced it)".into(),
                Column::Linux(k) => {
                    format!("not run ({} traced no det boot of it)", self.kernel_name(k))
                }
            });
        }
        let values: Vec<f64> = recs
            .iter()
            .filter(|r| r.case == case && r.cpus == cpus && r.metric == figure)
            .map(|r| r.value)
            .collect();
        match Spread::of(&values) {
            Some(s) => Ok(s.median),
            None if !recs.iter().any(|r| r.case == case && r.cpus == cpus) => {
                Err(format!("not run (no {case} region at {cpus} CPUs)"))
            }
            None => Err(format!("not printed ({figure} missing for {case})")),
        }
    }

    /// The hottest lines of `column` in `p` at `cpus`, from its boot's c2c text.
    pub fn hottest(&self, p: &Pairing, column: Column, cpus: u32) -> Result<Vec<String>, Missing> {
        let Some(case) = Self::case_of(p, column) else {
            return Err(NO_COUNTERPART.into());
        };
        let boot = match column {
            Column::Numalab(d) => {
                let recs = self.numalab_records(p.bench, d);
                match recs.first().map(|r| &r.variant) {
                    Some(Some(v)) => format!("numalab [{v}]"),
                    _ => "numalab".into(),
                }
            }
            Column::Linux(k) => self.kernel_name(k),
        };
        let texts: Vec<&Vec<hot::RegionLines>> = self
            .c2c
            .iter()
            .filter(|(k, _)| match column {
                Column::Numalab(_) => *k == boot,
                Column::Linux(l) => l.owns(k) || *k == l.name(),
            })
            .map(|(_, t)| t)
            .collect();
        if texts.is_empty() {
            return Err(format!("no c2c table of the {boot} det boot"));
        }
        texts
            .iter()
            .flat_map(|t| t.iter())
            .find(|r| r.bench == p.bench && r.case == case && r.cpus == cpus)
            .map(|r| hot::hottest(r, HOT_LINES))
            .ok_or_else(|| format!("no c2c region {} {case} cpus {cpus}", p.bench))
    }

    /// The columns of `p`'s tables: numalab's designs, Linux 6.1, Linux 7.x.
    pub fn columns(&self, p: &Pairing) -> Vec<(Column, String)> {
        let mut out: Vec<(Column, String)> = self
            .numalab_designs(p.bench)
            .into_iter()
            .map(|d| {
                let title = if d.is_empty() {
                    "numalab".to_string()
                } else {
                    format!("numalab {d}")
                };
                (Column::Numalab(d), title)
            })
            .collect();
        for k in [LinuxKernel::V6_1, LinuxKernel::V7] {
            out.push((Column::Linux(k), self.kernel_name(k)));
        }
        out
    }

    /// The CPU counts any column of `p` has a figure at, ascending.
    pub fn cpu_counts(&self, p: &Pairing) -> Vec<u32> {
        let mut cpus: Vec<u32> = Vec::new();
        for (c, _) in self.columns(p) {
            let Some(case) = Self::case_of(p, c) else {
                continue;
            };
            for r in self.column_records(p.bench, c) {
                if r.case == case && !cpus.contains(&r.cpus) {
                    cpus.push(r.cpus);
                }
            }
        }
        cpus.sort_unstable();
        cpus
    }

    /// Every table: per pairing (in [`PAIRINGS`] order) and CPU count; pairings of an
    /// experiment no kernel traced are left out.
    pub fn tables(&self) -> Vec<Table> {
        let mut out = Vec::new();
        for p in PAIRINGS {
            let columns = self.columns(p);
            for cpus in self.cpu_counts(p) {
                let rows = FIGURES
                    .iter()
                    .map(|&f| {
                        let cells = columns
                            .iter()
                            .map(|(c, _)| self.figure(p, *c, cpus, f))
                            .collect();
                        (f, cells)
                    })
                    .collect();
                let hot = columns
                    .iter()
                    .map(|(c, _)| self.hottest(p, *c, cpus))
                    .collect();
                out.push(Table {
                    pairing: *p,
                    cpus,
                    columns: columns.clone(),
                    rows,
                    hot,
                });
            }
        }
        out
    }
}

/// The traced side by side of a run: `records` all its records, `c2c_texts` (boot, c2c file
/// text) as [`Run::new`] takes them, `numalab_design` the main det boot's `slub.design`.
/// Empty when no kernel traced any of the four experiments.
pub fn render(
    records: &[BenchRecord],
    c2c_texts: &[(String, String)],
    numalab_design: &str,
) -> Traced {
    let run = Run::new(records, c2c_texts, numalab_design);
    let tables = run.tables();
    if tables.is_empty() {
        return Traced::default();
    }
    let verdicts = [
        run.verdict("partial", LinuxKernel::V6_1),
        run.verdict("sheaves", LinuxKernel::V7),
    ];
    Traced {
        console: render::console(&tables, &verdicts),
        html: render::html(&tables, &verdicts),
        records: ratio_records(&run, &verdicts),
    }
}

/// The record name of `kernel` among `records` (`linux-6.1.192`), else its `--kernel` name.
pub fn kernel_name(records: &[BenchRecord], kernel: LinuxKernel) -> String {
    records
        .iter()
        .find(|r| kernel.owns(&r.kernel))
        .map_or(kernel.name().to_string(), |r| r.kernel.clone())
}

/// The boot a run folder's c2c file `name` is of, as [`render`] takes it: `c2c-det-repN.txt`
/// numalab's det boot, `c2c-det-NAME-repN.txt` its run under `slub.design=NAME`; `c2c-linux-det*.txt` Linux 6.1's, `c2c-linux7-det*.txt` 7.x's (their
/// record names from `records`); None for any other boot's (icount, tsc) or file.
pub fn c2c_boot(name: &str, records: &[BenchRecord]) -> Option<String> {
    let stem = name.strip_prefix("c2c-")?.strip_suffix(".txt")?;
    if let Some(rest) = stem.strip_prefix("det-") {
        // `det-repN`: the main det boot; `det-NAME-repN`: its run under slub.design=NAME.
        return match rest.split_once("-rep") {
            Some((design, _)) if known(design).is_some() => {
                Some(format!("numalab [slub.design={design}]"))
            }
            _ if rest.starts_with("rep") => Some("numalab".into()),
            _ => None,
        };
    }
    for kernel in [LinuxKernel::V7, LinuxKernel::V6_1] {
        let prefix = format!("{}det", kernel.log_prefix());
        if stem == prefix || stem.starts_with(&format!("{prefix}-")) {
            return Some(kernel_name(records, kernel));
        }
    }
    None
}

/// The c2c texts of a run folder's files (`(name, text)`), labelled by [`c2c_boot`].
pub fn c2c_of_folder(files: &[(String, String)], records: &[BenchRecord]) -> Vec<(String, String)> {
    files
        .iter()
        .filter_map(|(name, text)| Some((c2c_boot(name, records)?, text.clone())))
        .collect()
}
