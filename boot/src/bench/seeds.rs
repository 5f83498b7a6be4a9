//! The `seeds` table: for each Linux thread numalab replays (docs/linux-reference.md), the
//! thread's own figure as a ratio (the change over the baseline), numalab's ratio of the same
//! change from this run with its spread, and whether the two move the same way. Never tuned
//! to agree: a disagreement is printed as one.

use super::record::{BenchRecord, Boot};
use super::table::Spread;
use numalab_algo::bench::catalog::{Seed, CATALOG};
use std::fmt::Write as _;

/// One comparison of the seeds table: an experiment's seed row from the catalog (`thread`:
/// `metric` of `case` in `boot` over `metric` of `base` in `base_boot`, against the thread's own
/// ratio), measured at the most CPUs both have.
#[derive(Clone, Copy, Debug)]
pub struct SeedRow {
    pub bench: &'static str,
    pub thread: &'static Seed,
}

/// The rows: every experiment's seed rows in the catalog (kernel/algo/src/bench/catalog, with
/// the thread figures taken from the threads, docs/linux-reference.md), each throughput row
/// followed by its modelled row (`modelled`), in seed order.
pub fn rows() -> Vec<SeedRow> {
    let mut out: Vec<SeedRow> = Vec::new();
    for e in CATALOG {
        for s in e.seeds {
            out.push(SeedRow {
                bench: e.name,
                thread: s,
            });
            if let Some(m) = modelled(s) {
                out.push(SeedRow {
                    bench: e.name,
                    thread: m,
                });
            }
        }
    }
    out.sort_by_key(|r| r.thread.seed);
    out
}

/// Seed metrics that are a throughput (work per time, or per instruction): the thread's
/// figure is a time or a rate, which the trace plugin's modelled time can stand for.
const THROUGHPUT_METRICS: [&str; 4] = [
    "ops_per_cpu",
    "ops_per_sec",
    "allocations_per_sec",
    "pairs_per_kinstruction",
];

/// The metric of the modelled rows (boot/src/trace: cycles per operation, exact).
pub const MODELLED_METRIC: &str = "modelled_cycles_per_op";

/// The modelled row of a throughput seed row: the same change in `modelled_cycles_per_op` of
/// the det boot (or of the row's own instruction-count boot), against the thread's figure as
/// a time, 1 / its ratio. Measured only with `--trace mem` (and in the main job's det boot).
fn modelled(s: &Seed) -> Option<&'static Seed> {
    static MODELLED: std::sync::OnceLock<Vec<(&'static Seed, &'static Seed)>> =
        std::sync::OnceLock::new();
    let all = MODELLED.get_or_init(|| {
        CATALOG
            .iter()
            .flat_map(|e| e.seeds.iter())
            .filter(|s| THROUGHPUT_METRICS.contains(&s.metric) && s.thread_ratio > 0.0)
            .map(|s| {
                let boot = |b: Boot| if b.deterministic() { b } else { Boot::Det };
                let figure: &'static str = Box::leak(
                    format!("{}, as a time (1 / ratio), modelled", s.thread_figure)
                        .into_boxed_str(),
                );
                let m: &'static Seed = Box::leak(Box::new(Seed {
                    seed: s.seed,
                    metric: MODELLED_METRIC,
                    case: s.case,
                    boot: boot(s.boot),
                    base: s.base,
                    base_boot: boot(s.base_boot),
                    thread_figure: figure,
                    thread_ratio: 1.0 / s.thread_ratio,
                }));
                (s, m)
            })
            .collect()
    });
    all.iter()
        .find(|(o, _)| {
            (o.seed, o.metric, o.case, o.base) == (s.seed, s.metric, s.case, s.base)
                && o.boot == s.boot
        })
        .map(|(_, m)| *m)
}

/// Whether numalab's change moves the metric the way the thread's did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    Agrees,
    Disagrees,
    /// The spread of numalab's ratio includes 1: no direction.
    Unclear,
    /// numalab's whole spread lies within `NO_EFFECT` of 1x while the thread's figure does
    /// not: the mechanism the thread measured has no effect here (a contradiction, reported
    /// as one, not as agreement in sign).
    NoEffect,
    /// One side is missing from this run.
    NotMeasured,
}

