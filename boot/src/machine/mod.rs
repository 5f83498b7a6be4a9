//! Replaying a real machine (docs/replay.md): reads a machine description captured on a Linux
//! box (a directory of binary ACPI tables, the text of plain `acpidump`, or the text of
//! `numactl -H`) into a [`Machine`], prints Linux's view of it (`qemu-run.sh topology
//! SOURCE`), and turns it into a QEMU machine with the same NUMA shape (`--machine SOURCE`:
//! [`scale`] fits it to the run, [`replay`] writes the tables and checks the booted kernel).
//!
//! A source that cannot be read or makes no sense is one [`SourceError`] (file and problem;
//! the runner prints it on one line and exits 2). Problems inside well-formed tables are the
//! kernel's own parser warnings and decisions (kernel/algo/src/acpi), listed by `topology`.

pub mod dir;
#[cfg(test)]
mod hostile_tests;
pub mod replay;
pub mod samples;
pub mod scale;
pub mod tables;
#[cfg(test)]
mod tests;
pub mod text;

use numalab_algo::acpi::dump_text;
use numalab_algo::formats::numactl::{self, Numactl, NumactlNode};
use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

/// Largest source file read (an acpidump text of a big server is a few MiB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// Why a source cannot be used: the file and the problem, shown as `FILE: problem`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceError {
    pub file: PathBuf,
    pub problem: String,
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.file.display(), self.problem)
    }
}

impl SourceError {
    /// The error; a quoted line in `problem` is cut to [`text::QUOTE_CHARS`] characters.
    pub fn new(file: &Path, problem: impl Into<String>) -> SourceError {
        SourceError {
            file: file.to_path_buf(),
            problem: text::bounded(&problem.into()),
        }
    }
}

/// One node of the described machine, in Linux's view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    /// The node id the source's Linux view gives (numactl's; dense from 0 for tables).
    pub id: u32,
    /// Proximity domain (for a numactl source: the node id, which is what replay uses).
    pub pxm: u32,
    /// Logical CPU ids, in the source's order.
    pub cpus: Vec<u32>,
    /// APIC ids of `cpus` (tables only).
    pub apic_ids: Option<Vec<u32>>,
    /// Memory ranges [start, end) (tables only).
    pub mem_ranges: Option<Vec<(u64, u64)>>,
    pub size_mib: u64,
    pub free_mib: u64,
}

/// A described machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Machine {
    pub source: PathBuf,
    /// What the source was, e.g. "binary tables apic.dat srat.dat slit.dat".
    pub what: String,
    pub nodes: Vec<Node>,
    /// nodes x nodes, row = from.
    pub distances: Vec<Vec<u8>>,
    /// The SLIT to replay, indexed by proximity domain: (localities, row-major matrix). None:
    /// the source's distances are the defaults (no SLIT, or one the parsers do not use).
    pub slit: Option<(usize, Vec<u8>)>,
    /// The parsers' warnings (the kernel prints the same ones when it boots on the tables).
    pub warnings: Vec<String>,
    /// What the source lacks or a replay changes ("replay: ..."): not problems of the tables.
    pub notes: Vec<String>,
}

impl Machine {
    /// The `numactl -H` block of this machine.
    pub fn numactl(&self) -> Numactl {
        Numactl {
            nodes: self
                .nodes
                .iter()
                .map(|n| NumactlNode {
                    id: n.id,
                    cpus: n.cpus.clone(),
                    size_mib: n.size_mib,
                    free_mib: n.free_mib,
                })
                .collect(),
            distances: self.distances.clone(),
        }
    }

    /// What `qemu-run.sh topology` prints: the numactl block, the source, one `#` line per
    /// node, one `# warning:` line per warning.
    pub fn report(&self) -> Vec<String> {
        let mut out = self.numactl().lines();
        out.push(format!(
            "# source: {} ({})",
            self.source.display(),
            self.what
        ));
        for n in &self.nodes {
            let mut line = if n.apic_ids.is_some() {
                format!("# node {}: PXM {}", n.id, n.pxm)
            } else {
                format!("# node {}: replayed as PXM {}", n.id, n.pxm)
            };
            if n.size_mib == 0 {
                line.push_str(", memoryless");
            }
            if n.cpus.is_empty() {
                line.push_str(", CPU-less");
            }
            if let Some(ids) = &n.apic_ids {
                let ids = if ids.is_empty() {
                    "none".to_string()
                } else {
                    compact(ids)
                };
                line.push_str(&format!(", APIC ids {ids}"));
            }
            match &n.mem_ranges {
                Some(r) if r.is_empty() => line.push_str(", no memory"),
                Some(r) => {
                    let ranges: Vec<String> =
                        r.iter().map(|(s, e)| format!("{s:#x}-{e:#x}")).collect();
                    line.push_str(&format!(
                        ", memory {} ({} MiB)",
                        ranges.join(" "),
                        n.size_mib
                    ));
                }
                None => line.push_str(&format!(
                    ", {} MiB (a numactl text has no proximity domains, APIC ids or memory ranges)",
                    n.size_mib
                )),
            }
            out.push(line);
        }
        for w in &self.warnings {
            out.push(format!("# warning: {w}"));
        }
        for n in &self.notes {
            out.push(format!("# note: {n}"));
        }
        out
    }
}

/// Ids as ranges: `0-3,16-19` (sorted copy; order is in the numactl lines).
fn compact(ids: &[u32]) -> String {
    let mut v = ids.to_vec();
    v.sort_unstable();
    v.dedup();
    numactl::id_ranges(&v)
}

