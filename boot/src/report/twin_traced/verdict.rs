//! The verdict of the traced side by side: numalab partial against Linux
//! 6.1 and numalab sheaves against 7.x, the ratio numalab/Linux of every figure of every table,
//! and for each case pair of the contract whether the figure moves the same way in both
//! kernels; the ratios as records for the JSONL.

use super::{Cell, Column, Missing, Pairing, Run, FIGURES, NO_COUNTERPART, PAIRINGS};
use crate::bench::catalog::{self, Designs};
use crate::bench::{BenchRecord, Boot};
use crate::build::linux_kernel::LinuxKernel;

/// A change of at most this fraction of case A is "flat".
pub const FLAT: f64 = 0.02;

/// A case pair of the verdict: case `b` against case `a` at each CPU count, or (`a` and `b`
/// None) the experiment's fewest CPUs against its most.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Move {
    pub bench: &'static str,
    pub a: Option<&'static str>,
    pub b: Option<&'static str>,
}

/// The contract's case pairs.
pub const MOVES: &[Move] = &[
    Move {
        bench: "slub_list_lock",
        a: Some("linux_default"),
        b: Some("cpu_partial_x2"),
    },
    Move {
        bench: "slub_list_lock",
        a: Some("linux_default"),
        b: Some("partial_64"),
    },
    Move {
        bench: "slub_list_lock",
        a: Some("linux_default"),
        b: Some("order_4"),
    },
    Move {
        bench: "numa_locality",
        a: Some("default"),
        b: Some("prefer_local"),
    },
    Move {
        bench: "sheaves_vs_partial",
        a: None,
        b: None,
    },
];

/// A ratio numalab/Linux of one figure of one table, in one pairing of the verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratio {
    pub pairing: Pairing,
    pub cpus: u32,
    pub figure: &'static str,
    pub ratio: Cell,
}

/// Which way a figure moves from case A to case B.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    Up,
    Down,
    Flat,
}

/// The direction of `a` -> `b`: the sign of (b - a) / |a|, "flat" within ±[`FLAT`].
pub fn direction(a: f64, b: f64) -> Dir {
    let c = change(a, b);
    if c.abs() <= FLAT {
        Dir::Flat
    } else if c > 0.0 {
        Dir::Up
    } else {
        Dir::Down
    }
}

/// Whether numalab's direction agrees with Linux's: "same" (both flat, or the same sign),
/// "one flat" or "opposite".
pub fn agreement(numalab: Dir, linux: Dir) -> &'static str {
    match (numalab, linux) {
        (n, l) if n == l => "same",
        (Dir::Flat, _) | (_, Dir::Flat) => "one flat",
        _ => "opposite",
    }
}

/// One case pair's verdict for one figure: each kernel's change (b - a) / |a| and the verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct MoveVerdict {
    pub bench: &'static str,
    /// `cpu_partial_x2 vs linux_default`, or `cpus 8 vs 2`.
    pub label: String,
    /// The CPU count of a case pair (None: across CPU counts).
    pub cpus: Option<u32>,
    pub figure: &'static str,
    pub numalab: Cell,
    pub linux: Cell,
    /// "same", "opposite", "one flat" or "n/a (why)".
    pub verdict: String,
}

/// One pairing of the verdict: numalab `design` against Linux `kernel`.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    pub design: &'static str,
    pub kernel: LinuxKernel,
    /// The Linux kernel's record name (`linux-6.1.192`), or its `--kernel` name if it did not run.
    pub kernel_name: String,
    pub ratios: Vec<Ratio>,
    pub moves: Vec<MoveVerdict>,
}

