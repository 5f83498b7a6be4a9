//! Reads the text Intel MLC prints for `mlc --latency_matrix` ("Measuring idle latencies ...
//! (in ns)...", a node x node table with "Numa node" across and down) and `mlc --c2c_latency`
//! ("Local Socket L2->L2 HITM latency", and the remote HITM tables homed in the writer's and
//! the reader's socket, "Writer Numa Node" down and "Reader Numa Node" across, `-` on the
//! diagonal). MLC separates the columns with tabs and pads with spaces; both are accepted.
//! Every error names its line (1-based, in the whole file).

/// A node x node table in ns: `rows` and `cols` are node numbers as MLC printed them.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub rows: Vec<u32>,
    pub cols: Vec<u32>,
    /// `cells[r][c]`; None only where MLC prints `-` (a c2c table's diagonal).
    pub cells: Vec<Vec<Option<f64>>>,
}

impl Matrix {
    /// The entry for (row node, column node), if the table has both nodes and a figure there.
    pub fn get(&self, row: u32, col: u32) -> Option<f64> {
        let r = self.rows.iter().position(|&n| n == row)?;
        let c = self.cols.iter().position(|&n| n == col)?;
        self.cells[r][c]
    }
}

/// What an MLC text holds (any part may be absent).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Mlc {
    /// `--latency_matrix`: rows are the CPUs' nodes, columns the memory's.
    pub latency: Option<Matrix>,
    /// The heading's access mode: `random`, `sequential`, or `unstated` (MLC before 3.10).
    pub access: Option<String>,
    /// "Local Socket L2->L2 HITM latency".
    pub hitm_local: Option<f64>,
    /// "Remote Socket L2->L2 HITM latency (data address homed in writer socket)".
    pub c2c_writer: Option<Matrix>,
    /// "... (data address homed in reader socket)".
    pub c2c_reader: Option<Matrix>,
}

fn node_number(word: &str) -> Option<u32> {
    word.parse().ok()
}

/// A latency figure: a non-negative finite number of ns.
fn figure(word: &str, line: usize) -> Result<f64, String> {
    match word.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v),
        Ok(_) => Err(format!(
            "line {line}: '{word}' is negative (a latency in ns)"
        )),
        Err(_) => Err(format!(
            "line {line}: '{word}' is not a number (a latency in ns)"
        )),
    }
}

/// Reads a table whose column header line starts with `head` ("Numa node" or "Writer Numa
/// Node"), looked for from `lines[at]` on; `dash_diagonal`: `-` is allowed (only) where the row
/// node is the column node. Returns the table and the index after its last row.
fn table(
    lines: &[&str],
    mut at: usize,
    head: &str,
    dash_diagonal: bool,
    what: &str,
) -> Result<(Matrix, usize), String> {
    // Skip the title line(s) ("Numa node", "Reader Numa Node") and blanks to the header.
    let header = loop {
        let Some(l) = lines.get(at) else {
            return Err(format!(
                "line {}: {what}: the table ends before its column header '{head} 0 1 ...'",
                at
            ));
        };
        let t = l.trim();
        if let Some(rest) = t.strip_prefix(head) {
            if !rest.trim().is_empty() {
                break (at, rest);
            }
        }
        if !(t.is_empty() || t.eq_ignore_ascii_case("Numa node") || t == "Reader Numa Node") {
            return Err(format!(
                "line {}: {what}: expected the column header '{head} 0 1 ...', found '{t}'",
                at + 1
            ));
        }
        at += 1;
    };
    let (hline, rest) = header;
    let mut cols = Vec::new();
    for w in rest.split_whitespace() {
        cols.push(node_number(w).ok_or_else(|| {
            format!(
                "line {}: {what}: column header '{w}' is not a node number",
                hline + 1
            )
        })?);
    }
    let mut rows = Vec::new();
    let mut cells = Vec::new();
    at = hline + 1;
    while let Some(l) = lines.get(at) {
        let words: Vec<&str> = l.split_whitespace().collect();
        let Some(first) = words.first() else { break };
        let Some(row) = node_number(first) else { break };
        let n = at + 1;
        if words.len() - 1 < cols.len() {
            return Err(format!(
                "line {n}: {what}: node {row}'s row has {} entries for {} columns (an entry is missing)",
                words.len() - 1,
                cols.len()
            ));
        }
        if words.len() - 1 > cols.len() {
            return Err(format!(
                "line {n}: {what}: node {row}'s row has {} entries for {} columns",
                words.len() - 1,
                cols.len()
            ));
        }
        let mut r = Vec::new();
        for (c, w) in words[1..].iter().enumerate() {
            if *w == "-" {
                if dash_diagonal && cols[c] == row {
                    r.push(None);
                    continue;
                }
                return Err(format!(
                    "line {n}: {what}: the entry for nodes {row} -> {} is missing ('-')",
                    cols[c]
                ));
            }
            r.push(Some(figure(w, n)?));
        }
        if rows.contains(&row) {
            return Err(format!("line {n}: {what}: node {row}'s row appears twice"));
        }
        rows.push(row);
        cells.push(r);
        at += 1;
    }
    if rows.is_empty() {
        return Err(format!("line {}: {what}: the table has no rows", hline + 1));
    }
    Ok((Matrix { rows, cols, cells }, at))
}

