//! The text of Linux's /proc/lock_stat (CONFIG_LOCK_STAT, `lock_stat version 0.4`): a writer
//! that lays out one line per lock class as kernel/locking/lockdep_proc.c's `seq_header` and
//! `seq_stats` do, and a panic-free reader of what the writer prints (the host cuts it out of
//! the serial log and checks it).
//!
//! Layout, as Linux's: the version line; a rule of 221 `-`; the column names (`%40s` then
//! twelve ` %14s`); the rule again; an empty line; then per class `%40s:` (the name, right
//! aligned), `%14lu ` con-bounces, `%14lu` contentions, four ` %14s` wait times, ` %14lu `
//! acq-bounces, `%14lu` acquisitions and four ` %14s` hold times, classes sorted by
//! contentions, most first (a stable sort: ties keep the caller's order).
//!
//! Where numalab differs, on purpose:
//! - times are whole clock ticks (rdtsc: host TSC ticks, or guest instructions under
//!   `-icount shift=0`), not Linux's microseconds with two decimals; the second line (where
//!   Linux puts its `*WARNING*` line when lockdep is off) says which unit, and whether holds
//!   were timed (`lock_stat=1`) or the hold columns are 0;
//! - one class per lock instance (Linux: per initialisation site): a cache's list_lock on node
//!   2 is `kmalloc-64:&n->list_lock/2`, the `/N` (Linux's lockdep subclass) is the node or
//!   vmap node, written whole even past 9;
//! - a class is printed even with no acquisition (Linux prints only classes whose holds it
//!   timed), so that one run's table has the same classes as the next;
//! - no contention points (Linux's call-site lines under a contended class): the lock does not
//!   record its callers.
//! - averages are `total / count` rounded down, like Linux's `div_s64`.

use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// The first line.
pub const VERSION_LINE: &str = "lock_stat version 0.4";
/// Width of the class name column (`%40s`).
pub const NAME_WIDTH: usize = 40;
/// Width of every number column (`%14lu`, `%14s`).
pub const COLUMN_WIDTH: usize = 14;
/// Length of the rules: 40 + 1 + 12 * (14 + 1), as Linux's `seq_line`.
pub const RULE_LEN: usize = NAME_WIDTH + 1 + 12 * (COLUMN_WIDTH + 1);
/// Longest class name: Linux's 39-byte buffer and `snprintf(name, 38, ..)` keep 37 characters.
pub const MAX_NAME: usize = 37;
/// The column names after `class name`, in order.
pub const COLUMNS: [&str; 12] = [
    "con-bounces",
    "contentions",
    "waittime-min",
    "waittime-max",
    "waittime-total",
    "waittime-avg",
    "acq-bounces",
    "acquisitions",
    "holdtime-min",
    "holdtime-max",
    "holdtime-total",
    "holdtime-avg",
];
/// How the second line starts.
pub const UNITS_PREFIX: &str = "units: ";

/// What a tick is in this table (the boot's clock).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// rdtsc under `-icount shift=0`: guest instructions.
    Instructions,
    /// rdtsc of the host's TSC as QEMU passes it: host-time ticks.
    TscTicks,
}

impl Unit {
    /// The word the units line starts with (`instructions`, `tsc_ticks`: the BENCH units).
    pub fn name(self) -> &'static str {
        match self {
            Unit::Instructions => "instructions",
            Unit::TscTicks => "tsc_ticks",
        }
    }
}

/// One lock's counters as the lock counted them (times in ticks).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockCounts {
    pub con_bounces: u64,
    pub contentions: u64,
    pub wait_min: u64,
    pub wait_max: u64,
    pub wait_total: u64,
    pub acq_bounces: u64,
    pub acquisitions: u64,
    /// Holds that were timed (the hold average's divisor; 0 when lock_stat was off).
    pub holds: u64,
    pub hold_min: u64,
    pub hold_max: u64,
    pub hold_total: u64,
}

