//! The JSONL result file: a record's JSON form (the kernel's fields plus `boot` and `kernel`),
//! and reading a file back (its header and records, or every line that breaks the contract).

use super::record::{record_from_json, BenchRecord, Boot, Violation};
use serde_json::Value;

impl BenchRecord {
    /// The JSONL form: the kernel's fields plus `boot`, `rep` (the repetition of that boot),
    /// `kind` (count, instructions or timing: `MetricKind`) and `kernel`; `variant` only when
    /// it has one (a merged sweep's record).
    pub fn to_json(&self) -> Value {
        let mut j = serde_json::json!({
            "bench": self.bench, "case": self.case, "metric": self.metric,
            "value": self.value, "unit": self.unit, "cpus": self.cpus,
            "nodes": self.nodes, "clock": self.clock.name(), "boot": self.boot.name(),
            "rep": self.rep, "kind": self.kind().name(),
            "kernel": self.kernel,
        });
        if let Some(v) = &self.variant {
            j["variant"] = Value::from(v.as_str());
        }
        if self.kvm {
            j["accel"] = Value::from("kvm");
        }
        j
    }
}

/// Reads a JSONL result file: the header (the object with `"record":"header"`) and records.
/// A second header is a violation: the file holds two runs (`cat A B`), whose records would
/// otherwise be read as repetitions of one.
pub fn read_jsonl(text: &str) -> Result<(Option<Value>, Vec<BenchRecord>), Vec<Violation>> {
    let mut header = None;
    let mut header_line = 0;
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
                if header.is_some() {
                    violations.push(bad(format!(
                        "a second header (the first is line {header_line}): this file holds \
                         two runs (e.g. `cat A B`); give each run its own file"
                    )));
                    continue;
                }
                header_line = i + 1;
                header = Some(Value::Object(obj))
            }
            Ok(Value::Object(obj)) => {
                let boot = obj
                    .get("boot")
                    .and_then(Value::as_str)
                    .and_then(Boot::from_name)
                    .unwrap_or(Boot::Tsc);
                let rep = obj.get("rep").and_then(Value::as_u64).unwrap_or(0);
                let variant = obj.get("variant").and_then(Value::as_str).map(String::from);
                let kvm = obj.get("accel").and_then(Value::as_str) == Some("kvm");
                match record_from_json(&obj, boot) {
                    Ok(r) => records.push(BenchRecord {
                        rep: u32::try_from(rep).unwrap_or(u32::MAX),
                        variant,
                        kvm,
                        ..r
                    }),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::parse_log;
    use crate::bench::tests::line;

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
        // A repeated det/tsc record keeps its boot, repetition and kind.
        let r = BenchRecord {
            rep: 2,
            boot: Boot::Det,
            clock: numalab_algo::bench::Clock::Icount,
            metric: "list_lock_acquisitions_per_kop".into(),
            unit: "acquisitions".into(),
            ..records[0].clone()
        };
        let j = r.to_json();
        assert_eq!(
            (j["rep"].as_u64(), j["boot"].as_str()),
            (Some(2), Some("det"))
        );
        assert_eq!(j["kind"], "count");
        let (_, back) = read_jsonl(&format!("{j}\n")).unwrap();
        assert_eq!(back, vec![r.clone()]);
        let t = BenchRecord {
            unit: "ops_per_sec".into(),
            ..r
        };
        assert_eq!(t.to_json()["kind"], "timing");
        assert!(
            t.to_json().get("variant").is_none(),
            "no variant outside a sweep"
        );
    }

    #[test]
    fn a_file_holding_two_runs_is_refused_at_its_second_header() {
        // `cat A B` was read as one run, its records mixed.
        let (records, _) = parse_log(&line("b", "c", "m", "2.5", 3), Boot::Tsc);
        let run = format!(
            "{{\"record\":\"header\",\"git_rev\":\"abc\"}}\n{}\n",
            records[0].to_json()
        );
        let v = read_jsonl(&format!("{run}{run}")).unwrap_err();
        assert_eq!(v.len(), 1, "{v:?}");
        assert_eq!(v[0].line_no, 3);
        assert!(
            v[0].message
                .contains("a second header (the first is line 1)"),
            "{}",
            v[0].message
        );
        assert!(read_jsonl(&run).is_ok());
    }

    #[test]
    fn a_variant_survives_the_round_trip_and_separates_keys() {
        let (records, _) = parse_log(&line("b", "c", "m", "2.5", 3), Boot::Tsc);
        let plain = records[0].clone();
        let v = BenchRecord {
            variant: Some("4node slub.design=partial".into()),
            ..plain.clone()
        };
        let j = v.to_json();
        assert_eq!(j["variant"], "4node slub.design=partial");
        let (_, back) = read_jsonl(&format!("{j}\n")).unwrap();
        assert_eq!(back, vec![v.clone()]);
        assert_ne!(v.key(), plain.key());
        assert_eq!(plain.key().4, "tsc");
        assert_eq!(v.key().4, "tsc [4node slub.design=partial]");
    }
}
