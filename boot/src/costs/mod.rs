//! Cost models (docs/costs.md): what a machine's caches and memory cost, in Intel MLC's own
//! form. A cost model is a short header of `key: value` lines followed by the text of
//! `mlc --latency_matrix` and `mlc --c2c_latency` exactly as MLC prints it (mlc.rs). MLC's
//! text alone is a cost model too: what it lacks comes from the default preset, and
//! [`CostModel::borrowed`] says what (the console prints it). Presets live in the
//! repository's `costs/` folder (presets.rs); `--cost-model NAME|FILE` picks one.
//!
//! Pure: parsing and checking only. apply.rs fits a model to a booted machine (or falls
//! back to the SLIT scaling) and writes the plugin's cache directives.

pub mod apply;
pub mod mlc;
pub mod presets;
#[cfg(test)]
mod tests;

pub use apply::{Applied, Shape};

/// One cache level: size, associativity, load-to-use latency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Level {
    pub bytes: u64,
    pub ways: u32,
    pub cycles: f64,
}

/// How the LLC relates to the private caches (the plugin's `llc ... POLICY`). The plugin's
/// own `Policy` (trace/src/config.rs) has the same three names; the runner does not link the
/// plugin's crate, which is GPL through the qemu-plugin crate (docs/trace.md), so each keeps
/// its copy and the config text between them is the contract.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Inclusive,
    NonInclusive,
    Victim,
}

impl Policy {
    pub fn name(self) -> &'static str {
        match self {
            Policy::Inclusive => "inclusive",
            Policy::NonInclusive => "non_inclusive",
            Policy::Victim => "victim",
        }
    }

    fn parse(word: &str) -> Option<Policy> {
        match word {
            "inclusive" => Some(Policy::Inclusive),
            "non_inclusive" => Some(Policy::NonInclusive),
            "victim" => Some(Policy::Victim),
            _ => None,
        }
    }
}

/// A cost model, read and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct CostModel {
    /// Printed beside every modelled figure.
    pub name: String,
    /// The machine in words (`machine:`), if the header says.
    pub machine: Option<String>,
    /// Core clock: ns x GHz = cycles.
    pub ghz: f64,
    pub l1d: Level,
    pub l2: Level,
    /// One LLC domain's size, ways and latency on the real machine.
    pub llc: Level,
    pub llc_policy: Policy,
    /// Cores that share one LLC domain on the real machine (the LLC's scaling, apply.rs).
    pub llc_cores: u32,
    /// The LLC domain of each of the latency matrix's rows (CPU nodes), in row order; None:
    /// each node its own domain.
    pub llc_domains: Option<Vec<u32>>,
    /// MLC's figures (ns).
    pub mlc: mlc::Mlc,
    /// `source_*:` lines, in file order (key, text).
    pub sources: Vec<(String, String)>,
    /// What came from the default preset, in words (empty for a complete model).
    pub borrowed: Vec<String>,
}

/// The header keys a cost model may have (each `source_KEY` too).
pub const KEYS: [&str; 9] = [
    "name",
    "machine",
    "ghz",
    "l1d",
    "l2",
    "llc",
    "llc_policy",
    "llc_cores",
    "llc_domains",
];

/// A header line: `key: value` with a lower-case key of letters, digits and `_`.
fn header_line(line: &str) -> Option<(&str, &str)> {
    let (k, v) = line.split_once(':')?;
    let ok = k.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && k.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    (ok && (v.is_empty() || v.starts_with(' ') || v.starts_with('\t'))).then(|| (k, v.trim()))
}

fn level(v: &str, line: usize, key: &str) -> Result<Level, String> {
    let w: Vec<&str> = v.split_whitespace().collect();
    let bad =
        || format!("line {line}: {key}: expected BYTES WAYS CYCLES (e.g. 32768 8 5), found '{v}'");
    let [b, ways, c] = w.as_slice() else {
        return Err(bad());
    };
    let bytes: u64 = b.parse().map_err(|_| bad())?;
    let ways: u32 = ways.parse().map_err(|_| bad())?;
    let cycles: f64 = c.parse().map_err(|_| bad())?;
    if ways == 0 || bytes == 0 || !bytes.is_multiple_of(64 * ways as u64) {
        return Err(format!(
            "line {line}: {key}: {bytes} bytes is not a non-zero multiple of 64 x {ways} ways"
        ));
    }
    if !(cycles.is_finite() && cycles >= 1.0) {
        return Err(format!(
            "line {line}: {key}: a latency of '{c}' cycles (at least 1)"
        ));
    }
    Ok(Level {
        bytes,
        ways,
        cycles,
    })
}