/// One class line: the name and the twelve columns as printed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockStatRow {
    pub name: String,
    /// The twelve columns, in [`COLUMNS`] order.
    pub values: [u64; 12],
}

impl LockStatRow {
    /// The row of lock `base` (subclass: its node, if it has one) with `c`'s counters.
    pub fn new(base: &str, subclass: Option<u32>, c: &LockCounts) -> LockStatRow {
        let avg = |total: u64, n: u64| total.checked_div(n).unwrap_or(0);
        LockStatRow {
            name: class_name(base, subclass),
            values: [
                c.con_bounces,
                c.contentions,
                c.wait_min,
                c.wait_max,
                c.wait_total,
                avg(c.wait_total, c.contentions),
                c.acq_bounces,
                c.acquisitions,
                c.hold_min,
                c.hold_max,
                c.hold_total,
                avg(c.hold_total, c.holds),
            ],
        }
    }

    /// The column called `name` (one of [`COLUMNS`]).
    pub fn get(&self, column: &str) -> Option<u64> {
        COLUMNS
            .iter()
            .position(|c| *c == column)
            .map(|i| self.values[i])
    }

    /// The line, laid out as `seq_stats` does.
    pub fn line(&self) -> String {
        let v = &self.values;
        let mut s = format!("{:>40}:{:>14} {:>14}", self.name, v[0], v[1]);
        for x in &v[2..6] {
            s.push_str(&format!(" {:>14}", x));
        }
        s.push_str(&format!(" {:>14} {:>14}", v[6], v[7]));
        for x in &v[8..12] {
            s.push_str(&format!(" {:>14}", x));
        }
        s
    }
}

/// A class name: `base` cut to fit [`MAX_NAME`] with the `/N` subclass suffix appended.
pub fn class_name(base: &str, subclass: Option<u32>) -> String {
    let suffix = subclass.map(|n| format!("/{n}")).unwrap_or_default();
    let keep = MAX_NAME.saturating_sub(suffix.len());
    let mut name: String = base.chars().take(keep).collect();
    name.push_str(&suffix);
    name
}

/// The second line: the unit and whether holds were timed.
pub fn units_line(unit: Unit, holds_timed: bool) -> String {
    let what = match unit {
        Unit::Instructions => "guest instructions (rdtsc under -icount shift=0)",
        Unit::TscTicks => "host TSC ticks (rdtsc under TCG)",
    };
    let hold = if holds_timed {
        "holdtime timed (lock_stat=1)"
    } else {
        "holdtime not timed (lock_stat=0): hold columns 0"
    };
    format!(
        "{UNITS_PREFIX}{} = {what}, not microseconds as in Linux; {hold}",
        unit.name()
    )
}

/// The column-name line.
pub fn column_line() -> String {
    let mut s = format!("{:>40}", "class name");
    for c in COLUMNS {
        s.push_str(&format!(" {:>14}", c));
    }
    s
}

/// The whole table, one string per line: header, then `rows` sorted by contentions (most
/// first; ties keep their order).
pub fn write(rows: &[LockStatRow], unit: Unit, holds_timed: bool) -> Vec<String> {
    let rule = "-".repeat(RULE_LEN);
    let mut out = alloc::vec![
        VERSION_LINE.to_string(),
        units_line(unit, holds_timed),
        rule.clone(),
        column_line(),
        rule,
        String::new(),
    ];
    let mut sorted: Vec<&LockStatRow> = rows.iter().collect();
    sorted.sort_by(|a, b| b.values[1].cmp(&a.values[1]));
    out.extend(sorted.iter().map(|r| r.line()));
    out
}

/// A table read back.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockStat {
    /// The units line, as printed.
    pub units: String,
    pub rows: Vec<LockStatRow>,
}

impl LockStat {
    /// The row of class `name`.
    pub fn row(&self, name: &str) -> Option<&LockStatRow> {
        self.rows.iter().find(|r| r.name == name)
    }
}

