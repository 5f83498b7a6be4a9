//! One line per experiment for the main job's console: its metric of record (the catalog's
//! `headline`), the cases it compares, their ratio and how far it can be trusted (exact,
//! the min..max spread over repetitions, or one repetition).

use super::record::{BenchRecord, Boot};
use super::seeds::{fmt_ratio, measure_ratio, Side};
use super::table::{fmt_value, Spread};
use numalab_algo::bench::catalog::{Headline, CATALOG};
use std::fmt::Write as _;

/// The median, min and max of `side` in `records`, at the most CPUs it was measured with.
fn spread(records: &[BenchRecord], side: Side) -> Option<(u32, Spread)> {
    let pick = |r: &&BenchRecord| {
        r.bench == side.bench
            && r.metric == side.metric
            && r.case == side.case
            && r.boot == side.boot
    };
    let cpus = records.iter().filter(pick).map(|r| r.cpus).max()?;
    let values: Vec<f64> = records
        .iter()
        .filter(pick)
        .filter(|r| r.cpus == cpus)
        .map(|r| r.value)
        .collect();
    Some((cpus, Spread::of(&values)?))
}

/// How a value or ratio from `boot` with `reps` repetitions is qualified.
fn trust(boot: Boot, reps: usize, low: f64, high: f64, fmt: fn(f64) -> String) -> String {
    if boot.deterministic() {
        "exact".into()
    } else if reps < 2 {
        "1 rep, no spread".into()
    } else {
        format!("{}..{} over {reps} reps", fmt(low), fmt(high))
    }
}

/// The headline of one experiment, or None when this run has no record of it.
pub fn headline(records: &[BenchRecord], bench: &str, h: &Headline) -> Option<String> {
    if !records.iter().any(|r| r.bench == bench) {
        return None;
    }
    let (metric, case, base, boot) = h.parts();
    let side = |case| Side {
        bench,
        metric,
        case,
        boot,
    };
    let unit = records
        .iter()
        .find(|r| r.bench == bench && r.metric == metric && r.boot == boot)
        .map_or("", |r| r.unit.as_str());
    let what = format!("{metric} ({}, {unit})", boot.name());
    let body = match base {
        None => match spread(records, side(case)) {
            Some((cpus, s)) => format!(
                "{case} {} [{}], {cpus} cpus",
                fmt_value(s.median),
                trust(boot, s.n, s.min, s.max, fmt_value)
            ),
            None => format!("{case}: not measured in this run"),
        },
        Some(base) => match measure_ratio(records, side(case), side(base)) {
            Some(m) => {
                let a = spread(records, side(case)).map(|(_, s)| s.median);
                let b = spread(records, side(base)).map(|(_, s)| s.median);
                format!(
                    "{case} / {base} = {} [{}] ({} / {}), {} cpus",
                    fmt_ratio(m.ratio),
                    trust(boot, m.reps, m.low, m.high, fmt_ratio),
                    a.map_or("-".into(), fmt_value),
                    b.map_or("-".into(), fmt_value),
                    m.cpus
                )
            }
            None => format!("{case} / {base}: not measured in this run"),
        },
    };
    Some(format!("{bench:<18} {what:<50} {body}"))
}

/// The headline lines of every experiment with records in `records`, in catalog order.
pub fn headlines(records: &[BenchRecord]) -> String {
    let mut out = String::new();
    for e in CATALOG {
        if let Some(line) = headline(records, e.name, &e.headline) {
            let _ = writeln!(out, "{line}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse_log;
    use crate::bench::tests::line;

    #[test]
    fn a_ratio_headline_says_exact_or_its_spread() {
        let log = [
            line(
                "sheaves_vs_partial",
                "sheaves/random",
                "instructions_per_pair",
                "50",
                1,
            ),
            line(
                "sheaves_vs_partial",
                "partial/random",
                "instructions_per_pair",
                "200",
                1,
            ),
        ]
        .join("\n");
        let log = log.replace("\"clock\":\"tsc\"", "\"clock\":\"icount\"");
        let (icount, bad) = parse_log(&log, Boot::Icount);
        assert!(bad.is_empty(), "{bad:?}");
        let out = headlines(&icount);
        assert!(
            out.contains("sheaves/random / partial/random = 0.250x [exact] (50 / 200), 1 cpus"),
            "{out}"
        );
        // Not every experiment ran: only the one with records is listed.
        assert_eq!(out.lines().count(), 1, "{out}");
        let h = Headline::Ratio {
            metric: "m",
            case: "a",
            base: "b",
            boot: Boot::Tsc,
        };
        let mut tsc = Vec::new();
        for (rep, (a, b)) in [("10", "20"), ("12", "20"), ("11", "22")]
            .into_iter()
            .enumerate()
        {
            let mut rs = parse_log(
                &[line("x", "a", "m", a, 4), line("x", "b", "m", b, 4)].join("\n"),
                Boot::Tsc,
            )
            .0;
            for r in &mut rs {
                r.rep = rep as u32;
            }
            tsc.extend(rs);
        }
        let out = headline(&tsc, "x", &h).unwrap();
        assert!(
            out.contains("a / b = 0.550x [0.455x..0.600x over 3 reps]"),
            "{out}"
        );
        let missing = Headline::Value {
            metric: "m",
            case: "c",
            boot: Boot::Tsc,
        };
        assert!(headline(&tsc, "x", &missing)
            .unwrap()
            .contains("c: not measured"));
        assert_eq!(headline(&tsc, "y", &missing), None);
    }
}