impl CostModel {
    /// Reads a cost model's text. `fallback_name` names a model whose header has no `name:`
    /// (a file's stem); `default` fills what the text lacks (None: the text must be complete,
    /// as a shipped preset is). Err: `line N: why`.
    pub fn parse(
        text: &str,
        fallback_name: &str,
        default: Option<&CostModel>,
    ) -> Result<CostModel, String> {
        let mut name = None;
        let mut machine = None;
        let mut ghz = None;
        let (mut l1d, mut l2, mut llc) = (None, None, None);
        let (mut policy, mut cores, mut domains) = (None, None, None);
        let mut sources = Vec::new();
        let mut body_from = 0; // index of MLC's first line
        let lines: Vec<&str> = text.lines().collect();
        for (i, raw) in lines.iter().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                body_from = i + 1;
                continue;
            }
            let Some((key, value)) = header_line(line) else {
                body_from = i;
                break;
            };
            body_from = i + 1;
            let value = value.split(" #").next().unwrap_or("").trim();
            match key {
                "name" if !value.is_empty() => name = Some(value.to_string()),
                "machine" => machine = Some(value.to_string()),
                "ghz" => {
                    ghz = Some(
                        value
                            .parse::<f64>()
                            .ok()
                            .filter(|g| g.is_finite() && *g > 0.0)
                            .ok_or_else(|| {
                                format!("line {n}: ghz: '{value}' is not a clock in GHz")
                            })?,
                    )
                }
                "l1d" => l1d = Some(level(value, n, key)?),
                "l2" => l2 = Some(level(value, n, key)?),
                "llc" => llc = Some(level(value, n, key)?),
                "llc_policy" => {
                    policy = Some(Policy::parse(value).ok_or_else(|| {
                        format!(
                        "line {n}: llc_policy: '{value}' is not inclusive, non_inclusive or victim"
                    )
                    })?)
                }
                "llc_cores" => {
                    cores = Some(
                        value
                            .parse::<u32>()
                            .ok()
                            .filter(|c| *c > 0)
                            .ok_or_else(|| {
                                format!("line {n}: llc_cores: '{value}' is not a core count")
                            })?,
                    )
                }
                "llc_domains" => {
                    let d: Result<Vec<u32>, _> = value.split_whitespace().map(str::parse).collect();
                    domains = Some(d.ok().filter(|d| !d.is_empty()).ok_or_else(|| {
                        format!("line {n}: llc_domains: '{value}' is not a list of domain numbers")
                    })?)
                }
                k if k.strip_prefix("source_").is_some() => {
                    sources.push((k.to_string(), value.to_string()))
                }
                _ => {
                    return Err(format!(
                        "line {n}: unknown key '{key}' (one of {}, source_KEY)",
                        KEYS.join(", ")
                    ))
                }
            }
        }
        let body: Vec<&str> = lines.get(body_from..).unwrap_or(&[]).to_vec();
        // A header key below MLC's first line would be ignored: refuse it instead.
        for (i, l) in body.iter().enumerate() {
            if let Some((k, _)) = header_line(l.trim()) {
                if KEYS.contains(&k) || k.starts_with("source_") {
                    return Err(format!(
                        "line {}: '{k}:' after MLC's text began (line {}): the header comes first",
                        body_from + i + 1,
                        body_from + 1
                    ));
                }
            }
        }
        let mlc = mlc::parse(&body.join("\n"), body_from + 1)?;
        let Some(lat) = &mlc.latency else {
            return Err(format!(
                "line {}: no idle latency matrix ('Measuring idle latencies ... (in ns)...' and MLC's table)",
                lines.len().max(1)
            ));
        };
        // Every CPU node's row must have its own node's column (the local figure).
        for &r in &lat.rows {
            if lat.get(r, r).is_none() {
                return Err(format!(
                    "idle latency matrix: node {r} has a row but no column of its own (its local latency)"
                ));
            }
        }
        if let Some(d) = &domains {
            if d.len() != lat.rows.len() {
                return Err(format!(
                    "llc_domains: {} domains for {} CPU nodes (the matrix's rows)",
                    d.len(),
                    lat.rows.len()
                ));
            }
        }
        let mut borrowed = Vec::new();
        let mut take = |what: &str, v: Option<()>| {
            if v.is_none() {
                borrowed.push(what.to_string());
            }
        };
        take("ghz", ghz.map(|_| ()));
        take("l1d", l1d.map(|_| ()));
        take("l2", l2.map(|_| ()));
        take("llc", llc.map(|_| ()));
        take("llc_policy", policy.map(|_| ()));
        take("llc_cores", cores.map(|_| ()));
        if mlc.hitm_local.is_none() {
            borrowed.push("local HITM".into());
        }
        let d = match (default, borrowed.is_empty()) {
            (_, true) => None,
            (Some(d), false) => Some(d),
            (None, false) => {
                return Err(format!(
                    "the model lacks {} (a preset must be complete)",
                    borrowed.join(", ")
                ))
            }
        };
        let pick = |v: Option<Level>, f: fn(&CostModel) -> Level| {
            v.unwrap_or_else(|| f(d.expect("borrowed")))
        };
        let mut mlc = mlc;
        if mlc.hitm_local.is_none() {
            mlc.hitm_local = d.and_then(|d| d.mlc.hitm_local);
        }
        Ok(CostModel {
            name: name.unwrap_or_else(|| fallback_name.to_string()),
            machine,
            ghz: ghz.unwrap_or_else(|| d.expect("borrowed").ghz),
            l1d: pick(l1d, |m| m.l1d),
            l2: pick(l2, |m| m.l2),
            llc: pick(llc, |m| m.llc),
            llc_policy: policy.unwrap_or_else(|| d.expect("borrowed").llc_policy),
            llc_cores: cores.unwrap_or_else(|| d.expect("borrowed").llc_cores),
            llc_domains: domains,
            mlc,
            sources,
            borrowed: match d {
                Some(d) if !borrowed.is_empty() => vec![format!(
                    "{} from the default preset {}",
                    borrowed.join(", "),
                    d.name
                )],
                _ => Vec::new(),
            },
        })
    }

    /// The idle latency matrix (always present once parsed).
    pub fn latency(&self) -> &mlc::Matrix {
        self.mlc.latency.as_ref().expect("checked by parse")
    }

    /// Mean of the matrix's diagonal: the model's local DRAM latency (ns).
    pub fn local_dram_ns(&self) -> f64 {
        let l = self.latency();
        let v: Vec<f64> = l.rows.iter().filter_map(|&r| l.get(r, r)).collect();
        v.iter().sum::<f64>() / v.len().max(1) as f64
    }
}
