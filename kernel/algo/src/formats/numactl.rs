//! The text of `numactl -H` (`numactl --hardware`): a writer that prints it as numactl 2.x's
//! `hardware()` does (sparse node ids included), and a panic-free reader of it, used for a
//! machine description captured on a Linux box and for the block the kernel prints.
//!
//! Reader rules: lines before the first `available:` line are ignored (a shell prompt, the
//! command); the block ends with the last distance row (the rest is ignored). Every node the
//! `available:` line lists needs its `cpus:`, `size:` and `free:` lines and a distance row;
//! anything else inside the block is an error naming the line. Node ids are below 1024 (Linux's
//! largest MAX_NUMNODES), as are node counts. Trailing blanks (numactl leaves one after each
//! column) are ignored.

use alloc::collections::{BTreeMap, BTreeSet};
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// Most nodes a text may describe, and the bound on a node id (Linux's largest MAX_NUMNODES).
pub const MAX_NODES: usize = 1024;
/// Most CPUs a host's `numactl -H` text may list, and the bound on a CPU id (Linux's largest
/// NR_CPUS, CONFIG_NR_CPUS_RANGE_END): a limit of the host's text, not of numalab's kernel.
pub const LINUX_MAX_NR_CPUS: u32 = 8192;
/// Largest node size accepted, in MiB (1 EiB: more is not a real machine).
pub const MAX_SIZE_MIB: u64 = 1 << 40;

/// One node as numactl shows it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumactlNode {
    /// Linux's node id (may be sparse: nodes 0, 2, 8).
    pub id: u32,
    /// Logical CPU ids, as listed.
    pub cpus: Vec<u32>,
    pub size_mib: u64,
    pub free_mib: u64,
}

/// A whole `numactl -H` block: nodes in listed order, distances by position (row = from).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Numactl {
    pub nodes: Vec<NumactlNode>,
    pub distances: Vec<Vec<u8>>,
}

/// Node ids as numactl's `available:` line lists them: `0-3`, `0,2`, `0-1,4-5`.
pub fn id_ranges(ids: &[u32]) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j].wrapping_add(1) {
            j += 1;
        }
        if !out.is_empty() {
            out.push(',');
        }
        if j > i {
            out.push_str(&format!("{}-{}", ids[i], ids[j]));
        } else {
            out.push_str(&format!("{}", ids[i]));
        }
        i = j + 1;
    }
    out
}

impl Numactl {
    /// The lines numactl prints, trailing blanks trimmed.
    pub fn lines(&self) -> Vec<String> {
        let ids: Vec<u32> = self.nodes.iter().map(|n| n.id).collect();
        let mut out = Vec::with_capacity(4 * ids.len() + 3);
        out.push(format!(
            "available: {} nodes ({})",
            ids.len(),
            id_ranges(&ids)
        ));
        for n in &self.nodes {
            let mut cpus = format!("node {} cpus:", n.id);
            for c in &n.cpus {
                cpus.push_str(&format!(" {c}"));
            }
            out.push(cpus);
            out.push(format!("node {} size: {} MB", n.id, n.size_mib));
            out.push(format!("node {} free: {} MB", n.id, n.free_mib));
        }
        out.push(String::from("node distances:"));
        let mut head = String::from("node ");
        for id in &ids {
            head.push_str(&format!("{id:>3} "));
        }
        out.push(String::from(head.trim_end()));
        for (i, id) in ids.iter().enumerate() {
            let mut row = format!("{id:>3}: ");
            for j in 0..ids.len() {
                let d = self
                    .distances
                    .get(i)
                    .and_then(|r| r.get(j))
                    .copied()
                    .unwrap_or(0);
                row.push_str(&format!("{d:>3} "));
            }
            out.push(String::from(row.trim_end()));
        }
        out
    }

    /// [`Numactl::lines`] joined, one newline after each line.
    pub fn text(&self) -> String {
        let mut s = self.lines().join("\n");
        s.push('\n');
        s
    }
}

