//! The host side of the BENCH output contract: parse `BENCH {json}` lines from a serial log,
//! check them (required fields, lower_snake_case names, finite values, required
//! bench/case/metric triples), print per-experiment tables with ratios against a baseline case,
//! and compare two result files. Running the boots is bench_run.rs; charts are bench_svg.rs.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

/// Which boot a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Boot {
    /// One CPU under `-icount shift=0,sleep=off`: instruction metrics.
    Icount,
    /// All CPUs, plain multi-threaded TCG: contention, throughput, memory.
    Tsc,
    /// The `uma` preset with the machine's CPUs and memory (memoryless_node's `single_node`).
    Uma,
}

impl Boot {
    pub fn name(self) -> &'static str {
        match self {
            Boot::Icount => "icount",
            Boot::Tsc => "tsc",
            Boot::Uma => "uma",
        }
    }

    pub fn from_name(name: &str) -> Option<Boot> {
        match name {
            "icount" => Some(Boot::Icount),
            "tsc" => Some(Boot::Tsc),
            "uma" => Some(Boot::Uma),
            _ => None,
        }
    }
}

/// One measurement, as the kernel printed it (plus the boot it came from).
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRecord {
    pub bench: String,
    pub case: String,
    pub metric: String,
    pub value: f64,
    pub unit: String,
    pub cpus: u32,
    pub nodes: u32,
    pub clock: String,
    pub boot: Boot,
}

/// The identity of a measurement across runs.
pub type Key = (String, String, String, u32, String);

impl BenchRecord {
    pub fn key(&self) -> Key {
        (
            self.bench.clone(),
            self.case.clone(),
            self.metric.clone(),
            self.cpus,
            self.clock.clone(),
        )
    }

    /// The JSONL form: the kernel's fields plus `boot`.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "bench": self.bench, "case": self.case, "metric": self.metric,
            "value": self.value, "unit": self.unit, "cpus": self.cpus,
            "nodes": self.nodes, "clock": self.clock, "boot": self.boot.name(),
        })
    }
}

/// A BENCH line (or JSONL line) that breaks the contract.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// 1-based line number in the log or file.
    pub line_no: usize,
    pub message: String,
    pub line: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {}: {}\n    {}",
            self.line_no, self.message, self.line
        )
    }
}

/// The kernel's name rules for bench, case and metric names, shared so both sides agree.
pub use numalab_algo::bench_plan::{is_case_name, is_snake_name};

fn text_field(obj: &Map<String, Value>, key: &str) -> Result<String, String> {
    match obj.get(key) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("field '{key}' must be a string, got {other}")),
        None => Err(format!("missing required field '{key}'")),
    }
}

fn count_field(obj: &Map<String, Value>, key: &str) -> Result<u32, String> {
    match obj.get(key) {
        Some(v) => v
            .as_u64()
            .filter(|&n| (1..=u32::MAX as u64).contains(&n))
            .map(|n| n as u32)
            .ok_or_else(|| format!("field '{key}' must be a positive integer, got {v}")),
        None => Err(format!("missing required field '{key}'")),
    }
}

/// Checks one JSON object against the contract and turns it into a record.
pub fn record_from_json(obj: &Map<String, Value>, boot: Boot) -> Result<BenchRecord, String> {
    let bench = text_field(obj, "bench")?;
    let case = text_field(obj, "case")?;
    let metric = text_field(obj, "metric")?;
    let unit = text_field(obj, "unit")?;
    let clock = text_field(obj, "clock")?;
    let value = match obj.get("value") {
        Some(Value::Number(n)) => n.as_f64().filter(|v| v.is_finite()),
        Some(Value::Null) => None,
        Some(other) => return Err(format!("field 'value' must be a number, got {other}")),
        None => return Err("missing required field 'value'".into()),
    }
    .ok_or_else(|| format!("{bench}/{case}/{metric}: value is not a finite number"))?;
    let cpus = count_field(obj, "cpus")?;
    let nodes = count_field(obj, "nodes")?;
    if !is_snake_name(&bench) {
        return Err(format!("bench '{bench}' is not lower_snake_case"));
    }
    if !is_case_name(&case) {
        return Err(format!(
            "case '{case}' is not lower_snake_case (words may be joined by '/')"
        ));
    }
    if !is_snake_name(&metric) {
        return Err(format!("metric '{metric}' is not lower_snake_case"));
    }
    if unit.is_empty() {
        return Err(format!("{bench}/{case}/{metric}: empty unit"));
    }
    if clock != "icount" && clock != "tsc" {
        return Err(format!("clock '{clock}' is neither 'icount' nor 'tsc'"));
    }
    Ok(BenchRecord {
        bench,
        case,
        metric,
        value,
        unit,
        cpus,
        nodes,
        clock,
        boot,
    })
}