/// Reads a table [`write`] printed (lines joined by `\n`); an error names the line (1-based)
/// and what is wrong with it. Trailing blank lines are ignored.
pub fn parse(text: &str) -> Result<LockStat, String> {
    let lines: Vec<&str> = text.trim_end_matches(['\n', '\r', ' ']).lines().collect();
    let expect = |i: usize, want: &str, what: &str| -> Result<(), String> {
        match lines.get(i) {
            Some(l) if *l == want => Ok(()),
            Some(l) => Err(format!(
                "lock_stat line {}: expected {what}, found {l:?}",
                i + 1
            )),
            None => Err(format!("lock_stat: ends before line {} ({what})", i + 1)),
        }
    };
    expect(0, VERSION_LINE, "the version line")?;
    let units = match lines.get(1) {
        Some(l) if l.starts_with(UNITS_PREFIX) => l.to_string(),
        _ => return Err(String::from("lock_stat line 2: expected the units line")),
    };
    let rule = "-".repeat(RULE_LEN);
    expect(2, &rule, "a rule of 221 '-'")?;
    expect(3, &column_line(), "the column names")?;
    expect(4, &rule, "a rule of 221 '-'")?;
    expect(5, "", "an empty line")?;
    let mut rows = Vec::new();
    for (i, line) in lines.iter().enumerate().skip(6) {
        rows.push(parse_row(line).map_err(|e| format!("lock_stat line {}: {e}", i + 1))?);
    }
    Ok(LockStat { units, rows })
}

