//! Reads the trace plugin's output file, format 2 (docs/trace.md "Output"): the caches it
//! simulated, per (region key, vCPU) counters, DRAM reads and writebacks per (region, vCPU,
//! memory node), HITMs per (region, vCPU, writer's node, home node), the hottest lines of each
//! region, and the boot's totals. Format 1 (the plugin before caches) is refused.

use std::collections::BTreeMap;

/// The counters the plugin keeps per (region, vCPU) and for the whole boot, in its field order.
pub use numalab_algo::formats::trace_counters::COUNTERS as FIELDS;

/// One set of counters (`FIELDS`, by name).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters(pub BTreeMap<String, u64>);

impl Counters {
    pub fn get(&self, field: &str) -> u64 {
        self.0.get(field).copied().unwrap_or(0)
    }

    pub fn add(&mut self, other: &Counters) {
        for (k, v) in &other.0 {
            *self.0.entry(k.clone()).or_default() += v;
        }
    }

    /// RAM accesses (local + remote).
    pub fn accesses(&self) -> u64 {
        self.get("local") + self.get("remote")
    }

    pub fn hitm(&self) -> u64 {
        self.get("hitm_local") + self.get("hitm_remote")
    }
}

/// One of a region's hottest lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Line {
    pub key: u64,
    pub paddr: u64,
    pub vaddr: u64,
    pub node: u32,
    pub loads: u64,
    pub stores: u64,
    pub atomics: u64,
    pub hitm_local: u64,
    pub hitm_remote: u64,
    pub inval: u64,
}

impl Line {
    pub fn hitm(&self) -> u64 {
        self.hitm_local + self.hitm_remote
    }

    /// perf c2c's "records": every access to the line.
    pub fn records(&self) -> u64 {
        self.loads + self.stores + self.atomics
    }
}

/// DRAM traffic of one vCPU with one memory node in one region (a `dram` row).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dram {
    pub key: u64,
    pub vcpu: u32,
    pub node: u32,
    pub reads: u64,
    pub writebacks: u64,
}

/// HITMs one vCPU took from a Modified copy on node `from`, for lines homed on `home` (a
/// `hitm` row).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hitm {
    pub key: u64,
    pub vcpu: u32,
    pub from: u32,
    pub home: u32,
    pub count: u64,
}

/// A whole output file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TraceOutput {
    pub vcpus: u32,
    /// The `caches` line after its keyword (`l1d BYTES WAYS l2 ... POLICY`), or `none`.
    pub caches: String,
    pub dram: Vec<Dram>,
    pub hitm: Vec<Hitm>,
    /// (region key, vCPU) -> counters.
    pub regions: BTreeMap<(u64, u32), Counters>,
    pub lines: Vec<Line>,
    pub total: Counters,
}

impl TraceOutput {
    /// The counters of region `key`, summed over its vCPUs.
    pub fn region_total(&self, key: u64) -> Counters {
        let mut c = Counters::default();
        for ((k, _), v) in &self.regions {
            if *k == key {
                c.add(v);
            }
        }
        c
    }

    /// Region `key`'s hottest lines, hottest first.
    pub fn region_lines(&self, key: u64) -> Vec<&Line> {
        self.lines.iter().filter(|l| l.key == key).collect()
    }
}

fn number(word: &str) -> Option<u64> {
    match word.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => word.parse().ok(),
    }
}

/// `name value name value ...` into counters; Err names the first word that does not fit.
fn counters(words: &[&str]) -> Result<Counters, String> {
    let mut c = Counters::default();
    for pair in words.chunks(2) {
        let [name, value] = pair else {
            return Err(format!("'{}' has no value", pair[0]));
        };
        let v = number(value).ok_or_else(|| format!("{name}: '{value}' is not a number"))?;
        c.0.insert(name.to_string(), v);
    }
    Ok(c)
}

/// A region or total row's counters: `counters`, and exactly the plugin's names (`FIELDS`,
/// declared once in numalab_algo): a plugin built from another revision is named, not misread.
fn plugin_counters(words: &[&str]) -> Result<Counters, String> {
    let c = counters(words)?;
    if let Some(extra) = c.0.keys().find(|k| !FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "'{extra}' is not a counter of this runner's plugin (rebuild it: ./qemu-run.sh setup)"
        ));
    }
    if let Some(missing) = FIELDS.iter().find(|f| !c.0.contains_key(**f)) {
        return Err(format!("counter '{missing}' is missing"));
    }
    Ok(c)
}