impl Direction {
    pub fn name(self) -> &'static str {
        match self {
            Direction::Agrees => "agrees",
            Direction::Disagrees => "DISAGREES",
            Direction::Unclear => "unclear (spread includes 1x)",
            Direction::NoEffect => "NO EFFECT (within 2% of 1x)",
            Direction::NotMeasured => "not measured in this run",
        }
    }
}

/// Numalab's side of a row: CPUs, the ratio of medians and its range (min/max .. max/min).
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub cpus: u32,
    pub ratio: f64,
    pub low: f64,
    pub high: f64,
    pub reps: usize,
}

/// Which measurement: `metric` of `case` in `boot`, of the experiment `bench`.
#[derive(Clone, Copy, Debug)]
pub struct Side<'a> {
    pub bench: &'a str,
    pub metric: &'a str,
    pub case: &'a str,
    pub boot: Boot,
}

fn values(records: &[BenchRecord], side: Side, cpus: u32) -> Vec<f64> {
    records
        .iter()
        .filter(|r| {
            r.bench == side.bench
                && r.metric == side.metric
                && r.case == side.case
                && r.boot == side.boot
                && r.cpus == cpus
        })
        .map(|r| r.value)
        .collect()
}

/// The ratio `case / base` in `records`, at the most CPUs both sides were measured with.
pub fn measure_ratio(records: &[BenchRecord], case: Side, base: Side) -> Option<Measured> {
    let cpus = records
        .iter()
        .filter(|r| {
            r.bench == case.bench
                && r.metric == case.metric
                && r.case == case.case
                && r.boot == case.boot
        })
        .map(|r| r.cpus)
        .filter(|&c| !values(records, base, c).is_empty())
        .max()?;
    let a = Spread::of(&values(records, case, cpus))?;
    let b = Spread::of(&values(records, base, cpus))?;
    let div = |x: f64, y: f64| {
        if y != 0.0 {
            x / y
        } else if x == 0.0 {
            1.0
        } else {
            f64::INFINITY
        }
    };
    Some(Measured {
        cpus,
        ratio: div(a.median, b.median),
        low: div(a.min, b.max),
        high: div(a.max, b.min),
        reps: a.n.min(b.n),
    })
}

/// Numalab's ratio for `row` in `records`, at the most CPUs both sides were measured with.
pub fn measure(records: &[BenchRecord], row: &SeedRow) -> Option<Measured> {
    let t = row.thread;
    let side = |case, boot| Side {
        bench: row.bench,
        metric: t.metric,
        case,
        boot,
    };
    measure_ratio(records, side(t.case, t.boot), side(t.base, t.base_boot))
}

/// A ratio within this factor of 1x is no effect (2%: below every thread figure's change
/// but seed 005's -1.2%, whose numalab side is far outside it).
pub const NO_EFFECT: f64 = 1.02;

/// The direction of `m` against the thread's ratio.
pub fn direction(thread_ratio: f64, m: Option<&Measured>) -> Direction {
    let Some(m) = m else {
        return Direction::NotMeasured;
    };
    if m.low <= 1.0 && m.high >= 1.0 {
        return Direction::Unclear;
    }
    let near_one = |x: f64| x < NO_EFFECT && x > 1.0 / NO_EFFECT;
    if near_one(m.low) && near_one(m.high) && !near_one(thread_ratio) {
        return Direction::NoEffect;
    }
    if (m.ratio > 1.0) == (thread_ratio > 1.0) {
        Direction::Agrees
    } else {
        Direction::Disagrees
    }
}

pub fn fmt_ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.3}x")
    } else {
        "inf".into()
    }
}

/// The seeds table for `records`.
pub fn seeds_table(records: &[BenchRecord]) -> String {
    seeds_table_with(records, false)
}