/// A record's clock must be the boot's: under icount rdtsc counts instructions, so nothing
/// measured there is host time, and nothing outside it is an instruction count.
fn clock_matches_boot(r: BenchRecord, boot: Boot) -> Result<BenchRecord, String> {
    let expected = if boot == Boot::Icount {
        "icount"
    } else {
        "tsc"
    };
    if r.clock == expected {
        Ok(r)
    } else {
        Err(format!(
            "{}/{}/{}: clock '{}' in the {} boot, where rdtsc is {} (take the clock from crate::bench::clock())",
            r.bench,
            r.case,
            r.metric,
            r.clock,
            boot.name(),
            if boot == Boot::Icount { "an instruction count" } else { "host time" }
        ))
    }
}

/// Every BENCH line of a serial log: the records that keep the contract, and the violations.
pub fn parse_log(log: &str, boot: Boot) -> (Vec<BenchRecord>, Vec<Violation>) {
    let mut records = Vec::new();
    let mut violations = Vec::new();
    for (i, raw) in log.lines().enumerate() {
        let line = raw.trim_end_matches('\r');
        let Some(json) = line.strip_prefix("BENCH ") else {
            continue;
        };
        let parsed = match serde_json::from_str::<Value>(json) {
            Ok(Value::Object(obj)) => {
                record_from_json(&obj, boot).and_then(|r| clock_matches_boot(r, boot))
            }
            Ok(_) => Err("not a JSON object".into()),
            Err(e) => Err(format!("not valid JSON: {e}")),
        };
        match parsed {
            Ok(r) => records.push(r),
            Err(message) => violations.push(Violation {
                line_no: i + 1,
                message,
                line: line.to_string(),
            }),
        }
    }
    (records, violations)
}

/// The experiments a boot says it has (`# bench: registered a b c`).
pub fn registered(log: &str) -> BTreeSet<String> {
    log.lines()
        .filter_map(|l| l.trim_end().strip_prefix("# bench: registered"))
        .flat_map(|rest| rest.split_whitespace().map(String::from))
        .collect()
}

/// A measurement the contract requires whenever its experiment ran (and passed) in `boot`.
#[derive(Clone, Copy, Debug)]
pub struct Required {
    pub bench: &'static str,
    /// `*`: any case.
    pub case: &'static str,
    pub metric: &'static str,
    pub boot: Boot,
    /// Only on a machine with more than one NUMA node.
    pub numa_only: bool,
}

const fn req(
    bench: &'static str,
    case: &'static str,
    metric: &'static str,
    boot: Boot,
) -> Required {
    Required {
        bench,
        case,
        metric,
        boot,
        numa_only: false,
    }
}

const fn req_numa(
    bench: &'static str,
    case: &'static str,
    metric: &'static str,
    boot: Boot,
) -> Required {
    Required {
        bench,
        case,
        metric,
        boot,
        numa_only: true,
    }
}

