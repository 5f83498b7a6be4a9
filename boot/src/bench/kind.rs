//! Whether a measurement is a count, an instruction count or a timing, decided from its unit
//! (and, for shares of time, its name); and which timed measurements are contention figures
//! that an oversubscribed host distorts. The det boot keeps counts only; the tables label
//! every row with what it is.
//!
//! The rule (docs/benchmarks.md, "Counts and timings"):
//! - timing: the unit is a clock unit (`tsc_ticks`, `ticks`, `cycles`, `ns`, `us`, `ms`, `s`) or a rate
//!   per time (`..._per_sec`, `.../s`), or the metric is a share of time (`..._share`, such as
//!   the list_lock experiment's `list_lock_wait_share`, whose unit is `fraction`);
//! - instructions: the unit is `instructions` (exact in the one-CPU icount boot);
//! - count: anything else (`acquisitions`, `slabs`, `kib`, `objects`, `fraction`, `purges`...):
//!   events or memory, which under round-robin vCPUs (det) depend on the code alone.

use super::record::{BenchRecord, Boot};

/// What a measurement is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MetricKind {
    /// Events or memory: exact in the det boot, scheduling-dependent in the tsc boot.
    Count,
    /// Guest instructions (exact in the icount boot).
    Instructions,
    /// Host time, or a rate or share of it: a trend under TCG.
    Timing,
}

impl MetricKind {
    pub fn name(self) -> &'static str {
        match self {
            MetricKind::Count => "count",
            MetricKind::Instructions => "instructions",
            MetricKind::Timing => "timing",
        }
    }
}

/// Units that are a length of time.
const TIME_UNITS: &[&str] = &[
    "tsc_ticks",
    "ticks",
    "cycles",
    "ns",
    "us",
    "ms",
    "s",
    "seconds",
];

/// The kind of a measurement with this metric name and unit.
pub fn metric_kind(metric: &str, unit: &str) -> MetricKind {
    if TIME_UNITS.contains(&unit)
        || unit.ends_with("_per_sec")
        || unit.ends_with("/s")
        || metric.ends_with("_share")
    {
        MetricKind::Timing
    } else if unit == "instructions" {
        MetricKind::Instructions
    } else {
        MetricKind::Count
    }
}

impl BenchRecord {
    /// This record's kind (`metric_kind`).
    pub fn kind(&self) -> MetricKind {
        metric_kind(&self.metric, &self.unit)
    }

    /// A figure that depends on vCPUs running at the same moment: a timing or a contended
    /// count, measured with several CPUs in a boot on host time. On a host with fewer cores
    /// than `cpus` the vCPUs take turns, which compresses it.
    pub fn is_contention(&self) -> bool {
        !self.boot.deterministic()
            && self.cpus > 1
            && (self.kind() == MetricKind::Timing || self.metric.contains("contended"))
    }
}

/// Whether the det boot keeps `r`: counts only (its timings are instruction time under
/// round-robin vCPUs, which measure no contention).
pub fn det_keeps(r: &BenchRecord) -> bool {
    r.boot != Boot::Det || r.kind() == MetricKind::Count
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_decide_the_kind() {
        use MetricKind::*;
        let cases = [
            ("list_lock_acquisitions_per_kop", "acquisitions", Count),
            ("list_lock_contended_per_kop", "acquisitions", Count),
            ("cpu_partial_slabs", "slabs", Count),
            ("slab_kib", "kib", Count),
            ("local_object_fraction", "fraction", Count),
            ("active_objs_error", "objects", Count),
            ("list_lock_wait_share", "fraction", Timing),
            ("ops_per_cpu", "ops_per_sec", Timing),
            ("allocations_per_sec", "allocations_per_sec", Timing),
            ("ops_per_sec", "pairs/s", Timing),
            ("max_list_lock_hold", "tsc_ticks", Timing),
            ("round_trip", "ns", Timing),
            ("instructions_per_pair", "cycles", Timing),
            ("instructions_per_pair", "instructions", Instructions),
        ];
        for (metric, unit, want) in cases {
            assert_eq!(metric_kind(metric, unit), want, "{metric} [{unit}]");
        }
    }
}
