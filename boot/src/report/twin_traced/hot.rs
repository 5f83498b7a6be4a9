//! The hottest lines of a region, read back from a run folder's c2c text (`c2c-det-rep0.txt`,
//! `c2c-linux-det.txt`, as boot/src/trace/c2c.rs writes it): each table's region header line
//! `  BENCH CASE cpus K (region 0xKEY)` and its rows, whose 14th column on is the line's name.

/// One row of a c2c table: HITM (the Total column), records and the Symbol column.
#[derive(Clone, Debug, PartialEq)]
pub struct HotLine {
    pub hitm: u64,
    pub records: u64,
    pub name: String,
}

/// One region's table: bench, case, CPU count and its rows in file order.
#[derive(Clone, Debug, PartialEq)]
pub struct RegionLines {
    pub bench: String,
    pub case: String,
    pub cpus: u32,
    pub lines: Vec<HotLine>,
}

/// The region of a header line `BENCH CASE cpus K (region 0x...)`, or None for any other line.
fn region_header(line: &str) -> Option<(String, String, u32)> {
    let t = line.trim();
    let (head, tail) = t.split_once(" (region 0x")?;
    if !tail.ends_with(')') {
        return None;
    }
    let w: Vec<&str> = head.split_whitespace().collect();
    match w.as_slice() {
        [bench, case, "cpus", k] => Some((bench.to_string(), case.to_string(), k.parse().ok()?)),
        _ => None,
    }
}

/// A table row: 13 whitespace-separated columns (Index .. Inval), then the Symbol column (which
/// may hold spaces: `slub_list_lock node 0 list_lock`). None for a header, rule or other line.
fn row(line: &str) -> Option<HotLine> {
    if line.trim_start().starts_with('#') {
        return None;
    }
    let mut rest = line;
    let mut cols: Vec<&str> = Vec::with_capacity(13);
    while cols.len() < 13 {
        rest = rest.trim_start();
        let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        cols.push(&rest[..end]);
        rest = &rest[end..];
    }
    let name = rest.trim();
    // Index is a number, Address hex, Hitm share a percentage.
    cols[0].parse::<u64>().ok()?;
    if !cols[1].starts_with("0x") || !cols[4].ends_with('%') || name.is_empty() {
        return None;
    }
    Some(HotLine {
        hitm: cols[5].parse().ok()?,
        records: cols[8].parse().ok()?,
        name: name.to_string(),
    })
}

/// Every region table of a c2c text; lines outside a region, and rows that are not in the
/// format, are skipped.
pub fn parse(text: &str) -> Vec<RegionLines> {
    let mut out: Vec<RegionLines> = Vec::new();
    for line in text.lines() {
        if let Some((bench, case, cpus)) = region_header(line) {
            out.push(RegionLines {
                bench,
                case,
                cpus,
                lines: Vec::new(),
            });
        } else if let (Some(r), Some(last)) = (row(line), out.last_mut()) {
            last.lines.push(r);
        }
    }
    out
}

/// The names of the `n` hottest lines of `region`: by HITM, then records (then file order).
pub fn hottest(region: &RegionLines, n: usize) -> Vec<String> {
    let mut lines: Vec<&HotLine> = region.lines.iter().collect();
    lines.sort_by_key(|l| std::cmp::Reverse((l.hitm, l.records)));
    lines.into_iter().take(n).map(|l| l.name.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_regions_and_names_with_spaces() {
        let text = "numalab: trace (det boot) 1 instructions\n\n\
=================================================\n\
           Shared Data Cache Line Table          \n\
  slub_list_lock linux/default cpus 8 (region 0xffffffffc0a01000)\n\
=================================================\n\
#\n\
# Index             Address  Node  PA cnt     Hitm    Total  LclHitm  RmtHitm  records    Loads   Stores  Atomics    Inval  Symbol\n\
# .....  ..................  ....  ......  .......  .......  .......  .......  .......  .......  .......  .......  .......  ......\n\
      0       0x28003641380     0       1    1.03%      461      152      309     3900     1798     1498      604      462  numalab_sll node 0 list_lock\n\
      1       0x28003641100     0       1    1.03%      461      150      311     3950     1057      903     1208      460  [dynamic]\n\
      2       0x28003641300     0       1    1.03%      500      158      342       10     1654     1204      604      460  jiffies_64+0x8\n\
      3       0x28003641300     0       1    1.03%        1        0        1        2        1        1        0        0  cold\n\
 garbage line\n";
        let r = parse(text);
        assert_eq!(r.len(), 1);
        assert_eq!(
            (r[0].bench.as_str(), r[0].case.as_str(), r[0].cpus),
            ("slub_list_lock", "linux/default", 8)
        );
        assert_eq!(r[0].lines.len(), 4);
        assert_eq!(
            hottest(&r[0], 3),
            [
                "jiffies_64+0x8",
                "[dynamic]",
                "numalab_sll node 0 list_lock"
            ]
        );
        assert!(parse("  x y cpus z (region 0x1)\n 1 2\n").is_empty());
    }
}