/// Every required bench/case/metric (docs/benchmarks.md lists them with their meaning).
pub fn required() -> Vec<Required> {
    use Boot::*;
    let mut out = vec![
        req("clock_overhead", "rdtsc", "min_ticks_per_read", Icount),
        req("clock_overhead", "rdtsc", "mean_ticks_per_read", Tsc),
        req("page_alloc", "numalab", "instructions_per_pair", Icount),
        req(
            "page_alloc",
            "buddy_system_allocator",
            "instructions_per_pair",
            Icount,
        ),
        req_numa("page_alloc", "*", "local_fraction", Tsc),
        req("vmalloc_scaling", "*", "instructions_per_pair", Icount),
        req("memoryless_node", "fixed", "slab_kib", Tsc),
        req("memoryless_node", "unfixed", "slab_kib", Tsc),
        req("memoryless_node", "single_node", "slab_kib", Uma),
    ];
    for w in ["fast64", "random", "burst256"] {
        let case: &'static str = match w {
            "fast64" => "numalab/fast64",
            "random" => "numalab/random",
            _ => "numalab/burst256",
        };
        out.push(req("alloc_peers", case, "instructions_per_pair", Icount));
    }
    for case in ["linux_default", "partial_64", "order_4", "cpu_partial_x2"] {
        for metric in [
            "ops_per_cpu",
            "list_lock_acquisitions_per_kop",
            "list_lock_contended_per_kop",
            "list_lock_spin_share",
        ] {
            out.push(req("slub_list_lock", case, metric, Tsc));
        }
    }
    for case in ["scan", "counters"] {
        for metric in [
            "max_list_lock_hold",
            "mean_list_lock_hold",
            "active_objs_error",
        ] {
            out.push(req("slabinfo_reader", case, metric, Tsc));
        }
    }
    for case in ["prefer_local", "default"] {
        for metric in ["local_object_fraction", "slab_kib", "messages_per_sec"] {
            out.push(req_numa("numa_locality", case, metric, Tsc));
        }
    }
    for case in ["global", "cpu", "numa"] {
        for metric in [
            "global_lock_acquisitions_per_pair",
            "contended_acquisitions_per_pair",
            "ops_per_sec",
        ] {
            out.push(req("vmalloc_scaling", case, metric, Tsc));
        }
        out.push(req_numa(
            "vmalloc_scaling",
            case,
            "local_page_fraction",
            Tsc,
        ));
    }
    out
}

/// One boot's results as the contract check needs them.
pub struct BootResult<'a> {
    pub boot: Boot,
    /// Names of the experiments whose KTest passed (not skipped) in this boot.
    pub ran: BTreeSet<String>,
    pub nodes: u32,
    pub records: &'a [BenchRecord],
}

/// Messages for every required measurement missing from a boot whose experiment ran.
pub fn missing_required(boots: &[BootResult]) -> Vec<String> {
    let mut out = Vec::new();
    for r in required() {
        for b in boots.iter().filter(|b| b.boot == r.boot) {
            if !b.ran.contains(r.bench) || (r.numa_only && b.nodes < 2) {
                continue;
            }
            let found = b.records.iter().any(|x| {
                x.bench == r.bench && x.metric == r.metric && (r.case == "*" || x.case == r.case)
            });
            if !found {
                out.push(format!(
                    "{} ran in the {} boot but printed no BENCH line for case '{}' metric '{}'",
                    r.bench,
                    r.boot.name(),
                    r.case,
                    r.metric
                ));
            }
        }
    }
    out
}

/// The case an experiment's ratios are taken against. `numalab/*` means the case with the
/// same workload after the slash.
fn baseline_rule(bench: &str) -> Option<&'static str> {
    Some(match bench {
        "slub_list_lock" => "linux_default",
        "slabinfo_reader" => "scan",
        "memoryless_node" => "single_node",
        "numa_locality" => "default",
        "vmalloc_scaling" => "global",
        "page_alloc" => "numalab",
        "alloc_peers" => "numalab/*",
        _ => return None,
    })
}

/// The baseline case for `case` of `bench`, given the cases present.
pub fn baseline_for(bench: &str, case: &str, cases: &[String]) -> Option<String> {
    let want = match baseline_rule(bench) {
        Some(rule) => match rule.strip_suffix("/*") {
            Some(prefix) => {
                let workload = case.split_once('/').map(|(_, w)| w)?;
                format!("{prefix}/{workload}")
            }
            None => rule.to_string(),
        },
        None => cases.first()?.clone(),
    };
    cases.contains(&want).then_some(want)
}