/// One class line.
fn parse_row(line: &str) -> Result<LockStatRow, String> {
    if !line.is_ascii() || line.len() <= NAME_WIDTH || line.as_bytes()[NAME_WIDTH] != b':' {
        return Err(format!(
            "not a class line (no ':' after a 40-column name): {line:?}"
        ));
    }
    let name = line[..NAME_WIDTH].trim_start();
    if name.is_empty() {
        return Err(String::from("empty class name"));
    }
    let fields: Vec<&str> = line[NAME_WIDTH + 1..].split_whitespace().collect();
    if fields.len() != 12 {
        return Err(format!("{}: {} columns, expected 12", name, fields.len()));
    }
    let mut values = [0u64; 12];
    for (k, f) in fields.iter().enumerate() {
        values[k] = f
            .parse()
            .map_err(|_| format!("{}: {} is not a count: {f:?}", name, COLUMNS[k]))?;
    }
    Ok(LockStatRow {
        name: name.to_string(),
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contended() -> LockCounts {
        LockCounts {
            con_bounces: 3,
            contentions: 4,
            wait_min: 120,
            wait_max: 9000,
            wait_total: 12345,
            acq_bounces: 17,
            acquisitions: 1000,
            holds: 1000,
            hold_min: 40,
            hold_max: 5000,
            hold_total: 98765,
        }
    }

    fn uncontended() -> LockCounts {
        LockCounts {
            acquisitions: 52,
            ..LockCounts::default()
        }
    }

    /// Where each column of a line ends (exclusive): the ends of its words after the name.
    fn column_ends(line: &str) -> Vec<usize> {
        let b = line.as_bytes();
        (NAME_WIDTH + 1..b.len())
            .filter(|&i| b[i] != b' ' && (i + 1 == b.len() || b[i + 1] == b' '))
            .map(|i| i + 1)
            .collect()
    }

    #[test]
    fn header_is_linuxs() {
        let t = write(&[], Unit::Instructions, true);
        assert_eq!(t[0], "lock_stat version 0.4");
        assert_eq!(t[2].len(), 221);
        assert!(t[2].bytes().all(|c| c == b'-'));
        assert_eq!(t[3].len(), 220);
        assert!(t[3].starts_with(&format!("{}class name    con-bounces", " ".repeat(30))));
        assert!(t[3].ends_with("holdtime-total   holdtime-avg"));
        assert_eq!(t[4], t[2]);
        assert_eq!(t[5], "");
        assert!(t[1].starts_with("units: instructions = guest instructions"));
        assert!(t[1].contains("not microseconds"));
        assert!(write(&[], Unit::TscTicks, false)[1].contains("holdtime not timed"));
    }

    #[test]
    fn columns_line_up_with_the_header() {
        let header = column_line();
        let want: Vec<usize> = (1..=12).map(|k| NAME_WIDTH + k * 15).collect();
        assert_eq!(column_ends(&header), want);
        for c in [contended(), uncontended()] {
            let line = LockStatRow::new("kmalloc-64:&n->list_lock", Some(0), &c).line();
            assert_eq!(line.len(), 220);
            assert_eq!(line.as_bytes()[40], b':');
            assert_eq!(column_ends(&line), want, "{line}");
        }
    }

    #[test]
    fn a_contended_lock() {
        let r = LockStatRow::new("&zone->lock", Some(2), &contended());
        assert_eq!(r.name, "&zone->lock/2");
        assert_eq!(
            r.values,
            [3, 4, 120, 9000, 12345, 3086, 17, 1000, 40, 5000, 98765, 98]
        );
        let line = r.line();
        assert_eq!(&line[..41], &format!("{}&zone->lock/2:", " ".repeat(27)));
        // Linux's `%14lu ` then `%14lu`: con-bounces, one blank, contentions.
        assert_eq!(&line[41..70], "             3              4");
    }

    #[test]
    fn an_uncontended_lock() {
        let r = LockStatRow::new("free_vmap_area_lock", None, &uncontended());
        assert_eq!(r.name, "free_vmap_area_lock");
        assert_eq!(r.get("acquisitions"), Some(52));
        assert_eq!(r.get("waittime-avg"), Some(0));
        assert_eq!(r.get("holdtime-avg"), Some(0));
        assert_eq!(r.get("nonsense"), None);
    }

    #[test]
    fn sorted_by_contentions_and_read_back() {
        let rows = [
            LockStatRow::new("a", None, &uncontended()),
            LockStatRow::new("b", Some(1), &contended()),
            LockStatRow::new("c", None, &uncontended()),
        ];
        let text = write(&rows, Unit::TscTicks, true).join("\n");
        let back = parse(&text).unwrap();
        let names: Vec<&str> = back.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["b/1", "a", "c"]);
        assert_eq!(back.row("b/1"), Some(&rows[1]));
        assert!(back.units.contains("tsc_ticks"));
    }

    #[test]
    fn long_names_are_cut_like_linuxs() {
        let base = "a-cache-with-a-very-long-name-indeed:&n->list_lock";
        assert_eq!(class_name(base, Some(3)).len(), 37);
        assert!(class_name(base, Some(3)).ends_with("/3"));
        assert_eq!(class_name(base, Some(12)), format!("{}/12", &base[..34]));
        assert_eq!(class_name(base, None).len(), 37);
    }

    #[test]
    fn bad_tables_are_refused_naming_the_line() {
        let rows = [LockStatRow::new("x", None, &contended())];
        let good = write(&rows, Unit::Instructions, true);
        assert!(parse("").unwrap_err().contains("line 1"));
        let mut t = good.clone();
        t[3] = String::from("class name");
        assert!(parse(&t.join("\n")).unwrap_err().contains("line 4"));
        let mut t = good.clone();
        t[6] = t[6].replace("12345", "12x45");
        let e = parse(&t.join("\n")).unwrap_err();
        assert!(e.contains("line 7") && e.contains("waittime-total"), "{e}");
        let mut t = good.clone();
        t.push(String::from("garbage"));
        assert!(parse(&t.join("\n")).unwrap_err().contains("line 8"));
        let mut t = good;
        t[6].truncate(100);
        assert!(parse(&t.join("\n")).unwrap_err().contains("columns"));
    }
}