/// Parses MLC's text; `first_line` is the file line number of `text`'s first line (after a
/// cost model's header), for the messages.
pub fn parse(text: &str, first_line: usize) -> Result<Mlc, String> {
    let lines: Vec<&str> = text.lines().collect();
    let renumber = |e: String| -> String {
        // Messages carry 1-based indices into `lines`: shift them to the file's numbering.
        match e.strip_prefix("line ").and_then(|r| r.split_once(':')) {
            Some((n, rest)) => match n.parse::<usize>() {
                Ok(n) => format!("line {}:{rest}", n + first_line - 1),
                Err(_) => e,
            },
            None => e,
        }
    };
    let mut m = Mlc::default();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim();
        if t.starts_with("Measuring idle latencies") {
            if m.latency.is_some() {
                return Err(renumber(format!(
                    "line {}: a second idle latency matrix",
                    i + 1
                )));
            }
            m.access = Some(
                if t.contains("random") {
                    "random"
                } else if t.contains("sequential") {
                    "sequential"
                } else {
                    "unstated"
                }
                .into(),
            );
            let (t, next) = table(&lines, i + 1, "Numa node", false, "idle latency matrix")
                .map_err(renumber)?;
            m.latency = Some(t);
            i = next;
            continue;
        }
        if t.starts_with("Local Socket L2->L2 HITM latency") {
            let w = t.split_whitespace().last().unwrap_or("");
            m.hitm_local = Some(figure(w, i + 1).map_err(renumber)?);
        } else if t.starts_with("Remote Socket L2->L2 HITM latency") {
            let (what, writer) = if t.contains("homed in writer socket") {
                ("c2c table homed at the writer", true)
            } else if t.contains("homed in reader socket") {
                ("c2c table homed at the reader", false)
            } else {
                return Err(renumber(format!(
                    "line {}: a remote HITM table without '(data address homed in writer socket)' or '(... reader socket)'",
                    i + 1
                )));
            };
            let (tab, next) =
                table(&lines, i + 1, "Writer Numa Node", true, what).map_err(renumber)?;
            let slot = if writer {
                &mut m.c2c_writer
            } else {
                &mut m.c2c_reader
            };
            if slot.is_some() {
                return Err(renumber(format!("line {}: {what} appears twice", i + 1)));
            }
            *slot = Some(tab);
            i = next;
            continue;
        }
        i += 1;
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    // MLC 3.11b's layout, tabs as it prints them (ik_llama.cpp discussion 201, 6980P SNC off).
    const TWO: &str = "Intel(R) Memory Latency Checker - v3.11b\n\
Measuring idle latencies for sequential access (in ns)...\n\
\t\tNuma node\n\
Numa node\t     0\t     1\t\n\
       0\t 130.7\t 449.2\t\n\
       1\t 410.0\t 129.4\t\n\
\n\
Measuring cache-to-cache transfer latency (in ns)...\n\
Local Socket L2->L2 HIT  latency\t179.7\n\
Local Socket L2->L2 HITM latency\t180.2\n\
Remote Socket L2->L2 HITM latency (data address homed in writer socket)\n\
\t\t\tReader Numa Node\n\
Writer Numa Node     0\t     1\t\n\
            0\t     -\t 433.3\t\n\
            1\t 413.7\t     -\t\n\
Remote Socket L2->L2 HITM latency (data address homed in reader socket)\n\
\t\t\tReader Numa Node\n\
Writer Numa Node     0\t     1\t\n\
            0\t     -\t 425.0\t\n\
            1\t 422.4\t     -\t\n";

    #[test]
    fn reads_mlc_layout_with_tabs() {
        let m = parse(TWO, 1).unwrap();
        let l = m.latency.as_ref().unwrap();
        assert_eq!(l.rows, vec![0, 1]);
        assert_eq!(l.get(0, 1), Some(449.2));
        assert_eq!(l.get(1, 0), Some(410.0));
        assert_eq!(m.access.as_deref(), Some("sequential"));
        assert_eq!(m.hitm_local, Some(180.2));
        assert_eq!(m.c2c_writer.as_ref().unwrap().get(1, 0), Some(413.7));
        assert_eq!(m.c2c_writer.as_ref().unwrap().get(0, 0), None);
        assert_eq!(m.c2c_reader.as_ref().unwrap().get(0, 1), Some(425.0));
    }

    #[test]
    fn reads_space_padded_output_with_a_cpuless_column() {
        // The EPYC 9224 run's layout (spaces, node 4 memory only).
        let t = "Measuring idle latencies for random access (in ns)...\n\
               Numa node\n\
Numa node            0       1       2\n\
      0         107.5   117.1   279.4\n\
      1         115.8   106.8   278.8\n\n";
        let m = parse(t, 1).unwrap();
        let l = m.latency.unwrap();
        assert_eq!(l.cols, vec![0, 1, 2]);
        assert_eq!(l.rows, vec![0, 1]);
        assert_eq!(l.get(1, 2), Some(278.8));
        assert!(m.c2c_writer.is_none());
    }

    #[test]
    fn bad_entries_are_refused_naming_the_line() {
        let base = |row1: &str| {
            format!(
                "x\nMeasuring idle latencies for random access (in ns)...\n\t\tNuma node\nNuma node\t0\t1\n0\t80.0\t140.0\n{row1}\n"
            )
        };
        let e = parse(&base("1\t140.0"), 1).unwrap_err();
        assert!(e.starts_with("line 6:") && e.contains("missing"), "{e}");
        let e = parse(&base("1\t-140.0\t80.0"), 1).unwrap_err();
        assert!(e.starts_with("line 6:") && e.contains("negative"), "{e}");
        let e = parse(&base("1\tabc\t80.0"), 1).unwrap_err();
        assert!(
            e.starts_with("line 6:") && e.contains("not a number"),
            "{e}"
        );
        let e = parse(&base("1\t-\t80.0"), 1).unwrap_err();
        assert!(e.starts_with("line 6:") && e.contains("missing"), "{e}");
        // Numbered from the file's line where the MLC text starts.
        let e = parse(&base("1\t140.0"), 11).unwrap_err();
        assert!(e.starts_with("line 16:"), "{e}");
        // A dash off the diagonal of a c2c table is a missing entry.
        let c = TWO.replace("1\t 413.7\t     -\t", "1\t     -\t     -\t");
        let e = parse(&c, 1).unwrap_err();
        assert!(e.starts_with("line 15:") && e.contains("missing"), "{e}");
    }
}