/// A number in a table: about 4 significant digits without exponent noise.
pub fn fmt_value(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || a >= 1000.0 || (v.fract() == 0.0 && a < 1e15) {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 {
        format!("{v:.3}")
    } else {
        format!("{v:.5}")
    }
}

/// Per experiment: one row per metric/case/cpus with its value and its ratio against the
/// baseline case (same metric, CPUs and clock).
pub fn tables(records: &[BenchRecord]) -> String {
    let mut by_bench: BTreeMap<&str, Vec<&BenchRecord>> = BTreeMap::new();
    for r in records {
        by_bench.entry(&r.bench).or_default().push(r);
    }
    let mut out = String::new();
    for (bench, rows) in by_bench {
        let mut cases: Vec<String> = Vec::new();
        for r in &rows {
            if !cases.contains(&r.case) {
                cases.push(r.case.clone());
            }
        }
        let rule = baseline_rule(bench).unwrap_or("first case");
        let _ = writeln!(out, "\n== {bench} (ratio: value / baseline {rule}) ==");
        let _ = writeln!(
            out,
            "{:<34} {:<28} {:>4} {:>6} {:>14} {:>8}  unit",
            "metric", "case", "cpus", "clock", "value", "ratio"
        );
        let mut metrics: Vec<&str> = Vec::new();
        for r in &rows {
            if !metrics.contains(&r.metric.as_str()) {
                metrics.push(&r.metric);
            }
        }
        for metric in metrics {
            let mut mrows: Vec<&&BenchRecord> =
                rows.iter().filter(|r| r.metric == metric).collect();
            mrows.sort_by_key(|r| {
                (
                    cases.iter().position(|c| *c == r.case),
                    r.cpus,
                    r.clock.clone(),
                )
            });
            for r in mrows {
                let base = baseline_for(bench, &r.case, &cases).and_then(|b| {
                    rows.iter().find(|x| {
                        x.case == b
                            && x.metric == r.metric
                            && x.cpus == r.cpus
                            && x.clock == r.clock
                    })
                });
                let ratio = match base {
                    Some(b) if b.value != 0.0 => format!("{:.2}x", r.value / b.value),
                    Some(_) if r.value == 0.0 => "1.00x".into(),
                    _ => "-".into(),
                };
                let _ = writeln!(
                    out,
                    "{:<34} {:<28} {:>4} {:>6} {:>14} {:>8}  {}",
                    metric,
                    r.case,
                    r.cpus,
                    r.clock,
                    fmt_value(r.value),
                    ratio,
                    r.unit
                );
            }
        }
    }
    out
}

/// Reads a JSONL result file: the header (first object with `"record":"header"`) and records.
pub fn read_jsonl(text: &str) -> Result<(Option<Value>, Vec<BenchRecord>), Vec<Violation>> {
    let mut header = None;
    let mut records = Vec::new();
    let mut violations = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| Violation {
            line_no: i + 1,
            message,
            line: line.to_string(),
        };
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(obj))
                if obj.get("record").and_then(Value::as_str) == Some("header") =>
            {
                header = Some(Value::Object(obj))
            }
            Ok(Value::Object(obj)) => {
                let boot = obj
                    .get("boot")
                    .and_then(Value::as_str)
                    .and_then(Boot::from_name)
                    .unwrap_or(Boot::Tsc);
                match record_from_json(&obj, boot) {
                    Ok(r) => records.push(r),
                    Err(m) => violations.push(bad(m)),
                }
            }
            Ok(_) => violations.push(bad("not a JSON object".into())),
            Err(e) => violations.push(bad(format!("not valid JSON: {e}"))),
        }
    }
    if violations.is_empty() {
        Ok((header, records))
    } else {
        Err(violations)
    }
}

