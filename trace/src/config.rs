//! The plugin's config file (written by the runner): nodes, SLIT rows, guest-physical ranges
//! per node, the vCPU -> node map and the top-K size; every error names its line.

/// Most vCPUs the directory's sharer bitset holds.
pub const MAX_VCPUS: usize = 256;
/// Hottest lines kept per region when the file has no `top` line.
pub const DEFAULT_TOP: usize = 20;

/// A guest-physical range `[start, end)` on one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemRange {
    pub start: u64,
    pub end: u64,
    pub node: u32,
}

/// How QEMU holds the guest's RAM, which decides the addresses QEMU 7.2 reports (`hwaddr`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QemuRam {
    /// One `memory-backend-ram` per node with memory, in node order (the presets): the default.
    PerNode,
    /// One RAM block for the whole machine (no `-numa ...,memdev=`: UMA, replayed machines).
    Single,
}

/// How an LLC relates to the L2s of its domain (docs/trace.md, the cache model).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
}

/// The finite caches (`l1d`, `l2`, `llc`, `llc_of`): sizes in bytes and ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caches {
    pub l1d: (u64, usize),
    pub l2: (u64, usize),
    pub llc: (u64, usize),
    pub policy: Policy,
    /// `llc_of[node]`: the LLC domain of each node's CPUs (None for a node without vCPUs and
    /// without an `llc_of` line).
    pub llc_of: Vec<Option<u32>>,
    /// Domains 0..domains-1.
    pub domains: u32,
}

/// Most ways a cache may have.
pub const MAX_WAYS: u64 = 64;

/// The parsed config.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub nodes: u32,
    /// `distance[i][j]`: SLIT distance from node i to node j (10 = local).
    pub distance: Vec<Vec<u32>>,
    /// Sorted by start, not overlapping.
    pub mem: Vec<MemRange>,
    /// `vcpu_node[cpu_index]`.
    pub vcpu_node: Vec<u32>,
    pub top: usize,
    pub qemu_ram: QemuRam,
    /// None: the old model, a line stays cached until invalidated (`caches none`).
    pub caches: Option<Caches>,
}

impl Config {
    /// The node of guest-physical `paddr`, or None outside every range.
    pub fn mem_node(&self, paddr: u64) -> Option<u32> {
        let i = self.mem.partition_point(|r| r.end <= paddr);
        self.mem.get(i).filter(|r| r.start <= paddr).map(|r| r.node)
    }
}

fn num(word: &str) -> Result<u64, String> {
    let parsed = match word.strip_prefix("0x").or_else(|| word.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => word.parse::<u64>(),
    };
    parsed.map_err(|_| format!("bad number `{word}`"))
}

fn hex(word: &str) -> Result<u64, String> {
    match word.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).map_err(|_| format!("bad hex number `{word}`")),
        None => Err(format!("`{word}` must be hex with 0x")),
    }
}

fn small(word: &str, what: &str, below: u64) -> Result<u32, String> {
    let v = num(word)?;
    if v >= below {
        return Err(format!("{what} {v} out of range (must be below {below})"));
    }
    Ok(v as u32)
}

/// `BYTES WAYS` of a cache directive.
fn geometry(bytes: &str, ways: &str) -> Result<(u64, usize), String> {
    let b = bytes
        .parse::<u64>()
        .map_err(|_| format!("bad size in bytes `{bytes}` (decimal)"))?;
    let w = ways
        .parse::<u64>()
        .map_err(|_| format!("bad ways `{ways}` (decimal)"))?;
    if w == 0 || w > MAX_WAYS {
        return Err(format!("ways {w} out of range (1 to {MAX_WAYS})"));
    }
    if b == 0 || !b.is_multiple_of(64 * w) {
        return Err(format!(
            "size {b} bytes is not a non-zero multiple of 64 x {w} ways"
        ));
    }
    Ok((b, w as usize))
}

