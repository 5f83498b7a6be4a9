//! The BENCH lines of a serial log: every `BENCH {json}` line checked against the contract
//! (with its line number when it breaks it), and the experiments a boot says it has.

use super::record::{record_from_json, BenchRecord, Boot, Clock, Violation};
use crate::wire::BootLog;
use serde_json::Value;

/// A record's clock must be the boot's: under icount rdtsc counts instructions, so nothing
/// measured there is host time, and nothing outside it is an instruction count.
fn clock_matches_boot(r: BenchRecord, boot: Boot) -> Result<BenchRecord, String> {
    let expected = boot.clock();
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
            match boot.clock() {
                Clock::Icount => "an instruction count",
                Clock::Tsc => "host time",
            }
        ))
    }
}

/// Every BENCH line of a serial log's text: the records that keep the contract, and the
/// violations ([`records`] of its [`BootLog`]).
pub fn parse_log(log: &str, boot: Boot) -> (Vec<BenchRecord>, Vec<Violation>) {
    records(&BootLog::parse(log), boot)
}

/// Every BENCH line of a boot's log: the records that keep the contract, and the violations.
pub fn records(log: &BootLog, boot: Boot) -> (Vec<BenchRecord>, Vec<Violation>) {
    let mut records = Vec::new();
    let mut violations = Vec::new();
    for line in &log.records {
        let parsed = match serde_json::from_str::<Value>(line.json()) {
            Ok(Value::Object(obj)) => {
                record_from_json(&obj, boot).and_then(|r| clock_matches_boot(r, boot))
            }
            Ok(_) => Err("not a JSON object".into()),
            Err(e) => Err(format!("not valid JSON: {e}")),
        };
        match parsed {
            Ok(r) => records.push(r),
            Err(message) => violations.push(Violation {
                line_no: line.line_no,
                message,
                line: line.line.clone(),
            }),
        }
    }
    (records, violations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::catalog::{ALLOC_PEERS, CLOCK_OVERHEAD, SLUB_LIST_LOCK};
    use crate::bench::tests::line;

    #[test]
    fn parses_the_kernel_format_and_skips_other_lines() {
        let log = format!(
            "boot\n{}\n# bench progress: x y 10%\n{}\r\nok 1 bench.x\n",
            line(
                SLUB_LIST_LOCK.name,
                "linux_default",
                "ops_per_cpu",
                "100",
                2
            ),
            line(
                ALLOC_PEERS.name,
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
    fn registered_list() {
        let log = format!(
            "x\n# bench: registered {} {}\n",
            CLOCK_OVERHEAD.name, SLUB_LIST_LOCK.name
        );
        let r = BootLog::parse(&log).registered;
        assert!(r.contains(SLUB_LIST_LOCK.name) && r.len() == 2);
    }
}