/// Parses the plugin's output. Err: the first line that does not read, with its number.
pub fn parse(text: &str) -> Result<TraceOutput, String> {
    let mut out = TraceOutput::default();
    let mut lines = text.lines().enumerate();
    match lines.next() {
        Some((_, "numalab-trace 2")) => {}
        Some((_, "numalab-trace 1")) => {
            return Err("line 1: numalab-trace 1 is the plugin's output before caches; this runner reads format 2 (rebuild trace/: cargo build -p numalab-trace --release)".into())
        }
        _ => return Err("line 1: not a numalab-trace 2 file".into()),
    }
    for (i, line) in lines {
        let w: Vec<&str> = line.split_whitespace().collect();
        let bad = |why: String| format!("line {}: {why}", i + 1);
        match w.as_slice() {
            [] => {}
            ["vcpus", n] => out.vcpus = number(n).ok_or_else(|| bad("vcpus".into()))? as u32,
            ["caches", rest @ ..] if !rest.is_empty() => out.caches = rest.join(" "),
            ["dram", key, "vcpu", v, rest @ ..] => {
                let c = counters(rest).map_err(bad)?;
                if !(c.0.contains_key("node") && c.0.contains_key("reads")) {
                    return Err(bad("dram: expected node M reads R writebacks W".into()));
                }
                out.dram.push(Dram {
                    key: number(key).ok_or_else(|| bad(format!("dram key '{key}'")))?,
                    vcpu: number(v).ok_or_else(|| bad(format!("vcpu '{v}'")))? as u32,
                    node: c.get("node") as u32,
                    reads: c.get("reads"),
                    writebacks: c.get("writebacks"),
                });
            }
            ["hitm", key, "vcpu", v, rest @ ..] => {
                let c = counters(rest).map_err(bad)?;
                if !["from", "home", "count"]
                    .iter()
                    .all(|k| c.0.contains_key(*k))
                {
                    return Err(bad("hitm: expected from F home H count C".into()));
                }
                out.hitm.push(Hitm {
                    key: number(key).ok_or_else(|| bad(format!("hitm key '{key}'")))?,
                    vcpu: number(v).ok_or_else(|| bad(format!("vcpu '{v}'")))? as u32,
                    from: c.get("from") as u32,
                    home: c.get("home") as u32,
                    count: c.get("count"),
                });
            }
            ["region", key, "vcpu", v, rest @ ..] => {
                let key = number(key).ok_or_else(|| bad(format!("region key '{key}'")))?;
                let v = number(v).ok_or_else(|| bad(format!("vcpu '{v}'")))? as u32;
                out.regions
                    .insert((key, v), plugin_counters(rest).map_err(bad)?);
            }
            ["line", key, paddr, vaddr, rest @ ..] => {
                let c = counters(rest).map_err(bad)?;
                out.lines.push(Line {
                    key: number(key).ok_or_else(|| bad(format!("line key '{key}'")))?,
                    paddr: number(paddr).ok_or_else(|| bad(format!("paddr '{paddr}'")))?,
                    vaddr: number(vaddr).ok_or_else(|| bad(format!("vaddr '{vaddr}'")))?,
                    node: c.get("node") as u32,
                    loads: c.get("loads"),
                    stores: c.get("stores"),
                    atomics: c.get("atomics"),
                    hitm_local: c.get("hitm_local"),
                    hitm_remote: c.get("hitm_remote"),
                    inval: c.get("inval"),
                });
            }
            ["total", rest @ ..] => out.total = plugin_counters(rest).map_err(bad)?,
            _ => return Err(bad(format!("unknown record '{}'", w[0]))),
        }
    }
    Ok(out)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    // Format 2 as docs/trace.md ("Output file") lays it out.
    pub const SAMPLE: &str = "numalab-trace 2\nvcpus 2\n\
        caches l1d 32768 8 l2 1048576 16 llc 4194304 16 non_inclusive\n\
        region 0x10 vcpu 0 insns 100 turns 2 loads 5 stores 3 atomics 1 io 0 unmapped 0 local 6 remote 3 dist_sum 120 hits 2 l2_hits 1 llc_hits 1 miss_local 2 miss_remote 1 hitm_local 0 hitm_remote 2 inval 1 writebacks 1\n\
        region 0x10 vcpu 1 insns 50 turns 2 loads 1 stores 1 atomics 0 io 0 unmapped 0 local 2 remote 0 dist_sum 20 hits 1 l2_hits 0 llc_hits 0 miss_local 1 miss_remote 0 hitm_local 0 hitm_remote 0 inval 0 writebacks 0\n\
        dram 0x10 vcpu 0 node 0 reads 2 writebacks 1\n\
        dram 0x10 vcpu 0 node 1 reads 1 writebacks 0\n\
        dram 0x10 vcpu 1 node 1 reads 1 writebacks 0\n\
        hitm 0x10 vcpu 0 from 1 home 1 count 2\n\
        line 0x10 0x2000 0xffff800000002000 node 1 loads 3 stores 2 atomics 1 hitm_local 0 hitm_remote 2 inval 1\n\
        total insns 150 turns 4 loads 6 stores 4 atomics 1 io 0 unmapped 0 local 8 remote 3 dist_sum 140 hits 3 l2_hits 1 llc_hits 1 miss_local 3 miss_remote 1 hitm_local 0 hitm_remote 2 inval 1 writebacks 1\n";

    #[test]
    fn reads_format_2_rows() {
        let t = parse(SAMPLE).unwrap();
        assert_eq!(t.vcpus, 2);
        assert!(t.caches.starts_with("l1d 32768 8"), "{}", t.caches);
        assert_eq!(t.region_total(0x10).get("insns"), 150);
        assert_eq!(t.region_total(0x10).get("l2_hits"), 1);
        assert_eq!(t.region_total(0x10).get("writebacks"), 1);
        assert_eq!(t.region_total(0x10).accesses(), 11);
        assert_eq!(t.dram.len(), 3);
        assert_eq!(
            t.dram[1],
            Dram {
                key: 0x10,
                vcpu: 0,
                node: 1,
                reads: 1,
                writebacks: 0
            }
        );
        assert_eq!(t.hitm[0].from, 1);
        assert_eq!(t.hitm[0].count, 2);
        assert_eq!(t.region_lines(0x10)[0].hitm_remote, 2);
        assert_eq!(t.region_lines(0x10)[0].node, 1);
        assert_eq!(t.total.get("remote"), 3);
    }

    #[test]
    fn a_bad_line_is_named_and_format_1_is_refused() {
        let e = parse("numalab-trace 2\nregion 0x10 vcpu x\n").unwrap_err();
        assert!(e.starts_with("line 2:"), "{e}");
        let e = parse("numalab-trace 2\ndram 0x10 vcpu 0 node 1\n").unwrap_err();
        assert!(e.starts_with("line 2:") && e.contains("reads"), "{e}");
        let e = parse("numalab-trace 2\nvcpus 1\nhitm 0x10 vcpu 0 from 1 count 2\n").unwrap_err();
        assert!(e.starts_with("line 3:") && e.contains("home"), "{e}");
        // A region or total row carries exactly the shared counter names.
        let row = SAMPLE.lines().nth(3).unwrap();
        assert!(row.starts_with("region 0x10 vcpu 0 "), "{row}");
        let e = parse(&format!("numalab-trace 2\n{row} bogus 1\n")).unwrap_err();
        assert!(
            e.starts_with("line 2:") && e.contains("'bogus' is not a counter"),
            "{e}"
        );
        let short = row.replace(" writebacks 1", "");
        let e = parse(&format!("numalab-trace 2\n{short}\n")).unwrap_err();
        assert!(e.contains("counter 'writebacks' is missing"), "{e}");
        let e = parse("numalab-trace 1\nvcpus 2\n").unwrap_err();
        assert!(e.contains("format 2"), "{e}");
        assert!(parse("something else\n").is_err());
    }
}