/// Parses the config text; `Err` is one line: `line N: ...` or what is missing.
pub fn parse(text: &str) -> Result<Config, String> {
    let mut nodes: Option<u32> = None;
    let mut rows: Vec<Option<Vec<u32>>> = Vec::new();
    let mut mem: Vec<MemRange> = Vec::new();
    let mut vcpus: Vec<Option<u32>> = Vec::new();
    let mut top = DEFAULT_TOP;
    let mut qemu_ram = QemuRam::PerNode;
    let mut l1d = None;
    let mut l2 = None;
    let mut llc: Option<(u64, usize, Policy)> = None;
    // (node, domain, line number) of each `llc_of`.
    let mut llc_of: Vec<(u32, u32, usize)> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let lineno = i + 1;
        let at = |e: String| format!("line {lineno}: {e}");
        let body = raw.split('#').next().unwrap_or("");
        let words: Vec<&str> = body.split_whitespace().collect();
        let Some((&directive, args)) = words.split_first() else {
            continue;
        };
        let need = |n: usize| -> Result<(), String> {
            if args.len() == n {
                Ok(())
            } else {
                Err(at(format!(
                    "`{directive}` takes {n} values, got {}",
                    args.len()
                )))
            }
        };
        let have_nodes = || nodes.ok_or_else(|| at(format!("`{directive}` before `nodes`")));
        match directive {
            "nodes" => {
                need(1)?;
                if nodes.is_some() {
                    return Err(at("`nodes` given twice".into()));
                }
                let n = small(args[0], "nodes", 1025).map_err(at)?;
                if n == 0 {
                    return Err(at("nodes must be at least 1".into()));
                }
                nodes = Some(n);
                rows = vec![None; n as usize];
            }
            "distance" => {
                let n = have_nodes()?;
                need(1 + n as usize)?;
                let node = small(args[0], "node", n as u64).map_err(at)? as usize;
                if rows[node].is_some() {
                    return Err(at(format!("distance row of node {node} given twice")));
                }
                let row = args[1..]
                    .iter()
                    .map(|w| small(w, "distance", 256))
                    .collect::<Result<Vec<u32>, String>>()
                    .map_err(at)?;
                rows[node] = Some(row);
            }
            "mem" => {
                let n = have_nodes()?;
                need(3)?;
                let start = hex(args[0]).map_err(at)?;
                let end = hex(args[1]).map_err(at)?;
                let node = small(args[2], "node", n as u64).map_err(at)?;
                if start >= end {
                    return Err(at(format!("empty range {:#x}..{:#x}", start, end)));
                }
                if let Some(o) = mem.iter().find(|r| r.start < end && start < r.end) {
                    return Err(at(format!(
                        "range {start:#x}..{end:#x} overlaps {:#x}..{:#x}",
                        o.start, o.end
                    )));
                }
                mem.push(MemRange { start, end, node });
            }
            "vcpu" => {
                let n = have_nodes()?;
                need(2)?;
                let index = small(args[0], "vcpu", MAX_VCPUS as u64).map_err(at)? as usize;
                let node = small(args[1], "node", n as u64).map_err(at)?;
                if vcpus.len() <= index {
                    vcpus.resize(index + 1, None);
                }
                if vcpus[index].is_some() {
                    return Err(at(format!("vcpu {index} given twice")));
                }
                vcpus[index] = Some(node);
            }
            "top" => {
                need(1)?;
                top = num(args[0]).map_err(at)? as usize;
            }
            "qemu_ram" => {
                need(1)?;
                qemu_ram = match args[0] {
                    "per_node" => QemuRam::PerNode,
                    "single" => QemuRam::Single,
                    v => return Err(at(format!("qemu_ram is per_node or single, not `{v}`"))),
                };
            }
            "l1d" | "l2" => {
                need(2)?;
                let g = geometry(args[0], args[1]).map_err(at)?;
                let slot = if directive == "l1d" {
                    &mut l1d
                } else {
                    &mut l2
                };
                if slot.is_some() {
                    return Err(at(format!("`{directive}` given twice")));
                }
                *slot = Some(g);
            }
            "llc" => {
                need(3)?;
                let (b, w) = geometry(args[0], args[1]).map_err(at)?;
                let policy = match args[2] {
                    "inclusive" => Policy::Inclusive,
                    "non_inclusive" => Policy::NonInclusive,
                    "victim" => Policy::Victim,
                    v => {
                        return Err(at(format!(
                            "llc policy is inclusive, non_inclusive or victim, not `{v}`"
                        )))
                    }
                };
                if llc.is_some() {
                    return Err(at("`llc` given twice".into()));
                }
                llc = Some((b, w, policy));
            }
            "llc_of" => {
                let n = have_nodes()?;
                need(2)?;
                let node = small(args[0], "node", n as u64).map_err(at)?;
                let domain = small(args[1], "llc domain", n as u64).map_err(at)?;
                if llc_of.iter().any(|&(m, _, _)| m == node) {
                    return Err(at(format!("llc_of of node {node} given twice")));
                }
                llc_of.push((node, domain, lineno));
            }
            other => return Err(at(format!("unknown directive `{other}`"))),
        }
    }
    let nodes = nodes.ok_or("no `nodes` line")?;
    let distance = rows
        .into_iter()
        .enumerate()
        .map(|(i, r)| r.ok_or(format!("no `distance` line for node {i}")))
        .collect::<Result<Vec<_>, String>>()?;
    if mem.is_empty() {
        return Err("no `mem` line".into());
    }
    mem.sort_by_key(|r| r.start);
    if vcpus.is_empty() {
        return Err("no `vcpu` line".into());
    }
    let vcpu_node = vcpus
        .into_iter()
        .enumerate()
        .map(|(i, n)| n.ok_or(format!("no `vcpu` line for vcpu {i}")))
        .collect::<Result<Vec<_>, String>>()?;
    let caches = caches(nodes, &vcpu_node, l1d, l2, llc, &llc_of)?;
    Ok(Config {
        nodes,
        distance,
        mem,
        vcpu_node,
        top,
        qemu_ram,
        caches,
    })
}

