//! The host side of the BENCH output contract: parse `BENCH {json}` lines from a serial log,
//! check them (required fields, lower_snake_case names, finite values, required
//! bench/case/metric triples), print per-experiment tables with ratios against a baseline case,
//! and compare two result files. Running the boots is run/; charts are bench_svg.rs.
//!
//! One module per mechanism: `record` (a measurement and its field checks), `parse` (the BENCH
//! lines of a serial log), `contract` (the required measurements), `table`, `headline` (one
//! line per experiment), `jsonl` (the result file) and `compare` (two result files;
//! `compare_text` and `compare_html` print them).

pub(crate) mod compare;
#[cfg(test)]
pub(crate) mod compare_tests;
pub(crate) mod compare_text;
mod contract;
mod headline;
mod jsonl;
mod kind;
mod parse;
mod record;
mod seeds;
pub(crate) mod table;

pub use compare::{compare, Comparison, Row, Run, Stats, Verdict};
pub use compare_text::render_text;
pub use contract::{missing_cases, missing_required, required, BootResult, Required};
pub use headline::headlines;
pub use jsonl::read_jsonl;
pub use kind::{det_keeps, metric_kind, MetricKind};
/// The experiment catalog (kernel/algo/src/bench/catalog): names, cases, baselines, boots,
/// required metrics, seed rows and the Linux twin's mirrors of every experiment.
pub use numalab_algo::bench::catalog;
pub use parse::{parse_log, records};
pub use record::{
    is_case_name, is_snake_name, record_from_json, BenchRecord, Boot, Key, Violation,
};
pub use seeds::{
    direction, measure, rows as seed_rows, seeds_table, seeds_table_compact, Direction, Measured,
    SeedRow,
};
pub use table::{
    baseline_boots, baseline_for, fmt_value, ratio_text, significance, tables, Significance, Spread,
};

/// Test helpers shared by the modules' tests.
#[cfg(test)]
pub(crate) mod tests {
    /// A BENCH line as the kernel prints it (unit `ops`, 4 nodes, clock `tsc`).
    pub(crate) fn line(bench: &str, case: &str, metric: &str, value: &str, cpus: u32) -> String {
        format!(
            "BENCH {{\"bench\":\"{bench}\",\"case\":\"{case}\",\"metric\":\"{metric}\",\"value\":{value},\"unit\":\"ops\",\"cpus\":{cpus},\"nodes\":4,\"clock\":\"tsc\"}}"
        )
    }
}