impl Run<'_> {
    /// numalab's column for `design` in `bench`: that design, or the one column of an
    /// experiment without slab caches; None when numalab does not run `bench` in `design`.
    fn numalab_column(&self, bench: &str, design: &'static str) -> Result<Column, Missing> {
        let designs = self.numalab_designs(bench);
        if designs == [""] {
            return Ok(Column::Numalab(""));
        }
        if designs.contains(&design) {
            return Ok(Column::Numalab(design));
        }
        Err(match catalog::find(bench).map(|e| e.designs) {
            Some(Designs::Partial) => {
                format!("{bench} runs the partial design in every numalab boot (catalog)")
            }
            _ => format!("not run (no numalab det boot of slub.design={design})"),
        })
    }

    /// The verdict of numalab `design` against `kernel`.
    pub fn verdict(&self, design: &'static str, kernel: LinuxKernel) -> Verdict {
        let lk = Column::Linux(kernel);
        let mut ratios = Vec::new();
        for p in PAIRINGS {
            // sheaves_vs_partial: the numalab case is the design.
            let numalab = self.numalab_column(p.bench, design);
            for cpus in self.cpu_counts(p) {
                for &figure in &FIGURES {
                    let ratio = match &numalab {
                        Err(why) => Err(why.clone()),
                        Ok(nc) => ratio(
                            self.figure(p, *nc, cpus, figure),
                            self.figure(p, lk, cpus, figure),
                        ),
                    };
                    ratios.push(Ratio {
                        pairing: *p,
                        cpus,
                        figure,
                        ratio,
                    });
                }
            }
        }
        let mut moves = Vec::new();
        for m in MOVES {
            moves.extend(self.move_verdicts(m, design, kernel));
        }
        Verdict {
            design,
            kernel,
            kernel_name: self.kernel_name(kernel),
            ratios,
            moves,
        }
    }

    /// The pairing of `bench` whose numalab case is `case` (None: the design's).
    fn pairing(bench: &str, case: Option<&str>) -> Option<&'static Pairing> {
        PAIRINGS.iter().find(|p| p.bench == bench && p.case == case)
    }

    /// The verdicts of case pair `m` for every figure (and CPU count).
    fn move_verdicts(&self, m: &Move, design: &'static str, k: LinuxKernel) -> Vec<MoveVerdict> {
        let (Some(pa), Some(pb)) = (Self::pairing(m.bench, m.a), Self::pairing(m.bench, m.b))
        else {
            return Vec::new();
        };
        let nc = self.numalab_column(m.bench, design);
        let lc = Column::Linux(k);
        // (label, cpus, A's CPU count, B's CPU count)
        let mut points: Vec<(String, Option<u32>, u32, u32)> = Vec::new();
        let label = format!("{} vs {}", m.b.unwrap_or(""), m.a.unwrap_or(""));
        if m.a.is_some() {
            let mut cpus = self.cpu_counts(pa);
            cpus.extend(self.cpu_counts(pb));
            cpus.sort_unstable();
            cpus.dedup();
            points.extend(cpus.into_iter().map(|c| (label.clone(), Some(c), c, c)));
        } else {
            let cpus = self.cpu_counts(pa);
            if let (Some(&lo), Some(&hi)) = (cpus.first(), cpus.last()) {
                if lo != hi {
                    points.push((format!("cpus {hi} vs {lo}"), None, lo, hi));
                }
            }
        }
        let mut out = Vec::new();
        for (label, cpus, ca, cb) in points {
            for &figure in &FIGURES {
                let moved = |c: Result<Column, Missing>| -> Cell {
                    let c = c?;
                    let a = self.figure(pa, c, ca, figure)?;
                    let b = self.figure(pb, c, cb, figure)?;
                    Ok(change(a, b))
                };
                let n = moved(nc.clone());
                let l = moved(Ok(lc));
                let dirs = |a: Column| -> Result<Dir, Missing> {
                    Ok(direction(
                        self.figure(pa, a, ca, figure)?,
                        self.figure(pb, a, cb, figure)?,
                    ))
                };
                let verdict = match (nc.clone().and_then(dirs), dirs(lc)) {
                    (Ok(a), Ok(b)) => agreement(a, b).to_string(),
                    (Err(why), _) => format!("n/a (numalab: {why})"),
                    (_, Err(why)) if why == NO_COUNTERPART => format!("n/a ({why})"),
                    (_, Err(why)) => format!("n/a ({}: {why})", self.kernel_name(k)),
                };
                out.push(MoveVerdict {
                    bench: m.bench,
                    label: label.clone(),
                    cpus,
                    figure,
                    numalab: n,
                    linux: l,
                    verdict,
                });
            }
        }
        out
    }
}

/// The change a -> b as a fraction of |a| (±inf from a = 0 to b != 0; 0 from 0 to 0).
pub fn change(a: f64, b: f64) -> f64 {
    if a != 0.0 {
        (b - a) / a.abs()
    } else if b == 0.0 {
        0.0
    } else {
        f64::INFINITY.copysign(b)
    }
}

/// numalab / Linux, or why not.
fn ratio(numalab: Cell, linux: Cell) -> Cell {
    let n = numalab.map_err(|why| format!("numalab: {why}"))?;
    let l = linux.map_err(|why| {
        if why == NO_COUNTERPART {
            why
        } else {
            format!("Linux: {why}")
        }
    })?;
    if l == 0.0 {
        return Err("Linux's figure is 0".into());
    }
    Ok(n / l)
}

/// The case of a ratio record: `NUMALAB_CASE/vs/LINUX_CASE` (sheaves_vs_partial: the design is
/// numalab's case), e.g. `cpu_partial_x2/vs/linux/cpu_partial_x2`, `sheaves/vs/linux`.
pub fn ratio_case(p: &Pairing, design: &str) -> Option<String> {
    let n = p.case.unwrap_or(design);
    let l = p.linux?;
    Some(format!("{n}/vs/{l}"))
}

/// The verdicts' ratios as records: bench the experiment, case [`ratio_case`], metric
/// `ratio_FIGURE`, unit `ratio`, kernel the Linux kernel's name, boot det, clock icount.
pub fn ratio_records(run: &Run, verdicts: &[Verdict]) -> Vec<BenchRecord> {
    let mut out = Vec::new();
    for v in verdicts {
        for r in &v.ratios {
            let (Ok(value), Some(case)) = (&r.ratio, ratio_case(&r.pairing, v.design)) else {
                continue;
            };
            let nodes = run
                .records
                .iter()
                .find(|x| x.bench == r.pairing.bench && x.cpus == r.cpus)
                .map_or(1, |x| x.nodes);
            out.push(BenchRecord {
                bench: r.pairing.bench.to_string(),
                case,
                metric: format!("ratio_{}", r.figure),
                value: *value,
                unit: "ratio".into(),
                cpus: r.cpus,
                nodes,
                clock: numalab_algo::bench::Clock::Icount,
                boot: Boot::Det,
                rep: 0,
                kernel: v.kernel_name.clone(),
                variant: None,
                kvm: false,
            });
        }
    }
    out
}