/// The cache directives together: all of `l1d`, `l2`, `llc` or none, and with `llc` one
/// `llc_of` per node with vCPUs, its domains 0..D-1.
fn caches(
    nodes: u32,
    vcpu_node: &[u32],
    l1d: Option<(u64, usize)>,
    l2: Option<(u64, usize)>,
    llc: Option<(u64, usize, Policy)>,
    llc_of: &[(u32, u32, usize)],
) -> Result<Option<Caches>, String> {
    let (l1d, l2, (b, w, policy)) = match (l1d, l2, llc) {
        (None, None, None) => {
            return match llc_of.first() {
                Some(&(_, _, line)) => Err(format!("line {line}: `llc_of` without `llc`")),
                None => Ok(None),
            }
        }
        (Some(a), Some(b), Some(c)) => (a, b, c),
        (a, b, _) => {
            let missing = if a.is_none() {
                "l1d"
            } else if b.is_none() {
                "l2"
            } else {
                "llc"
            };
            return Err(format!(
                "no `{missing}` line (l1d, l2 and llc go together, or none of them)"
            ));
        }
    };
    let mut of = vec![None; nodes as usize];
    for &(node, domain, _) in llc_of {
        of[node as usize] = Some(domain);
    }
    if let Some(&n) = vcpu_node.iter().find(|&&n| of[n as usize].is_none()) {
        return Err(format!("no `llc_of` line for node {n} (it has vCPUs)"));
    }
    let domains = llc_of.iter().map(|&(_, d, _)| d + 1).max().unwrap_or(0);
    if let Some(d) = (0..domains).find(|d| !llc_of.iter().any(|x| x.1 == *d)) {
        let line = llc_of.iter().find(|x| x.1 > d).map_or(0, |x| x.2);
        return Err(format!(
            "line {line}: llc domain {d} skipped (domains are 0 to D-1)"
        ));
    }
    Ok(Some(Caches {
        l1d,
        l2,
        llc: (b, w),
        policy,
        llc_of: of,
        domains,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = "# 2node\nnodes 2\ndistance 0 10 20\ndistance 1 20 10\n\
        mem 0x0 0x20000000 0\nmem 0x20000000 0x40000000 1\n\
        vcpu 0 0\nvcpu 1 0\nvcpu 2 1\nvcpu 3 1\ntop 5 # five\n";

    #[test]
    fn parses_two_nodes() {
        let c = parse(TWO).unwrap();
        assert_eq!(c.nodes, 2);
        assert_eq!(c.distance, vec![vec![10, 20], vec![20, 10]]);
        assert_eq!(c.vcpu_node, vec![0, 0, 1, 1]);
        assert_eq!(c.top, 5);
        assert_eq!(c.qemu_ram, QemuRam::PerNode);
        let single = parse(&format!("{TWO}qemu_ram single\n")).unwrap();
        assert_eq!(single.qemu_ram, QemuRam::Single);
        assert_eq!(c.mem_node(0), Some(0));
        assert_eq!(c.mem_node(0x1fff_ffff), Some(0));
        assert_eq!(c.mem_node(0x2000_0000), Some(1));
        assert_eq!(c.mem_node(0x4000_0000), None);
    }

    #[test]
    fn default_top() {
        let text = TWO.replace("top 5 # five\n", "");
        assert_eq!(parse(&text).unwrap().top, DEFAULT_TOP);
    }

    fn err(text: &str) -> String {
        parse(text).unwrap_err()
    }

    #[test]
    fn errors_name_the_line() {
        assert_eq!(
            err("nodes 2\nbogus 1\n"),
            "line 2: unknown directive `bogus`"
        );
        assert_eq!(err("nodes 2\ndistance 0 10 x\n"), "line 2: bad number `x`");
        assert_eq!(err("vcpu 0 0\n"), "line 1: `vcpu` before `nodes`");
        assert_eq!(
            err("nodes 2\nmem 0x10 0x20 2\n"),
            "line 2: node 2 out of range (must be below 2)"
        );
        assert_eq!(
            err("nodes 1\nmem 16 0x20 0\n"),
            "line 2: `16` must be hex with 0x"
        );
        assert_eq!(
            err("nodes 1\nmem 0x0 0x20 0\nmem 0x10 0x30 0\n"),
            "line 3: range 0x10..0x30 overlaps 0x0..0x20"
        );
        assert_eq!(
            err("nodes 1\n\n# c\nvcpu 0\n"),
            "line 4: `vcpu` takes 2 values, got 1"
        );
        assert_eq!(
            err("nodes 1\nvcpu 256 0\n").as_str(),
            "line 2: vcpu 256 out of range (must be below 256)"
        );
    }

    #[test]
    fn bad_qemu_ram() {
        assert_eq!(
            err("qemu_ram both\n"),
            "line 1: qemu_ram is per_node or single, not `both`"
        );
    }

    const CACHES: &str = "l1d 49152 12\nl2 2097152 16\nllc 8388608 16 non_inclusive\n\
        llc_of 0 0\nllc_of 1 1\n";

    #[test]
    fn parses_caches() {
        assert_eq!(parse(TWO).unwrap().caches, None);
        let c = parse(&format!("{TWO}{CACHES}")).unwrap().caches.unwrap();
        assert_eq!(c.l1d, (49152, 12));
        assert_eq!(c.l2, (2097152, 16));
        assert_eq!((c.llc, c.policy), ((8388608, 16), Policy::NonInclusive));
        assert_eq!((c.llc_of, c.domains), (vec![Some(0), Some(1)], 2));
        let one = CACHES
            .replace("llc_of 1 1", "llc_of 1 0")
            .replace("non_inclusive", "victim");
        let c = parse(&format!("{TWO}{one}")).unwrap().caches.unwrap();
        assert_eq!((c.domains, c.policy), (1, Policy::Victim));
    }

    #[test]
    fn cache_refusals_name_the_line() {
        let with = |from: &str, to: &str| err(&format!("{TWO}{}", CACHES.replace(from, to)));
        assert_eq!(
            with("l1d 49152 12", "l1d 49152 11"),
            "line 12: size 49152 bytes is not a non-zero multiple of 64 x 11 ways"
        );
        assert_eq!(
            with("l2 2097152 16", "l2 0x200000 16"),
            "line 13: bad size in bytes `0x200000` (decimal)"
        );
        assert_eq!(
            with("l1d 49152 12", "l1d 49152 0"),
            "line 12: ways 0 out of range (1 to 64)"
        );
        assert_eq!(
            with("non_inclusive", "exclusive"),
            "line 14: llc policy is inclusive, non_inclusive or victim, not `exclusive`"
        );
        assert_eq!(
            with("llc_of 1 1", "llc_of 0 1"),
            "line 16: llc_of of node 0 given twice"
        );
        assert_eq!(
            with("llc_of 1 1", "llc_of 1 2"),
            "line 16: llc domain 2 out of range (must be below 2)"
        );
        assert_eq!(
            with("llc_of 1 1\n", ""),
            "no `llc_of` line for node 1 (it has vCPUs)"
        );
        assert_eq!(
            with("llc_of 0 0", "llc_of 0 1"),
            "line 15: llc domain 0 skipped (domains are 0 to D-1)"
        );
        assert_eq!(
            with("l2 2097152 16\n", ""),
            "no `l2` line (l1d, l2 and llc go together, or none of them)"
        );
        assert_eq!(
            with("l1d 49152 12\n", "l1d 49152 12\nl1d 49152 12\n"),
            "line 13: `l1d` given twice"
        );
        assert_eq!(
            err(&format!("{TWO}llc_of 0 0\n")),
            "line 12: `llc_of` without `llc`"
        );
    }

    #[test]
    fn missing_parts() {
        assert_eq!(err(""), "no `nodes` line");
        assert_eq!(
            err("nodes 2\ndistance 0 10 20\n"),
            "no `distance` line for node 1"
        );
        assert_eq!(err("nodes 1\ndistance 0 10\n"), "no `mem` line");
        assert_eq!(
            err("nodes 1\ndistance 0 10\nmem 0x0 0x10 0\nvcpu 1 0\n"),
            "no `vcpu` line for vcpu 0"
        );
    }
}
