//! The BENCH output contract: one serial line `BENCH {json}` per measurement.
//!
//! Required fields: bench, case, metric, value, unit, cpus, nodes, clock. The host collector
//! (boot/src/bench/) parses these lines back; both sides are tested against each other.
//! `catalog` is every experiment's facts (names, cases, boots, required metrics, seeds, Linux
//! twin); `plan` the selection, name rules and loop sizes.

pub mod catalog;
pub mod mlc;
pub mod plan;

use alloc::format;
use alloc::string::String;

crate::options::choice! {
    /// How a measurement's time was taken (`bench.clock`).
    pub enum Clock {
        /// rdtsc under plain TCG: host time, a trend only.
        #[default]
        Tsc = "tsc",
        /// rdtsc under `-icount shift=0`: counts executed guest instructions, exact and
        /// repeatable.
        Icount = "icount",
    }
}

/// One measurement.
#[derive(Clone, Debug)]
pub struct Record<'a> {
    pub bench: &'a str,
    pub case: &'a str,
    pub metric: &'a str,
    pub value: f64,
    pub unit: &'a str,
    pub cpus: u32,
    pub nodes: u32,
    pub clock: Clock,
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// JSON has no NaN or infinity: those are written as null (and the host collector flags them).
fn json_num(v: f64) -> String {
    if v.is_finite() {
        if v == (v as i64) as f64 && v.abs() < 1e15 {
            format!("{}", v as i64)
        } else {
            format!("{:.4}", v)
        }
    } else {
        String::from("null")
    }
}

impl Record<'_> {
    /// `BENCH {"bench":...,"case":...,...}` without a trailing newline.
    pub fn line(&self) -> String {
        format!(
            "{}{{\"bench\":{},\"case\":{},\"metric\":{},\"value\":{},\"unit\":{},\"cpus\":{},\"nodes\":{},\"clock\":{}}}",
            crate::wire::bench::RECORD,
            json_str(self.bench),
            json_str(self.case),
            json_str(self.metric),
            json_num(self.value),
            json_str(self.unit),
            self.cpus,
            self.nodes,
            json_str(self.clock.name())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_format() {
        let r = Record {
            bench: "peer_bench",
            case: "numalab/fast64",
            metric: "instructions_per_pair",
            value: 38.5,
            unit: "instructions",
            cpus: 1,
            nodes: 4,
            clock: Clock::Icount,
        };
        assert_eq!(
            r.line(),
            "BENCH {\"bench\":\"peer_bench\",\"case\":\"numalab/fast64\",\"metric\":\"instructions_per_pair\",\"value\":38.5000,\"unit\":\"instructions\",\"cpus\":1,\"nodes\":4,\"clock\":\"icount\"}"
        );
        let r2 = Record {
            value: f64::NAN,
            ..r
        };
        assert!(r2.line().contains("\"value\":null"));
    }
}
