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

/// Parses the config text; `Err` is one line: `line N: ...` or what is missing.
pub fn parse(text: &str) -> Result<Config, String> {
    let mut nodes: Option<u32> = None;
    let mut rows: Vec<Option<Vec<u32>>> = Vec::new();
    let mut mem: Vec<MemRange> = Vec::new();
    let mut vcpus: Vec<Option<u32>> = Vec::new();
    let mut top = DEFAULT_TOP;
    let mut qemu_ram = QemuRam::PerNode;
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
    Ok(Config {
        nodes,
        distance,
        mem,
        vcpu_node,
        top,
        qemu_ram,
    })
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