/// Reads a file of at most [`MAX_FILE_BYTES`], refusing what is not a regular file (a FIFO
/// or a device would block or never end).
pub fn read_file(path: &Path) -> Result<Vec<u8>, SourceError> {
    let meta = std::fs::metadata(path).map_err(|e| SourceError::new(path, io_problem(&e)))?;
    if !meta.is_file() {
        return Err(SourceError::new(path, "not a regular file"));
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(SourceError::new(
            path,
            format!(
                "{} bytes, more than the {} MiB a machine description may have",
                meta.len(),
                MAX_FILE_BYTES >> 20
            ),
        ));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| SourceError::new(path, io_problem(&e)))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(SourceError::new(
            path,
            "grew past the size limit while read",
        ));
    }
    Ok(bytes)
}

/// An I/O error in words (without the "(os error N)" tail).
pub fn io_problem(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// Reads a machine description: a directory of binary tables, an acpidump text or a
/// numactl -H text.
pub fn load(path: &Path) -> Result<Machine, SourceError> {
    let meta = std::fs::metadata(path).map_err(|e| SourceError::new(path, io_problem(&e)))?;
    if meta.is_dir() {
        let raw = dir::read(path)?;
        return tables::machine(path, &raw);
    }
    let bytes = read_file(path)?;
    let (text, encoding) = text::decode(&bytes).map_err(|e| SourceError::new(path, e))?;
    let mut m = from_text(path, &text)?;
    m.notes.extend(encoding);
    Ok(m)
}

/// A machine description's text (LF line ends): a numactl -H text or an acpidump text.
fn from_text(path: &Path, text: &str) -> Result<Machine, SourceError> {
    if text
        .lines()
        .any(|l| l.trim_start().starts_with("available:"))
        || text.contains("No NUMA available")
    {
        return from_numactl(path, text);
    }
    if text.lines().any(|l| {
        l.split_once(" @ 0x")
            .is_some_and(|(name, _)| name.trim().len() == 4)
    }) {
        let dumped = dump_text::parse(text).map_err(|e| SourceError::new(path, e))?;
        let raw = tables::RawTables::from_dump(path, dumped);
        return tables::machine(path, &raw);
    }
    Err(SourceError::new(
        path,
        "neither a numactl -H text (no 'available:' line) nor an acpidump text (no \
         'NAME @ 0xADDRESS' table header)",
    ))
}

/// A numactl -H text: the nodes as listed; the proximity domain of each is its node id.
fn from_numactl(path: &Path, text: &str) -> Result<Machine, SourceError> {
    let h = text::one_numactl(text).map_err(|e| SourceError::new(path, e))?;
    if h.nodes.iter().all(|n| n.cpus.is_empty()) {
        return Err(SourceError::new(path, "no node lists a CPU"));
    }
    // Linux prints a remote distance of 10 only for nodes it made up (numa=fake nodes of one
    // physical node): a SLIT holding it is one Linux's slit_valid() rejects, and so does the
    // kernel, so the shape cannot be replayed.
    let n = h.nodes.len();
    if let Some((i, j)) = (0..n * n)
        .map(|k| (k / n, k % n))
        .find(|&(i, j)| i != j && h.distances[i][j] == numalab_algo::topology::LOCAL_DISTANCE)
    {
        return Err(SourceError::new(
            path,
            format!(
                "distance node {} -> node {} is 10: a SLIT with a remote distance of 10 is one \
                 Linux's slit_valid() and numalab ignore (10/20 instead), so this shape cannot \
                 be replayed (nodes 10 apart are numa=fake nodes of one physical node)",
                h.nodes[i].id, h.nodes[j].id
            ),
        ));
    }
    let nodes: Vec<Node> = h
        .nodes
        .iter()
        .map(|n| Node {
            id: n.id,
            pxm: n.id,
            cpus: n.cpus.clone(),
            apic_ids: None,
            mem_ranges: None,
            size_mib: n.size_mib,
            free_mib: n.free_mib,
        })
        .collect();
    // The SLIT by proximity domain (= node id, below numactl::MAX_NODES, so at most 1 MiB);
    // localities no node has (sparse node ids) get Linux's defaults, 10 to self and 20 to
    // others. scale::plan compacts the domains when QEMU cannot take that many localities.
    let localities = nodes.last().map_or(0, |n| n.pxm as usize + 1);
    let mut matrix: Vec<u8> = (0..localities * localities)
        .map(|k| {
            if k / localities == k % localities {
                10
            } else {
                20
            }
        })
        .collect();
    for (i, a) in nodes.iter().enumerate() {
        for (j, b) in nodes.iter().enumerate() {
            matrix[a.pxm as usize * localities + b.pxm as usize] = h.distances[i][j];
        }
    }
    let mut notes = Vec::new();
    if nodes.iter().enumerate().any(|(i, n)| n.id as usize != i) {
        notes.push(format!(
            "replay: node ids {} are sparse: numalab numbers nodes densely, so the booted \
             kernel calls them 0-{}",
            numactl::id_ranges(&nodes.iter().map(|n| n.id).collect::<Vec<_>>()),
            nodes.len() - 1
        ));
    }
    Ok(Machine {
        source: path.to_path_buf(),
        what: "numactl -H text".into(),
        nodes,
        distances: h.distances,
        slit: Some((localities, matrix)),
        warnings: Vec::new(),
        notes,
    })
}

/// `qemu-run.sh topology SOURCE`: prints Linux's view, or one error line. Returns the exit
/// status (0, or 2 for a source that cannot be used).
pub fn topology_command(
    source: &Path,
    out: &mut dyn std::io::Write,
    err: &mut dyn std::io::Write,
) -> i32 {
    match load(source) {
        Ok(m) => {
            for line in m.report() {
                let _ = writeln!(out, "{line}");
            }
            0
        }
        Err(e) => {
            let _ = writeln!(err, "qemu-run.sh: topology: {e}");
            2
        }
    }
}