/// The seeds table in the main job's console: the thread's change as its ratio only (its
/// words and numbers are in the full table, `--verbose`, and the HTML report).
pub fn seeds_table_compact(records: &[BenchRecord]) -> String {
    seeds_table_with(records, true)
}

fn seeds_table_with(records: &[BenchRecord], compact: bool) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "\n== seeds (the thread's figure vs this run: ratio case / baseline; direction: both on the same side of 1x) =="
    );
    if compact {
        let _ = writeln!(
            out,
            "seed {:<18} {:<68} {:>7}  {:<30} direction",
            "bench", "change (metric, boot)", "thread", "numalab"
        );
    } else {
        let _ = writeln!(
            out,
            "{:<4} {:<16} {:<66} {:<58} {:<36} direction",
            "seed", "bench", "change (metric, boot)", "thread", "numalab (median, min..max)"
        );
    }
    for row in rows() {
        let m = measure(records, &row);
        let thread = if row.thread.thread_ratio.is_finite() {
            format!(
                "{} = {}",
                row.thread.thread_figure,
                fmt_ratio(row.thread.thread_ratio)
            )
        } else {
            format!("{} = >1x", row.thread.thread_figure)
        };
        let numalab = match &m {
            Some(m) if row.thread.boot.deterministic() && row.thread.base_boot.deterministic() => {
                format!("{} exact, {} cpus", fmt_ratio(m.ratio), m.cpus)
            }
            Some(m) if m.reps < 2 => format!("{} (1 rep), {} cpus", fmt_ratio(m.ratio), m.cpus),
            Some(m) => format!(
                "{} ({}..{}), {} cpus",
                fmt_ratio(m.ratio),
                fmt_ratio(m.low),
                fmt_ratio(m.high),
                m.cpus
            ),
            None => "-".into(),
        };
        let change = format!(
            "{} / {} {} ({})",
            row.thread.case,
            row.thread.base,
            row.thread.metric,
            if row.thread.boot == row.thread.base_boot {
                row.thread.boot.name().to_string()
            } else {
                format!(
                    "{} / {}",
                    row.thread.boot.name(),
                    row.thread.base_boot.name()
                )
            }
        );
        let one_rep = m.as_ref().is_some_and(|m| m.reps < 2)
            && !(row.thread.boot.deterministic() && row.thread.base_boot.deterministic());
        if compact {
            let ratio = if row.thread.thread_ratio.is_finite() {
                fmt_ratio(row.thread.thread_ratio)
            } else {
                ">1x".into()
            };
            let _ = writeln!(
                out,
                "{} {:<18} {:<68} {:>7}  {:<30} {}{}",
                row.thread.seed,
                row.bench,
                change,
                ratio,
                numalab.replace(" (1 rep)", ""),
                direction(row.thread.thread_ratio, m.as_ref()).name(),
                if one_rep { " (1 rep)" } else { "" }
            );
            continue;
        }
        let _ = writeln!(
            out,
            "{:<4} {:<16} {:<66} {:<58} {:<36} {}{}",
            row.thread.seed,
            row.bench,
            change,
            thread,
            numalab,
            direction(row.thread.thread_ratio, m.as_ref()).name(),
            if one_rep {
                " (1 rep: no spread, use --reps 3)"
            } else {
                ""
            }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use numalab_algo::bench::catalog::MEMORYLESS_NODE;

    fn rec(
        bench: &str,
        case: &str,
        metric: &str,
        boot: Boot,
        cpus: u32,
        value: f64,
    ) -> BenchRecord {
        BenchRecord {
            bench: bench.into(),
            case: case.into(),
            metric: metric.into(),
            value,
            unit: "x".into(),
            cpus,
            nodes: 2,
            kernel: "numalab".into(),
            clock: boot.clock(),
            boot,
            rep: 0,
            variant: None,
            kvm: false,
        }
    }

    #[test]
    fn throughput_seeds_have_a_modelled_row_with_the_inverse_ratio() {
        let rows = rows();
        for seed in ["000", "002", "004", "005", "006"] {
            let m = rows
                .iter()
                .find(|r| r.thread.seed == seed && r.thread.metric == MODELLED_METRIC)
                .unwrap_or_else(|| panic!("seed {seed} has no modelled row"));
            assert!(m.thread.boot.deterministic() && m.thread.base_boot.deterministic());
            let origin = rows
                .iter()
                .find(|r| r.thread.seed == seed && THROUGHPUT_METRICS.contains(&r.thread.metric))
                .unwrap();
            assert!((m.thread.thread_ratio * origin.thread.thread_ratio - 1.0).abs() < 1e-12);
        }
        assert!(!rows
            .iter()
            .any(|r| r.thread.seed == "001" && r.thread.metric == MODELLED_METRIC));
    }

    #[test]
    fn every_seed_has_a_row_and_figures_are_ratios() {
        let seeds: Vec<&str> = rows().iter().map(|r| r.thread.seed).collect();
        for s in ["000", "001", "002", "003", "004", "008"] {
            assert!(seeds.contains(&s), "{s}");
        }
        for r in rows() {
            assert!(
                r.thread.thread_ratio >= 0.0 && r.thread.thread_ratio != 1.0,
                "{r:?}"
            );
        }
    }

    #[test]
    fn direction_uses_the_spread_and_reports_disagreement_and_no_effect() {
        let m = "slab_kib";
        let mut rs = vec![
            rec(MEMORYLESS_NODE.name, "unfixed", m, Boot::Tsc, 8, 600.0),
            rec(MEMORYLESS_NODE.name, "unfixed", m, Boot::Tsc, 8, 500.0),
            rec(MEMORYLESS_NODE.name, "single_node", m, Boot::Uma, 8, 100.0),
            rec(MEMORYLESS_NODE.name, "single_node", m, Boot::Uma, 8, 120.0),
            // Fewer CPUs on one side only: not used.
            rec(MEMORYLESS_NODE.name, "unfixed", m, Boot::Tsc, 4, 1.0),
        ];
        let row = rows().into_iter().find(|r| r.thread.seed == "003").unwrap();
        let got = measure(&rs, &row).unwrap();
        assert_eq!(got.cpus, 8);
        assert!((got.ratio - 550.0 / 110.0).abs() < 1e-9, "{got:?}");
        assert!(
            (got.low - 500.0 / 120.0).abs() < 1e-9 && got.high == 6.0,
            "{got:?}"
        );
        assert_eq!(
            direction(row.thread.thread_ratio, Some(&got)),
            Direction::Agrees
        );
        // Less slab memory than single-node: the thread's direction is not reproduced.
        rs[0].value = 50.0;
        rs[1].value = 60.0;
        let got = measure(&rs, &row).unwrap();
        assert_eq!(
            direction(row.thread.thread_ratio, Some(&got)),
            Direction::Disagrees
        );
        // A spread that crosses 1x gives no direction.
        rs[1].value = 150.0;
        let got = measure(&rs, &row).unwrap();
        assert_eq!(
            direction(row.thread.thread_ratio, Some(&got)),
            Direction::Unclear
        );
        assert_eq!(direction(2.0, None), Direction::NotMeasured);
        // Growth of 0.1% on a thread that saw 2.26x: no effect, not agreement.
        rs[0].value = 110.2;
        rs[1].value = 110.1;
        rs[2].value = 110.0;
        rs[3].value = 110.0;
        let got = measure(&rs, &row).unwrap();
        assert_eq!(
            direction(row.thread.thread_ratio, Some(&got)),
            Direction::NoEffect
        );
        assert_eq!(direction(1.01, Some(&got)), Direction::Agrees);
        rs[0].value = 50.0;
        rs[1].value = 150.0;
        rs[2].value = 100.0;
        rs[3].value = 120.0;
        let t = seeds_table(&rs);
        assert!(t.contains("442560 kB") && t.contains("unclear"), "{t}");
        assert!(t.contains("not measured in this run"), "{t}");
        assert!(t.contains("0.909x (0.417x..1.500x), 8 cpus"), "{t}");
    }
}