/// Parses `a-b,c` into ids (in order).
fn parse_ranges(text: &str, max_items: usize) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    if text.trim().is_empty() {
        return Some(out);
    }
    for part in text.split(',') {
        let part = part.trim();
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim().parse::<u32>().ok()?, b.trim().parse::<u32>().ok()?),
            None => {
                let v = part.parse::<u32>().ok()?;
                (v, v)
            }
        };
        if b < a || (b - a) as usize >= max_items.saturating_sub(out.len()) {
            return None;
        }
        out.extend(a..=b);
    }
    Some(out)
}

/// `"node X rest"` -> (X, rest).
fn node_line(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix("node ")?;
    let (id, rest) = rest.split_once(' ')?;
    Some((id.parse().ok()?, rest))
}

/// `"N MB"` -> N.
fn megabytes(text: &str) -> Option<u64> {
    let n: u64 = text.trim().strip_suffix("MB")?.trim().parse().ok()?;
    (n <= MAX_SIZE_MIB).then_some(n)
}

/// Reads the first `numactl -H` block of `text`. `Err` is one line: `line N: problem`.
pub fn parse(text: &str) -> Result<Numactl, String> {
    let lines: Vec<&str> = text.lines().map(|l| l.trim_end()).collect();
    let Some(start) = lines
        .iter()
        .position(|l| l.trim_start().starts_with("available:"))
    else {
        if lines.iter().any(|l| l.contains("No NUMA available")) {
            return Err(String::from(
                "numactl says 'No NUMA available on this system': nothing to replay",
            ));
        }
        return Err(String::from("no 'available: N nodes (...)' line"));
    };
    let err = |i: usize, what: &str| format!("line {}: {what}: {:?}", i + 1, lines[i]);
    // available: N nodes (LIST)
    let first = lines[start].trim_start();
    let rest = first["available:".len()..].trim();
    let (count, list) = rest
        .split_once(" nodes")
        .or_else(|| rest.split_once(" node"))
        .ok_or_else(|| err(start, "expected 'available: N nodes (LIST)'"))?;
    let count: usize = count
        .trim()
        .parse()
        .map_err(|_| err(start, "node count is not a number"))?;
    if count == 0 || count > MAX_NODES {
        return Err(err(
            start,
            &format!("node count {count} is outside 1..={MAX_NODES}"),
        ));
    }
    let list = list
        .trim()
        .strip_prefix('(')
        .and_then(|l| l.strip_suffix(')'))
        .ok_or_else(|| err(start, "expected the node list in parentheses"))?;
    let ids = parse_ranges(list, MAX_NODES).ok_or_else(|| err(start, "bad node list"))?;
    if ids.len() != count {
        return Err(err(
            start,
            &format!("{count} nodes announced, {} listed", ids.len()),
        ));
    }
    // Linux numbers nodes below MAX_NUMNODES (1 << CONFIG_NODES_SHIFT, at most 1024 on every
    // architecture): a larger id is not a Linux view, and a replay sizes tables by the id.
    if let Some(&id) = ids.iter().find(|&&id| id as usize >= MAX_NODES) {
        return Err(err(
            start,
            &format!(
                "node id {id} is above {}: Linux numbers nodes below MAX_NUMNODES (at most {MAX_NODES})",
                MAX_NODES - 1
            ),
        ));
    }
    if ids.windows(2).any(|w| w[0] >= w[1]) {
        return Err(err(start, "node ids are not in increasing order"));
    }
    let pos: BTreeMap<u32, usize> = ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let mut cpus: Vec<Option<Vec<u32>>> = alloc::vec![None; count];
    let mut sizes: Vec<Option<u64>> = alloc::vec![None; count];
    let mut frees: Vec<Option<u64>> = alloc::vec![None; count];
    let mut seen_cpus: BTreeSet<u32> = BTreeSet::new();
    let mut i = start + 1;
    loop {
        let Some(line) = lines.get(i) else {
            return Err(format!(
                "line {}: the text ends before 'node distances:'",
                lines.len()
            ));
        };
        let line = line.trim_start();
        if line.is_empty() {
            i += 1;
            continue;
        }
        if line == "node distances:" {
            break;
        }
        let (id, rest) = node_line(line).ok_or_else(|| err(i, "expected 'node N ...'"))?;
        let k = *pos
            .get(&id)
            .ok_or_else(|| err(i, &format!("node {id} is not in the 'available:' list")))?;
        if let Some(list) = rest.strip_prefix("cpus:") {
            if cpus[k].is_some() {
                return Err(err(i, &format!("node {id} cpus listed twice")));
            }
            let mut mine = Vec::new();
            for w in list.split_whitespace() {
                let c: u32 = w
                    .parse()
                    .ok()
                    .filter(|&c| c < LINUX_MAX_NR_CPUS)
                    .ok_or_else(|| err(i, &format!("bad CPU id {w:?} (0..{LINUX_MAX_NR_CPUS})")))?;
                if !seen_cpus.insert(c) {
                    return Err(err(i, &format!("CPU {c} is listed on two nodes")));
                }
                mine.push(c);
            }
            cpus[k] = Some(mine);
        } else if let Some(v) = rest.strip_prefix("size:") {
            let mb = megabytes(v).ok_or_else(|| err(i, "expected 'size: N MB'"))?;
            if sizes[k].replace(mb).is_some() {
                return Err(err(i, &format!("node {id} size given twice")));
            }
        } else if let Some(v) = rest.strip_prefix("free:") {
            let mb = megabytes(v).ok_or_else(|| err(i, "expected 'free: N MB'"))?;
            if frees[k].replace(mb).is_some() {
                return Err(err(i, &format!("node {id} free given twice")));
            }
        } else {
            return Err(err(i, "expected 'node N cpus:', 'size:' or 'free:'"));
        }
        i += 1;
    }
    let dist_line = i;
    for (k, &id) in ids.iter().enumerate() {
        let missing = [
            (cpus[k].is_none(), "cpus"),
            (sizes[k].is_none(), "size"),
            (frees[k].is_none(), "free"),
        ];
        if let Some((_, what)) = missing.iter().find(|m| m.0) {
            return Err(err(dist_line, &format!("node {id} has no '{what}:' line")));
        }
    }
    // Header: node  0  1 ...
    i += 1;
    let head = lines
        .get(i)
        .map(|l| l.trim_start())
        .ok_or_else(|| format!("line {}: the text ends after 'node distances:'", i))?;
    let cols: Option<Vec<u32>> = head
        .strip_prefix("node")
        .map(|r| r.split_whitespace().map(|w| w.parse().ok()).collect())
        .and_then(|v: Option<Vec<u32>>| v);
    if cols.as_deref() != Some(&ids[..]) {
        return Err(err(
            i,
            "distance header does not list the nodes of the 'available:' line",
        ));
    }
    let mut distances = Vec::with_capacity(count);
    for (k, &id) in ids.iter().enumerate() {
        i += 1;
        let Some(row) = lines.get(i).map(|l| l.trim_start()) else {
            return Err(format!(
                "line {}: the text ends before the distance row of node {id}",
                i
            ));
        };
        let (rid, vals) = row
            .split_once(':')
            .ok_or_else(|| err(i, &format!("expected the distance row '{id}: ...'")))?;
        if rid.trim().parse::<u32>().ok() != Some(id) {
            return Err(err(i, &format!("expected the distance row of node {id}")));
        }
        let vals: Vec<u8> = vals
            .split_whitespace()
            .map(|w| w.parse::<u8>().ok())
            .collect::<Option<Vec<u8>>>()
            .ok_or_else(|| err(i, "distances must be numbers 0..=255"))?;
        if vals.len() != count {
            return Err(err(
                i,
                &format!("{} distances, expected {count}", vals.len()),
            ));
        }
        for (j, &d) in vals.iter().enumerate() {
            if (j == k && d != 10) || (j != k && d < 10) {
                return Err(err(
                    i,
                    &format!(
                        "distance node {id} -> node {} is {d}: Linux prints 10 to self and at least 10 to others",
                        ids[j]
                    ),
                ));
            }
        }
        distances.push(vals);
    }
    let nodes = ids
        .iter()
        .enumerate()
        .map(|(k, &id)| NumactlNode {
            id,
            cpus: cpus[k].take().unwrap_or_default(),
            size_mib: sizes[k].unwrap_or(0),
            free_mib: frees[k].unwrap_or(0),
        })
        .collect();
    Ok(Numactl { nodes, distances })
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn two() -> Numactl {
        Numactl {
            nodes: vec![
                NumactlNode {
                    id: 0,
                    cpus: vec![0, 1, 4],
                    size_mib: 15890,
                    free_mib: 123,
                },
                NumactlNode {
                    id: 2,
                    cpus: vec![],
                    size_mib: 0,
                    free_mib: 0,
                },
            ],
            distances: vec![vec![10, 21], vec![21, 10]],
        }
    }

    #[test]
    fn writes_like_numactl() {
        assert_eq!(id_ranges(&[0, 1, 2, 3]), "0-3");
        assert_eq!(id_ranges(&[0, 2]), "0,2");
        assert_eq!(id_ranges(&[0, 1, 4, 5, 7]), "0-1,4-5,7");
        assert_eq!(
            two().text(),
            "available: 2 nodes (0,2)\nnode 0 cpus: 0 1 4\nnode 0 size: 15890 MB\n\
             node 0 free: 123 MB\nnode 2 cpus:\nnode 2 size: 0 MB\nnode 2 free: 0 MB\n\
             node distances:\nnode   0   2\n  0:  10  21\n  2:  21  10\n"
        );
    }

    #[test]
    fn reads_what_it_writes_with_numactl_blanks_and_a_prompt() {
        let text: String = two()
            .lines()
            .iter()
            .map(|l| {
                if l.starts_with("node  ") || l.contains(": ") && !l.contains("MB") {
                    format!("{l} \n")
                } else {
                    format!("{l}\n")
                }
            })
            .collect();
        let text = format!("$ numactl -H\n{text}after the block\n");
        assert_eq!(parse(&text).unwrap(), two());
    }

    #[test]
    fn bad_texts_name_the_line() {
        let good = two().text();
        let cases = [
            ("", "no 'available:"),
            ("No NUMA available on this system\n", "No NUMA available"),
            ("available: 0 nodes ()\n", "outside 1..=1024"),
            ("available: 3 nodes (0,2)\n", "3 nodes announced, 2 listed"),
            ("available: 2 nodes (0-99999999)\n", "bad node list"),
        ];
        for (text, want) in cases {
            let e = parse(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        let edits = [
            (
                "node 0 cpus: 0 1 4",
                "node 0 cpus: 0 1 x",
                "line 2: bad CPU id",
            ),
            (
                "node 2 cpus:",
                "node 2 cpus: 1",
                "line 5: CPU 1 is listed on two nodes",
            ),
            (
                "node 2 size: 0 MB",
                "node 2 size: lots",
                "line 6: expected 'size: N MB'",
            ),
            (
                "node 2 free: 0 MB\n",
                "",
                "line 7: node 2 has no 'free:' line",
            ),
            ("node 0 size", "node 1 size", "line 3: node 1 is not in the"),
            (
                "  2:  21  10",
                "  2:  21",
                "line 11: 1 distances, expected 2",
            ),
            (
                "  2:  21  10",
                "  2:  21  12",
                "distance node 2 -> node 2 is 12",
            ),
            ("node   0   2", "node   0   1", "line 9: distance header"),
            (
                "  2:  21  10\n",
                "",
                "ends before the distance row of node 2",
            ),
            ("  0:  10  21", "  0:  10  2x1", "numbers 0..=255"),
        ];
        for (from, to, want) in edits {
            let text = good.replacen(from, to, 1);
            let e = parse(&text).unwrap_err();
            assert!(e.contains(want), "{from:?} -> {to:?}: {e}");
        }
    }

    /// Node ids are bounded like Linux's (below MAX_NUMNODES, 1024), not only
    /// the node count: a replay sizes tables by the largest id.
    #[test]
    fn node_ids_at_or_past_linux_max_numnodes_are_refused() {
        let with_id = |id: u32| {
            let mut t = two();
            t.nodes[1].id = id;
            t.text()
        };
        for id in [1024u32, 100000, 4000000000] {
            let e = parse(&with_id(id)).unwrap_err();
            assert!(
                e.starts_with("line 1: node id ") && e.contains("above 1023"),
                "{id}: {e}"
            );
        }
        assert_eq!(parse(&with_id(1023)).unwrap().nodes[1].id, 1023);
    }

    #[test]
    fn never_panics_on_cut_texts() {
        let good = two().text();
        for cut in 0..good.len() {
            let _ = parse(&good[..cut]);
        }
    }
}