/// Per bench/case/metric/cpus/clock: the value in `a`, in `b`, and the change in percent;
/// then the measurements only one side has.
pub fn compare(a: &[BenchRecord], b: &[BenchRecord]) -> String {
    let index = |rs: &[BenchRecord]| -> BTreeMap<Key, (f64, String)> {
        rs.iter()
            .map(|r| (r.key(), (r.value, r.unit.clone())))
            .collect()
    };
    let (ia, ib) = (index(a), index(b));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<18} {:<26} {:<34} {:>4} {:>6} {:>12} {:>12} {:>9}",
        "bench", "case", "metric", "cpus", "clock", "A", "B", "change"
    );
    for (key, (va, unit)) in &ia {
        let Some((vb, _)) = ib.get(key) else { continue };
        let change = if *va != 0.0 {
            format!("{:+.1}%", (vb - va) / va.abs() * 100.0)
        } else if *vb == 0.0 {
            "+0.0%".into()
        } else {
            "new>0".into()
        };
        let _ = writeln!(
            out,
            "{:<18} {:<26} {:<34} {:>4} {:>6} {:>12} {:>12} {:>9}  {}",
            key.0,
            key.1,
            key.2,
            key.3,
            key.4,
            fmt_value(*va),
            fmt_value(*vb),
            change,
            unit
        );
    }
    for (side, mine, other) in [("A", &ia, &ib), ("B", &ib, &ia)] {
        for key in mine.keys().filter(|k| !other.contains_key(*k)) {
            let _ = writeln!(
                out,
                "only in {side}: {} {} {} cpus={} clock={}",
                key.0, key.1, key.2, key.3, key.4
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(bench: &str, case: &str, metric: &str, value: &str, cpus: u32) -> String {
        format!(
            "BENCH {{\"bench\":\"{bench}\",\"case\":\"{case}\",\"metric\":\"{metric}\",\"value\":{value},\"unit\":\"ops\",\"cpus\":{cpus},\"nodes\":4,\"clock\":\"tsc\"}}"
        )
    }

    #[test]
    fn parses_the_kernel_format_and_skips_other_lines() {
        let log = format!(
            "boot\n{}\n# bench progress: x y 10%\n{}\r\nok 1 bench.x\n",
            line("slub_list_lock", "linux_default", "ops_per_cpu", "100", 2),
            line(
                "alloc_peers",
                "numalab/fast64",
                "instructions_per_pair",
                "38.5000",
                1
            )
        );
        let (records, violations) = parse_log(&log, Boot::Tsc);
        assert!(violations.is_empty(), "{violations:?}");
        assert_eq!(records.len(), 2);
        assert_eq!(records[0].value, 100.0);
        assert_eq!(records[1].case, "numalab/fast64");
        assert_eq!(records[1].value, 38.5);
    }

    #[test]
    fn contract_violations_are_reported_with_line_numbers() {
        let log = [
            line("SlubListLock", "a", "m", "1", 1),
            line("b", "Case", "m", "1", 1),
            line("b", "a", "ops-per", "1", 1),
            line("b", "a", "m", "null", 1),
            line("b", "a", "m", "\"5\"", 1),
            line("b", "a", "m", "1", 0),
            "BENCH {\"bench\":\"b\"}".to_string(),
            "BENCH not json".to_string(),
            line("b", "a", "m", "1", 1).replace("\"tsc\"", "\"wall\""),
        ]
        .join("\n");
        let (records, violations) = parse_log(&log, Boot::Tsc);
        assert!(records.is_empty());
        let msgs: Vec<&str> = violations.iter().map(|v| v.message.as_str()).collect();
        assert_eq!(violations.len(), 9, "{msgs:?}");
        assert!(msgs[0].contains("bench 'SlubListLock' is not lower_snake_case"));
        assert!(msgs[1].contains("case 'Case'"));
        assert!(msgs[2].contains("metric 'ops-per'"));
        assert!(msgs[3].contains("not a finite number"));
        assert!(msgs[4].contains("must be a number"));
        assert!(msgs[5].contains("positive integer"));
        assert!(msgs[6].contains("missing required field 'case'"));
        assert!(msgs[7].contains("not valid JSON"));
        assert!(msgs[8].contains("clock 'wall'"));
        assert_eq!(violations[3].line_no, 4);
        // A tsc record in the icount boot (and the reverse) breaks the contract too.
        let tsc_line = line("b", "a", "m", "1", 1);
        let (ok, bad) = parse_log(&tsc_line, Boot::Icount);
        assert!(ok.is_empty());
        assert!(
            bad[0].message.contains("clock 'tsc' in the icount boot"),
            "{bad:?}"
        );
        let (_, bad) = parse_log(&tsc_line.replace("\"tsc\"", "\"icount\""), Boot::Uma);
        assert!(
            bad[0].message.contains("clock 'icount' in the uma boot"),
            "{bad:?}"
        );
    }

    #[test]
    fn required_measurements_missing_from_a_boot_that_ran() {
        let log = line("slabinfo_reader", "scan", "max_list_lock_hold", "10", 7);
        let (records, _) = parse_log(&log, Boot::Tsc);
        let ran: BTreeSet<String> = ["slabinfo_reader".to_string()].into();
        let boots = [BootResult {
            boot: Boot::Tsc,
            ran,
            nodes: 4,
            records: &records,
        }];
        let missing = missing_required(&boots);
        assert_eq!(missing.len(), 5, "{missing:#?}");
        assert!(missing
            .iter()
            .any(|m| m.contains("case 'counters' metric 'active_objs_error'")));
        // An experiment that did not run (skipped, or not in the tree) requires nothing.
        let none = [BootResult {
            boot: Boot::Tsc,
            ran: BTreeSet::new(),
            nodes: 4,
            records: &records,
        }];
        assert!(missing_required(&none).is_empty());
    }

    #[test]
    fn registered_list() {
        let log = "x\n# bench: registered clock_overhead slub_list_lock\n";
        let r = registered(log);
        assert!(r.contains("slub_list_lock") && r.len() == 2);
    }

    #[test]
    fn table_ratios_use_the_baseline_at_the_same_cpus() {
        let log = [
            line("slub_list_lock", "linux_default", "ops_per_cpu", "100", 2),
            line("slub_list_lock", "partial_64", "ops_per_cpu", "150", 2),
            line("slub_list_lock", "linux_default", "ops_per_cpu", "50", 8),
            line("slub_list_lock", "partial_64", "ops_per_cpu", "100", 8),
            line(
                "alloc_peers",
                "talc/fast64",
                "instructions_per_pair",
                "120",
                1,
            ),
            line(
                "alloc_peers",
                "numalab/fast64",
                "instructions_per_pair",
                "40",
                1,
            ),
        ]
        .join("\n");
        let (records, _) = parse_log(&log, Boot::Tsc);
        let t = tables(&records);
        let row = |case: &str, cpus: &str| {
            t.lines()
                .find(|l| l.contains(case) && l.split_whitespace().nth(2) == Some(cpus))
                .unwrap_or_else(|| panic!("no row {case} {cpus} in\n{t}"))
                .to_string()
        };
        assert!(row("partial_64", "2").contains("1.50x"), "{t}");
        assert!(row("partial_64", "8").contains("2.00x"), "{t}");
        assert!(row("linux_default", "8").contains("1.00x"), "{t}");
        assert!(row("talc/fast64", "1").contains("3.00x"), "{t}");
        assert!(t.contains("== alloc_peers") && t.contains("== slub_list_lock"));
    }

    #[test]
    fn compare_prints_changes_and_one_sided_keys() {
        let a = parse_log(
            &[
                line("b", "c", "m", "100", 1),
                line("b", "c", "gone", "1", 1),
            ]
            .join("\n"),
            Boot::Tsc,
        )
        .0;
        let b = parse_log(
            &[line("b", "c", "m", "80", 1), line("b", "d", "m", "1", 1)].join("\n"),
            Boot::Tsc,
        )
        .0;
        let out = compare(&a, &b);
        assert!(out.contains("-20.0%"), "{out}");
        assert!(out.contains("only in A: b c gone"), "{out}");
        assert!(out.contains("only in B: b d m"), "{out}");
    }

    #[test]
    fn jsonl_round_trip() {
        let (records, _) = parse_log(&line("b", "c", "m", "2.5", 3), Boot::Tsc);
        assert_eq!(records.len(), 1);
        let mut text = String::from("{\"record\":\"header\",\"git_rev\":\"abc\"}\n");
        for r in &records {
            text.push_str(&r.to_json().to_string());
            text.push('\n');
        }
        let (header, back) = read_jsonl(&text).unwrap();
        assert_eq!(header.unwrap()["git_rev"], "abc");
        assert_eq!(back, records);
        assert!(read_jsonl("{\"bench\":1}\n").is_err());
    }

    #[test]
    fn values_are_formatted_readably() {
        assert_eq!(fmt_value(123456.7), "123457");
        assert_eq!(fmt_value(38.46), "38.5");
        assert_eq!(fmt_value(0.5), "0.500");
        assert_eq!(fmt_value(0.0123), "0.01230");
        assert_eq!(fmt_value(0.0), "0");
        assert_eq!(fmt_value(8.0), "8");
    }
}
