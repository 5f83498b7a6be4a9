//! One BENCH measurement: the record, the boot it came from, and the contract's field and name
//! checks that turn a JSON object into a record (or say why not).

use serde_json::{Map, Value};

/// Which boot a record came from: the catalog's (kernel/algo/src/bench/catalog), so that
/// an experiment's boots and its records name the same thing.
pub use numalab_algo::bench::catalog::Boot;
pub use numalab_algo::bench::Clock;

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
    /// The kernel's `bench.clock` as the record names it (the contract's two values).
    pub clock: Clock,
    pub boot: Boot,
    /// The repetition of the boot that printed it (0-based; `--reps`).
    pub rep: u32,
    /// The kernel that printed it: `numalab` (whose lines carry no `kernel` field) or
    /// `linux-VERSION` (the Linux twin, run/twin/).
    pub kernel: String,
    /// The job of a merged sweep that measured it (`4node slub.design=partial`, boot/src/sweep/):
    /// records of different variants are different measurements, never repetitions of one.
    /// None in a single run (the kernel's lines and a bench JSONL carry no `variant`).
    pub variant: Option<String>,
    /// Measured under KVM on the host's own cores (a tsc or uma boot of `--accel kvm`); the
    /// JSONL says `"accel":"kvm"`, the tables and the HTML report mark it "real cores".
    pub kvm: bool,
}

/// The identity of a measurement across runs and repetitions: bench, case, metric, cpus and
/// the boot's name (which implies the clock), followed by ` [VARIANT]` for a record of a merged
/// sweep, so that two variants are never taken for repetitions of one measurement.
pub type Key = (String, String, String, u32, String);

impl BenchRecord {
    /// A numalab record on 4 nodes as a test builds it: `[bench, case, metric, unit]`, CPUs,
    /// boot (whose clock it gets), repetition and value.
    #[cfg(test)]
    pub(crate) fn for_test(what: [&str; 4], cpus: u32, boot: Boot, rep: u32, value: f64) -> Self {
        let [bench, case, metric, unit] = what;
        BenchRecord {
            bench: bench.into(),
            case: case.into(),
            metric: metric.into(),
            value,
            unit: unit.into(),
            cpus,
            nodes: 4,
            clock: boot.clock(),
            boot,
            rep,
            kernel: "numalab".into(),
            variant: None,
            kvm: false,
        }
    }

    pub fn key(&self) -> Key {
        let boot = match &self.variant {
            None => self.boot.name().to_string(),
            Some(v) => format!("{} [{v}]", self.boot.name()),
        };
        (
            self.bench.clone(),
            self.case.clone(),
            self.metric.clone(),
            self.cpus,
            boot,
        )
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
pub use numalab_algo::bench::plan::{is_case_name, is_snake_name};

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
    let clock_name = text_field(obj, "clock")?;
    let value = match obj.get("value") {
        Some(Value::Number(n)) => n.as_f64().filter(|v| v.is_finite()),
        Some(Value::Null) => None,
        Some(other) => return Err(format!("field 'value' must be a number, got {other}")),
        None => return Err("missing required field 'value'".into()),
    }
    .ok_or_else(|| format!("{bench}/{case}/{metric}: value is not a finite number"))?;
    let kernel = match obj.get("kernel") {
        None => "numalab".to_string(),
        Some(Value::String(k))
            if k == "numalab" || crate::build::linux_kernel::LinuxKernel::is_linux(k) =>
        {
            k.clone()
        }
        Some(other) => {
            return Err(format!(
                "field 'kernel' must be \"numalab\" or \"linux-VERSION\", got {other}"
            ))
        }
    };
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
    let Some(clock) = Clock::from_name(&clock_name) else {
        return Err(format!(
            "clock '{clock_name}' is neither 'icount' nor 'tsc'"
        ));
    };
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
        rep: 0,
        kernel,
        variant: None,
        kvm: false,
    })
}
